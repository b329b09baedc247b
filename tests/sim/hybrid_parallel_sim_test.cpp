// The 3D hybrid in the simulator: equivalent configurations predict the same as the simpler
// strategy, the pipeline bubble follows (p-1)/(m+p-1), and on a cluster of fast and slow devices
// a speed-proportional pipeline partition beats the uniform one because the fast stages stop
// waiting for the slow one.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

std::vector<RankDevice> devices_of(const Cluster& cluster, int world, DType dtype) {
  std::vector<RankDevice> d;
  for (int r = 0; r < world; ++r) {
    const DeviceProfile& p = cluster.device_of(r);
    d.push_back({p.peak_flops_per_s(dtype), p.memory_capacity_bytes, cluster.locate(r).global_node, p.name});
  }
  return d;
}

struct Outcome {
  double iteration_s = 0;
  std::vector<double> idle_s, compute_s;
};

template <class MakeStrategy>
Outcome simulate_child(const std::string& cluster_name, MakeStrategy make_strategy) {
  auto child = sim_test::run_in_child([&] {
    const Cluster cluster = find_cluster(cluster_name);
    auto strategy = make_strategy(cluster);
    const sim::SimulationResult r = sim::simulate(*strategy, cluster, {});
    nlohmann::json j;
    j["iteration_s"] = r.iteration_time_s;
    for (const auto& rank : r.ranks) {
      j["idle"].push_back(rank.idle_s);
      j["compute"].push_back(rank.compute_s);
    }
    return j.dump();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  const nlohmann::json j = nlohmann::json::parse(std::string(child.output));
  Outcome o;
  o.iteration_s = j["iteration_s"].get<double>();
  o.idle_s = j["idle"].get<std::vector<double>>();
  o.compute_s = j["compute"].get<std::vector<double>>();
  return o;
}

TrainingConfig training(std::int64_t global_batch, std::int64_t seq = 1024) {
  TrainingConfig t;
  t.global_batch_size = global_batch;
  t.micro_batch_size = 1;
  t.seq_length = seq;
  return t;
}

std::shared_ptr<const Model> model(const std::string& preset, std::int64_t seq = 1024) {
  auto cfg = transformer_preset(preset);
  cfg.seq_length = seq;
  return std::make_shared<TransformerModel>(cfg);
}

TEST(HybridParallelSim, PipelineSizeOneEqualsDataParallel) {
  ParallelConfig p;
  p.data_parallel_size = 8;
  const Outcome dp = simulate_child("tiny-h100", [&](const Cluster& c) {
    return std::make_unique<DataParallel>(model("gpt2-124m"), training(16), p, std::vector<double>(8, 1.0));
  });
  const Outcome hybrid = simulate_child("tiny-h100", [&](const Cluster& c) {
    return std::make_unique<HybridParallel>(model("gpt2-124m"), training(16), p, HybridConfig{},
                                            devices_of(c, 8, DType::bf16));
  });
  std::cout << "data_parallel " << dp.iteration_s << " s, hybrid(pp=1,tp=1) " << hybrid.iteration_s << " s\n";
  EXPECT_DOUBLE_EQ(dp.iteration_s, hybrid.iteration_s);
  // Every rank, not only the slowest: each replica does the same work (its optimizer step too).
  EXPECT_EQ(dp.compute_s, hybrid.compute_s);
}

TEST(HybridParallelSim, PipelineBubbleFollowsTheFormula) {
  // Four stages in one node (fast links), 1F1B, equal stages: a GPT-3 1.3B body with a small
  // vocabulary, so that the output layer does not make the last stage the slow one. A stage
  // idles for the bubble: (p-1)/(m+p-1) of the iteration. (The optimizer step, outside the
  // pipeline, dilutes the fraction a little, most for few micro-batches.)
  auto cfg = transformer_preset("gpt3-1.3b");
  cfg.vocab_size = 512;
  cfg.seq_length = 1024;
  const auto body = std::make_shared<TransformerModel>(cfg);
  double previous = 1;
  for (int m : {8, 16, 32}) {
    ParallelConfig p;
    p.pipeline_model_parallel_size = 4;
    const Outcome o = simulate_child("tiny-h100", [&](const Cluster& c) {
      return std::make_unique<HybridParallel>(body, training(m), p, HybridConfig{}, devices_of(c, 4, DType::bf16));
    });
    const double formula = 3.0 / (m + 3.0);
    const double measured = o.idle_s[1] / o.iteration_s;
    std::cout << "m=" << m << ": stage-1 idle fraction " << measured << ", formula " << formula << "\n";
    EXPECT_NEAR(measured, formula, 0.03);
    EXPECT_LT(measured, previous);
    previous = measured;
  }
}

TEST(HybridParallelSim, ProportionalStagesBeatUniformOnMixedDevices) {
  // One pipeline across the three device generations of the mixed cluster: tensor parallel 8
  // inside each node, data parallel 8, three stages, stage s on the s-th node group.
  auto run = [&](HybridConfig::Partition partition) {
    ParallelConfig p;
    p.tensor_model_parallel_size = 8;
    p.data_parallel_size = 8;
    p.pipeline_model_parallel_size = 3;
    HybridConfig h;
    h.partition = partition;
    return simulate_child("mixed", [&](const Cluster& c) {
      return std::make_unique<HybridParallel>(model("gpt3-1.3b"), training(32), p, h, devices_of(c, 192, DType::bf16));
    });
  };
  const Outcome uniform = run(HybridConfig::Partition::uniform);
  const Outcome proportional = run(HybridConfig::Partition::proportional);
  std::cout << "uniform " << uniform.iteration_s << " s, proportional " << proportional.iteration_s << " s ("
            << uniform.iteration_s / proportional.iteration_s << "x); H100 stage idle " << uniform.idle_s[0]
            << " s -> " << proportional.idle_s[0] << " s\n";
  EXPECT_LT(proportional.iteration_s, 0.8 * uniform.iteration_s);
  // Why: the fast (H100) stage no longer idles waiting for the slow (V100) one.
  EXPECT_LT(proportional.idle_s[0], 0.5 * uniform.idle_s[0]);
}

}  // namespace
}  // namespace tandem
