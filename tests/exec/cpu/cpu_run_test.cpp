// The CPU backend end to end (exec/cpu/cpu_run.hpp): real training of gpt-tiny with the
// data-parallel strategy, equivalence across data-parallel degrees, loss going down, failures
// that end the run with one clear error instead of a hang, and a measured trace whose op ids are
// exactly the simulator's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "tests/exec/cpu/gpt_tiny.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/mlp.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/ops.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem::exec::cpu {
namespace {

using Clock = std::chrono::steady_clock;

using testing::gpt_tiny;

// gpt-tiny (dropout on), global batch 8 sequences of 32 tokens in micro-batches of 2.
std::unique_ptr<DataParallel> gpt_tiny_dp(int dp, DType precision = DType::bf16) {
  const TrainingConfig training = testing::gpt_tiny_training(precision);
  ParallelConfig parallel;
  parallel.data_parallel_size = dp;
  parallel.ddp_bucket_size = 30'000;  // several buckets, reduced while backward goes on
  return std::make_unique<DataParallel>(gpt_tiny(), training, parallel, std::vector<double>{});
}

RunOptions options_for(const Model& model, int iterations) {
  RunOptions o;
  o.iterations = iterations;
  configure_for_model(o, model, 32);
  o.timeout_s = 20;
  return o;
}

// max |a - b| / (|b| + 1e-3·max|b|) over a tensor: relative, with a floor of 0.1% of the
// tensor's scale so that elements near zero are judged against the tensor's magnitude.
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float scale = 0;
  for (float v : b) scale = std::max(scale, std::abs(v));
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) /
                                (std::abs(static_cast<double>(b[i])) + 1e-3 * scale));
  return worst;
}

// max_relative_difference for a parameter of gpt-tiny after `steps` AdamW steps (lr 1e-3). The
// key bias's gradient is exactly zero in exact arithmetic (softmax ignores a constant added to a
// row's scores), so its computed gradient is pure round-off, and AdamW turns any nonzero noise
// into a step of ~lr: different noise, different (tiny) values. Those elements are only checked
// against AdamW's step bound; the rest of the tensor is compared like any other.
double parameter_difference(const std::string& name, std::vector<float> a, std::vector<float> b,
                            int steps) {
  if (name.find("attn.qkv.bias") != std::string::npos) {
    const std::size_t h = 64;  // Q | K | V, 64 each
    for (std::size_t i = h; i < 2 * h; ++i) {
      EXPECT_LE(std::abs(a[i] - b[i]), 2 * steps * 1e-3 * 1.01) << name << " key bias " << i;
      a[i] = b[i] = 0;
    }
  }
  return max_relative_difference(a, b);
}

// ---------------------------------------------------------------- the gold test

// Data parallelism does not change the maths: dp=2 and dp=4 (even split of the same global
// batch of 4 micro-batches, same dropout masks) give dp=1's loss and parameters up to fp32
// round-off: the gradient sums are grouped differently (per rank, then across ranks in rank
// order, instead of one accumulation over the 4 micro-batches). Measured (bf16 parameters = fp32
// storage + fp32 master, AdamW lr 1e-3, 3 steps): iteration 0's loss is bit-identical, the next
// ones differ by ~2e-8 relative; parameters by <= 5e-5 relative with a floor of 0.1% of each
// tensor's largest value (AdamW divides by sqrt(v), which magnifies round-off in elements whose
// gradient is small), most weights by ~1e-5.
TEST(CpuRun, DataParallelMatchesOneRankOnTheSameGlobalBatch) {
  constexpr double kLossTolerance = 1e-6;   // relative
  constexpr double kParamTolerance = 2e-4;  // relative, floored at 0.1% of the tensor's scale
  std::vector<RunResult> runs;
  for (int dp : {1, 2, 4}) {
    auto strategy = gpt_tiny_dp(dp);
    RunOptions o = options_for(*gpt_tiny(), 3);
    o.capture_parameters = true;
    runs.push_back(run_cpu(*strategy, o));
  }
  const RunResult& one = runs[0];
  ASSERT_EQ(one.iterations.size(), 3u);
  for (std::size_t k = 1; k < runs.size(); ++k) {
    const RunResult& many = runs[k];
    ASSERT_EQ(many.iterations.size(), 3u);
    for (std::size_t it = 0; it < 3; ++it) {
      EXPECT_EQ(many.iterations[it].micro_batches, 4);
      const double rel = std::abs(many.iterations[it].loss - one.iterations[it].loss) /
                         std::abs(one.iterations[it].loss);
      EXPECT_LT(rel, kLossTolerance) << "dp=" << many.world_size << " iteration " << it;
      if (it == 0) EXPECT_EQ(many.iterations[0].loss, one.iterations[0].loss) << "same weights, same data";
    }
    double worst = 0;
    std::string worst_name;
    ASSERT_EQ(many.parameters[0].size(), one.parameters[0].size());
    for (const auto& [name, values] : one.parameters[0]) {
      const auto it = many.parameters[0].find(name);
      ASSERT_NE(it, many.parameters[0].end()) << name;
      const double d = parameter_difference(name, it->second, values, 3);
      if (std::getenv("TANDEM_VERBOSE")) std::cout << "    " << name << " " << d << "\n";
      if (d > worst) {
        worst = d;
        worst_name = name;
      }
    }
    std::cout << "[ measured ] dp=" << many.world_size << ": loss relative difference "
              << std::abs(many.iterations[1].loss - one.iterations[1].loss) / one.iterations[1].loss << ", "
              << std::abs(many.iterations[2].loss - one.iterations[2].loss) / one.iterations[2].loss << "; worst parameter difference " << worst
              << " (" << worst_name << ")\n";
    EXPECT_LT(worst, kParamTolerance) << worst_name;
    // Replicas hold bit-identical parameters (every rank receives the same reduced bits).
    for (std::size_t r = 1; r < many.parameters.size(); ++r)
      EXPECT_TRUE(many.parameters[r] == many.parameters[0]) << "rank " << r << " diverged";
  }
  // The weights moved: the comparison is not trivially between initial values.
  RunOptions o = options_for(*gpt_tiny(), 1);
  o.capture_parameters = true;
  o.iterations = 1;
  EXPECT_NE(one.parameters[0].at("layer0.attn.qkv.weight"),
            run_cpu(*gpt_tiny_dp(1), o).parameters[0].at("layer0.attn.qkv.weight"));
}

TEST(CpuRun, RunsAreBitForBitReproducible) {
  auto strategy = gpt_tiny_dp(2, DType::fp32);
  RunOptions o = options_for(*gpt_tiny(), 2);
  o.capture_parameters = true;
  const RunResult a = run_cpu(*strategy, o);
  const RunResult b = run_cpu(*strategy, o);
  EXPECT_EQ(a.iterations[1].loss, b.iterations[1].loss);
  EXPECT_TRUE(a.parameters == b.parameters);
}

TEST(CpuRun, MlpDataParallelMatchesOneRank) {
  MlpConfig cfg;
  cfg.input_size = 16;
  cfg.hidden_sizes = {32, 32};
  cfg.output_size = 4;
  auto model = std::make_shared<MlpModel>(cfg);
  TrainingConfig training;
  training.global_batch_size = 32;
  training.micro_batch_size = 4;
  training.precision = DType::fp32;
  training.lr = 1e-2f;
  std::vector<RunResult> runs;
  for (int dp : {1, 2}) {
    ParallelConfig parallel;
    parallel.data_parallel_size = dp;
    DataParallel strategy(model, training, parallel, {});
    RunOptions o;
    o.iterations = 20;
    configure_for_model(o, *model, 1);
    o.capture_parameters = true;
    runs.push_back(run_cpu(strategy, o));
  }
  for (int it = 0; it < 20; ++it)
    EXPECT_NEAR(runs[1].iterations[it].loss, runs[0].iterations[it].loss,
                1e-5 * runs[0].iterations[it].loss);
  for (const auto& [name, values] : runs[0].parameters[0])
    EXPECT_LT(max_relative_difference(runs[1].parameters[0].at(name), values), 1e-4) << name;
  EXPECT_LT(runs[0].iterations[19].loss, runs[0].iterations[0].loss - 0.1) << "the MLP learns";
}

// A pipeline (the hybrid strategy with 2 stages, 1F1B) moves activations and gradients between
// ranks with real send/recv: same loss and parameters as data parallelism, up to round-off.
TEST(CpuRun, TwoStagePipelineMatchesDataParallel) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / ("tandem-cpu-pp2-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "name: pp2\nmodel: gpt-tiny\ncluster: localhost\n"
                         "training: {global_batch_size: 8, micro_batch_size: 2, seq_length: 32, "
                         "precision: fp32, lr: 0.001}\n"
                         "strategy: {type: hybrid, pipeline_model_parallel_size: 2}\n";
  const Scenario scenario = load_scenario(path.string());
  auto pipeline = make_strategy(scenario);
  ASSERT_EQ(pipeline->world_size(), 2);
  RunOptions o = options_for(*gpt_tiny(), 3);
  o.capture_parameters = true;
  const RunResult piped = run_cpu(*pipeline, o);
  const RunResult reference = run_cpu(*gpt_tiny_dp(1, DType::fp32), o);
  for (int it = 0; it < 3; ++it)
    EXPECT_NEAR(piped.iterations[it].loss, reference.iterations[it].loss, 1e-6 * reference.iterations[it].loss);
  // Stage 0 holds the embedding and layer 0, stage 1 layer 1 and the head (+ the tied copy).
  std::size_t compared = 0;
  for (const auto& stage : piped.parameters)
    for (const auto& [name, values] : stage) {
      if (name == "lm_head.word_embedding_copy.weight") continue;  // compared as embedding.word.weight
      const std::string& ref = name;
      ASSERT_TRUE(reference.parameters[0].count(ref)) << name;
      EXPECT_LT(parameter_difference(name, values, reference.parameters[0].at(ref), 3), 2e-4) << name;
      ++compared;
    }
  EXPECT_EQ(compared, reference.parameters[0].size());
}

// ---------------------------------------------------------------- learning

TEST(CpuRun, GptTinyLossFallsOverThirtyIterations) {
  const Scenario scenario = load_scenario("gpt-tiny-localhost");
  auto strategy = make_strategy(scenario);
  auto model = make_model(scenario.model);
  RunOptions o;
  configure_for_model(o, *model, scenario.training.seq_length);
  o.iterations = 30;
  o.record_trace = false;
  std::vector<double> seen;
  o.on_iteration = [&](const IterationStats& s) { seen.push_back(s.loss); };
  const RunResult r = run_cpu(*strategy, o);
  ASSERT_EQ(r.iterations.size(), 30u);
  EXPECT_EQ(seen.size(), 30u);
  const double first = r.iterations.front().loss, last = r.iterations.back().loss;
  std::cout << "[ measured ] gpt-tiny loss:";
  for (const auto& s : r.iterations) if (s.iteration % 5 == 0 || s.iteration == 29) std::cout << " " << s.loss;
  std::cout << "\n";
  EXPECT_NEAR(first, std::log(256.0), 0.15) << "a fresh model is uniform over the bytes";
  EXPECT_LT(last, first - 1.5);
  EXPECT_GT(r.tokens_per_s, 0);
  EXPECT_GT(r.ranks.at(0).peak_memory_bytes, 0);
  EXPECT_GT(r.ranks.at(1).comm_busy_s, 0);
}

// ---------------------------------------------------------------- failures

// gpt-tiny data-parallel over `dp` ranks with op `op` failing on rank `rank`: the run ends with
// one error naming the rank and the op, well before the 30 s timeout (no rank waits for it).
void expect_injected_failure_ends_the_run(int dp, int rank, const std::string& op) {
  auto strategy = gpt_tiny_dp(dp);
  RunOptions o = options_for(*gpt_tiny(), 2);
  o.timeout_s = 30;
  o.fail_rank = rank;
  o.fail_op = op;
  const auto t0 = Clock::now();
  try {
    run_cpu(*strategy, o);
    FAIL() << "the run did not fail";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(rank) + " failed in op " + op + ": injected failure");
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "the other ranks must not wait for the timeout";
}

TEST(CpuRun, AFailedComputeOpEndsTheRunWithOneErrorNamingRankAndOp) {
  expect_injected_failure_ends_the_run(2, 1, "mb0.layer0.attn.qkv.fwd");
}

TEST(CpuRun, AFailedCollectiveOnACommStreamEndsTheRun) {
  expect_injected_failure_ends_the_run(4, 2, "dp.bucket1.all_reduce");
}

// Rank 1 never joins the all-reduce rank 0 waits for: the run ends after the timeout.
class Lonely final : public Strategy {
 public:
  std::string name() const override { return "lonely"; }
  int world_size() const override { return 2; }
  std::int64_t sequences_per_iteration() const override { return 1; }
  std::unique_ptr<RankProgram> program_for(int) const override {
    struct Program final : RankProgram {
      Tensor w;
      void setup(Runtime& rt) override { w = rt.alloc("w", {16}, DType::fp32, MemCategory::parameters); }
      void train_step(Runtime& rt, int) override {
        if (rt.rank() != 0) return;
        Group g;
        g.id = 0;
        g.ranks = {0, 1};
        rt.wait(ops::all_reduce(rt, Phase::backward, "lonely.all_reduce", w, g, {Stream::dp_comm, {}}));
      }
    };
    return std::make_unique<Program>();
  }
};

// A stream's ops complete in issue order, posted sends too: rank 0 sends A then B on one stream;
// rank 1 posts its receive of B at once and of A 30 ms later, on two streams. Once rank 0's iteration has ended
// (every stream drained), it overwrites A's buffer, as a parameter server reuses its sums; rank 1
// must still have received A's old value. (Before: B completed first, the stream's last handle said
// done, and A was copied after the overwrite: a server's workers pulled wrong sums under load.)
class SendTwice final : public Strategy {
 public:
  std::string name() const override { return "send-twice"; }
  int world_size() const override { return 2; }
  std::int64_t sequences_per_iteration() const override { return 1; }
  std::unique_ptr<RankProgram> program_for(int) const override {
    struct Program final : RankProgram {
      Tensor a, b;
      void setup(Runtime& rt) override {
        a = rt.alloc("a", {1024}, DType::fp32, MemCategory::comm_buffers);
        b = rt.alloc("b", {1024}, DType::fp32, MemCategory::comm_buffers);
      }
      void train_step(Runtime& rt, int iteration) override {
        auto& device = dynamic_cast<CpuDevice&>(rt);
        if (rt.rank() == 0) {
          std::fill_n(device.data(a), 1024, static_cast<float>(iteration));
          ops::send(rt, Phase::backward, "a", a, 1, {Stream::pp_send, {}}, 1);
          ops::send(rt, Phase::backward, "b", b, 1, {Stream::pp_send, {}}, 2);
          rt.synchronize();
          std::fill_n(device.data(a), 1024, -1.0f);  // reused: A must be gone by now
          return;
        }
        const Handle got_b = ops::recv(rt, Phase::backward, "b", b, 0, {Stream::pp_recv, {}}, 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // B could be taken meanwhile
        rt.wait(ops::recv(rt, Phase::backward, "a", a, 0, {Stream::dp_comm, {}}, 1));
        rt.wait(got_b);
        if (device.data(a)[0] != static_cast<float>(iteration))
          throw std::runtime_error("A arrived as " + std::to_string(device.data(a)[0]) + " in iteration " +
                                   std::to_string(iteration));
      }
    };
    return std::make_unique<Program>();
  }
};

TEST(CpuRun, AStreamsPostedSendsCompleteInIssueOrder) {
  RunOptions o;
  o.data = std::make_shared<TextCorpus>(256, 0);
  o.iterations = 3;
  o.timeout_s = 10;
  EXPECT_NO_THROW(run_cpu(SendTwice{}, o));
}

TEST(CpuRun, AMissingPeerTimesOutInsteadOfHanging) {
  RunOptions o;
  o.data = std::make_shared<TextCorpus>(256, 0);
  o.timeout_s = 0.3;
  const auto t0 = Clock::now();
  try {
    run_cpu(Lonely{}, o);
    FAIL() << "the run did not fail";
  } catch (const RunError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("rank 0 failed in op lonely.all_reduce: timed out after 0.3 s", 0), 0u) << what;
    EXPECT_NE(what.find("rank(s) 1 never joined"), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

// ---------------------------------------------------------------- measured vs predicted

std::vector<std::string> op_keys(const Trace& trace) {
  std::vector<std::string> keys;
  for (const TraceRecord& r : trace.records)
    keys.push_back(std::to_string(r.rank) + " " + std::to_string(r.iteration) + " " + r.op_id);
  std::sort(keys.begin(), keys.end());
  return keys;
}

void expect_simulators_op_ids(const Scenario& scenario) {
  const int iterations = 2;
  auto child = sim_test::run_in_child([&] {
    sim::SimulationOptions options = scenario.simulation;
    options.warmup_iterations = 0;
    options.iterations = iterations;
    options.record_trace = true;
    auto strategy = make_strategy(scenario);
    const sim::SimulationResult result = sim::simulate(*strategy, scenario.cluster, options);
    std::ostringstream out;
    for (const auto& rank : result.ranks) out << static_cast<long long>(rank.peak_memory_bytes) << " ";
    out << "\n";
    for (const std::string& key : op_keys(result.trace)) out << key << "\n";
    return out.str();
  }, 120);
  ASSERT_TRUE(child.ok) << child.describe();

  auto strategy = make_strategy(scenario);
  RunOptions o;
  configure_for_model(o, *make_model(scenario.model), scenario.training.seq_length);
  o.iterations = iterations;
  const RunResult measured = run_cpu(*strategy, o);
  EXPECT_EQ(measured.trace.source, "cpu");
  std::ostringstream mine;
  for (const auto& rank : measured.ranks) mine << static_cast<long long>(rank.peak_memory_bytes) << " ";
  mine << "\n";
  const std::vector<std::string> keys = op_keys(measured.trace);
  for (const std::string& key : keys) mine << key << "\n";
  EXPECT_GT(keys.size(), 100u);
  // Same multiset of (rank, iteration, op id), and the same peak memory (one ledger, one truth).
  EXPECT_EQ(mine.str(), child.output);
  // Every record is a sane interval on the run's clock.
  for (const TraceRecord& r : measured.trace.records) {
    ASSERT_GE(r.start_s, 0) << r.op_id;
    ASSERT_GE(r.end_s, r.start_s) << r.op_id;
  }
}

TEST(CpuRun, MeasuredTraceHasExactlyTheSimulatorsOpIds) { expect_simulators_op_ids(load_scenario("gpt-tiny-localhost")); }

// The same with every kind of collective the strategies issue: vocab-parallel loss, sequence-
// parallel reduce-scatters and all-gathers (out of place), their gradient all-reduce, ZeRO-3
// parameter gathers and gradient reduce-scatters into partitions.
TEST(CpuRun, MeasuredTraceHasTheSimulatorsOpIdsUnderTensorSequenceAndZero3) {
  for (const std::string strategy : {"tensor_model_parallel_size: 2, sequence_parallel: true",
                                     "data_parallel_size: 2, zero_stage: 3"}) {
    SCOPED_TRACE(strategy);
    const std::filesystem::path path = std::filesystem::temp_directory_path() / ("tandem-cpu-op-ids-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path) << "name: op-ids\nmodel: gpt-tiny\ncluster: localhost\n"
                           "training: {global_batch_size: 8, micro_batch_size: 2, seq_length: 32, "
                           "precision: bf16, lr: 0.001}\n"
                           "strategy: {type: hybrid, " << strategy << "}\n";
    expect_simulators_op_ids(load_scenario(path.string()));
  }
}

}  // namespace
}  // namespace tandem::exec::cpu
