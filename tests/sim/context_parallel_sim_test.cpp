// Context parallelism in the simulator (Megatron-Core --context-parallel-size, TE's all_gather
// K/V exchange). Llama-3-8B cut to 2 layers (rotary positions, GQA, flash attention) at a 32k sequence on
// DGX H100 nodes, tensor 8 inside a node:
//   * each layer all-gathers K and V over the context group in the forward and again in the
//     backward, and reduce-scatters their gradient (the trace's context-group collectives);
//   * every context-parallel rank does the same attention work (the zigzag chunks balance the
//     causal mask), and half of it is the whole sequence's attention over cp ranks;
//   * activations per device fall with cp (each rank holds 1/cp of the sequence);
//   * cp = 2 on twice the devices takes less time per iteration than cp = 1.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "scenarios/scenario.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Figures {
  Seconds iteration_s = 0;
  Bytes activations = 0;                  // rank 0's at its peak
  int kv_gathers = 0, kv_grad_scatters = 0;  // rank 0's in the measured iteration
  int gather_group = 0;                   // their group size
  std::map<int, double> attention_flops;  // by rank, the measured iteration (tensor rank 0 of each group)
};

Figures simulate(int cp) {
  const std::string text =
      "name: context-parallel\n"
      "model: { preset: llama3-8b, num_layers: 2 }\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 1, micro_batch_size: 1, seq_length: 32768, precision: bf16 }\n"
      "strategy: { type: hybrid, tensor_model_parallel_size: 8, sequence_parallel: true, context_parallel_size: " +
      std::to_string(cp) + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    int gathers = 0, scatters = 0, group = 0;
    std::map<int, double> attention;
    for (const TraceRecord& t : r.trace.records) {
      if (t.iteration != 1) continue;
      if (t.kind == OpKind::attention) attention[t.rank] += t.flops;
      if (t.rank != 0) continue;
      if (t.kind == OpKind::all_gather && t.op_id.find("attn.cp.kv_allgather") != std::string::npos) {
        ++gathers;
        group = t.group_size;
      }
      if (t.kind == OpKind::reduce_scatter && t.op_id.find("attn.cp.dkv_reducescatter") != std::string::npos)
        ++scatters;
    }
    out << r.iteration_time_s << " " << r.ranks[0].memory_at_peak.by_category[static_cast<int>(MemCategory::activations)]
        << " " << gathers << " " << scatters << " " << group;
    for (const auto& [rank, flops] : attention) out << " " << rank << " " << flops;
  });
  Figures f;
  in >> f.iteration_s >> f.activations >> f.kv_gathers >> f.kv_grad_scatters >> f.gather_group;
  int rank = 0;
  double flops = 0;
  while (in >> rank >> flops) f.attention_flops[rank] = flops;
  return f;
}

TEST(ContextParallelSim, KeysAndValuesAreGatheredPerLayerAndTheWorkIsBalanced) {
  const Figures one = simulate(1), two = simulate(2);
  EXPECT_EQ(one.kv_gathers, 0);
  // 2 layers: a gather in the forward and one in the backward each, one gradient reduce-scatter.
  EXPECT_EQ(two.kv_gathers, 4);
  EXPECT_EQ(two.kv_grad_scatters, 2);
  EXPECT_EQ(two.gather_group, 2);
  // The context-parallel ranks (tensor rank 0 of each: ranks 0 and 8) do the same attention work,
  // half of the whole sequence's each.
  ASSERT_TRUE(two.attention_flops.count(0) && two.attention_flops.count(8));
  EXPECT_DOUBLE_EQ(two.attention_flops.at(0), two.attention_flops.at(8));
  EXPECT_NEAR(two.attention_flops.at(0) / one.attention_flops.at(0), 0.5, 1e-9);
}

TEST(ContextParallelSim, SplittingTheSequenceCutsActivationsAndTime) {
  const Figures one = simulate(1), two = simulate(2);
  EXPECT_LT(two.activations, 0.6 * one.activations);
  EXPECT_LT(two.iteration_s, one.iteration_s);
}

}  // namespace
}  // namespace tandem
