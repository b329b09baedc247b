// Megatron-Core's --overlap-param-gather in the simulator: with ZeRO-1 the parameters a step
// updated are all-gathered layer by layer during the next step's forward, each layer waiting for
// its own, instead of in one all-gather the step waits for at its end. On two DGX H100 nodes
// (data parallel 16, so the gather crosses InfiniBand) the step is faster and its exposed
// communication smaller, and the trace shows one gather per layer instead of one per step. The
// first step starts from parameters already in place, so a simulation asked for no warm-up still
// measures the second, steady one.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "scenarios/scenario.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Step {
  Seconds iteration_s = 0, exposed_comm_s = 0;
  int whole_gathers = 0, layer_gathers = 0;  // rank 0's, in the measured iteration
  bool says_warmed_up = false;               // the result's notes say a warm-up was added
};

Step simulate(bool overlap, int warmup = 1) {
  const std::string text =
      "name: param-gather\n"
      "model: { name: gpt-test, num_layers: 4, hidden_size: 2048, num_attention_heads: 16, vocab_size: 32768, "
      "seq_length: 2048, use_flash_attn: true }\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 32, micro_batch_size: 1, seq_length: 2048, precision: bf16 }\n"
      "strategy: { type: hybrid, data_parallel_size: 16, zero_stage: 1, overlap_param_gather: " +
      std::string(overlap ? "true" : "false") + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    int whole = 0, layers = 0;
    for (const TraceRecord& t : r.trace.records) {
      // Iteration 1 is the measured one: the warm-up, asked for or not, is iteration 0.
      if (t.rank != 0 || t.iteration != 1 || t.kind != OpKind::all_gather) continue;
      if (t.op_id == "dp.params.all_gather") ++whole;
      else if (t.op_id.ends_with(".params.all_gather")) ++layers;
    }
    out << r.iteration_time_s << " " << r.ranks[0].exposed_comm_s << " " << whole << " " << layers << " "
        << (r.folding.find("measured after 1 warm-up iteration") != std::string::npos);
  }, warmup);
  Step step;
  in >> step.iteration_s >> step.exposed_comm_s >> step.whole_gathers >> step.layer_gathers >> step.says_warmed_up;
  return step;
}

TEST(ParamGatherOverlapSim, LayerGathersDuringTheForwardShortenTheStep) {
  const Step off = simulate(false), on = simulate(true);
  EXPECT_EQ(off.whole_gathers, 1);
  EXPECT_EQ(off.layer_gathers, 0);
  EXPECT_EQ(on.whole_gathers, 0);
  EXPECT_GE(on.layer_gathers, 4);  // the blocks, and the embedding and output layers
  EXPECT_LT(on.iteration_s, off.iteration_s);
  EXPECT_LT(on.exposed_comm_s, off.exposed_comm_s);
}

TEST(ParamGatherOverlapSim, AStepAskedForWithoutWarmUpIsTheSteadyOneThatGathers) {
  const Step cold = simulate(true, /*warmup=*/0), warm = simulate(true, /*warmup=*/1);
  EXPECT_GE(cold.layer_gathers, 4);
  EXPECT_TRUE(cold.says_warmed_up);   // the simulator added the warm-up, and says so
  EXPECT_FALSE(warm.says_warmed_up);  // asked for: nothing to add
  EXPECT_EQ(cold.iteration_s, warm.iteration_s);
  EXPECT_EQ(cold.exposed_comm_s, warm.exposed_comm_s);
}

}  // namespace
}  // namespace tandem
