#include "common/output_set.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/input_error.hpp"
#include "common/interrupts.hpp"

namespace tandem {

namespace {

std::string cannot_write(const std::string& path) { return "cannot write " + path + ": " + std::strerror(errno); }

// "" when all of `text` reached the file (and the disk, if synced); the cause otherwise.
std::string write_and_close(int fd, const std::string& text, const std::string& path, OutputSet::Durability durability) {
  std::string failure;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure = cannot_write(path);
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (failure.empty() && durability == OutputSet::Durability::synced && ::fsync(fd) != 0) failure = cannot_write(path);
  // close() reports what a network or full file system deferred.
  if (::close(fd) != 0 && failure.empty()) failure = cannot_write(path);
  return failure;
}

void sync_folder(const std::string& target) {
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

OutputSet::~OutputSet() {
  for (const Staged& s : staged_) interrupts::remove_registered_file(s.temporary);
}

void OutputSet::check_writable(const std::string& path, const std::string& option) {
  if (path.empty() || path == "-") return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = fs::absolute(path, ec);
  if (ec) throw std::runtime_error("cannot write " + path + ": " + ec.message());
  if (fs::is_directory(target, ec)) throw InputError("command line", 0, option, "'" + path + "' is a folder, not a file");
  const fs::path folder = target.parent_path();
  if (!fs::is_directory(folder, ec))
    throw InputError("command line", 0, option, "no such folder: " + folder.string() + " (for '" + path + "')");
  if (::access(folder.c_str(), W_OK) != 0) throw std::runtime_error(cannot_write(path));
}

void OutputSet::stage(const std::string& path, const std::string& text, Durability durability) {
  const auto same = std::find_if(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.target == path; });
  if (same != staged_.end()) {
    interrupts::remove_registered_file(same->temporary);
    staged_.erase(same);
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = interrupts::create_registered_file(temporary);
  if (fd < 0) throw std::runtime_error(cannot_write(path));
  const std::string failure = write_and_close(fd, text, path, durability);
  if (!failure.empty()) {
    interrupts::remove_registered_file(temporary);
    throw std::runtime_error(failure);
  }
  staged_.push_back({temporary, path, durability});
}

void OutputSet::commit() {
  std::vector<std::pair<std::string, std::string>> renames;
  for (const Staged& s : staged_) renames.emplace_back(s.temporary, s.target);
  // On a failed rename, those before it are in place; the destructor removes the rest.
  interrupts::rename_registered_files(renames);
  for (const Staged& s : staged_)
    if (s.durability == Durability::synced) sync_folder(s.target);
  staged_.clear();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  OutputSet one;
  one.stage(path, text);
  one.commit();
}

}  // namespace tandem
