// What `tandem simulate` tells a person: iteration time, throughput, model FLOPs utilization,
// where the time went, peak memory per device group with an out-of-memory verdict, and energy —
// summarised from a SimulationResult, as text and as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/simulation.hpp"
#include "strategies/model.hpp"

namespace tandem::sim {

struct TimeBreakdown {
  Seconds compute_s = 0;
  Seconds exposed_comm_s = 0;
  Seconds idle_s = 0;
  Seconds comm_busy_s = 0;
  Seconds contention_s = 0;  // of compute_s: kernels slowed by NCCL kernels holding SMs
};

struct GroupMemory {
  std::string group;   // node group name
  std::string device;  // device profile name
  std::string device_basis;  // what the profile rests on (DeviceProfile::basis_text)
  int ranks = 0;
  Bytes capacity_bytes = 0;
  Bytes peak_min_bytes = 0;
  Bytes peak_max_bytes = 0;
  MemoryUsage at_peak;  // breakdown on the rank with the largest peak
  bool out_of_memory = false;
  // Offload: the host memory a node's ranks hold together (the fullest node of the group), and
  // the node's host memory (0: the cluster does not say).
  Bytes host_per_node_bytes = 0;
  Bytes host_capacity_bytes = 0;
  bool host_out_of_memory = false;
};

struct Prediction {
  std::string scenario;
  std::string strategy;
  std::string model;
  // What the prediction prices differently from the run it stands for, said where it is read.
  std::vector<std::string> caveats;
  int devices = 0;
  int measured_iterations = 0;
  Seconds iteration_time_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  Flops model_flops_per_iteration = 0;
  double mfu = 0;  // model FLOPs / (time × Σ peak of the training dtype)
  TimeBreakdown mean;       // averaged over ranks
  TimeBreakdown slowest;    // the rank with the most compute (the critical one)
  int slowest_rank = 0;
  std::vector<GroupMemory> memory;
  bool out_of_memory = false;
  Joules energy_per_iteration_j = 0;
  // The devices' price (price_per_hour_usd) over the iteration, as the cost search ranks plans;
  // 0 when a device used has no price.
  double usd_per_iteration = 0;
  double usd_per_million_tokens = 0;
  double simulation_wall_time_s = 0;
  std::size_t simulated_compute_ops = 0;
  std::size_t simulated_comm_ops = 0;
  int simulated_ranks = 0;  // fewer than `devices` when replicas were folded
  std::string folding;      // how, or why not
  // What the collectives' timing rests on, one line per node group kind: the NCCL model's basis
  // (nccl::basis_of), or the links' nominal figures where the cluster describes no NCCL fabric.
  std::vector<std::string> collectives_basis;
};

struct PredictionInputs {
  std::string scenario;
  std::string strategy;
  ModelDescription model;
  std::int64_t sequences_per_iteration = 0;
  std::int64_t seq_length = 0;
  DType precision = DType::bf16;
  std::vector<std::string> caveats;  // copied to Prediction::caveats
};

Prediction summarize(const SimulationResult& result, const Cluster& cluster,
                     const PredictionInputs& inputs);

nlohmann::json to_json(const Prediction& prediction);
std::string to_text(const Prediction& prediction);

}  // namespace tandem::sim
