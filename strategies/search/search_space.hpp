// The space a strategy search explores: for each knob, the values it may take. A scenario pins a
// knob (one value), lists values, or bounds a numeric one; knobs it leaves open get defaults that
// suit the cluster (powers of two up to a node for tensor parallelism, every divisor of the
// device count for pipelines, heterogeneity-aware splits only on mixed clusters).
//
// Enumeration walks the knobs in a fixed order, so the candidate list is the same on every run.
// Combinations that cannot be valid are dropped with a reason and counted; combinations whose
// extra knobs mean nothing (a schedule without a pipeline, ZeRO without data parallelism) are
// not multiplied out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "strategies/search/candidate.hpp"

namespace tandem::search {

struct SearchSpace {
  std::vector<int> devices;  // world sizes (ranks 0..n-1 of the cluster); empty: all devices
  // Node selections (nodes used of each node group, platforms/cluster_selection.hpp), instead of
  // `devices`: a plan may leave nodes of any kind idle. Empty: not searched.
  std::vector<std::vector<int>> nodes;
  std::vector<int> tp, pp, dp;  // empty: any that fits (dp follows from devices / (tp x pp))
  std::vector<std::int64_t> micro_batch_size;
  std::vector<PipelineSchedule> schedule;
  std::vector<int> virtual_stages;  // used by the interleaved schedule only
  std::vector<int> zero_stage;
  // ZeRO-Offload (0 / 1), with ZeRO >= 1 or a single replica; default {0}: a search tries it when
  // asked, on a cluster whose nodes describe their host.
  std::vector<int> offload_optimizer;
  std::vector<Recompute> recompute;
  std::vector<int> sequence_parallel;  // 0 / 1
  std::vector<RankOrder> order;
  std::vector<HybridConfig::Partition> partition;
  std::vector<BatchSplit> batch_split;
  std::vector<int> local_sgd_steps;  // local SGD's averaging periods (with ZeRO 0 only); default {1}
  // Hierarchical local SGD's blocks of replicas (with a period > 1; dividing dp); default {1}.
  std::vector<int> local_sgd_group_size;
  std::vector<int> cp;               // context_parallel_size values; default {1}
  std::vector<int> ep;               // expert_model_parallel_size values (MoE models); default {1}
  // training.fp8 recipes (FP8 GEMMs; only on devices with FP8 tensor cores); default: the
  // scenario's own.
  std::vector<Fp8Recipe> fp8;
  // Parameter-server plans (data parallelism alone, ZeRO 0): server counts, taken from the
  // devices (dp = devices - servers), and their update staleness; default {0} and {0}.
  std::vector<int> parameter_servers;
  std::vector<int> parameter_server_staleness;
  std::vector<int> parameter_server_asynchronous;  // 0 / 1 (plans with servers, staleness 0); default {0}
  std::vector<int> parameter_server_optimizer;  // 0 / 1 (synchronous plans only); default {0}
};

// Fills every knob left empty with its default for this cluster and training configuration.
SearchSpace complete_space(SearchSpace space, const Cluster& cluster, const TrainingConfig& training);

struct Enumeration {
  std::vector<Candidate> candidates;            // structurally valid, in canonical order
  std::map<std::string, std::int64_t> dropped;  // reason -> combinations dropped for it
  std::int64_t combinations = 0;                // looked at (candidates + dropped)
};

// Enumerates a completed space. Drops what cannot be valid whatever the model: sizes that do not
// multiply to the device count, a tensor group larger than a node, batches that do not split.
Enumeration enumerate(const SearchSpace& space, const Cluster& cluster, const TrainingConfig& training);

// A node group's counts a search tries by default: 0, the powers of two below `node_count`, and
// `node_count`.
std::vector<int> default_node_counts(int node_count);

// Node selections for a search that may leave nodes idle: for each group, its counts (empty:
// default_node_counts), all combinations but the empty one, in canonical order.
std::vector<std::vector<int>> node_selections(const Cluster& cluster, std::vector<std::vector<int>> counts_per_group);

// Whether ranks 0..world-1 of the cluster hold more than one kind of device.
bool heterogeneous_prefix(const Cluster& cluster, int world);

}  // namespace tandem::search
