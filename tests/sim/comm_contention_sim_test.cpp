// Overlapped communication takes SMs from the kernels it overlaps (sim/comm_contention.hpp).
// Two DGX H100 nodes train a small GPT with data parallelism 16: with --overlap-grad-reduce the
// gradient buckets are reduced while the backward computes, and those kernels run on the SMs and
// the HBM bandwidth NCCL's kernels leave. Tensor parallelism's all-reduces run on the compute stream, which waits
// for them: they overlap nothing and so cost nothing more.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/comm_contention.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Step {
  Seconds iteration_s = 0, compute_s = 0, contention_s = 0, comm_busy_s = 0, exposed_comm_s = 0;  // rank 0's
};

Step simulate(const std::string& parallelism, bool contention) {
  const std::string text =
      "name: sm-contention\n"
      "model: { name: gpt-test, num_layers: 4, hidden_size: 2048, num_attention_heads: 16, vocab_size: 32768, "
      "seq_length: 2048, use_flash_attn: true }\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 32, micro_batch_size: 1, seq_length: 2048, precision: bf16 }\n"
      "strategy: { type: hybrid, " + parallelism + " }\n"
      "simulation: { comm_contention: " +
      std::string(contention ? "true" : "false") + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    const sim::RankResult& rank = r.ranks[0];
    out << r.iteration_time_s << " " << rank.compute_s << " " << rank.contention_s << " " << rank.comm_busy_s << " "
        << rank.exposed_comm_s;
  });
  Step step;
  in >> step.iteration_s >> step.compute_s >> step.contention_s >> step.comm_busy_s >> step.exposed_comm_s;
  return step;
}

TEST(CommContention, EachSecondOverlappedCostsTheHeldSmsShareOfTheRest) {
  // 24 CTAs of 132 SMs (an H100 ring): the rest run 108/132 as fast, 24/108 s more per second.
  EXPECT_DOUBLE_EQ(sim::sm_contention_per_overlap_s(132, 24), 24.0 / 108.0);
  EXPECT_EQ(sim::sm_contention_per_overlap_s(132, 0), 0.0);    // no NCCL kernel
  EXPECT_EQ(sim::sm_contention_per_overlap_s(16, 16), 0.0);    // not a GPU this model knows
}

TEST(CommContention, MemoryBoundKernelsGetTheBandwidthATransferLeavesAtLeastHalf) {
  // 1.1 of 2.9 TB/s taken (an H100 ring at 370 GB/s of bus bandwidth, three accesses per byte).
  EXPECT_DOUBLE_EQ(sim::hbm_contention_per_overlap_s(2.9e12, 1.1e12), 2.9 / 1.8 - 1.0);
  EXPECT_DOUBLE_EQ(sim::hbm_contention_per_overlap_s(2.9e12, 5e12), 1.0);  // a fair half
  EXPECT_EQ(sim::hbm_contention_per_overlap_s(2.9e12, 0.0), 0.0);
}

TEST(CommContentionSim, GradientsReducedDuringTheBackwardSlowItsKernels) {
  const std::string data = "data_parallel_size: 16, overlap_grad_reduce: true";
  const Step free = simulate(data, /*contention=*/false);
  const Step held = simulate(data, /*contention=*/true);
  EXPECT_EQ(free.contention_s, 0.0);
  EXPECT_GT(held.contention_s, 0.0);
  EXPECT_GT(held.iteration_s, free.iteration_s);
  // The same kernels, each the same length, plus what the held SMs cost them.
  EXPECT_NEAR(held.compute_s, free.compute_s + held.contention_s, 1e-9 * held.compute_s);
  // No more than the reductions' whole time: a kernel keeps at least half of the bandwidth, and
  // more than half of the SMs (NCCL's rings have 32 channels at most, of 132).
  EXPECT_LE(held.contention_s, held.comm_busy_s);
}

// A receive posted a pass ahead (Megatron-Core's --overlap-p2p-communication) holds its channels
// (two, across nodes) while the pass in between computes: the kernels pay for it, more than for
// receives posted when they are needed.
TEST(CommContentionSim, ReceivesPostedAheadHoldTheirChannelsUnderThePassesBetween) {
  const std::string pipeline =
      "tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, data_parallel_size: 1, "
      "pipeline_schedule: interleaved_1f1b, virtual_pipeline_model_parallel_size: 2, overlap_p2p_comm: ";
  const Step ahead = simulate(pipeline + "true", /*contention=*/true);
  const Step when_needed = simulate(pipeline + "false", /*contention=*/true);
  const Step free = simulate(pipeline + "true", /*contention=*/false);
  EXPECT_GT(ahead.contention_s, when_needed.contention_s);
  EXPECT_GT(ahead.iteration_s, free.iteration_s);
  EXPECT_EQ(free.contention_s, 0.0);
}

TEST(CommContentionSim, CollectivesTheComputeStreamWaitsForSlowNothing) {
  const std::string tensor = "tensor_model_parallel_size: 8, data_parallel_size: 1";
  const Step held = simulate(tensor, /*contention=*/true);
  const Step free = simulate(tensor, /*contention=*/false);
  EXPECT_GT(held.exposed_comm_s, 0.0);
  EXPECT_EQ(held.contention_s, 0.0);
  EXPECT_EQ(held.iteration_s, free.iteration_s);
}

}  // namespace
}  // namespace tandem
