// Running the real `tandem` binary from a test: exit status, stdout and stderr. Each call captures
// stderr in a file of its own, so tests running in parallel (ctest -j) never read each other's.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tandem::cli_test {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

// The `tandem` binary built beside the test binary (same build folder), so no path is compiled in.
inline std::string tandem_binary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tandem").string();
}

// A file's whole contents ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An empty folder of this process's own under the temporary directory, e.g. tandem-outputs-NAME-PID.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (prefix + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// `text` as FILE in a fresh folder (fresh_dir(prefix, name)); returns the file's path.
inline std::string write_in_fresh_dir(const std::string& prefix, const std::string& name, const std::string& file,
                                      const std::string& text) {
  const std::filesystem::path path = fresh_dir(prefix, name) / file;
  std::ofstream(path) << text;
  return path.string();
}

// `prefix` runs the binary under another program (e.g. "mpirun -np 2 ").
inline CliRun run_tandem_with_prefix(const std::string& prefix, const std::string& args) {
  static std::atomic<int> calls{0};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tandem-cli-stderr";
  std::filesystem::create_directories(dir);
  const std::string err_path =
      (dir / (std::to_string(::getpid()) + "-" + std::to_string(calls++) + ".txt")).string();
  const std::string command = prefix + tandem_binary() + " " + args + " 2>" + err_path;
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) run.out.append(buffer.data(), n);
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.err = read_file(err_path);
  std::filesystem::remove(err_path);
  return run;
}

inline CliRun run_tandem(const std::string& args) { return run_tandem_with_prefix("", args); }

}  // namespace tandem::cli_test
