// When the data-parallel gradient reduction runs in the hybrid strategy. With
// --overlap-grad-reduce (Megatron-Core, PyTorch DDP) each bucket is reduced as soon as the last
// micro-batch's backward has made its gradients final, under the layers still to go; without it
// (Megatron-LM's local DDP, DeepSpeed's pipeline engine) every reduction starts after the last
// backward. The step then exposes the whole reduction.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Step {
  Seconds iteration_s = 0;
  Seconds first_reduction_s = 0, last_backward_end_s = 0;  // rank 0's, in the measured iteration
  int reductions = 0;
};

Step simulate(bool overlap_grad_reduce, int pipeline_stages) {
  const std::string text =
      "name: grad-reduce\n"
      "model: { name: gpt-test, num_layers: 4, hidden_size: 2048, num_attention_heads: 16, vocab_size: 32768, "
      "seq_length: 2048, use_flash_attn: true }\n"
      "cluster: dgx-h100\n"
      "training: { global_batch_size: 32, micro_batch_size: 1, seq_length: 2048, precision: bf16 }\n"
      "strategy: { type: hybrid, data_parallel_size: 8, pipeline_model_parallel_size: " +
      std::to_string(pipeline_stages) + ", overlap_grad_reduce: " + (overlap_grad_reduce ? "true" : "false") + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    double first = 1e30, last_backward = 0;
    int reductions = 0;
    for (const TraceRecord& t : r.trace.records) {
      if (t.rank != 0 || t.iteration != 1) continue;
      if (t.phase == Phase::backward && !is_communication(t.kind)) last_backward = std::max(last_backward, t.end_s);
      if (t.kind == OpKind::all_reduce && t.op_id.starts_with("dp.")) {
        first = std::min(first, t.start_s);
        ++reductions;
      }
    }
    out << r.iteration_time_s << " " << first << " " << last_backward << " " << reductions;
  });
  Step step;
  in >> step.iteration_s >> step.first_reduction_s >> step.last_backward_end_s >> step.reductions;
  return step;
}

TEST(GradReduceOverlapSim, WithoutOverlapEveryReductionStartsAfterTheLastBackward) {
  for (int stages : {1, 2}) {
    const Step after = simulate(false, stages), during = simulate(true, stages);
    ASSERT_GT(after.reductions, 0) << stages;
    ASSERT_GT(during.reductions, 0) << stages;
    EXPECT_GE(after.first_reduction_s + 1e-12, after.last_backward_end_s) << stages;  // (its end, rounded)
    EXPECT_LT(during.first_reduction_s, during.last_backward_end_s) << stages;
    EXPECT_GT(after.iteration_s, during.iteration_s) << stages;
  }
}

}  // namespace
}  // namespace tandem
