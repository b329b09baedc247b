#include "analysis/calibration/provenance.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "platforms/cluster.hpp"  // bundled_dir: the source tree, for its git commit

namespace tandem::calibration {

namespace {

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The commit of the source tree this tandem was built from, "unknown" outside a git checkout.
std::string source_commit() {
  const std::string command = "git -C '" + bundled_dir("") + "' rev-parse --short=12 HEAD 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "unknown";
  char buffer[64] = {};
  const bool got = std::fgets(buffer, sizeof buffer, pipe) != nullptr;
  ::pclose(pipe);
  const std::string commit = got ? trim(buffer) : "";
  return commit.empty() ? "unknown" : commit;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  }
  return "unknown";
}

DeviceProfile::Provenance this_machine(const std::string& backend, const std::string& accelerator) {
  DeviceProfile::Provenance p;
  p.machine = host_name();
  p.cpu_model = cpu_model_name();
  p.accelerator = accelerator;
  p.backend = backend;
  p.date = utc_now();
  p.tandem_commit = source_commit();
  return p;
}

}  // namespace tandem::calibration
