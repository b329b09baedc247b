// How pipeline stages hand tensors over, in the simulator. Two DGX A100 nodes run tensor 8 x
// pipeline 2 without sequence parallelism, so every member of a tensor group holds a stage's
// output whole and the hand-over crosses InfiniBand:
// - Megatron-LM's scatter/gather (pipeline_scatter_gather, on by default): each member sends 1/8
//   of the tensor and the receiving group all-gathers it over NVLink;
// - DeepSpeed's blocking sends and receives (pipeline_blocking_p2p): the compute stream waits for
//   each, and a stage receives the next activation before it sends the last gradient;
// - Megatron-Core's overlapped receives (overlap_p2p_comm, interleaved schedule): each receive is
//   posted a pass ahead, so its transfer runs under that pass.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/scenario.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

std::string scenario(bool scatter_gather, bool blocking, const std::string& schedule = "1f1b",
                     const std::string& more = "") {
  return "name: pipeline-p2p\n"
         "model: { name: gpt-test, num_layers: 4, hidden_size: 2048, num_attention_heads: 16, vocab_size: 32768, "
         "seq_length: 2048, use_flash_attn: true }\n"
         "cluster: dgx-a100\n"
         "training: { global_batch_size: 8, micro_batch_size: 1, seq_length: 2048, precision: bf16 }\n"
         "strategy: { type: hybrid, tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, "
         "pipeline_schedule: " + schedule + ", pipeline_scatter_gather: " + (scatter_gather ? "true" : "false") +
         ", pipeline_blocking_p2p: " + (blocking ? "true" : "false") + more + " }\n";
}

struct Handover {
  Seconds iteration_s = 0;
  Bytes sent_bytes = 0;             // rank 0's activation sends, all micro-batches
  int gathers = 0;                  // rank 8's all-gathers of what it received
  Seconds compute_waits_for_send = 0;  // rank 0: the first backward's start minus the last warm-up send's end
  bool gradient_after_next_receive = true;  // rank 8 sends each gradient after its next activation arrives
};

Handover simulate(bool scatter_gather, bool blocking) {
  std::istringstream in = sim_test::traced_figures(
      scenario(scatter_gather, blocking), [](const sim::SimulationResult& r, std::ostream& out) {
        Bytes sent = 0;
        int gathers = 0;
        Seconds mb0_recv_end = -1, mb1_recv_end = -1, grad0_send_start = -1;
        for (const TraceRecord& t : r.trace.records) {
          if (t.iteration != 1) continue;
          if (t.rank == 0 && t.kind == OpKind::send && t.op_id.find("send_act") != std::string::npos) sent += t.bytes;
          if (t.rank == 8 && t.kind == OpKind::all_gather && t.op_id.ends_with(".allgather")) ++gathers;
          if (t.rank == 8 && t.op_id == "mb1.vs1.recv_act") mb1_recv_end = t.end_s;
          if (t.rank == 8 && t.op_id == "mb0.vs1.recv_act") mb0_recv_end = t.end_s;
          if (t.rank == 8 && t.op_id == "mb0.vs1.send_grad") grad0_send_start = t.start_s;
        }
        out << r.iteration_time_s << " " << sent << " " << gathers << " "
            << (grad0_send_start >= mb1_recv_end && mb1_recv_end > mb0_recv_end);
      });
  Handover h;
  in >> h.iteration_s >> h.sent_bytes >> h.gathers >> h.gradient_after_next_receive;
  return h;
}

TEST(PipelineP2pSim, ScatterGatherSendsAnEighthAndGathersItOverTheTensorGroup) {
  const Handover whole = simulate(false, false), split = simulate(true, false);
  EXPECT_EQ(whole.gathers, 0);
  EXPECT_EQ(split.gathers, 8);  // one per micro-batch received
  EXPECT_EQ(split.sent_bytes * 8, whole.sent_bytes);
  EXPECT_LT(split.iteration_s, whole.iteration_s);  // 1/8 over InfiniBand, the rest over NVLink
}

TEST(PipelineP2pSim, BlockingSendsAndReceivesHoldTheComputeStreamInDeepSpeedsOrder) {
  const Handover overlapped = simulate(true, false), blocking = simulate(true, true);
  EXPECT_GT(blocking.iteration_s, overlapped.iteration_s);
  EXPECT_TRUE(blocking.gradient_after_next_receive);
  EXPECT_FALSE(overlapped.gradient_after_next_receive);  // Megatron sends it as soon as it is computed
}

TEST(PipelineP2pSim, BlockingSendsAreRefusedOutsideOneFOneB) {
  test::TempDir dir;
  try {
    load_scenario(dir.write("scenario.yaml", scenario(true, true, "gpipe")));
    FAIL() << "gpipe with blocking sends was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "strategy.pipeline_blocking_p2p");
    EXPECT_NE(std::string(e.what()).find("1F1B"), std::string::npos) << e.what();
  }
}

// Interleaved, two chunks per stage, the hand-overs whole (no scatter/gather): rank 8 (stage 1)
// receives every input over InfiniBand. Overlapped, the rank computes while receives are in
// flight; otherwise a receive is posted when the pass that needs it is reached, which waits.
struct Receives {
  Seconds iteration_s = 0;
  int under_a_pass = 0;  // receives in flight while a compute op of the rank runs
};
Receives simulate_interleaved(bool overlap) {
  const std::string yaml =
      scenario(false, false, "interleaved_1f1b",
               std::string(", virtual_pipeline_model_parallel_size: 2, overlap_p2p_comm: ") + (overlap ? "true" : "false"));
  std::istringstream in = sim_test::traced_figures(yaml, [](const sim::SimulationResult& r, std::ostream& out) {
    std::vector<std::pair<Seconds, Seconds>> passes;
    std::vector<std::pair<Seconds, Seconds>> receives;
    for (const TraceRecord& t : r.trace.records) {
      if (t.iteration != 1 || t.rank != 8) continue;
      if (t.stream == Stream::compute) passes.emplace_back(t.start_s, t.end_s);
      if (t.kind == OpKind::recv) receives.emplace_back(t.start_s, t.end_s);
    }
    int under = 0;
    for (const auto& [posted, arrived] : receives)
      for (const auto& [begin, end] : passes)
        if (begin < arrived && posted < end) {
          ++under;
          break;
        }
    out << r.iteration_time_s << " " << under;
  });
  Receives r;
  in >> r.iteration_s >> r.under_a_pass;
  return r;
}

TEST(PipelineP2pSim, OverlappedReceivesArePostedAPassAheadInTheInterleavedSchedule) {
  const Receives late = simulate_interleaved(false), ahead = simulate_interleaved(true);
  EXPECT_EQ(late.under_a_pass, 0);
  EXPECT_GT(ahead.under_a_pass, 0);
  EXPECT_LT(ahead.iteration_s, late.iteration_s);
}

// Megatron-Core's other schedules ignore --overlap-p2p-communication: a search over schedules
// can keep it on, and 1F1B runs as without it.
TEST(PipelineP2pSim, OverlappedReceivesChangeNothingOutsideTheInterleavedSchedule) {
  const auto iteration_s = [](bool overlap) {
    std::istringstream in = sim_test::traced_figures(
        scenario(false, false, "1f1b", std::string(", overlap_p2p_comm: ") + (overlap ? "true" : "false")),
        [](const sim::SimulationResult& r, std::ostream& out) { out << r.iteration_time_s; });
    Seconds s = 0;
    in >> s;
    return s;
  };
  EXPECT_EQ(iteration_s(true), iteration_s(false));
}

}  // namespace
}  // namespace tandem
