#include "sim/prediction.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "sim/collectives/nccl_fabric.hpp"

namespace tandem::sim {

namespace {
TimeBreakdown breakdown_of(const RankResult& r) {
  return {r.compute_s, r.exposed_comm_s, r.idle_s, r.comm_busy_s, r.contention_s};
}

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string human_seconds(Seconds s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.3f ms", s * 1e3);
  return fmt("%.3f us", s * 1e6);
}

std::string human_bytes(Bytes b) { return fmt("%.2f GiB", b / kGiB); }

nlohmann::json to_json(const TimeBreakdown& b) {
  return {{"compute_s", b.compute_s}, {"exposed_comm_s", b.exposed_comm_s}, {"idle_s", b.idle_s},
          {"comm_busy_s", b.comm_busy_s}, {"comm_contention_s", b.contention_s}};
}
}  // namespace

Prediction summarize(const SimulationResult& result, const Cluster& cluster,
                     const PredictionInputs& in) {
  Prediction p;
  p.scenario = in.scenario;
  p.strategy = in.strategy;
  p.model = in.model.name;
  p.caveats = in.caveats;
  p.devices = static_cast<int>(result.ranks.size());
  p.measured_iterations = static_cast<int>(result.iteration_times_s.size());
  p.iteration_time_s = result.iteration_time_s;
  const double sequences = static_cast<double>(in.sequences_per_iteration);
  p.samples_per_s = sequences / result.iteration_time_s;
  p.tokens_per_s = sequences * static_cast<double>(in.seq_length) / result.iteration_time_s;
  p.model_flops_per_iteration = in.model.model_flops_per_token * sequences * static_cast<double>(in.seq_length);
  FlopsPerSecond peak = 0;
  for (int r = 0; r < p.devices; ++r) peak += cluster.device_of(r).peak_flops_per_s(in.precision);
  p.mfu = p.model_flops_per_iteration / (result.iteration_time_s * peak);
  const double usd_per_s = cluster.usd_per_s(p.devices);
  p.usd_per_iteration = usd_per_s * result.iteration_time_s;
  if (p.tokens_per_s > 0) p.usd_per_million_tokens = usd_per_s / p.tokens_per_s * 1e6;

  // Time: the mean over ranks, and the rank with the most compute (the one the others wait for).
  for (int r = 0; r < p.devices; ++r) {
    const RankResult& rr = result.ranks[r];
    p.mean.compute_s += rr.compute_s / p.devices;
    p.mean.exposed_comm_s += rr.exposed_comm_s / p.devices;
    p.mean.idle_s += rr.idle_s / p.devices;
    p.mean.comm_busy_s += rr.comm_busy_s / p.devices;
    p.mean.contention_s += rr.contention_s / p.devices;
    if (rr.compute_s > result.ranks[p.slowest_rank].compute_s) p.slowest_rank = r;
  }
  p.slowest = breakdown_of(result.ranks[p.slowest_rank]);
  // Per measured iteration, like the iteration time.
  const double per = 1.0 / std::max(1, p.measured_iterations);
  for (TimeBreakdown* b : {&p.mean, &p.slowest}) {
    b->compute_s *= per, b->exposed_comm_s *= per, b->idle_s *= per, b->comm_busy_s *= per, b->contention_s *= per;
  }

  // Memory per node group.
  std::map<int, GroupMemory> groups;
  for (int r = 0; r < p.devices; ++r) {
    const int g = cluster.locate(r).group;
    const RankResult& rr = result.ranks[r];
    auto [it, fresh] = groups.try_emplace(g);
    GroupMemory& gm = it->second;
    if (fresh) {
      gm.group = cluster.groups[g].name;
      gm.device = cluster.groups[g].device.name;
      gm.device_basis = cluster.groups[g].device.basis_text();
      gm.capacity_bytes = cluster.groups[g].device.memory_capacity_bytes;
      gm.peak_min_bytes = rr.peak_memory_bytes;
    }
    gm.ranks++;
    gm.peak_min_bytes = std::min(gm.peak_min_bytes, rr.peak_memory_bytes);
    if (rr.peak_memory_bytes >= gm.peak_max_bytes) {
      gm.peak_max_bytes = rr.peak_memory_bytes;
      gm.at_peak = rr.memory_at_peak;
    }
    gm.out_of_memory = gm.out_of_memory || rr.out_of_memory;
  }
  p.collectives_basis = collectives_basis(cluster);
  // Host memory (offload): each node's ranks together, the fullest node of each group.
  std::map<int, std::pair<int, Bytes>> host_per_node;  // global node -> (its group, bytes)
  for (int r = 0; r < p.devices; ++r) {
    const DeviceLocation where = cluster.locate(r);
    auto& [group, bytes] = host_per_node[where.global_node];
    group = where.group;
    bytes += result.ranks[r].host_peak_bytes;
  }
  for (const auto& [node, held] : host_per_node) {
    const auto& [g, bytes] = held;
    GroupMemory& gm = groups.at(g);
    gm.host_per_node_bytes = std::max(gm.host_per_node_bytes, bytes);
    gm.host_capacity_bytes = cluster.groups[g].host.memory_bytes;
    gm.host_out_of_memory = gm.host_capacity_bytes > 0 && gm.host_per_node_bytes > gm.host_capacity_bytes;
    gm.out_of_memory = gm.out_of_memory || gm.host_out_of_memory;
  }
  for (auto& [g, gm] : groups) {
    p.out_of_memory = p.out_of_memory || gm.out_of_memory;
    p.memory.push_back(gm);
  }
  p.energy_per_iteration_j = result.energy_per_iteration_j;
  p.simulation_wall_time_s = result.wall_time_s;
  p.simulated_compute_ops = result.compute_ops;
  p.simulated_comm_ops = result.comm_ops;
  p.simulated_ranks = result.simulated_ranks;
  p.folding = result.folding;
  return p;
}

nlohmann::json to_json(const Prediction& p) {
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& g : p.memory) {
    nlohmann::json at_peak;
    for (int c = 0; c < kMemCategoryCount; ++c)
      at_peak[to_string(static_cast<MemCategory>(c))] = g.at_peak.by_category[c];
    memory.push_back({{"group", g.group}, {"device", g.device}, {"device_basis", g.device_basis}, {"ranks", g.ranks},
                      {"capacity_bytes", g.capacity_bytes}, {"peak_min_bytes", g.peak_min_bytes},
                      {"peak_max_bytes", g.peak_max_bytes}, {"at_peak_bytes", at_peak},
                      {"out_of_memory", g.out_of_memory}, {"host_per_node_bytes", g.host_per_node_bytes},
                      {"host_capacity_bytes", g.host_capacity_bytes}, {"host_out_of_memory", g.host_out_of_memory}});
  }
  return {{"scenario", p.scenario},
          {"strategy", p.strategy},
          {"model", p.model},
          {"devices", p.devices},
          {"measured_iterations", p.measured_iterations},
          {"iteration_time_s", p.iteration_time_s},
          {"tokens_per_s", p.tokens_per_s},
          {"samples_per_s", p.samples_per_s},
          {"model_flops_per_iteration", p.model_flops_per_iteration},
          {"mfu", p.mfu},
          {"time_breakdown_mean", to_json(p.mean)},
          {"time_breakdown_slowest_rank", to_json(p.slowest)},
          {"slowest_rank", p.slowest_rank},
          {"memory", memory},
          {"out_of_memory", p.out_of_memory},
          {"energy_per_iteration_j", p.energy_per_iteration_j},
          {"usd_per_iteration", p.usd_per_iteration},
          {"usd_per_million_tokens", p.usd_per_million_tokens},
          {"caveats", p.caveats},
          {"collectives_basis", p.collectives_basis},
          {"simulation",
           {{"wall_time_s", p.simulation_wall_time_s},
            {"compute_ops", p.simulated_compute_ops},
            {"comm_ops", p.simulated_comm_ops},
            {"simulated_ranks", p.simulated_ranks},
            {"replica_folding", p.folding}}}};
}

std::string to_text(const Prediction& p) {
  std::ostringstream out;
  out << "scenario    " << p.scenario << "  (" << p.model << ", " << p.strategy << ", " << p.devices
      << " devices)\n";
  out << "iteration   " << human_seconds(p.iteration_time_s) << "\n";
  out << "throughput  " << fmt("%.4g", p.tokens_per_s) << " tokens/s, " << fmt("%.4g", p.samples_per_s)
      << " samples/s\n";
  out << "MFU         " << fmt("%.1f %%", 100 * p.mfu) << "\n";
  auto line = [&](const char* name, const TimeBreakdown& b) {
    const double total = b.compute_s + b.exposed_comm_s + b.idle_s;
    out << name << "compute " << human_seconds(b.compute_s) << fmt(" (%.1f%%)", 100 * b.compute_s / total)
        << ", exposed comm " << human_seconds(b.exposed_comm_s)
        << fmt(" (%.1f%%)", 100 * b.exposed_comm_s / total) << ", idle " << human_seconds(b.idle_s)
        << fmt(" (%.1f%%)", 100 * b.idle_s / total) << "; comm streams busy "
        << human_seconds(b.comm_busy_s);
    if (b.contention_s > 0)
      out << "; compute slowed " << human_seconds(b.contention_s) << " by the SMs and HBM bandwidth NCCL's kernels held";
    out << "\n";
  };
  line("time (mean)  ", p.mean);
  line("time (slowest rank) ", p.slowest);
  out << "memory (peak per device):\n";
  for (const auto& g : p.memory) {
    out << "  " << g.group << " [" << g.device << " x" << g.ranks << "]  " << human_bytes(g.peak_max_bytes)
        << " of " << human_bytes(g.capacity_bytes) << (g.out_of_memory ? "  OUT OF MEMORY" : "  ok") << "  (";
    for (int c = 0; c < kMemCategoryCount; ++c) {
      if (g.at_peak.by_category[c] <= 0) continue;
      out << to_string(static_cast<MemCategory>(c)) << " " << human_bytes(g.at_peak.by_category[c]) << "; ";
    }
    out << ")\n";
    if (g.host_per_node_bytes > 0)
      out << "    host memory per node (offloaded optimizer)  " << human_bytes(g.host_per_node_bytes) << " of "
          << human_bytes(g.host_capacity_bytes) << (g.host_out_of_memory ? "  OUT OF MEMORY" : "  ok") << "\n";
  }
  // What the prediction rests on: each device profile's basis (datasheet, published
  // measurements and the validation suite's error, or a calibration's machine and date).
  out << "profiles:\n";
  for (const auto& g : p.memory) out << "  " << g.device << ": " << g.device_basis << "\n";
  out << "collectives:\n";
  for (const std::string& line : p.collectives_basis) out << "  " << line << "\n";
  out << "verdict     " << (p.out_of_memory ? "OUT OF MEMORY on at least one device" : "fits in memory")
      << "\n";
  out << "energy      " << fmt("%.4g", p.energy_per_iteration_j) << " J per iteration\n";
  if (p.usd_per_iteration > 0)
    out << "cost        $" << fmt("%.4g", p.usd_per_iteration) << " per iteration, $"
        << fmt("%.4g", p.usd_per_million_tokens) << " per million tokens (device prices per hour)\n";
  for (const std::string& caveat : p.caveats) out << "caveat      " << caveat << "\n";
  out << "simulated   " << p.simulated_compute_ops << " compute + " << p.simulated_comm_ops
      << " comm ops on " << p.simulated_ranks << " of " << p.devices << " ranks in "
      << fmt("%.2f", p.simulation_wall_time_s) << " s wall (" << p.folding << ")\n";
  return out.str();
}

}  // namespace tandem::sim
