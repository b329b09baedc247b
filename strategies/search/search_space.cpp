#include "strategies/search/search_space.hpp"

#include <algorithm>
#include <limits>

#include "platforms/cluster_selection.hpp"

namespace tandem::search {

namespace {

std::vector<int> powers_of_two_up_to(int limit) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::vector<int> divisors_of(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

int max_devices_per_node(const Cluster& cluster) {
  int most = 1;
  for (const NodeGroup& g : cluster.groups) most = std::max(most, g.devices_per_node);
  return most;
}

// The smallest node among the groups that ranks 0..world-1 touch: a tensor group must fit in it.
int min_devices_per_node(const Cluster& cluster, int world) {
  int least = std::numeric_limits<int>::max();
  for (int g = 0; g < static_cast<int>(cluster.groups.size()) && cluster.first_rank(g) < world; ++g)
    least = std::min(least, cluster.groups[g].devices_per_node);
  return least;
}

template <class T>
std::vector<T> first_only(const std::vector<T>& values) {
  return {values.front()};
}

// The values of a knob that matters for this combination, or just its first value when it
// does not (so that meaningless variations are not enumerated as different strategies).
template <class T>
const std::vector<T>& relevant(const std::vector<T>& values, bool matters, std::vector<T>& scratch) {
  if (matters) return values;
  scratch = first_only(values);
  return scratch;
}

}  // namespace

std::vector<int> default_node_counts(int node_count) {
  std::vector<int> counts{0};
  for (int n = 1; n < node_count; n *= 2) counts.push_back(n);
  counts.push_back(node_count);
  return counts;
}

std::vector<std::vector<int>> node_selections(const Cluster& cluster, std::vector<std::vector<int>> counts) {
  counts.resize(cluster.groups.size());
  for (std::size_t g = 0; g < counts.size(); ++g)
    if (counts[g].empty()) counts[g] = default_node_counts(cluster.groups[g].node_count);
  std::vector<std::vector<int>> out{{}};
  for (const std::vector<int>& values : counts) {
    std::vector<std::vector<int>> grown;
    for (const auto& prefix : out)
      for (int v : values) {
        grown.push_back(prefix);
        grown.back().push_back(v);
      }
    out = std::move(grown);
  }
  std::erase_if(out, [](const std::vector<int>& s) { return std::all_of(s.begin(), s.end(), [](int n) { return n == 0; }); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool heterogeneous_prefix(const Cluster& cluster, int world) {
  for (int r = 1; r < world; ++r)
    if (cluster.device_of(r).name != cluster.device_of(0).name) return true;
  return false;
}

SearchSpace complete_space(SearchSpace s, const Cluster& cluster, const TrainingConfig& training) {
  const int devices = cluster.device_count();
  if (s.devices.empty()) s.devices = {devices};
  int largest = *std::max_element(s.devices.begin(), s.devices.end());
  for (const auto& selection : s.nodes) largest = std::max(largest, selected_devices(cluster, selection));
  if (s.tp.empty()) s.tp = powers_of_two_up_to(max_devices_per_node(cluster));
  if (s.pp.empty()) s.pp = divisors_of(largest);
  if (s.micro_batch_size.empty())
    for (int v : powers_of_two_up_to(static_cast<int>(std::min<std::int64_t>(8, training.global_batch_size))))
      s.micro_batch_size.push_back(v);
  if (s.schedule.empty()) s.schedule = {PipelineSchedule::one_f_one_b};
  if (s.virtual_stages.empty()) s.virtual_stages = {2};
  if (s.zero_stage.empty()) s.zero_stage = {0, 1};
  if (s.offload_optimizer.empty()) s.offload_optimizer = {0};
  if (s.recompute.empty()) s.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  if (s.sequence_parallel.empty()) s.sequence_parallel = {0};
  if (s.order.empty()) s.order = {RankOrder::tp_dp_pp};
  if (s.local_sgd_steps.empty()) s.local_sgd_steps = {1};
  if (s.local_sgd_group_size.empty()) s.local_sgd_group_size = {1};
  if (s.cp.empty()) s.cp = {1};
  if (s.ep.empty()) s.ep = {1};
  if (s.fp8.empty()) s.fp8 = {training.fp8};
  if (s.parameter_servers.empty()) s.parameter_servers = {0};
  if (s.parameter_server_staleness.empty()) s.parameter_server_staleness = {0};
  if (s.parameter_server_optimizer.empty()) s.parameter_server_optimizer = {0};
  if (s.parameter_server_asynchronous.empty()) s.parameter_server_asynchronous = {0};
  const bool mixed = heterogeneous_prefix(cluster, largest) || (!s.nodes.empty() && cluster.is_heterogeneous());
  if (s.partition.empty())
    s.partition = mixed ? std::vector{HybridConfig::Partition::uniform, HybridConfig::Partition::proportional}
                        : std::vector{HybridConfig::Partition::uniform};
  if (s.batch_split.empty())
    s.batch_split = mixed ? std::vector{BatchSplit::even, BatchSplit::proportional} : std::vector{BatchSplit::even};
  return s;
}

Enumeration enumerate(const SearchSpace& s, const Cluster& cluster, const TrainingConfig& training) {
  Enumeration out;
  auto drop = [&](const std::string& reason) {
    ++out.dropped[reason];
    ++out.combinations;
  };
  const std::int64_t batch = training.global_batch_size;
  std::vector<int> ints;
  std::vector<PipelineSchedule> schedules;
  std::vector<HybridConfig::Partition> partitions;
  std::vector<BatchSplit> splits;
  std::vector<RankOrder> orders;
  // The device sets to split: prefixes of the cluster (`devices`), or node selections.
  struct DeviceSet {
    std::vector<int> nodes;
    Cluster cluster;
    int world;
  };
  // Parameter-server plans on `world` devices: data parallelism alone (tp, pp, cp 1, ZeRO 0, no
  // local SGD, an even split), the servers taken from the devices; the knobs that mean something
  // there multiplied out.
  const auto has = [](const auto& values, auto v) { return std::find(values.begin(), values.end(), v) != values.end(); };
  const auto parameter_server_plans = [&](int world, const std::vector<int>& nodes, bool fp8_capable) {
    for (int servers : s.parameter_servers) {
      if (servers == 0) continue;  // plans without servers: the loops above
      const int dp = world - servers;
      if (dp < 1) {
        drop("parameter servers leave no worker");
        continue;
      }
      if (!has(s.tp, 1) || !has(s.pp, 1) || !has(s.cp, 1) || !has(s.zero_stage, 0)) {
        drop("parameter servers need data parallelism alone (tp, pp, cp 1 and ZeRO 0 allowed)");
        continue;
      }
      if (!s.dp.empty() && !has(s.dp, dp)) {
        drop("data-parallel size outside the allowed values");
        continue;
      }
      for (std::int64_t mbs : s.micro_batch_size) {
        if (batch % mbs != 0 || (batch / mbs) % dp != 0) {
          drop("micro-batches do not split evenly over data-parallel replicas");
          continue;
        }
        for (Recompute recompute : s.recompute)
          for (Fp8Recipe fp8 : s.fp8) {
            if (fp8 != Fp8Recipe::none && !fp8_capable) {
              drop("FP8 on devices without FP8 tensor cores");
              continue;
            }
            for (int staleness : s.parameter_server_staleness)
              for (int server_optimizer : s.parameter_server_optimizer)
                for (int asynchronous : s.parameter_server_asynchronous) {
                  if (server_optimizer && staleness > 0) {
                    drop("servers that step the optimizer are synchronous");
                    continue;
                  }
                  if (asynchronous && staleness > 0) {
                    drop("asynchronous servers bound no staleness");
                    continue;
                  }
                  if (asynchronous && server_optimizer) {
                    drop("asynchronous servers step the optimizer anyway (the plan without it)");
                    continue;
                  }
                  Candidate c;
                  c.dp = dp, c.micro_batch_size = mbs, c.recompute = recompute, c.fp8 = fp8, c.nodes = nodes;
                  c.parameter_servers = servers;
                  c.parameter_server_staleness = staleness;
                  c.parameter_server_optimizer = server_optimizer != 0;
                  c.parameter_server_asynchronous = asynchronous != 0;
                  out.candidates.push_back(c);
                  ++out.combinations;
                }
          }
      }
    }
  };
  std::vector<DeviceSet> sets;
  if (s.nodes.empty()) {
    for (int world : s.devices) sets.push_back({{}, cluster, world});
  } else {
    for (const auto& selection : s.nodes) {
      const Cluster part = select_nodes(cluster, selection);
      sets.push_back({selection, part, part.device_count()});
    }
  }
  for (const DeviceSet& set : sets) {
    const int world = set.world;
    if (world > set.cluster.device_count()) {
      drop("more devices than the cluster has");
      continue;
    }
    const bool mixed = heterogeneous_prefix(set.cluster, world);
    bool fp8_capable = true;  // every device of the set has FP8 tensor cores (GPUs; CPUs emulate)
    bool hosts_described = true;  // every node of the set describes its host (offloading)
    for (int r = 0; r < world; ++r) {
      const DeviceProfile& d = set.cluster.device_of(r);
      fp8_capable = fp8_capable && (!d.is_gpu() || d.peak_fp8_flops_per_s > 0);
      hosts_described = hosts_described && set.cluster.group_of(r).host.given();
    }
    for (int tp : s.tp) {
      if (tp > min_devices_per_node(set.cluster, world)) {
        drop("tensor group larger than a node");
        continue;
      }
      for (int pp : s.pp)
      for (int cp : s.cp) {
        if (world % (tp * pp * cp) != 0) {
          drop(cp > 1 ? "tp x pp x cp does not divide the device count" : "tp x pp does not divide the device count");
          continue;
        }
        const int dp = world / (tp * pp * cp);
        if (!s.dp.empty() && std::find(s.dp.begin(), s.dp.end(), dp) == s.dp.end()) {
          drop("data-parallel size outside the allowed values");
          continue;
        }
        for (std::int64_t mbs : s.micro_batch_size) {
          if (batch % mbs != 0) {
            drop("global batch not a multiple of the micro-batch size");
            continue;
          }
          const std::int64_t micro_batches = batch / mbs;
          if (micro_batches < dp) {
            drop("fewer micro-batches than data-parallel replicas");
            continue;
          }
          // Alike devices split alike batches alike: proportional differs from even only where
          // the micro-batches do not divide over the replicas (some replicas then take one more).
          for (BatchSplit split : relevant(s.batch_split, dp > 1 && (mixed || micro_batches % dp != 0), splits)) {
            if (split == BatchSplit::even && micro_batches % dp != 0) {
              drop("micro-batches do not split evenly over data-parallel replicas");
              continue;
            }
            const std::vector<PipelineSchedule> one_f_one_b{PipelineSchedule::one_f_one_b};
            for (PipelineSchedule schedule : pp > 1 ? s.schedule : one_f_one_b) {
              const bool interleaved = schedule == PipelineSchedule::interleaved_1f1b;
              const std::vector<int> one{1}, v_shape{2};  // zb_v: two chunks per stage
              for (int v : interleaved ? s.virtual_stages : schedule == PipelineSchedule::zb_v ? v_shape : one) {
                if (interleaved && v < 2) {
                  drop("interleaved schedule needs at least 2 virtual stages");
                  continue;
                }
                if (interleaved && split == BatchSplit::even && (micro_batches / dp) % pp != 0) {
                  drop("interleaved schedule needs micro-batches divisible by the pipeline size");
                  continue;
                }
                for (int zero : relevant(s.zero_stage, dp > 1, ints)) {
                  static const std::vector<int> on_device{0};
                  // Offloading with ZeRO >= 1, as DeepSpeed has it, or without replicas (where ZeRO
                  // shards nothing).
                  for (int offload : zero >= 1 || dp == 1 ? s.offload_optimizer : on_device) {
                  if (offload && !hosts_described) {
                    drop("offloading on a cluster whose nodes do not describe their host");
                    continue;
                  }
                  for (Recompute recompute : s.recompute) {
                    std::vector<int> sps;
                    for (int sp : relevant(s.sequence_parallel, tp > 1, sps)) {
                      if (sp && tp == 1) {
                        drop("sequence parallelism needs tensor parallelism");
                        continue;
                      }
                      for (RankOrder order : relevant(s.order, dp > 1 && pp > 1, orders)) {
                        for (auto partition : relevant(s.partition, pp > 1 && mixed, partitions)) {
                          // Local SGD keeps whole optimizer states: ZeRO 0 only, and replicas to average.
                          static const std::vector<int> synchronous{1};
                          for (int h : dp > 1 && zero == 0 ? s.local_sgd_steps : synchronous)
                          for (int g : h > 1 ? s.local_sgd_group_size : synchronous)
                          for (Fp8Recipe fp8 : s.fp8)
                          for (int ep : s.ep) {
                            if (g > 1 && (dp % g != 0 || g == dp)) {
                              drop(g == dp ? "local SGD blocks of every replica (synchronous data parallelism)"
                                           : "local SGD block size does not divide the data-parallel size");
                              continue;
                            }
                            if (fp8 != Fp8Recipe::none && !fp8_capable) {
                              drop("FP8 on devices without FP8 tensor cores");
                              continue;
                            }
                            if (dp % ep != 0) {
                              drop("expert-parallel size does not divide the data-parallel size");
                              continue;
                            }
                            Candidate c;
                            c.tp = tp, c.pp = pp, c.dp = dp, c.micro_batch_size = mbs;
                            c.schedule = schedule, c.virtual_stages = v, c.zero_stage = zero;
                            c.offload_optimizer = offload != 0;
                            c.recompute = recompute, c.sequence_parallel = sp != 0, c.order = order;
                            c.partition = partition, c.batch_split = split, c.nodes = set.nodes;
                            c.local_sgd_steps = h;
                            c.local_sgd_group_size = g;
                            c.cp = cp;
                            c.fp8 = fp8;
                            c.ep = ep;
                            out.candidates.push_back(c);
                            ++out.combinations;
                          }
                        }
                      }
                    }
                  }
                }
                }
              }
            }
          }
        }
      }
    }
    parameter_server_plans(set.world, set.nodes, fp8_capable);
  }
  std::sort(out.candidates.begin(), out.candidates.end());
  out.candidates.erase(std::unique(out.candidates.begin(), out.candidates.end()), out.candidates.end());
  return out;
}

}  // namespace tandem::search
