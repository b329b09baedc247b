// The horizon Monte Carlo on its own (no SimGrid): accounting, determinism per seed, agreement with
// Daly's analytic model and with Young/Daly's optimum where their assumptions hold, and what each
// recovery policy and async checkpointing change.
#include "sim/reliability/goodput_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/reliability/checkpoint_interval.hpp"
#include "sim/reliability/goodput_estimate.hpp"

namespace tandem::sim::reliability {
namespace {

constexpr Seconds kHour = 3600;

// Daly's assumptions: Poisson failures of one kind, restart in place, fixed costs, sync checkpoints.
GoodputModel poisson_model(Seconds mtbf_s, Seconds checkpoint_s, Seconds restart_s) {
  GoodputModel m;
  m.iteration_s = 10;
  m.tokens_per_iteration = 4e6;
  m.checkpoint.blocking_s = checkpoint_s;
  m.restart_s = restart_s;
  m.interval_s = young_interval_s(checkpoint_s, mtbf_s);
  m.failures = {{"any", 1 / mtbf_s, 0, 0}};
  return m;
}

// Every cause of interruption at once, with node losses, for the accounting tests.
GoodputModel busy_model(RecoveryPolicy policy) {
  GoodputModel m = poisson_model(2 * kHour, 120, 600);
  m.failures = {{"gpu", 1 / (4 * kHour), 1, 48 * kHour},
                {"leaf", 1 / (40 * kHour), 4, 24 * kHour},
                {"software", 1 / (5 * kHour), 0, 0}};
  m.policy = policy;
  m.spare_nodes = 3;
  m.replicas = 8;
  m.replicas_per_node = 1;
  return m;
}

TEST(GoodputModel, TheTimeOfATrialIsAccountedForExactlyUnderEveryPolicy) {
  for (RecoveryPolicy policy : {RecoveryPolicy::restart_on_spares, RecoveryPolicy::wait_for_repair, RecoveryPolicy::shrink}) {
    for (bool async : {false, true}) {
      GoodputModel m = busy_model(policy);
      if (async) m.checkpoint = {true, 5, 120};
      const Seconds horizon = 30 * 24 * kHour;
      const GoodputTally t = run_trial(m, horizon, 7);
      EXPECT_GT(t.failures, 100) << to_string(policy);
      EXPECT_DOUBLE_EQ(t.duration_s, horizon);
      EXPECT_NEAR(t.accounted_s(), horizon, 1e-6 * horizon) << to_string(policy) << " async " << async;
      EXPECT_GT(t.useful_s, 0);
    }
  }
}

TEST(GoodputModel, ATrialIsTheSameBitForBitForItsSeedAndDiffersForAnother) {
  const GoodputModel m = busy_model(RecoveryPolicy::restart_on_spares);
  const GoodputTally a = run_trial(m, 10 * 24 * kHour, 42);
  const GoodputTally b = run_trial(m, 10 * 24 * kHour, 42);
  const GoodputTally c = run_trial(m, 10 * 24 * kHour, 43);
  EXPECT_EQ(a.useful_s, b.useful_s);
  EXPECT_EQ(a.lost_by_cause, b.lost_by_cause);
  EXPECT_EQ(a.waiting_by_cause, b.waiting_by_cause);
  EXPECT_EQ(a.failures, b.failures);
  EXPECT_NE(a.useful_s, c.useful_s);
  const HorizonEstimate e1 = estimate_horizon(m, 5 * 24 * kHour, 8, 99);
  const HorizonEstimate e2 = estimate_horizon(m, 5 * 24 * kHour, 8, 99);
  EXPECT_EQ(e1.goodput.mean, e2.goodput.mean);
  EXPECT_EQ(e1.goodput.high, e2.goodput.high);
}

TEST(GoodputModel, WithoutFailuresOnlyCheckpointsCostTime) {
  GoodputModel m = poisson_model(kHour, 60, 600);
  m.failures.clear();
  m.interval_s = 1000;
  const GoodputTally t = run_trial(m, 10'600, 1);  // ten periods of 1,060 s
  EXPECT_DOUBLE_EQ(t.checkpoint_s, 600);
  EXPECT_DOUBLE_EQ(t.useful_s, 10'000);
  const TimeToTrain train = estimate_time_to_train(m, 2.5e3 / 10 * 4e6, 3, 1);  // 2,500 s of training
  EXPECT_DOUBLE_EQ(train.wall_s.mean, 2'500 + 2 * 60);  // two checkpoints on the way, none at the end
}

TEST(GoodputModel, SimulatedGoodputIsWithinTwoPercentOfDalysModelWhereItsAssumptionsHold) {
  for (const auto& [mtbf, checkpoint, restart] : {std::tuple{3 * kHour, 60.0, 600.0}, std::tuple{kHour, 300.0, 300.0}}) {
    GoodputModel m = poisson_model(mtbf, checkpoint, restart);
    m.interval_s = daly_interval_s(checkpoint, mtbf);
    const HorizonEstimate h = estimate_horizon(m, 1000 * mtbf, 8, 2026);
    const double analytic = daly_goodput(m.interval_s, checkpoint, restart, mtbf);
    EXPECT_NEAR(h.goodput.mean / analytic, 1.0, 0.02) << "MTBF " << mtbf << " s, analytic " << analytic;
    EXPECT_LT(h.goodput.high - h.goodput.low, 0.01);
  }
}

TEST(GoodputModel, TheSweptOptimalIntervalIsWithinTenPercentOfYoungAndDaly) {
  // C << M: Young's first-order formula holds.
  const Seconds mtbf = 3 * kHour, checkpoint = 60;
  const GoodputModel m = poisson_model(mtbf, checkpoint, 300);
  const Seconds young = young_interval_s(checkpoint, mtbf);
  const IntervalSweep s = sweep_interval(m, young / 3, young * 3, 23, 400 * mtbf, 64, 5);
  EXPECT_DOUBLE_EQ(s.young_s, young);
  EXPECT_NEAR(s.best_interval_s / young, 1.0, 0.10) << "best " << s.best_interval_s << " s, Young " << young;
  EXPECT_NEAR(s.best_interval_s / s.daly_s, 1.0, 0.10) << "best " << s.best_interval_s << " s, Daly " << s.daly_s;
  // Far from it, goodput is clearly lower on the same failures.
  EXPECT_GT(s.best_goodput, s.points.front().goodput + 0.01);
  EXPECT_GT(s.best_goodput, s.points.back().goodput + 0.01);
}

TEST(GoodputModel, SparesAvoidWaitingForRepairsAndRunningOutOfThemMakesTheJobWait) {
  GoodputModel m = busy_model(RecoveryPolicy::restart_on_spares);
  m.spare_nodes = 1000;
  const HorizonEstimate plenty = estimate_horizon(m, 30 * 24 * kHour, 4, 3);
  m.spare_nodes = 0;
  const HorizonEstimate none = estimate_horizon(m, 30 * 24 * kHour, 4, 3);
  m.policy = RecoveryPolicy::wait_for_repair;
  const HorizonEstimate repair = estimate_horizon(m, 30 * 24 * kHour, 4, 3);
  for (Seconds w : plenty.waiting_s) EXPECT_EQ(w, 0);
  EXPECT_GT(none.waiting_s[0], 0);
  EXPECT_GT(plenty.goodput.mean, none.goodput.mean);
  EXPECT_NEAR(none.goodput.mean, repair.goodput.mean, 1e-12);  // no spares = waiting for the node itself
}

TEST(GoodputModel, ShrinkingKeepsTrainingOnSurvivorsWhereWaitingStops) {
  GoodputModel m = busy_model(RecoveryPolicy::shrink);
  const HorizonEstimate shrink = estimate_horizon(m, 30 * 24 * kHour, 4, 11);
  m.policy = RecoveryPolicy::wait_for_repair;
  const HorizonEstimate wait = estimate_horizon(m, 30 * 24 * kHour, 4, 11);
  EXPECT_GT(shrink.degraded_s, 0);
  EXPECT_GT(shrink.regrow_s, 0);
  EXPECT_GT(shrink.goodput.mean, wait.goodput.mean);
}

// Shrunk throughput from the survivors' simulation: linear scaling is what an empty table means,
// and a table below it (survivors that cannot split the batch evenly) costs goodput.
TEST(GoodputModel, SurvivorsSlowerThanLinearScalingCostGoodput) {
  GoodputModel m = busy_model(RecoveryPolicy::shrink);
  const HorizonEstimate implied = estimate_horizon(m, 30 * 24 * kHour, 4, 11);
  m.shrunk_throughput.resize(9);
  for (int a = 0; a <= 8; ++a) m.shrunk_throughput[static_cast<std::size_t>(a)] = a / 8.0;
  const HorizonEstimate linear = estimate_horizon(m, 30 * 24 * kHour, 4, 11);
  EXPECT_DOUBLE_EQ(linear.goodput.mean, implied.goodput.mean);
  for (int a = 1; a < 8; ++a) m.shrunk_throughput[static_cast<std::size_t>(a)] = a / 16.0;
  const HorizonEstimate halved = estimate_horizon(m, 30 * 24 * kHour, 4, 11);
  EXPECT_LT(halved.goodput.mean, linear.goodput.mean);
  EXPECT_GT(halved.degraded_s, linear.degraded_s);
  m.shrunk_throughput.pop_back();
  EXPECT_THROW(validate(m), std::invalid_argument);
}

TEST(GoodputModel, AsyncCheckpointsCostOnlyTheirSnapshotButLoseAPendingWrite) {
  GoodputModel sync = poisson_model(2 * kHour, 120, 300);
  GoodputModel async = sync;
  async.checkpoint = {true, 5, 120};
  const HorizonEstimate s = estimate_horizon(sync, 200 * 2 * kHour, 8, 4);
  const HorizonEstimate a = estimate_horizon(async, 200 * 2 * kHour, 8, 4);
  EXPECT_LT(a.checkpoint_s, s.checkpoint_s / 10);
  EXPECT_GT(a.goodput.mean, s.goodput.mean);
  // A failure before the write is durable loses the previous segment too: more lost per failure.
  EXPECT_GT(a.lost_s[0] / a.failures.mean, s.lost_s[0] / s.failures.mean);
}

}  // namespace
}  // namespace tandem::sim::reliability

namespace tandem::sim::reliability {
namespace {

// A slowdown that comes and goes: episodes every 10 h on average (Poisson), lasting 1 h on average,
// at half speed. Over a long horizon the job is in an episode 1 / 11 of the time (an alternating
// renewal process: mean on / (mean on + mean off)) and loses half of that.
TEST(GoodputModel, SlowdownEpisodesTakeTheirExpectedShareOfTheTime) {
  GoodputModel m = poisson_model(kHour, 1, 0);
  m.failures.clear();
  m.interval_s = 3600;
  m.slowdowns = {{"rank 3: compute x2.00", 1 / (10 * kHour), kHour, 0.5}};
  const Seconds horizon = 20'000 * kHour;
  const GoodputTally t = run_trial(m, horizon, 11);
  EXPECT_NEAR(t.accounted_s(), horizon, 1e-6 * horizon);
  EXPECT_NEAR(t.slowed_s / horizon, 0.5 / 11, 0.05 * 0.5 / 11);
  EXPECT_EQ(t.degraded_s, 0);  // no replica missing: the slowdown's time is its own
  // What is not slowed is useful, but for the checkpoints (1 s per hour).
  EXPECT_NEAR(t.useful_s + t.slowed_s + t.checkpoint_s, horizon, 1e-6 * horizon);
  // The estimate over trials carries it too, and the goodput falls by that share.
  const HorizonEstimate h = estimate_horizon(m, 2'000 * kHour, 8, 5);
  EXPECT_NEAR(h.goodput.mean, 1 - 0.5 / 11 - 1.0 / 3601, 0.01);
}

TEST(GoodputModel, SlowdownsLeaveTheFailuresWhereTheyFell) {
  // Episodes draw from a stream of their own: the same failures strike with or without them
  // (common random numbers), so the difference between the two is the slowdowns' alone.
  const GoodputModel plain = busy_model(RecoveryPolicy::shrink);
  GoodputModel slowed = plain;
  slowed.slowdowns = {{"a", 1 / (6 * kHour), 0.5 * kHour, 0.7}, {"b", 1 / (20 * kHour), 2 * kHour, 0.4}};
  const Seconds horizon = 30 * 24 * kHour;
  const GoodputTally a = run_trial(plain, horizon, 3);
  const GoodputTally b = run_trial(slowed, horizon, 3);
  EXPECT_EQ(a.failures, b.failures);
  EXPECT_EQ(a.slowed_s, 0);
  EXPECT_GT(b.slowed_s, 0);
  EXPECT_LT(b.useful_s, a.useful_s);
  EXPECT_NEAR(b.accounted_s(), horizon, 1e-6 * horizon);
  GoodputModel bad = slowed;
  bad.slowdowns[0].throughput = 0;
  EXPECT_THROW(run_trial(bad, horizon, 3), std::invalid_argument);
}

// Re-balancing: 10 min into an episode the work is re-split (the job at 90% instead of 50%), and
// 10 min after it ends split back (95% meanwhile). Episodes of 1 h on average: most of each runs
// re-balanced, so far less time goes to slowdowns; a delay longer than the episodes changes little.
TEST(GoodputModel, ReBalancingAnEpisodeWinsBackMostOfWhatItTakes) {
  GoodputModel m = poisson_model(kHour, 1, 0);
  m.failures.clear();
  m.interval_s = 3600;
  m.slowdowns = {{"rank 3: compute x2.00", 1 / (10 * kHour), kHour, 0.5, 0.9, 0.95}};
  const Seconds horizon = 20'000 * kHour;
  const GoodputTally never = run_trial(m, horizon, 11);
  m.rebalance_after_s = 600;
  const GoodputTally soon = run_trial(m, horizon, 11);
  m.rebalance_after_s = 100 * kHour;
  const GoodputTally late = run_trial(m, horizon, 11);
  EXPECT_NEAR(soon.accounted_s(), horizon, 1e-6 * horizon);
  // Expected: per episode (mean 1 h) 10 min at 50% lost, the rest (e^-1/6 of episodes last past
  // 10 min, 50 min on average then) at 10%, then 10 min at 5% after it; per 11 h on average.
  const double per_episode = 600 * 0.5 * (1 - std::exp(-1.0 / 6)) / (1.0 / 6) / 1 +
                             std::exp(-1.0 / 6) * (3600 * 0.1 + 600 * 0.05);
  EXPECT_NEAR(soon.slowed_s / horizon, per_episode / (11 * kHour), 0.1 * per_episode / (11 * kHour));
  EXPECT_LT(soon.slowed_s, 0.5 * never.slowed_s);
  EXPECT_NEAR(late.slowed_s / never.slowed_s, 1.0, 0.05);
}


// The closed form the goodput-aware search uses (GoodputModel::episode_throughput) against the
// trial that plays the episodes: two stragglers, with and without re-balancing.
TEST(GoodputModel, TheClosedFormOfEpisodesAgreesWithTheTrialsThatPlayThem) {
  GoodputModel m = poisson_model(kHour, 1, 0);
  m.failures.clear();
  m.interval_s = 1e12;  // no checkpoints: every second not slowed is useful
  m.slowdowns = {{"a", 1 / (10 * kHour), kHour, 0.5, 0.9, 0.95}, {"b", 1 / (30 * kHour), 3 * kHour, 0.7, 0.95, 0.98}};
  const Seconds horizon = 40'000 * kHour;
  for (Seconds rebalance : {0.0, 600.0}) {
    m.rebalance_after_s = rebalance;
    const GoodputTally t = run_trial(m, horizon, 7);
    EXPECT_NEAR(1 - t.slowed_s / horizon, m.episode_throughput(), 0.005) << "re-balanced after " << rebalance << " s";
  }
  const double rebalanced = m.episode_throughput();
  m.rebalance_after_s = 0;
  EXPECT_GT(rebalanced, m.episode_throughput());
  m.slowdowns.clear();
  EXPECT_EQ(m.episode_throughput(), 1);
}

}  // namespace
}  // namespace tandem::sim::reliability
