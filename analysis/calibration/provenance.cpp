#include "analysis/calibration/provenance.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "common/usable_cores.hpp"
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

std::string kernel_release() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "unknown";
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

// FNV-1a, 64 bits: stable across compilers and runs (std::hash is not), and the raw machine id is
// not written into a file that may be shared (systemd asks applications not to expose it).
std::string fnv1a_hex(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace

std::string machine_id(const std::string& root) {
  const std::string id = first_line(root + "/etc/machine-id");
  // "uninitialized": systemd's placeholder in an image not booted yet.
  if (id.empty() || id == "uninitialized") return "";
  return fnv1a_hex("tandem-calibration|" + id + "|" + first_line(root + "/proc/sys/kernel/random/boot_id"));
}

std::string not_this_machine(const DeviceProfile::Provenance& measured, const DeviceProfile::Provenance& here) {
  std::ostringstream why;
  auto differs = [&](const char* what, const std::string& then, const std::string& now) {
    if (then != now) why << (why.tellp() > 0 ? ", " : "") << what << " '" << then << "' there, '" << now << "' here";
  };
  if (measured.machine_id.empty()) why << "the profile records no machine id";
  else if (here.machine_id.empty()) why << "this machine has no machine id (no /etc/machine-id)";
  else if (measured.machine_id != here.machine_id) why << "another installation or boot (machine id differs)";
  differs("host", measured.machine, here.machine);
  differs("CPU", measured.cpu_model, here.cpu_model);
  differs("cores", std::to_string(measured.cores), std::to_string(here.cores));
  differs("kernel", measured.kernel, here.kernel);
  return why.str();
}

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
  p.cores = usable_cores();
  p.kernel = kernel_release();
  p.machine_id = machine_id();
  p.accelerator = accelerator;
  p.backend = backend;
  p.date = utc_now();
  p.tandem_commit = source_commit();
  return p;
}

}  // namespace tandem::calibration
