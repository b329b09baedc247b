// The closed form the goodput-aware search weighs each plan with (goodput_inputs.hpp,
// expected_goodput) against the Monte Carlo `tandem goodput` plays, on the same setup: the
// bundled GPT-3 175B job on 1,024 H100 at Llama 3's failure rates, restarting in place (spares
// never run out), where Daly's assumptions hold.
#include <gtest/gtest.h>

#include "scenarios/goodput_inputs.hpp"
#include "scenarios/reliability_spec.hpp"
#include "sim/reliability/checkpoint_interval.hpp"
#include "sim/reliability/goodput_estimate.hpp"

namespace tandem {
namespace {

using sim::reliability::GoodputModel;

GoodputSetup bundled_setup(Seconds iteration_s, bool async = false) {
  ReliabilityScenario rs = load_reliability_scenario("goodput-gpt3-175b-h100");
  rs.spec.spare_nodes = 1000;  // restarts never wait
  rs.spec.async_checkpoint = async;
  if (async) rs.spec.host_copy_bytes_per_s = 64e9;
  return goodput_setup(rs, *make_strategy(rs.base), iteration_s, /*snapshot_bytes_per_device=*/4e9);
}

TEST(ExpectedGoodput, AgreesWithTheMonteCarloOfTheSameSetupWithinTwoPercent) {
  GoodputSetup setup = bundled_setup(/*iteration_s=*/10);
  const ExpectedGoodput expected = expected_goodput(setup);
  EXPECT_GT(expected.mtbf_s, 0);
  EXPECT_NEAR(expected.interval_s, sim::reliability::daly_interval_s(expected.checkpoint_s, expected.mtbf_s), 1e-9);
  setup.model.interval_s = expected.interval_s;  // the Monte Carlo at the same interval
  const auto played = sim::reliability::estimate_horizon(setup.model, 1000 * expected.mtbf_s, 16, 2026);
  EXPECT_NEAR(played.goodput.mean / expected.goodput, 1, 0.02)
      << "Monte Carlo " << played.goodput.mean << ", closed form " << expected.goodput;
}

TEST(ExpectedGoodput, KeepsTheScenariosIntervalWhenItGivesOne) {
  GoodputSetup setup = bundled_setup(10);
  setup.model.interval_s = 3600;
  const ExpectedGoodput e = expected_goodput(setup);
  EXPECT_EQ(e.interval_s, 3600);
  EXPECT_DOUBLE_EQ(e.goodput, sim::reliability::daly_goodput(3600, e.checkpoint_s, e.restart_s, e.mtbf_s));
}

TEST(ExpectedGoodput, AnAsynchronousCheckpointBlocksLessButLosesItsUnfinishedWrite) {
  const ExpectedGoodput sync = expected_goodput(bundled_setup(10));
  const GoodputSetup async_setup = bundled_setup(10, /*async=*/true);
  const ExpectedGoodput async = expected_goodput(async_setup);
  EXPECT_LT(async.checkpoint_s, sync.checkpoint_s);
  EXPECT_DOUBLE_EQ(async.restart_s, async_setup.model.restart_s + async_setup.model.checkpoint.write_s);
  EXPECT_GT(async.goodput, sync.goodput);
}

TEST(ExpectedGoodput, NothingFailingMeansEverySecondTrains) {
  GoodputSetup setup = bundled_setup(10);
  setup.model.failures.clear();
  const ExpectedGoodput e = expected_goodput(setup);
  EXPECT_EQ(e.goodput, 1);
  EXPECT_EQ(e.mtbf_s, 0);
}

}  // namespace
}  // namespace tandem
