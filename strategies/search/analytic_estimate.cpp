#include "strategies/search/analytic_estimate.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/search/rank_timeline.hpp"

namespace tandem::search {

namespace {

// Executes nothing: keeps the memory ledger and, while `recording`, replays the ops on one
// timeline per device kind that runs this program (rank_timeline.hpp).
class LedgerRuntime final : public Runtime {
 public:
  LedgerRuntime(int rank, int world, std::vector<const DeviceProfile*> devices, BytesPerSecond port_bytes_per_s,
                const LeastComputeSeconds& least_compute)
      : rank_(rank), world_(world), devices_(std::move(devices)), least_compute_(least_compute) {
    timelines_.assign(devices_.size(), RankTimeline(port_bytes_per_s));
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  // A cost model: dropless experts at their expected load (Runtime::dropless_expert_rows).
  std::int64_t dropless_expert_rows(std::int64_t, std::int64_t expected_rows) const override { return expected_rows; }
  Tensor alloc(std::string_view, std::vector<std::int64_t> shape, DType dtype, MemCategory category) override {
    Tensor t{next_id_++, std::move(shape), dtype};
    ledger_.allocate(t.id, t.bytes(), category);
    return t;
  }
  void release(const Tensor& t) override { ledger_.release(t.id); }
  void reacquire(const Tensor& t, MemCategory category) override { ledger_.allocate(t.id, t.bytes(), category); }
  // Freed at once: never later than any backend frees it, so the peak stays a lower bound.
  void release_after(const Tensor& t, Handle) override { release(t); }
  Handle compute(ComputeOp op, const Issue& issue) override {
    ops += recording ? 1 : 0;
    return each([&](RankTimeline& t, const DeviceProfile& d) {
      return t.compute(least_compute_(op, d), op.phase, issue.after);
    });
  }
  Handle communicate(CommOp op, const Issue& issue) override {
    ops += recording ? 1 : 0;
    return each([&](RankTimeline& t, const DeviceProfile&) { return t.communicate(op, rank_, issue.stream, issue.after); });
  }
  void wait(Handle h) override {
    if (recording) for (RankTimeline& t : timelines_) t.wait(h);
  }
  Handle record(Stream stream) override {
    return each([&](RankTimeline& t, const DeviceProfile&) { return t.record(stream); });
  }
  void synchronize() override {
    if (recording) for (RankTimeline& t : timelines_) t.synchronize();
  }
  void begin_iteration(int) override {}
  void end_iteration() override {}

  const MemoryLedger& ledger() const { return ledger_; }
  const RankTimeline& timeline(std::size_t device) const { return timelines_[device]; }
  bool recording = false;
  std::int64_t ops = 0;  // issued while recording

 private:
  // Every timeline replays the op; they hand out the same handle ids. Outside the recorded
  // iteration nothing is timed and every op counts as complete.
  template <class Op>
  Handle each(Op op) {
    if (!recording) return Handle{};
    Handle h;
    for (std::size_t i = 0; i < timelines_.size(); ++i) h = op(timelines_[i], *devices_[i]);
    return h;
  }

  int rank_, world_;
  std::vector<const DeviceProfile*> devices_;
  const LeastComputeSeconds& least_compute_;
  std::vector<RankTimeline> timelines_;
  std::int32_t next_id_ = 0;
  MemoryLedger ledger_;
};

// Ranks with equal keys run the same program (up to peers and tensor-parallel rank, which change
// neither shapes nor op counts): same micro-batches and pipeline stage. For a compute estimate,
// ranks with equal keys issue the same compute ops: same micro-batches, the same layer counts in
// each chunk, and the same of the embedding (stage 0) and the head (stage p-1).
std::vector<std::vector<std::int64_t>> program_keys(const Strategy& strategy, EstimateDetail detail) {
  const int world = strategy.world_size();
  std::vector<std::vector<std::int64_t>> keys(world);
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy)) {
    const int p = hybrid->layout().pp_size();
    const auto& layers = hybrid->layers_per_virtual_stage();
    for (int r = 0; r < world; ++r) {
      const RankCoord c = hybrid->layout().coord_of(r);
      keys[r] = {hybrid->micro_batches_per_replica()[c.dp]};
      if (detail == EstimateDetail::full) {
        keys[r].push_back(c.pp);
        continue;
      }
      keys[r].push_back(c.pp == 0);
      keys[r].push_back(c.pp == p - 1);
      for (std::size_t k = 0; k < layers.size(); ++k)
        if (stage_of_virtual_stage(hybrid->schedule(), static_cast<int>(k), p) == c.pp) keys[r].push_back(layers[k]);
    }
  } else if (const auto* data = dynamic_cast<const DataParallel*>(&strategy)) {
    // Replicas by their batch share; parameter servers (ranks after them) each by itself.
    const auto& shares = data->micro_batches_per_replica();
    for (int r = 0; r < world; ++r)
      keys[r] = r < static_cast<int>(shares.size()) ? std::vector<std::int64_t>{shares[static_cast<std::size_t>(r)]}
                                                     : std::vector<std::int64_t>{-1 - r};
  } else {
    for (int r = 0; r < world; ++r) keys[r] = {r};  // unknown strategy: trace every rank
  }
  return keys;
}

// Whether rank r belongs to data-parallel replica 0 (every rank of a strategy without replicas).
bool in_first_replica(const Strategy& strategy, int r) {
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy)) return hybrid->layout().coord_of(r).dp == 0;
  if (dynamic_cast<const DataParallel*>(&strategy) != nullptr) return r == 0;
  return true;
}

// A pipeline without interleaving (GPipe, 1F1B) cannot beat its fill and drain: stage s starts
// only once micro-batch 0 went forward through stages 0..s-1, does all its forward and backward
// work, and its last backward (micro-batch m-1) still has to go back through stages s-1..0. Every
// micro-batch of a stage does the same work, so one is 1/m of the stage's total.
Seconds pipeline_lower_bound_s(const HybridParallel& hybrid, const std::vector<RankEstimate>& ranks) {
  const RankLayout& layout = hybrid.layout();
  const int p = layout.pp_size();
  // Interleaved (v > 1): no bound claimed; nor when W passes can run after the drain (zb_h1, zb_v).
  if (p == 1 || static_cast<int>(hybrid.layers_per_virtual_stage().size()) != p || splits_backward(hybrid.schedule()))
    return 0;
  Seconds bound = 0;
  for (int d = 0; d < layout.dp_size(); ++d) {
    const double m = static_cast<double>(hybrid.micro_batches_per_replica()[d]);
    Seconds fill = 0, drain = 0;  // one micro-batch through stages 0..s-1, forward and backward
    for (int s = 0; s < p; ++s) {
      const RankEstimate& stage = ranks[layout.rank_of({0, d, s})];
      bound = std::max(bound, fill + stage.forward_s + stage.backward_s + drain);
      fill += stage.forward_s / m;
      drain += stage.backward_s / m;
    }
  }
  return bound;
}

// Every device draws at least its idle power for the whole iteration, and its busy power while
// its compute runs.
void add_energy(AnalyticEstimate& e, const Cluster& cluster) {
  for (int r = 0; r < static_cast<int>(e.ranks.size()); ++r) {
    const DeviceProfile& d = cluster.device_of(r);
    e.energy_per_iteration_j += d.idle_power_w * e.iteration_time_s +
                                std::max(0.0, d.busy_power_w - d.idle_power_w) * e.ranks[r].compute_s;
  }
}

}  // namespace

Seconds peak_roofline_seconds(const ComputeOp& op, const DeviceProfile& device) {
  // The cost model runs an op at the peak of its dtype (tensor cores) or at the fp32 peak
  // (vector units), times an efficiency <= 1: the better of the two peaks bounds either.
  const FlopsPerSecond best_flops_per_s =
      std::max(device.peak_flops_per_s(op.compute_dtype), device.peak_flops_per_s(DType::fp32));
  const Seconds flop_s = best_flops_per_s > 0 ? op.flops / best_flops_per_s : 0;
  const Seconds memory_s = device.memory_bandwidth_bytes_per_s > 0 ? op.bytes / device.memory_bandwidth_bytes_per_s : 0;
  return device.launch_overhead_s + std::max(flop_s, memory_s);
}

BytesPerSecond fastest_port_bytes_per_s(const Cluster& cluster) {
  BytesPerSecond fastest = 0;
  for (const NodeGroup& g : cluster.groups) {
    fastest = std::max(fastest, g.intra_link.bandwidth_bytes_per_s + g.nic.bandwidth_bytes_per_s);
    for (const CollectiveCost& c : g.collective_costs) fastest = std::max(fastest, c.bandwidth_bytes_per_s);
  }
  return fastest;
}

AnalyticEstimate estimate_strategy(const Strategy& strategy, const Cluster& cluster,
                                   const LeastComputeSeconds& least_compute, EstimateDetail detail) {
  const int world = strategy.world_size();
  const auto keys = program_keys(strategy, detail);
  // Ranks running one program, and the device kinds among them: each program is traced once,
  // on one timeline per device kind.
  struct Program {
    int first_rank = -1;
    std::vector<const DeviceProfile*> devices;
    Bytes peak_bytes = 0;
    std::int64_t ops = 0;
    std::vector<RankEstimate> compute;  // per device kind
    std::vector<Seconds> host_end_s;    // per device kind
  };
  std::map<std::vector<std::int64_t>, Program> programs;
  for (int r = 0; r < world; ++r) {
    Program& p = programs[keys[r]];
    if (p.first_rank < 0) p.first_rank = r;
    const DeviceProfile* d = &cluster.device_of(r);
    if (std::none_of(p.devices.begin(), p.devices.end(), [&](const DeviceProfile* x) { return x->name == d->name; }))
      p.devices.push_back(d);
  }
  const BytesPerSecond port_bytes_per_s = fastest_port_bytes_per_s(cluster);
  for (auto& [key, p] : programs) {
    LedgerRuntime rt(p.first_rank, world, p.devices, port_bytes_per_s, least_compute);
    auto program = strategy.program_for(p.first_rank);
    program->setup(rt);
    rt.recording = true;
    rt.begin_iteration(0);
    program->train_step(rt, 0);
    rt.end_iteration();
    p.peak_bytes = rt.ledger().peak();
    p.ops = rt.ops;
    for (std::size_t i = 0; i < p.devices.size(); ++i) {
      const RankTimeline& t = rt.timeline(i);
      p.compute.push_back({p.peak_bytes, t.compute_s(), t.forward_s(), t.backward_s()});
      p.host_end_s.push_back(t.host_end_s());
    }
  }
  AnalyticEstimate e;
  e.ranks.resize(world);
  for (int r = 0; r < world; ++r) {
    const Program& p = programs.at(keys[r]);
    const DeviceProfile& device = cluster.device_of(r);
    std::size_t kind = 0;
    while (p.devices[kind]->name != device.name) ++kind;
    e.ranks[r] = p.compute[kind];
    if (in_first_replica(strategy, r)) e.replica_ops += static_cast<double>(p.ops);
    if (detail == EstimateDetail::compute) {
      // The traced rank's memory and timeline are its own, not those of every rank it stands for.
      e.ranks[r].peak_memory_bytes = 0;
      e.iteration_time_s = std::max(e.iteration_time_s, e.ranks[r].compute_s);
      continue;
    }
    e.iteration_time_s = std::max(e.iteration_time_s, p.host_end_s[kind]);
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, p.peak_bytes);
    e.memory_fraction = std::max(e.memory_fraction, p.peak_bytes / device.memory_capacity_bytes);
  }
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy))
    e.iteration_time_s = std::max(e.iteration_time_s, pipeline_lower_bound_s(*hybrid, e.ranks));
  add_energy(e, cluster);
  return e;
}

AnalyticEstimate extrapolate_micro_batches(const HybridParallel& full, const Cluster& cluster,
                                           const AnalyticEstimate& at_k1, int k1, const AnalyticEstimate& at_k2, int k2) {
  const int world = full.world_size();
  AnalyticEstimate e;
  e.ranks.resize(world);
  const auto at = [&](Seconds a1, Seconds a2, double m) { return a2 + (m - k2) * (a2 - a1) / (k2 - k1); };
  for (int r = 0; r < world; ++r) {
    const double m = static_cast<double>(full.micro_batches_per_replica()[full.layout().coord_of(r).dp]);
    const RankEstimate& a1 = at_k1.ranks[r];
    const RankEstimate& a2 = at_k2.ranks[r];
    RankEstimate& x = e.ranks[r];
    x.compute_s = at(a1.compute_s, a2.compute_s, m);
    x.forward_s = at(a1.forward_s, a2.forward_s, m);
    x.backward_s = at(a1.backward_s, a2.backward_s, m);
    e.iteration_time_s = std::max(e.iteration_time_s, x.compute_s);
  }
  // The simulation's size grows with the micro-batches as well (replica 0's).
  e.replica_ops = at_k2.replica_ops * static_cast<double>(full.micro_batches_per_replica()[0]) / k2;
  e.iteration_time_s = std::max(e.iteration_time_s, pipeline_lower_bound_s(full, e.ranks));
  add_energy(e, cluster);
  return e;
}

}  // namespace tandem::search
