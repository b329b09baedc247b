// A data-parallel GPT-2 124M step as the simulator tests set it up: the strategy on a cluster's
// first ranks, its prediction (simulated in a child, as JSON with the exact iteration time), and
// one rank's recorded step (to compute by hand what the simulator should predict).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/sim_test_support.hpp"
#include "tests/strategies/recording_runtime.hpp"

namespace tandem::sim_test {

struct DpSetup {
  TrainingConfig training;
  ParallelConfig parallel;
  std::shared_ptr<const Model> model;
};

// GPT-2 124M over `dp` replicas, `sequences_per_replica` sequences of 1024 tokens each in
// micro-batches of 4.
inline DpSetup gpt2_setup(int dp, bool overlap, std::int64_t sequences_per_replica = 8) {
  DpSetup s;
  s.model = std::make_shared<TransformerModel>(transformer_preset("gpt2-124m"));
  s.training.global_batch_size = sequences_per_replica * dp;
  s.training.micro_batch_size = 4;
  s.training.seq_length = 1024;
  s.parallel.data_parallel_size = dp;
  s.parallel.overlap_grad_reduce = overlap;
  return s;
}

inline DataParallel make_dp(const DpSetup& s, const Cluster& cluster) {
  std::vector<double> speeds;
  for (int r = 0; r < s.parallel.data_parallel_size; ++r)
    speeds.push_back(cluster.device_of(r).peak_flops_per_s(s.training.precision));
  return DataParallel(s.model, s.training, s.parallel, speeds);
}

// Simulates in a child process and returns the prediction as JSON (plus the exact iteration time
// and the SimGrid executions).
inline nlohmann::json simulate_json(const DpSetup& setup, const std::string& cluster_path,
                                    sim::SimulationOptions options) {
  auto child = run_in_child([&] {
    const Cluster cluster = load_cluster(cluster_path);
    DataParallel dp = make_dp(setup, cluster);
    const sim::SimulationResult result = sim::simulate(dp, cluster, options);
    sim::PredictionInputs in;
    in.model = setup.model->describe();
    in.sequences_per_iteration = dp.sequences_per_iteration();
    in.seq_length = setup.training.seq_length;
    nlohmann::json j = sim::to_json(sim::summarize(result, cluster, in));
    j["iteration_time_exact"] = result.iteration_time_s;  // full precision for bitwise checks
    j["compute_executions"] = result.compute_executions;
    return j.dump();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  return nlohmann::json::parse(child.output);
}

// Rank 0's first step, recorded.
inline std::vector<testing::RecordedOp> recorded_step(const DpSetup& setup, const Cluster& cluster) {
  DataParallel dp = make_dp(setup, cluster);
  testing::RecordingRuntime rt(0, setup.parallel.data_parallel_size);
  auto program = dp.program_for(0);
  program->setup(rt);
  rt.begin_iteration(0);
  program->train_step(rt, 0);
  return rt.ops();
}

// A recorded compute op as the cost model takes it: with the kernel's shapes and tensors, since a
// GPU profile's kernel model costs a GEMM by its tiles and an optimizer step by its tensors' dtypes
// (sim/gpu_kernel_model.hpp).
inline ComputeOp compute_op_of(const testing::RecordedOp& op) {
  ComputeOp c;
  c.kind = op.kind;
  c.flops = op.flops;
  c.bytes = op.bytes;
  c.compute_dtype = op.compute_dtype;
  c.args = op.args;
  c.inputs = op.inputs;
  c.outputs = op.outputs;
  return c;
}

}  // namespace tandem::sim_test
