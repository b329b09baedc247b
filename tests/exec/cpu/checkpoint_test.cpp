// Checkpoints of the CPU backend (exec/cpu/checkpoint.hpp): the full training state round-trips,
// a resumed run continues bit for bit (also after a crash), and damaged or mismatched files are
// refused with an InputError naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/input_error.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "tests/exec/cpu/gpt_tiny.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem::exec::cpu {
namespace {

using testing::gpt_tiny;

namespace fs = std::filesystem;

// Each test its own directory (ctest runs tests in parallel processes).
fs::path dir() {
  const fs::path d = fs::temp_directory_path() / "tandem-checkpoint-test" /
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(d);
  return d;
}

// bf16 parameters: the state includes fp32 master copies besides AdamW's m and v.
std::unique_ptr<DataParallel> strategy(int dp) {
  const TrainingConfig training = testing::gpt_tiny_training(DType::bf16);
  ParallelConfig parallel;
  parallel.data_parallel_size = dp;
  return std::make_unique<DataParallel>(gpt_tiny(), training, parallel, std::vector<double>{});
}

RunOptions options(int iterations) {
  RunOptions o;
  o.iterations = iterations;
  configure_for_model(o, *gpt_tiny(), 32);
  o.capture_parameters = true;
  o.record_trace = false;
  o.timeout_s = 20;
  return o;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write(const fs::path& p, const std::string& data) { std::ofstream(p, std::ios::binary) << data; }

std::string load_error(const fs::path& p) {
  try {
    load_checkpoint(p.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTripsEveryLogicalTensor) {
  Checkpoint ck;
  ck.strategy = "s";
  ck.world_size = 2;
  ck.next_iteration = 7;
  ck.seed = 42;
  ck.sequences_per_iteration = 8;
  ck.tensors = {{"a", {1.0f, -2.5f, 3.0f, 4.0f}}, {"b", {}}, {"c", {1e-30f}}};
  const fs::path p = dir() / "roundtrip.ck";
  save_checkpoint(ck, p.string());
  const Checkpoint back = load_checkpoint(p.string());
  EXPECT_EQ(back.strategy, "s");
  EXPECT_EQ(back.world_size, 2);
  EXPECT_EQ(back.next_iteration, 7);
  EXPECT_EQ(back.seed, 42u);
  EXPECT_EQ(back.sequences_per_iteration, 8);
  EXPECT_EQ(back.tensors, ck.tensors);
  // Saved atomically: no temporary file is left behind, and a new save replaces the file whole.
  ck.next_iteration = 8;
  save_checkpoint(ck, p.string());
  EXPECT_EQ(load_checkpoint(p.string()).next_iteration, 8);
  for (const auto& entry : fs::directory_iterator(dir()))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST(Checkpoint, ResumedRunContinuesBitForBit) {
  const RunResult straight = run_cpu(*strategy(2), options(4));

  const fs::path p = dir() / "resume.ck";
  RunOptions first = options(2);
  first.checkpoint_path = p.string();
  run_cpu(*strategy(2), first);
  EXPECT_EQ(load_checkpoint(p.string()).next_iteration, 2);

  RunOptions second = options(2);
  second.resume_path = p.string();
  const RunResult resumed = run_cpu(*strategy(2), second);
  EXPECT_EQ(resumed.first_iteration, 2);
  ASSERT_EQ(resumed.iterations.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed.iterations[i].iteration, 2 + i);
    EXPECT_EQ(resumed.iterations[i].loss, straight.iterations[2 + i].loss) << i;
  }
  EXPECT_TRUE(resumed.parameters == straight.parameters);
}

TEST(Checkpoint, PeriodicCheckpointSurvivesACrash) {
  const RunResult straight = run_cpu(*strategy(2), options(4));
  const fs::path p = dir() / "crash.ck";
  fs::remove(p);
  RunOptions crashing = options(4);
  crashing.checkpoint_path = p.string();
  crashing.checkpoint_every = 2;
  crashing.fail_rank = 1;
  crashing.fail_op = "mb0.layer0.attn.qkv.fwd";
  crashing.fail_iteration = 3;
  EXPECT_THROW(run_cpu(*strategy(2), crashing), RunError);
  EXPECT_EQ(load_checkpoint(p.string()).next_iteration, 2) << "saved after iteration 1, not after the crash";

  RunOptions resume = options(2);
  resume.resume_path = p.string();
  const RunResult resumed = run_cpu(*strategy(2), resume);
  EXPECT_EQ(resumed.iterations.back().loss, straight.iterations.back().loss);
  EXPECT_TRUE(resumed.parameters == straight.parameters);
}

TEST(Checkpoint, DamagedFilesAreRefused) {
  const fs::path good = dir() / "good.ck";
  RunOptions o = options(1);
  o.checkpoint_path = good.string();
  run_cpu(*strategy(2), o);
  const std::string bytes = read(good);
  ASSERT_GT(bytes.size(), 1000u);

  const fs::path flipped = dir() / "flipped.ck";
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x10;
  write(flipped, damaged);
  EXPECT_NE(load_error(flipped).find("checksum"), std::string::npos) << load_error(flipped);
  EXPECT_NE(load_error(flipped).find(flipped.string()), std::string::npos) << "names the file";

  for (std::size_t keep : {bytes.size() - 1, bytes.size() / 2, std::size_t{20}, std::size_t{3}}) {
    const fs::path cut = dir() / "truncated.ck";
    write(cut, bytes.substr(0, keep));
    const std::string why = load_error(cut);
    EXPECT_TRUE(why.find("truncated") != std::string::npos || why.find("magic") != std::string::npos)
        << keep << ": " << why;
  }
  const fs::path longer = dir() / "longer.ck";
  write(longer, bytes + "xx");
  EXPECT_NE(load_error(longer).find("unexpected bytes"), std::string::npos) << load_error(longer);
  const fs::path garbage = dir() / "garbage.ck";
  write(garbage, "name: not a checkpoint\n");
  EXPECT_NE(load_error(garbage).find("not a Tandem checkpoint"), std::string::npos);
  EXPECT_NE(load_error(dir() / "missing.ck").find("cannot open"), std::string::npos);

  // A damaged checkpoint never starts a run.
  RunOptions resume = options(1);
  resume.resume_path = flipped.string();
  EXPECT_THROW(run_cpu(*strategy(2), resume), InputError);
}

// Another strategy may resume a checkpoint (it holds logical tensors; equivalence_test.cpp),
// but not another global batch, seed or precision: the data, the dropout masks or the state
// would not be the run's.
TEST(Checkpoint, AnotherBatchSeedOrPrecisionIsRefused) {
  const fs::path p = dir() / "dp2.ck";
  RunOptions o = options(1);
  o.checkpoint_path = p.string();
  run_cpu(*strategy(2), o);

  RunOptions resume = options(1);
  resume.resume_path = p.string();
  TrainingConfig training;
  training.global_batch_size = 16;
  training.micro_batch_size = 2;
  training.seq_length = 32;
  training.precision = DType::bf16;
  ParallelConfig parallel;
  parallel.data_parallel_size = 2;
  try {
    run_cpu(DataParallel(gpt_tiny(), training, parallel, {}), resume);
    FAIL() << "resumed with another global batch";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sequences per iteration"), std::string::npos) << e.what();
  }
  training.global_batch_size = 8;
  training.precision = DType::fp32;  // no fp32 master copies: the state does not fit
  try {
    run_cpu(DataParallel(gpt_tiny(), training, parallel, {}), resume);
    FAIL() << "resumed an fp32 run from a mixed-precision checkpoint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
  resume.seed = 7;
  try {
    run_cpu(*strategy(2), resume);
    FAIL() << "resumed with another seed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::exec::cpu
