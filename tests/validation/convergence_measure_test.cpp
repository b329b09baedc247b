// validation/convergence/measure.sh, run as its users run it: every communication-efficient
// strategy trains for real on a real text (the GPL-3 licence, byte-level) and its step time is
// simulated on a GPU cluster; the stored result holds loss curves, steps to the target loss and
// the time to it. Synchronous parameter servers sum as the all-reduce does, and staleness costs
// steps.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

TEST(ConvergenceMeasure, EveryStrategyTrainsOnARealTextAndItsTimeToTheTargetIsStepsTimesTheSimulatedStep) {
  if (!std::filesystem::exists("/usr/share/common-licenses/GPL-3")) GTEST_SKIP() << "no /usr/share/common-licenses/GPL-3 (Debian's base-files)";
  const auto dir = cli_test::fresh_dir("tandem-convergence", "measure");
  const std::string out = (dir / "c.json").string();
  const std::string command = "STEPS=30 TARGET_LOSS=4.2 bash " + std::string(TANDEM_SOURCE_DIR) +
                              "/validation/convergence/measure.sh " + cli_test::tandem_binary() + " " + out +
                              " > " + (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << cli_test::read_file(dir / "log.txt");
  const nlohmann::json j = nlohmann::json::parse(cli_test::read_file(out));
  ASSERT_EQ(j["variants"].size(), 8u);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& v : j["variants"]) {
    by_name[v["name"].get<std::string>()] = v;
    const auto losses = v["losses"].get<std::vector<double>>();
    ASSERT_EQ(losses.size(), 30u) << v["name"];
    EXPECT_LT(losses.back(), losses.front()) << v["name"];  // every one of them trains
    EXPECT_GT(v["simulated_step_s"].get<double>(), 0) << v["name"];
    const int steps = v["steps_to_target"].get<int>();
    if (steps > 0)
      EXPECT_NEAR(v["time_to_target_s"].get<double>(), steps * v["simulated_step_s"].get<double>(),
                  1e-3 * v["time_to_target_s"].get<double>())
          << v["name"];
  }
  // Synchronous servers sum what the all-reduce sums: the same curve (equivalence tolerance).
  const auto sync = by_name["synchronous"]["losses"].get<std::vector<double>>();
  const auto ps = by_name["ps_stale_0"]["losses"].get<std::vector<double>>();
  for (std::size_t i = 0; i < sync.size(); ++i) EXPECT_NEAR(ps[i], sync[i], 1e-5 * sync[i]) << "step " << i;
  EXPECT_GT(by_name["synchronous"]["steps_to_target"].get<int>(), 0);
  // Staleness costs progress per step.
  EXPECT_GT(by_name["ps_stale_3"]["losses"].back().get<double>(), sync.back());
}

}  // namespace
}  // namespace tandem
