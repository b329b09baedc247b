// Synchronous parameter servers trained for real on the CPU backend: the servers' sums are the
// all-reduce's, so training matches synchronous data parallelism - exactly with two workers in
// fp32 (a + b is b + a), within the equivalence tolerance with four (another order of additions).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "exec/cpu/cpu_run.hpp"
#include "tests/exec/cpu/gpt_tiny.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem::exec::cpu {
namespace {

using testing::gpt_tiny;

ParallelConfig parallel_config(int workers, int servers, int staleness = 0, bool servers_step = false) {
  ParallelConfig parallel;
  parallel.data_parallel_size = workers;
  parallel.parameter_servers = servers;
  parallel.ddp_bucket_size = 20'000;  // several buckets, so pushes overlap backward and each other
  parallel.parameter_server_partition_bytes = 4'000;  // tensors cut into parts: pushes of parts at offsets
  parallel.parameter_server_staleness = staleness;
  parallel.parameter_server_optimizer = servers_step;
  return parallel;
}

DataParallel strategy(int workers, int servers, DType precision, int staleness = 0, bool servers_step = false) {
  return DataParallel(gpt_tiny(), testing::gpt_tiny_training(precision),
                      parallel_config(workers, servers, staleness, servers_step), {});
}

// Asynchronous servers, their order of pushes drawn with `jitter` from `seed`.
DataParallel asynchronous(int workers, int servers, double jitter = 0, std::uint64_t seed = 0) {
  ParallelConfig parallel = parallel_config(workers, servers);
  parallel.parameter_server_asynchronous = true;
  parallel.parameter_server_jitter = jitter;
  parallel.parameter_server_seed = seed;
  return DataParallel(gpt_tiny(), testing::gpt_tiny_training(DType::fp32), parallel, {});
}

RunResult train(const DataParallel& s, int steps, const std::string& checkpoint = "", const std::string& resume = "") {
  RunOptions o;
  o.checkpoint_path = checkpoint;
  o.resume_path = resume;
  o.iterations = steps;
  configure_for_model(o, *gpt_tiny(), 32);
  o.capture_parameters = true;
  o.record_trace = false;
  o.timeout_s = 60;
  return run_cpu(s, o);
}

// The largest difference between two runs' assembled parameters, as a fraction of the
// equivalence tests' bound 1e-4·|b| + 2e-3·lr·steps (tests/exec/cpu/equivalence_test.cpp); 0: equal.
double max_difference(const RunResult& a, const RunResult& b, int steps) {
  double worst = 0;
  EXPECT_EQ(a.global_parameters.size(), b.global_parameters.size());
  for (const auto& [name, values] : a.global_parameters) {
    const auto it = b.global_parameters.find(name);
    if (it == b.global_parameters.end()) {
      ADD_FAILURE() << name << " missing";
      continue;
    }
    for (std::size_t i = 0; i < values.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(values[i]) - it->second[i]) /
                                  (1e-4 * std::abs(static_cast<double>(it->second[i])) + 2e-3 * 1e-3 * steps));
  }
  return worst;
}

TEST(ParameterServerTraining, TwoWorkersInFp32TrainExactlyAsDataParallel) {
  const RunResult reference = train(strategy(2, 0, DType::fp32), 3);
  for (int servers : {1, 2}) {
    const RunResult ps = train(strategy(2, servers, DType::fp32), 3);
    ASSERT_EQ(ps.iterations.size(), reference.iterations.size());
    EXPECT_EQ(ps.world_size, 2 + servers);  // the servers ran as ranks of their own
    for (std::size_t i = 0; i < ps.iterations.size(); ++i)
      EXPECT_EQ(ps.iterations[i].loss, reference.iterations[i].loss) << servers << " server(s), step " << i;
    EXPECT_EQ(max_difference(ps, reference, 3), 0.0) << servers << " server(s)";
  }
}

TEST(ParameterServerTraining, FourWorkersInBf16StayWithinTheEquivalenceTolerance) {
  const RunResult reference = train(strategy(4, 0, DType::bf16), 3);
  const RunResult ps = train(strategy(4, 2, DType::bf16), 3);
  ASSERT_EQ(ps.iterations.size(), reference.iterations.size());
  // The equivalence tests' tolerances: losses within 1e-5 relative, parameters within the bound.
  for (std::size_t i = 0; i < ps.iterations.size(); ++i)
    EXPECT_NEAR(ps.iterations[i].loss, reference.iterations[i].loss, 1e-5 * std::abs(reference.iterations[i].loss))
        << "step " << i;
  EXPECT_LT(max_difference(ps, reference, 3), 1.0);
  EXPECT_LT(ps.iterations.back().loss, ps.iterations.front().loss);
}

TEST(ParameterServerTraining, ACheckpointHoldsTheWorkersModelAndResumesUnderAnotherStrategy) {
  // The servers hold only sums: the checkpoint is the workers' model and optimizer state, which
  // plain data parallelism resumes, continuing as the uninterrupted run does.
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / ("tandem-ps-" + std::to_string(::getpid()) + ".ck");
  const RunResult whole = train(strategy(2, 0, DType::fp32), 4);
  ASSERT_NO_THROW(train(strategy(2, 1, DType::fp32), 2, path.string()));
  const RunResult resumed = train(strategy(2, 0, DType::fp32), 2, "", path.string());
  EXPECT_EQ(resumed.first_iteration, 2);
  ASSERT_EQ(resumed.iterations.size(), 2u);
  EXPECT_EQ(resumed.iterations[0].loss, whole.iterations[2].loss);
  EXPECT_EQ(resumed.iterations[1].loss, whole.iterations[3].loss);
  fs::remove(path);
}

// Bounded staleness 1: step 0 makes no update and step 1 makes step 0's, so two stale steps leave
// the parameters of one synchronous step, bit for bit; the third then differs (its gradient was
// taken at the parameters before that update).
TEST(ParameterServerTraining, StaleByOneAppliesEachStepsUpdateOneStepLate) {
  const RunResult one = train(strategy(2, 1, DType::fp32), 1);
  const RunResult two = train(strategy(2, 0, DType::fp32), 2);
  const RunResult stale2 = train(strategy(2, 1, DType::fp32, 1), 2);
  const RunResult stale3 = train(strategy(2, 1, DType::fp32, 1), 3);
  EXPECT_EQ(max_difference(stale2, one, 1), 0.0);
  EXPECT_EQ(stale2.iterations[0].loss, one.iterations[0].loss);
  // Step 1 computed its loss at the initial parameters, not at step 0's.
  EXPECT_NE(stale2.iterations[1].loss, two.iterations[1].loss);
  EXPECT_GT(max_difference(stale3, two, 2), 0.0);
}

TEST(ParameterServerTraining, StaleSumsInFlightAreCheckpointedAndResumeExactlyOnAnyNumberOfServers) {
  // At a step's end the servers hold the sums not yet pulled: training state, saved by slot and
  // bucket, so a resumed run (with one server or two) applies them as the uninterrupted run does.
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / ("tandem-ssp-" + std::to_string(::getpid()) + ".ck");
  const RunResult whole = train(strategy(2, 1, DType::fp32, 2), 5);
  ASSERT_NO_THROW(train(strategy(2, 1, DType::fp32, 2), 3, path.string()));
  for (int servers : {1, 2}) {
    const RunResult resumed = train(strategy(2, servers, DType::fp32, 2), 2, "", path.string());
    ASSERT_EQ(resumed.iterations.size(), 2u);
    EXPECT_EQ(resumed.iterations[0].loss, whole.iterations[3].loss) << servers << " server(s)";
    EXPECT_EQ(resumed.iterations[1].loss, whole.iterations[4].loss) << servers << " server(s)";
    EXPECT_EQ(max_difference(resumed, whole, 5), 0.0) << servers << " server(s)";
  }
  // Another staleness has other sums in flight: refused, naming what is missing.
  try {
    train(strategy(2, 1, DType::fp32, 0), 1, "", path.string());
    ADD_FAILURE() << "a stale checkpoint resumed synchronously";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("ps.pending"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

// Staleness costs convergence: the same eight steps reach a lower loss the fresher the update
// (the figure for the README comes from this test's output).
TEST(ParameterServerTraining, StalerUpdatesTrainSlowerButStillTrain) {
  std::vector<double> last;
  for (int staleness : {0, 1, 3}) {
    const RunResult r = train(strategy(2, 1, DType::fp32, staleness), 8);
    ASSERT_EQ(r.iterations.size(), 8u);
    double tail = 0;
    for (int i = 5; i < 8; ++i) tail += r.iterations[static_cast<std::size_t>(i)].loss / 3;
    std::printf("staleness %d: loss %.4f -> %.4f (mean of steps 5-7)\n", staleness, r.iterations[0].loss, tail);
    EXPECT_LT(tail, r.iterations[0].loss) << "staleness " << staleness;
    last.push_back(tail);
  }
  EXPECT_LT(last[0], last[1]);
  EXPECT_LT(last[1], last[2]);
}

// Servers that step the optimizer (the classic parameter server): they apply AdamW to their
// partitions of the summed gradients and send parameters back; workers hold no optimizer state.
// The same update as every worker's own step: exactly so with two workers in fp32, within the
// equivalence tolerance in bf16 (the fp32 masters sit on the servers).
TEST(ParameterServerTraining, ServersSteppingTheOptimizerTrainAsDataParallel) {
  const RunResult reference = train(strategy(2, 0, DType::fp32), 3);
  for (int servers : {1, 2}) {
    const RunResult ps = train(strategy(2, servers, DType::fp32, 0, /*servers_step=*/true), 3);
    ASSERT_EQ(ps.iterations.size(), reference.iterations.size());
    for (std::size_t i = 0; i < ps.iterations.size(); ++i)
      EXPECT_EQ(ps.iterations[i].loss, reference.iterations[i].loss) << servers << " server(s), step " << i;
    EXPECT_EQ(max_difference(ps, reference, 3), 0.0) << servers << " server(s)";
    // The workers keep no optimizer state; the servers hold it all.
    EXPECT_EQ(ps.ranks[0].memory_at_peak.by_category[static_cast<int>(MemCategory::optimizer_state)], 0);
    EXPECT_GT(ps.ranks[2].memory_at_peak.by_category[static_cast<int>(MemCategory::optimizer_state)], 0);
  }
  const RunResult bf16 = train(strategy(4, 0, DType::bf16), 3);
  const RunResult ps = train(strategy(4, 2, DType::bf16, 0, true), 3);
  for (std::size_t i = 0; i < ps.iterations.size(); ++i)
    EXPECT_NEAR(ps.iterations[i].loss, bf16.iterations[i].loss, 1e-5 * std::abs(bf16.iterations[i].loss)) << i;
  EXPECT_LE(max_difference(ps, bf16, 3), 1.0);
}

// The servers' optimizer is training state, under the data-parallel run's names: a checkpoint of
// one resumes as the other.
TEST(ParameterServerTraining, AServersOptimizerCheckpointResumesAsDataParallel) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("tandem-ps-opt-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const RunResult straight = train(strategy(2, 0, DType::bf16), 4);
  train(strategy(2, 2, DType::bf16, 0, true), 2, dir + "/ps.ck");
  const RunResult resumed = train(strategy(2, 0, DType::bf16), 2, "", dir + "/ps.ck");
  ASSERT_EQ(resumed.iterations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(resumed.iterations[i].loss, straight.iterations[i + 2].loss, 1e-5 * std::abs(straight.iterations[i + 2].loss));
  std::filesystem::remove_all(dir);
}

// Asynchronous servers with one worker: nobody else updates in between, so each update is the
// worker's own, as one replica's step (exactly: the same AdamW on the same fp32 values).
TEST(ParameterServerTraining, AsynchronousServersWithOneWorkerTrainAsOneReplica) {
  const RunResult reference = train(strategy(1, 0, DType::fp32), 3);
  for (int servers : {1, 2}) {
    const RunResult ps = train(asynchronous(1, servers), 3);
    ASSERT_EQ(ps.iterations.size(), reference.iterations.size());
    for (std::size_t i = 0; i < ps.iterations.size(); ++i)
      EXPECT_EQ(ps.iterations[i].loss, reference.iterations[i].loss) << servers << " server(s), step " << i;
    EXPECT_EQ(max_difference(ps, reference, 3), 0.0) << servers << " server(s)";
  }
}

// Two workers: worker 1's first gradient is taken at the initial parameters but applied after
// worker 0's update (stale by one), so the run leaves synchronous training at once; it still
// trains, and the same order (the seed's) gives the same run bit for bit.
TEST(ParameterServerTraining, AsynchronousWorkersStepOnParametersOthersUpdatedReproduciblyPerSeed) {
  const RunResult sync = train(strategy(2, 1, DType::fp32, 0, true), 6);
  const RunResult a = train(asynchronous(2, 1), 6);
  const RunResult again = train(asynchronous(2, 1), 6);
  ASSERT_EQ(a.iterations.size(), 6u);
  EXPECT_EQ(a.iterations[0].loss, sync.iterations[0].loss);  // both start at the initial parameters
  EXPECT_NE(a.iterations[2].loss, sync.iterations[2].loss);
  EXPECT_GT(max_difference(a, sync, 6), 1.0);
  for (std::size_t i = 0; i < a.iterations.size(); ++i) EXPECT_EQ(a.iterations[i].loss, again.iterations[i].loss) << i;
  EXPECT_EQ(max_difference(a, again, 6), 0.0);
  EXPECT_LT(a.iterations.back().loss, a.iterations.front().loss);
  // Another seed with jitter is another order of pushes, so another run.
  const RunResult shuffled = train(asynchronous(4, 2, 0.5, 1), 4), reshuffled = train(asynchronous(4, 2, 0.5, 2), 4);
  EXPECT_GT(max_difference(shuffled, reshuffled, 4), 0.0);
}

TEST(ParameterServerTraining, AsynchronousServersRefuseCheckpointsAtTheirField) {
  const std::string path = (std::filesystem::temp_directory_path() / ("tandem-async-" + std::to_string(::getpid()) + ".ck")).string();
  try {
    train(asynchronous(2, 1), 1, path);
    ADD_FAILURE() << "asynchronous servers saved a checkpoint";
  } catch (const StrategyError& e) {
    EXPECT_EQ(e.field(), "strategy.parameter_server_asynchronous");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace tandem::exec::cpu
