// Helpers for tests that write description files: a temporary folder that cleans up after
// itself, the line of a piece of text (so expected error lines follow the text, not a count),
// and the check that an edited file is rejected with an error at the right place.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

#include "common/input_error.hpp"
#include "platforms/cluster.hpp"  // bundled_dir

namespace tandem::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tandem-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to path()/name (sub-folders created) and returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

// The 1-based line of the first occurrence of `needle` in `text` (0 if absent).
inline int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return 0;
  int line = 1;
  for (std::size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

// One edit of a good description file that makes it bad.
struct BadCase {
  const char* what;
  std::string from;         // replaced ...
  std::string to;           // ... by this
  std::string field;        // expected field path
  std::string line_needle;  // expected line: where this text sits in the bad file ("" = line 0)
  std::string message;      // part of the message
};

// Applies `c` to `good`, writes the result and checks that `load(path)` throws an InputError
// naming that file, the field, the line and the message.
template <class Load>
void expect_input_error_at_the_right_place(const std::string& good, const BadCase& c, Load load) {
  std::string text = good;
  const auto at = text.find(c.from);
  ASSERT_NE(at, std::string::npos) << c.from;
  text.replace(at, c.from.size(), c.to);
  TempDir dir;
  const std::string path = dir.write("bad.yaml", text);
  try {
    load(path);
    FAIL() << c.what << ": no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path) << c.what;
    EXPECT_EQ(e.field(), c.field) << c.what << ": " << e.what();
    EXPECT_EQ(e.line(), line_of(text, c.line_needle)) << c.what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.what << ": " << e.what();
  }
}

// Applies every case of `cases` to `good` in turn (see above).
template <class Load>
void expect_input_errors_at_the_right_places(const std::string& good, std::initializer_list<BadCase> cases, Load load) {
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    expect_input_error_at_the_right_place(good, c, load);
  }
}

// The text of a bundled file ("platforms/devices/h100-sxm.yaml"), for tests that edit it.
inline std::string bundled_text(const std::string& relative) {
  std::ifstream in(bundled_dir(relative));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tandem::test
