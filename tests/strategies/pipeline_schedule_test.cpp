#include "strategies/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tandem {
namespace {

using Kind = PipelineAction::Kind;
constexpr auto kGpipe = PipelineSchedule::gpipe;
constexpr auto k1f1b = PipelineSchedule::one_f_one_b;
constexpr auto kInterleaved = PipelineSchedule::interleaved_1f1b;
constexpr auto kZbH1 = PipelineSchedule::zb_h1;
constexpr auto kZbV = PipelineSchedule::zb_v;

// "F<micro-batch>.<chunk> B<micro-batch>.<chunk> ..." — compact and readable in a failure.
std::string render(const std::vector<PipelineAction>& actions) {
  std::string s;
  for (const auto& a : actions) {
    if (!s.empty()) s += ' ';
    s += to_string(a.kind) + std::to_string(a.micro_batch) + "." + std::to_string(a.chunk);
  }
  return s;
}

// An abstract event-driven executor: every stage runs its own action list in order; an action
// starts when its stage is free and its inputs exist — a forward on virtual stage k needs the
// forward of k-1 for that micro-batch, a backward needs the backward of k+1 and its own forward.
// Communication is free. t_f and t_b are the times of one micro-batch on one whole stage, so one
// chunk takes t_f/v and t_b/v. A schedule that splits backwards runs t_b - t_w in B and t_w in W
// (which needs its B).
struct Timeline {
  bool deadlock = false;
  double iteration_time = 0;        // the last action's end
  std::vector<double> busy;         // compute time per stage
};

Timeline execute(PipelineSchedule sch, const std::vector<std::vector<PipelineAction>>& per_stage, int p, int m, int v,
                 double tf, double tb, double tw = 0) {
  const int V = p * v;
  constexpr double kNotDone = -1;
  std::vector<std::vector<double>> fwd_end(V, std::vector<double>(m, kNotDone));
  std::vector<std::vector<double>> bwd_end(V, std::vector<double>(m, kNotDone));
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  Timeline t;
  t.busy.assign(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < per_stage[s].size()) {
        const PipelineAction& a = per_stage[s][next[s]];
        const int k = virtual_stage(sch, a.chunk, s, p);
        double ready = free_at[s];
        bool ok = true;
        auto need = [&](double end) {
          if (end == kNotDone) ok = false;
          ready = std::max(ready, end);
        };
        if (a.kind == Kind::forward) {
          if (k > 0) need(fwd_end[k - 1][a.micro_batch]);
        } else if (a.kind == Kind::weight) {
          need(bwd_end[k][a.micro_batch]);
        } else {
          need(fwd_end[k][a.micro_batch]);
          if (k < V - 1) need(bwd_end[k + 1][a.micro_batch]);
        }
        if (!ok) break;
        const double d = (a.kind == Kind::forward ? tf : a.kind == Kind::weight ? tw : tb - tw) / v;
        const double end = ready + d;
        if (a.kind != Kind::weight) (a.kind == Kind::forward ? fwd_end : bwd_end)[k][a.micro_batch] = end;
        free_at[s] = end;
        t.busy[s] += d;
        t.iteration_time = std::max(t.iteration_time, end);
        ++next[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) t.deadlock |= next[s] != per_stage[s].size();
  return t;
}

std::vector<std::vector<PipelineAction>> all_stages(PipelineSchedule sch, int p, int m, int v) {
  std::vector<std::vector<PipelineAction>> out;
  for (int s = 0; s < p; ++s) out.push_back(pipeline_actions(sch, s, p, m, v));
  return out;
}

// ZB-H1 splits the backward into two halves (the paper's t_b = t_w when t_b + t_w = 2 t_f).
Timeline run(PipelineSchedule sch, int p, int m, int v, double tf = 1.0, double tb = 2.0) {
  return execute(sch, all_stages(sch, p, m, v), p, m, v, tf, tb, splits_backward(sch) ? tb / 2 : 0.0);
}

// The (p, m, v) combinations each schedule accepts, over a small grid.
std::vector<std::tuple<int, int, int>> grid(PipelineSchedule sch) {
  std::vector<std::tuple<int, int, int>> out;
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 4, 5, 8, 12, 16, 24}) {
      if (sch != kInterleaved) {
        out.emplace_back(p, m, 1);
      } else if (m % p == 0) {
        for (int v : {2, 3, 4}) out.emplace_back(p, m, v);
      }
    }
  }
  return out;
}

TEST(PipelineScheduleTest, NamesRoundTrip) {
  for (auto s : {kGpipe, k1f1b, kInterleaved, kZbH1, kZbV}) EXPECT_EQ(parse_pipeline_schedule(to_string(s)), s);
  EXPECT_STREQ(to_string(k1f1b), "1f1b");
  EXPECT_THROW(parse_pipeline_schedule("1F1B"), std::invalid_argument);
  EXPECT_THROW(parse_pipeline_schedule("interleaved"), std::invalid_argument);
  EXPECT_THROW(parse_pipeline_schedule(""), std::invalid_argument);
}

TEST(PipelineScheduleTest, RejectsInvalidCombinations) {
  EXPECT_THROW(pipeline_actions(kGpipe, 0, 0, 4, 1), std::invalid_argument);       // p < 1
  EXPECT_THROW(pipeline_actions(k1f1b, 0, 4, 0, 1), std::invalid_argument);        // m < 1
  EXPECT_THROW(pipeline_actions(k1f1b, 4, 4, 8, 1), std::invalid_argument);        // stage >= p
  EXPECT_THROW(pipeline_actions(k1f1b, -1, 4, 8, 1), std::invalid_argument);       // stage < 0
  EXPECT_THROW(pipeline_actions(kGpipe, 0, 4, 8, 2), std::invalid_argument);       // v != 1
  EXPECT_THROW(pipeline_actions(k1f1b, 0, 4, 8, 0), std::invalid_argument);        // v != 1
  EXPECT_THROW(pipeline_actions(kInterleaved, 0, 4, 8, 1), std::invalid_argument); // v < 2
  EXPECT_THROW(pipeline_actions(kInterleaved, 0, 4, 6, 2), std::invalid_argument); // m % p
  EXPECT_THROW(bubble_fraction(kInterleaved, 4, 6, 2), std::invalid_argument);
  EXPECT_THROW(bubble_time_over_ideal(kGpipe, 4, 0, 1), std::invalid_argument);
  EXPECT_NO_THROW(pipeline_actions(kInterleaved, 3, 4, 8, 2));
  EXPECT_NO_THROW(pipeline_actions(k1f1b, 3, 4, 3, 1));  // m < p is fine without interleaving
}

// Every stage runs each (micro-batch, chunk) forward once and backward once, backward later.
TEST(PipelineScheduleTest, EveryStageRunsEachPassExactlyOnce) {
  for (auto sch : {kGpipe, k1f1b, kInterleaved}) {
    for (auto [p, m, v] : grid(sch)) {
      for (int s = 0; s < p; ++s) {
        const auto actions = pipeline_actions(sch, s, p, m, v);
        SCOPED_TRACE(std::string(to_string(sch)) + " p=" + std::to_string(p) + " m=" +
                     std::to_string(m) + " v=" + std::to_string(v) + " s=" + std::to_string(s) +
                     ": " + render(actions));
        ASSERT_EQ(actions.size(), 2u * m * v);
        std::map<std::pair<int, int>, int> fwd_at, bwd_at;
        for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
          const auto& a = actions[i];
          ASSERT_GE(a.micro_batch, 0);
          ASSERT_LT(a.micro_batch, m);
          ASSERT_GE(a.chunk, 0);
          ASSERT_LT(a.chunk, v);
          auto& at = a.kind == Kind::forward ? fwd_at : bwd_at;
          ASSERT_TRUE(at.emplace(std::pair{a.micro_batch, a.chunk}, i).second) << "twice: " << i;
        }
        ASSERT_EQ(fwd_at.size(), static_cast<std::size_t>(m * v));
        ASSERT_EQ(bwd_at.size(), static_cast<std::size_t>(m * v));
        for (auto [key, i] : bwd_at) EXPECT_LT(fwd_at.at(key), i);
      }
    }
  }
}

TEST(PipelineScheduleTest, GpipeOrder) {
  EXPECT_EQ(render(pipeline_actions(kGpipe, 1, 4, 3, 1)), "F0.0 F1.0 F2.0 B0.0 B1.0 B2.0");
  EXPECT_EQ(warmup_forwards(kGpipe, 0, 4, 3, 1), 3);
}

TEST(PipelineScheduleTest, OneFOneBOrder) {
  // p = 4, m = 6: stage s warms up with p-s-1 forwards.
  EXPECT_EQ(render(pipeline_actions(k1f1b, 0, 4, 6, 1)),
            "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 B3.0 B4.0 B5.0");
  EXPECT_EQ(render(pipeline_actions(k1f1b, 2, 4, 6, 1)),
            "F0.0 F1.0 B0.0 F2.0 B1.0 F3.0 B2.0 F4.0 B3.0 F5.0 B4.0 B5.0");
  EXPECT_EQ(render(pipeline_actions(k1f1b, 3, 4, 6, 1)),
            "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 F4.0 B4.0 F5.0 B5.0");
  // Fewer micro-batches than stages: warm-up capped at m.
  EXPECT_EQ(render(pipeline_actions(k1f1b, 0, 4, 2, 1)), "F0.0 F1.0 B0.0 B1.0");
  EXPECT_EQ(warmup_forwards(k1f1b, 0, 4, 2, 1), 2);
  EXPECT_EQ(warmup_forwards(k1f1b, 1, 4, 8, 1), 2);
}

TEST(PipelineScheduleTest, InterleavedOrderMatchesMegatron) {
  // p = 2, v = 2, m = 4. Stage 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards; forward k runs chunk
  // (k/2)%2 on micro-batch (k/4)*2 + k%2, backward k chunk 1-(k/2)%2 on the same micro-batch.
  EXPECT_EQ(warmup_forwards(kInterleaved, 0, 2, 4, 2), 4);
  EXPECT_EQ(render(pipeline_actions(kInterleaved, 0, 2, 4, 2)),
            "F0.0 F1.0 F0.1 F1.1 "
            "F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 "
            "B2.1 B3.1 B2.0 B3.0");
  // Stage 1: warm-up (v-1)*p = 2.
  EXPECT_EQ(warmup_forwards(kInterleaved, 1, 2, 4, 2), 2);
  EXPECT_EQ(render(pipeline_actions(kInterleaved, 1, 2, 4, 2)),
            "F0.0 F1.0 "
            "F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 "
            "B2.0 B3.0");
  // m == p: Megatron runs all forwards, then all backwards.
  EXPECT_EQ(warmup_forwards(kInterleaved, 1, 2, 2, 2), 4);
  EXPECT_EQ(render(pipeline_actions(kInterleaved, 1, 2, 2, 2)),
            "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
  // Warm-up is capped at m*v: p = 4, v = 2, m = 8, stage 0 wants 6 + 4 = 10 <= 16.
  EXPECT_EQ(warmup_forwards(kInterleaved, 0, 4, 8, 2), 10);
  EXPECT_EQ(warmup_forwards(kInterleaved, 0, 8, 16, 2), 22);
  EXPECT_EQ(warmup_forwards(kInterleaved, 7, 8, 16, 2), 8);
}

TEST(PipelineScheduleTest, ExecutorDetectsDeadlock) {
  // Stage 0 starting with a backward waits on stage 1's backward, which waits on stage 0's
  // forward: a cycle.
  std::vector<std::vector<PipelineAction>> bad = {
      {{Kind::backward, 0, 0}, {Kind::forward, 0, 0}},
      {{Kind::forward, 0, 0}, {Kind::backward, 0, 0}},
  };
  EXPECT_TRUE(execute(k1f1b, bad, 2, 1, 1, 1, 2).deadlock);
  // Stages disagreeing on the micro-batch order: stage 0's first backward waits on stage 1,
  // which waits for a forward that stage 0 runs only after that backward.
  std::vector<std::vector<PipelineAction>> bad2 = {
      {{Kind::forward, 0, 0}, {Kind::backward, 0, 0}, {Kind::forward, 1, 0}, {Kind::backward, 1, 0}},
      {{Kind::forward, 1, 0}, {Kind::backward, 1, 0}, {Kind::forward, 0, 0}, {Kind::backward, 0, 0}},
  };
  EXPECT_TRUE(execute(k1f1b, bad2, 2, 2, 1, 1, 2).deadlock);
  EXPECT_FALSE(execute(k1f1b, all_stages(k1f1b, 2, 2, 1), 2, 2, 1, 1, 2).deadlock);
}

TEST(PipelineScheduleTest, NoScheduleDeadlocks) {
  for (auto sch : {kGpipe, k1f1b, kInterleaved}) {
    for (auto [p, m, v] : grid(sch)) {
      const Timeline t = run(sch, p, m, v);
      EXPECT_FALSE(t.deadlock) << to_string(sch) << " p=" << p << " m=" << m << " v=" << v;
      for (int s = 0; s < p; ++s) EXPECT_NEAR(t.busy[s], m * 3.0, 1e-9);  // tf + tb = 3
    }
  }
}

// GPipe and 1F1B: bubble / iteration = (p-1)/(m+p-1), exactly, with t_b = 2 t_f.
TEST(PipelineScheduleTest, GpipeAndOneFOneBBubbleMatchesFormula) {
  for (auto sch : {kGpipe, k1f1b}) {
    for (int p : {2, 4, 8}) {
      for (int m : {1, 4, 8, 16}) {
        const Timeline t = run(sch, p, m, 1);
        ASSERT_FALSE(t.deadlock);
        const double ideal = m * 3.0;
        const double measured = (t.iteration_time - ideal) / t.iteration_time;
        const double expected = double(p - 1) / (m + p - 1);
        EXPECT_NEAR(measured, expected, 1e-12) << to_string(sch) << " p=" << p << " m=" << m;
        EXPECT_NEAR(bubble_fraction(sch, p, m, 1), expected, 1e-15);
        EXPECT_NEAR(bubble_time_over_ideal(sch, p, m, 1), double(p - 1) / m, 1e-15);
        // Absolute: the iteration lasts (m + p - 1)(t_f + t_b).
        EXPECT_NEAR(t.iteration_time, (m + p - 1) * 3.0, 1e-12);
      }
    }
  }
}

// Interleaved 1F1B: the bubble time shrinks by v, to (p-1)(t_f+t_b)/v.
TEST(PipelineScheduleTest, InterleavedBubbleShrinksByChunks) {
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int m : {p, 2 * p, 4 * p}) {
        const Timeline t = run(kInterleaved, p, m, v);
        ASSERT_FALSE(t.deadlock);
        const double ideal = m * 3.0;
        const double bubble = t.iteration_time - ideal;
        SCOPED_TRACE("p=" + std::to_string(p) + " v=" + std::to_string(v) +
                     " m=" + std::to_string(m));
        // 1F1B's bubble is (p-1)(t_f+t_b); interleaving divides it by v.
        EXPECT_NEAR(bubble, (p - 1) * 3.0 / v, 1e-9);
        EXPECT_NEAR(bubble / ideal, bubble_time_over_ideal(kInterleaved, p, m, v), 1e-12);
        EXPECT_NEAR(bubble / t.iteration_time, bubble_fraction(kInterleaved, p, m, v), 1e-12);
        EXPECT_NEAR(bubble_fraction(kInterleaved, p, m, v), double(p - 1) / (v * m + p - 1),
                    1e-15);
        EXPECT_LT(t.iteration_time, run(k1f1b, p, m, 1).iteration_time);
      }
    }
  }
}

// The bubble formulas do not depend on t_b = 2 t_f: check t_b = t_f and t_b = 3 t_f too.
TEST(PipelineScheduleTest, BubbleHoldsForOtherBackwardRatios) {
  for (double tb : {1.0, 3.0}) {
    for (int p : {2, 4}) {
      for (int m : {p, 3 * p}) {
        const double unit = 1.0 + tb;
        EXPECT_NEAR(run(kGpipe, p, m, 1, 1.0, tb).iteration_time, (m + p - 1) * unit, 1e-9);
        EXPECT_NEAR(run(k1f1b, p, m, 1, 1.0, tb).iteration_time, (m + p - 1) * unit, 1e-9);
        for (int v : {2, 3}) {
          EXPECT_NEAR(run(kInterleaved, p, m, v, 1.0, tb).iteration_time,
                      m * unit + (p - 1) * unit / v, 1e-9)
              << "tb=" << tb << " p=" << p << " m=" << m << " v=" << v;
        }
      }
    }
  }
}

// ZB-H1: every micro-batch's F, B and W once per stage, W after B; no deadlock; busy time as
// 1F1B's (the backward only cut in two).
TEST(PipelineScheduleTest, ZeroBubbleH1RunsEachPassOnceWithWeightAfterBackward) {
  for (auto [p, m, v] : grid(kZbH1)) {
    for (int s = 0; s < p; ++s) {
      const auto actions = pipeline_actions(kZbH1, s, p, m, v);
      ASSERT_EQ(actions.size(), 3u * m) << render(actions);
      std::map<std::pair<Kind, int>, int> at;
      for (int i = 0; i < static_cast<int>(actions.size()); ++i)
        EXPECT_TRUE(at.emplace(std::make_pair(actions[i].kind, actions[i].micro_batch), i).second) << render(actions);
      for (int mb = 0; mb < m; ++mb) {
        EXPECT_LT(at.at({Kind::forward, mb}), at.at({Kind::backward, mb})) << render(actions);
        EXPECT_LT(at.at({Kind::backward, mb}), at.at({Kind::weight, mb})) << render(actions);
      }
    }
    const Timeline t = run(kZbH1, p, m, v);
    EXPECT_FALSE(t.deadlock) << "p=" << p << " m=" << m;
    for (int s = 0; s < p; ++s) EXPECT_NEAR(t.busy[s], m * 3.0, 1e-9);
  }
}

// Qi et al. 2023: with t_f = t_b = t_w, ZB-H1's bubble is (p-1)(t_f + t_b - t_w), a third of
// 1F1B's (p-1)(t_f + t_b + t_w), once there are as many micro-batches as stages.
TEST(PipelineScheduleTest, ZeroBubbleH1BubbleIsAThirdOfOneFOneBs) {
  for (int p : {2, 4, 8}) {
    for (int m : {p, 2 * p, 4 * p}) {
      const Timeline zb = run(kZbH1, p, m, 1), ref = run(k1f1b, p, m, 1);
      ASSERT_FALSE(zb.deadlock);
      const double ideal = m * 3.0;
      EXPECT_NEAR(zb.iteration_time - ideal, (p - 1) * 1.0, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_NEAR(ref.iteration_time - ideal, (p - 1) * 3.0, 1e-9);
      EXPECT_NEAR((zb.iteration_time - ideal) / ideal, bubble_time_over_ideal(kZbH1, p, m, 1), 1e-12);
    }
  }
  // Fewer micro-batches than stages: still never slower than 1F1B.
  for (int p : {4, 8})
    for (int m : {1, 2, 3}) EXPECT_LE(run(kZbH1, p, m, 1).iteration_time, run(k1f1b, p, m, 1).iteration_time);
}

// ZB-H1 holds at most p micro-batches between F and W on any stage: 1F1B's peak (stage 0's).
TEST(PipelineScheduleTest, ZeroBubbleH1KeepsOneFOneBsPeakMicroBatches) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 4, 8, 16}) {
      int peak = 0;
      for (int s = 0; s < p; ++s) {
        const int held = max_in_flight_micro_batches(pipeline_actions(kZbH1, s, p, m, 1));
        EXPECT_LE(held, std::min(p, m)) << "p=" << p << " m=" << m << " stage " << s;
        peak = std::max(peak, held);
      }
      EXPECT_EQ(peak, std::min(p, m));
    }
  }
}

// ZB-V: the V placement (chunk 0 of stage s is virtual stage s, chunk 1 is 2p-1-s, so stage 0
// holds both ends of the model), and every (micro-batch, chunk)'s F, B and W once, in that order.
TEST(PipelineScheduleTest, ZeroBubbleVPlacesTwoChunksPerStageInAVAndRunsEachPassOnce) {
  EXPECT_EQ(virtual_stage(kZbV, 0, 1, 4), 1);
  EXPECT_EQ(virtual_stage(kZbV, 1, 1, 4), 6);
  EXPECT_EQ(virtual_stage(kZbV, 1, 0, 4), 7);
  EXPECT_EQ(virtual_stage(kInterleaved, 1, 0, 4), 4);
  for (int k = 0; k < 8; ++k) {
    const int s = stage_of_virtual_stage(kZbV, k, 4), c = chunk_of_virtual_stage(kZbV, k, 4);
    EXPECT_EQ(virtual_stage(kZbV, c, s, 4), k);
  }
  EXPECT_THROW(validate_pipeline(kZbV, 4, 8, 1), std::invalid_argument);
  EXPECT_THROW(validate_pipeline(kZbV, 4, 8, 3), std::invalid_argument);
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 5, 8, 16, 24}) {
      for (int s = 0; s < p; ++s) {
        const auto actions = pipeline_actions(kZbV, s, p, m, 2);
        ASSERT_EQ(actions.size(), 6u * m) << render(actions);
        std::map<std::tuple<Kind, int, int>, int> at;
        for (int i = 0; i < static_cast<int>(actions.size()); ++i)
          ASSERT_TRUE(at.emplace(std::make_tuple(actions[i].kind, actions[i].micro_batch, actions[i].chunk), i).second);
        for (int mb = 0; mb < m; ++mb)
          for (int c = 0; c < 2; ++c) {
            EXPECT_LT(at.at({Kind::forward, mb, c}), at.at({Kind::backward, mb, c})) << render(actions);
            EXPECT_LT(at.at({Kind::backward, mb, c}), at.at({Kind::weight, mb, c})) << render(actions);
          }
        // Never more than 1F1B's first stage: p micro-batches of the whole stage (2p chunk sets).
        EXPECT_LE(max_in_flight_micro_batches(actions), 2 * p) << "p=" << p << " m=" << m << " s=" << s;
      }
      const Timeline t = run(kZbV, p, m, 2);
      EXPECT_FALSE(t.deadlock) << "p=" << p << " m=" << m;
      for (int s = 0; s < p; ++s) EXPECT_NEAR(t.busy[s], m * 3.0, 1e-9);
    }
}

// A runtime sends on one FIFO stream per direction and a send completes when taken: each stage
// must take the messages of a peer's stream in the order that peer sent them, or both wait.
TEST(PipelineScheduleTest, ZeroBubbleVTakesEveryStreamsMessagesInTheOrderTheyWereSent) {
  for (int p : {2, 3, 4, 8})
    for (int m : {1, 3, 8, 16, 32}) {
      // (from, to) -> messages in send order / in take order; a message is (gradient?, k, mb).
      std::map<std::pair<int, int>, std::vector<std::tuple<bool, int, int>>> sent, taken;
      for (int s = 0; s < p; ++s)
        for (const PipelineAction& a : pipeline_actions(kZbV, s, p, m, 2)) {
          if (a.kind == Kind::weight) continue;
          const int k = virtual_stage(kZbV, a.chunk, s, p);
          const bool fwd = a.kind == Kind::forward;
          const int out_k = fwd ? k + 1 : k - 1, in_k = fwd ? k - 1 : k + 1;
          if (out_k >= 0 && out_k < 2 * p && stage_of_virtual_stage(kZbV, out_k, p) != s)
            sent[{s, stage_of_virtual_stage(kZbV, out_k, p)}].emplace_back(!fwd, out_k, a.micro_batch);
          if (in_k >= 0 && in_k < 2 * p && stage_of_virtual_stage(kZbV, in_k, p) != s)
            taken[{stage_of_virtual_stage(kZbV, in_k, p), s}].emplace_back(!fwd, k, a.micro_batch);
        }
      EXPECT_EQ(sent, taken) << "p=" << p << " m=" << m;
      EXPECT_EQ(sent.size(), p > 1 ? 2u * (p - 1) : 0u);
    }
}

// With t_f = t_b = t_w (the paper's assumption), ZB-V's order runs in its own unit-time length,
// which bubble_time_over_ideal reports, and once there are at least twice as many micro-batches
// as stages it idles less than ZB-H1 (the authors' table: no bubble at ZB-V's limit, a third of
// 1F1B's for ZB-H1).
TEST(PipelineScheduleTest, ZeroBubbleVIdlesLessThanZeroBubbleH1) {
  for (int p : {2, 4, 8}) {
    for (int m : {2 * p, 4 * p, 8 * p}) {
      // One chunk pass takes 1: t_f = 2 for the whole stage, t_b = 4 (B 2 + W 2).
      const Timeline zbv = run(kZbV, p, m, 2, 2.0, 4.0), zbh1 = run(kZbH1, p, m, 1, 2.0, 4.0);
      ASSERT_FALSE(zbv.deadlock);
      const double ideal = m * 6.0;
      EXPECT_NEAR((zbv.iteration_time - ideal) / ideal, bubble_time_over_ideal(kZbV, p, m, 2), 1e-12) << "p=" << p << " m=" << m;
      EXPECT_LT(zbv.iteration_time, zbh1.iteration_time) << "p=" << p << " m=" << m;
      EXPECT_LT(bubble_time_over_ideal(kZbV, p, m, 2), 0.5 * bubble_time_over_ideal(kZbH1, p, m, 1) + 1e-12);
    }
  }
}

TEST(PipelineScheduleTest, MaxInFlight) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 4, 8, 16}) {
      for (int s = 0; s < p; ++s) {
        EXPECT_EQ(max_in_flight_micro_batches(pipeline_actions(kGpipe, s, p, m, 1)), m);
        EXPECT_EQ(max_in_flight_micro_batches(pipeline_actions(k1f1b, s, p, m, 1)),
                  std::min(m, p - s))
            << "p=" << p << " m=" << m << " s=" << s;
      }
    }
  }
  // Interleaved: warm-up + 1 chunk activation sets while there is a steady phase.
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3}) {
      for (int m : {2 * p, 4 * p}) {
        for (int s = 0; s < p; ++s) {
          const auto actions = pipeline_actions(kInterleaved, s, p, m, v);
          const int w = warmup_forwards(kInterleaved, s, p, m, v);
          EXPECT_EQ(max_in_flight_micro_batches(actions), std::min(w + 1, m * v));
          const auto per_chunk = max_in_flight_per_chunk(actions, v);
          ASSERT_EQ(per_chunk.size(), static_cast<std::size_t>(v));
          int sum = 0;
          for (int c = 0; c < v; ++c) {
            EXPECT_GE(per_chunk[c], 1);
            EXPECT_LE(per_chunk[c], m);
            sum += per_chunk[c];
          }
          EXPECT_GE(sum, max_in_flight_micro_batches(actions));
        }
        // Stage 0 holds (v-1)p + 2(p-1) + 1 chunk sets: p + (p-1)/v stages' worth, a little
        // more than 1F1B's p (Narayanan et al. 2021).
        EXPECT_EQ(max_in_flight_micro_batches(pipeline_actions(kInterleaved, 0, p, m, v)),
                  std::min((v - 1) * p + 2 * (p - 1) + 1, m * v));
      }
    }
  }
  // m == p: all forwards first, so every stage holds all m*v sets.
  EXPECT_EQ(max_in_flight_micro_batches(pipeline_actions(kInterleaved, 3, 4, 4, 2)), 8);
  EXPECT_THROW(max_in_flight_per_chunk({{Kind::forward, 0, 2}}, 2), std::invalid_argument);
  EXPECT_EQ(max_in_flight_micro_batches({}), 0);
}

}  // namespace
}  // namespace tandem
