// The ZB-H1 zero-bubble schedule in the simulator: Llama-3-8B over 8 pipeline stages of one DGX
// H100 each (tensor 8 inside the node), 8 micro-batches. Splitting each
// backward into B and W and moving the W passes into the cool-down shortens the iteration and
// its idle time; the weight-gradient GEMMs are the same ones, only later; the W passes keep what
// they read (inputs and output gradients of the linears) longer, so activations grow.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "scenarios/scenario.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Figures {
  Seconds iteration_s = 0, idle_s = 0;
  Bytes activations = 0;
  int weight_gemms = 0;  // rank 0's "bwd_w" GEMMs in the measured iteration
};

Figures simulate(const std::string& schedule) {
  const std::string text =
      "name: zero-bubble\n"
      "model: llama3-8b\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 8, micro_batch_size: 1, seq_length: 4096, precision: bf16 }\n"
      "strategy: { type: hybrid, tensor_model_parallel_size: 8, pipeline_model_parallel_size: 8, "
      "sequence_parallel: true, pipeline_schedule: " + schedule + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    int weight_gemms = 0;
    for (const TraceRecord& t : r.trace.records)
      if (t.rank == 0 && t.iteration == 1 && t.kind == OpKind::gemm && t.op_id.ends_with(".bwd_w")) ++weight_gemms;
    Seconds idle = 0;
    for (const sim::RankResult& rank : r.ranks) idle += rank.idle_s;
    out << r.iteration_time_s << " " << idle / static_cast<double>(r.ranks.size()) << " "
        << r.ranks[0].memory_at_peak.by_category[static_cast<int>(MemCategory::activations)] << " " << weight_gemms;
  });
  Figures f;
  in >> f.iteration_s >> f.idle_s >> f.activations >> f.weight_gemms;
  return f;
}

TEST(ZeroBubbleSim, WeightPassesInTheBubblesShortenThePipeline) {
  const Figures one_f_one_b = simulate("1f1b"), zero_bubble = simulate("zb_h1");
  EXPECT_LT(zero_bubble.iteration_s, one_f_one_b.iteration_s);
  // The last stage's output layer (vocabulary 128k) keeps part of the idle time whatever the order.
  EXPECT_LT(zero_bubble.idle_s, 0.9 * one_f_one_b.idle_s);
  EXPECT_EQ(zero_bubble.weight_gemms, one_f_one_b.weight_gemms);
  EXPECT_GT(zero_bubble.weight_gemms, 0);
  EXPECT_GT(zero_bubble.activations, one_f_one_b.activations);
}

}  // namespace
}  // namespace tandem
