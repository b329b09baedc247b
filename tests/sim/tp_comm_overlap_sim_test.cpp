// Megatron-Core's --tp-comm-overlap in the simulator (GemmArgs::comm_overlap): Transformer
// Engine pipelines the blocks' GEMMs with sequence parallelism's all-gathers and reduce-scatters.
// Pinned on one DGX H100 node, tensor 8 with sequence parallelism, against the same run without:
//   ring exchange  a GEMM consuming an all-gather ends max(G/n, G - W) after the gather's end
//                  (W: the gather's duration, n = 8 chunks, G: the GEMM alone);
//   pipeline       a GEMM feeding a reduce-scatter runs on the SMs the reduce-scatter leaves
//                  (132 - 16 of the H100's), and the reduce-scatter starts after its first of 4 chunks;
//   bulk           the data- and weight-gradient GEMMs beside whole collectives lose those SMs too;
// and the iteration is faster, with less exposed communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "scenarios/scenario.hpp"
#include "sim/collectives/nccl_model.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

constexpr int kChunks = 8;                    // the ring exchange: one per tensor-parallel rank
constexpr double kSmRatio = 132.0 / 116.0;    // H100 SMs over those a 16-SM collective leaves

struct Span {
  Seconds start_s = 0, end_s = 0;
};
struct Simulated {
  Seconds iteration_s = 0, exposed_comm_s = 0, launch_s = 0;
  std::map<std::string, Span> ops;  // rank 0's ops of the measured iteration, by label
};

const char* kWatched[] = {"mb0.layer0.attn.qkv.allgather.fwd", "mb0.layer0.attn.qkv.fwd",
                          "mb0.layer0.attn.proj.fwd",          "mb0.layer0.attn.proj.reducescatter.fwd",
                          "mb0.layer0.attn.proj.bias.fwd",     "mb0.layer0.mlp.fc1.bwd",
                          "mb0.layer0.mlp.fc1.bwd_w"};

Simulated simulate(bool overlap, const char* compute_fidelity = "fused") {
  const std::string text =
      "name: tp-overlap\n"
      "model: { name: gpt-test, num_layers: 2, hidden_size: 2048, num_attention_heads: 16, vocab_size: 32768, "
      "seq_length: 4096, use_flash_attn: true }\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 2, micro_batch_size: 1, seq_length: 4096, precision: bf16 }\n"
      "strategy: { type: hybrid, tensor_model_parallel_size: 8, sequence_parallel: true, tp_comm_overlap: " +
      std::string(overlap ? "true" : "false") + " }\n" +
      "simulation: { compute_fidelity: " + compute_fidelity + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    out << r.iteration_time_s << " " << r.ranks[0].exposed_comm_s << " "
        << find_cluster("dgx-h100").groups.front().device.launch_overhead_s << "\n";
    for (const TraceRecord& t : r.trace.records)
      if (t.rank == 0 && t.iteration == 1 && std::count(std::begin(kWatched), std::end(kWatched), t.op_id))
        out << t.op_id << " " << t.start_s << " " << t.end_s << "\n";
  });
  Simulated run;
  in >> run.iteration_s >> run.exposed_comm_s >> run.launch_s;
  std::string label;
  Span span;
  while (in >> label >> span.start_s >> span.end_s) run.ops[label] = span;
  for (const char* watched : kWatched)
    if (!run.ops.count(watched)) throw std::runtime_error(std::string("no trace record of ") + watched);
  return run;
}

const Simulated& plain() {
  static const Simulated run = simulate(false);
  return run;
}
const Simulated& overlapped() {
  static const Simulated run = simulate(true);
  return run;
}

// A compute op's duration, its launch included (the trace starts it after the launch).
Seconds duration(const Simulated& run, const std::string& label) {
  const Span& s = run.ops.at(label);
  return s.end_s - s.start_s + run.launch_s;
}

TEST(TpCommOverlapSim, ARingExchangeGemmEndsOneChunkOrItsRemainderAfterTheGather) {
  const Simulated& on = overlapped();
  const Span gather = on.ops.at("mb0.layer0.attn.qkv.allgather.fwd");
  const Seconds gemm = duration(plain(), "mb0.layer0.attn.qkv.fwd");
  const Seconds wait = gather.end_s - gather.start_s;
  ASSERT_GT(wait, 0);
  const Seconds expected_end = gather.end_s + std::max(gemm / kChunks, gemm - wait);
  EXPECT_NEAR(on.ops.at("mb0.layer0.attn.qkv.fwd").end_s, expected_end, 1e-9 * expected_end)
      << "gather " << wait << " s, GEMM " << gemm << " s";
  // Without the overlap the GEMM starts only once the gather is over.
  const Simulated& off = plain();
  EXPECT_GE(off.ops.at("mb0.layer0.attn.qkv.fwd").start_s, off.ops.at("mb0.layer0.attn.qkv.allgather.fwd").end_s);
}

TEST(TpCommOverlapSim, APipelinedGemmLeavesSmsToItsReduceScatterWhichStartsAfterTheFirstChunk) {
  const Simulated& on = overlapped();
  const Seconds gemm = duration(on, "mb0.layer0.attn.proj.fwd");
  EXPECT_NEAR(gemm - on.launch_s, (duration(plain(), "mb0.layer0.attn.proj.fwd") - on.launch_s) * kSmRatio,
              1e-9 * gemm);
  const Seconds gemm_start = on.ops.at("mb0.layer0.attn.proj.fwd").start_s - on.launch_s;
  const Span scatter = on.ops.at("mb0.layer0.attn.proj.reducescatter.fwd");
  EXPECT_NEAR(scatter.start_s, gemm_start + gemm / 4, 1e-9 * scatter.start_s);
  // What follows (the bias, fused into its neighbours: no launch of its own) waits for both the
  // whole GEMM and the reduce-scatter.
  const Seconds next = on.ops.at("mb0.layer0.attn.proj.bias.fwd").end_s;
  EXPECT_GE(next + 1e-12, std::max(gemm_start + gemm, scatter.end_s))
      << "GEMM " << gemm_start << " + " << gemm << ", reduce-scatter " << scatter.start_s << " - " << scatter.end_s;
}

// The exact form (one execution per op) pipelines the same way.
TEST(TpCommOverlapSim, PerOpComputeFidelityStartsTheReduceScatterAfterTheFirstChunkToo) {
  const Simulated per_op = simulate(true, "per_op");
  const Seconds gemm = duration(per_op, "mb0.layer0.attn.proj.fwd");
  const Seconds gemm_start = per_op.ops.at("mb0.layer0.attn.proj.fwd").start_s - per_op.launch_s;
  EXPECT_NEAR(per_op.ops.at("mb0.layer0.attn.proj.reducescatter.fwd").start_s, gemm_start + gemm / 4, 1e-9 * gemm_start);
  EXPECT_NEAR(per_op.iteration_s, overlapped().iteration_s, 1e-6 * per_op.iteration_s);
}

TEST(TpCommOverlapSim, BulkOverlappedGradientGemmsRunOnTheSmsTheCollectivesLeave) {
  for (const char* label : {"mb0.layer0.mlp.fc1.bwd", "mb0.layer0.mlp.fc1.bwd_w"}) {
    const double ratio = (duration(overlapped(), label) - overlapped().launch_s) / (duration(plain(), label) - plain().launch_s);
    EXPECT_GT(ratio, 1.05) << label;
    EXPECT_LE(ratio, kSmRatio + 1e-9) << label;
  }
}

// The userbuffers move the block linears' collectives, not NCCL's kernels: they keep the NCCL
// model's affine time, where NCCL's own all-gather of the same 16 MiB (4,096 tokens x 2,048 x 2
// bytes, 2 MiB per rank) takes the measured mid-size slowdown.
TEST(TpCommOverlapSim, UserbuffersGathersKeepTheAffineTimeThatNcclsOwnExceedByTheMeasuredSlowdown) {
  const auto wait = [](const Simulated& run) {
    const Span& s = run.ops.at("mb0.layer0.attn.qkv.allgather.fwd");
    return s.end_s - s.start_s;
  };
  sim::nccl::Fabric node;
  node.arch = sim::nccl::Arch::hopper;
  node.nvlinks_per_gpu = 18;
  node.nvswitch = true;
  const double slowdown = sim::nccl::mid_size_slowdown(OpKind::all_gather, 4096.0 * 2048 * 2, node, {8, 1});
  ASSERT_GT(slowdown, 1.2);
  EXPECT_NEAR(wait(plain()) / wait(overlapped()), slowdown, 0.05 * slowdown);
}

TEST(TpCommOverlapSim, TheIterationIsFasterWithLessExposedCommunication) {
  EXPECT_LT(overlapped().iteration_s, plain().iteration_s);
  EXPECT_LT(overlapped().exposed_comm_s, 0.8 * plain().exposed_comm_s)
      << overlapped().exposed_comm_s << " s vs " << plain().exposed_comm_s << " s";
}

}  // namespace
}  // namespace tandem
