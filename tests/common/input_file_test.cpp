// Input files are read only when they are regular files of bounded size: a FIFO, a device or a
// directory, or a file over the cap, is one InputError naming the file, before any reading.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/input_error.hpp"
#include "common/input_file.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tandem-input-file-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string refusal(const std::string& path, std::uint64_t max_bytes = kMaxYamlBytes) {
  try {
    read_input_file(path, max_bytes);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError for " << path;
  return "";
}

TEST(InputFile, ARegularFileIsReadWhole) {
  const fs::path p = temp_dir() / "a.yaml";
  std::ofstream(p) << "name: x\n";
  EXPECT_EQ(read_input_file(p.string(), kMaxYamlBytes), "name: x\n");
}

TEST(InputFile, AFifoIsRefusedWithoutBlocking) {
  const fs::path p = temp_dir() / "fifo.yaml";
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  EXPECT_NE(refusal(p.string()).find("not a regular file"), std::string::npos);
}

TEST(InputFile, ADeviceAndADirectoryAreRefused) {
  EXPECT_NE(refusal("/dev/zero").find("not a regular file"), std::string::npos);
  EXPECT_NE(refusal(temp_dir().string()).find("directory"), std::string::npos);
}

TEST(InputFile, AFileOverTheCapIsRefusedBeforeReading) {
  const fs::path p = temp_dir() / "big.yaml";
  std::ofstream(p) << std::string(2000, 'x');
  EXPECT_NE(refusal(p.string(), 1000).find("at most"), std::string::npos);
}

TEST(InputFile, AMissingFileNamesItself) {
  EXPECT_NE(refusal((temp_dir() / "missing.yaml").string()).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace tandem
