// `tandem simulate` states what an iteration costs when every device used has a price, as the
// cost search ranks plans: the devices' price per hour over the iteration time, and per token.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "platforms/cluster.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

TEST(SimulateCostCli, APricedClusterGetsCostPerIterationAndPerMillionTokens) {
  const CliRun text = run_tandem("simulate gpt2-124m-dp8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("cost        $"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" per iteration, $"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" per million tokens"), std::string::npos) << text.out;

  const CliRun json = run_tandem("simulate gpt2-124m-dp8 --json -");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto p = nlohmann::json::parse(json.out);
  const double usd_per_s = find_cluster("tiny-h100").usd_per_s(8);  // dp 8 on 8 H100
  const double time_s = p["iteration_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(p["usd_per_iteration"].get<double>(), usd_per_s * time_s);
  EXPECT_NEAR(p["usd_per_million_tokens"].get<double>(), usd_per_s / p["tokens_per_s"].get<double>() * 1e6,
              1e-12 * p["usd_per_million_tokens"].get<double>());
}

}  // namespace
}  // namespace tandem
