#include "common/input_file.hpp"

#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/input_error.hpp"

namespace tandem {
namespace {

std::string megabytes(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// A refusal of the whole file has no line; its field says that it is the file, not a value in it.
[[noreturn]] void refuse(const std::string& path, const std::string& message) {
  throw InputError(path, 0, kWholeFileField, message);
}

// Closes the descriptor on every path out, errors included.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

namespace {

// Opens `path` for reading and checks it is a regular file of at most `max_bytes`; its size.
std::uint64_t open_input_file(const std::string& path, std::uint64_t max_bytes, Descriptor& file) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise block before fstat can refuse it.
  file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (file.fd < 0) refuse(path, std::string("cannot open the file: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) refuse(path, std::string("cannot stat the file: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) refuse(path, "is a directory, not an input file");
  if (!S_ISREG(info.st_mode))
    refuse(path, "not a regular file (a FIFO, device or socket cannot be an input file)");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes)
    refuse(path, "the file is " + std::to_string(size) + " bytes; inputs of this kind are at most " +
                                      megabytes(max_bytes));
  return size;
}

}  // namespace

void check_input_file(const std::string& path, std::uint64_t max_bytes) {
  Descriptor file;
  open_input_file(path, max_bytes, file);
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes) {
  Descriptor file;
  const std::uint64_t size = open_input_file(path, max_bytes, file);
  std::string text(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(file.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse(path, std::string("cannot read the file: ") + std::strerror(errno));
    if (n == 0) break;  // shrank while reading: take what is there, the parser judges it
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

bool path_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

std::string path_beside(const std::string& file, const std::string& reference) {
  const std::filesystem::path beside = std::filesystem::path(file).parent_path() / reference;
  return path_exists(beside.string()) ? beside.string() : reference;
}

}  // namespace tandem
