// FP8 training in the simulator: on FP8-capable GPUs (H100) the blocks' GEMMs run at the FP8
// tensor-core peak, so the iteration is predicted faster than in bf16; on a GPU without FP8
// tensor cores (A100) the scenario is refused, naming training.fp8 and its line.
#include <gtest/gtest.h>

#include "common/input_error.hpp"
#include "scenarios/scenario.hpp"
#include "tests/platforms/platform_test_support.hpp"
#include "tests/sim/sim_outcome.hpp"

namespace tandem {
namespace {

std::string scenario_text(const std::string& cluster, const std::string& fp8) {
  return "name: fp8-check\n"
         "model: gpt3-1.3b\n"
         "cluster: " + cluster + "\n"
         "training: { global_batch_size: 8, micro_batch_size: 1, seq_length: 2048, precision: bf16" +
         (fp8.empty() ? "" : ", fp8: " + fp8) + " }\n"
         "strategy: { type: hybrid, tensor_model_parallel_size: 1, data_parallel_size: 8 }\n";
}

double predicted_iteration_s(const std::string& cluster, const std::string& fp8) {
  test::TempDir dir;
  const Scenario s = load_scenario(dir.write("s.yaml", scenario_text(cluster, fp8)));
  return sim_test::simulate_outcome(s.cluster, s.simulation, [&s](const Cluster&) { return make_strategy(s); })
      .iteration_s;
}

TEST(Fp8Sim, H100PredictsAFasterIterationThanBf16ButNotTwiceAsFast) {
  const double bf16 = predicted_iteration_s("dgx-h100", "");
  const double fp8 = predicted_iteration_s("dgx-h100", "hybrid");
  // Only the linear layers' GEMMs double their peak, after Transformer Engine's casts; attention,
  // norms and communication do not. A 1.3B model (hidden 2,048) gains about a tenth.
  EXPECT_LT(fp8, 0.95 * bf16) << fp8 << " s vs " << bf16 << " s";
  EXPECT_GT(fp8, 0.5 * bf16) << fp8 << " s vs " << bf16 << " s";
}

TEST(Fp8Sim, AGpuWithoutFp8TensorCoresIsRefusedAtTheField) {
  test::TempDir dir;
  const std::string path = dir.write("s.yaml", scenario_text("dgx-a100", "hybrid"));
  try {
    make_strategy(load_scenario(path));  // loading builds the strategy already
    FAIL() << "an A100 cluster accepted training.fp8";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training.fp8"), std::string::npos) << what;
    EXPECT_NE(what.find(":4"), std::string::npos) << what;  // the training line
    EXPECT_NE(what.find("FP8 tensor cores"), std::string::npos) << what;
  }
}

TEST(Fp8Sim, AnUnknownFormatIsRefusedAtTheField) {
  test::TempDir dir;
  try {
    load_scenario(dir.write("s.yaml", scenario_text("dgx-h100", "e3m4")));
    FAIL() << "fp8: e3m4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.fp8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
