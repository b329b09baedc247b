// The bundled failure profile matches its source (Llama 3, Table 5), scales to a job as Poisson
// rates add, and a malformed profile is refused at its line and field.
#include "platforms/failure_profile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/input_error.hpp"
#include "sim/reliability/failure_streams.hpp"

namespace tandem {
namespace {

TEST(FailureProfile, Llama3sProfileHoldsItsFourHundredNineteenInterruptions) {
  const FailureProfile p = find_failure_profile("llama3-405b-h100");
  double total = 0;
  for (const FailureCause& c : p.causes) total += c.interruptions;
  EXPECT_EQ(total, 419);
  EXPECT_EQ(p.observed_devices, 16384);
  EXPECT_EQ(p.observed_days, 54);
  // The job that was observed fails, by construction, 419 times in 54 days: about every 3.1 h,
  // the "one failure every three hours" of the report.
  const auto streams = sim::reliability::failure_streams(p, {16384, 2048, 1, 2048}, 1, 3600);
  double rate = 0;
  for (const auto& s : streams) rate += s.rate_per_s;
  EXPECT_NEAR(rate * 54 * 86400, 419, 1e-9);
  EXPECT_NEAR(1 / rate / 3600, 3.09, 0.01);
}

TEST(FailureProfile, RatesScaleWithTheJobsDevicesAndNodes) {
  const FailureProfile p = find_failure_profile("llama3-405b-h100");
  const auto full = sim::reliability::failure_streams(p, {16384, 2048, 1, 2048}, 1, 3600);
  const auto quarter = sim::reliability::failure_streams(p, {4096, 512, 1, 512}, 1, 3600);
  for (std::size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(quarter[i].rate_per_s / full[i].rate_per_s, 0.25, 1e-12);
  const auto leaves = sim::reliability::failure_streams(p, {4096, 512, 16, 32}, 2, 3600, 1000 * 3600.0);
  EXPECT_EQ(leaves.back().cause, "leaf_switch");
  EXPECT_EQ(leaves.back().nodes_taken, 32);
  EXPECT_NEAR(leaves.back().rate_per_s, 16 / (1000 * 3600.0), 1e-18);
  EXPECT_NEAR(leaves[0].rate_per_s, 2 * quarter[0].rate_per_s, 1e-18);  // failure_rate_scale
}

TEST(FailureProfile, AMalformedProfileIsRefusedAtItsField) {
  const auto path = std::filesystem::temp_directory_path() / ("tandem-failures-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "name: bad\n"
                         "source: nobody\n"
                         "observed: { days: 10, devices: 16, devices_per_node: 8 }\n"
                         "causes:\n"
                         "  - name: gpu\n"
                         "    scope: rack\n"
                         "    interruptions: 3\n";
  try {
    load_failure_profile(path.string());
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 6);
    EXPECT_NE(std::string(e.what()).find("scope"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tandem
