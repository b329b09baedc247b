#include "strategies/search/analytic_estimate.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/memory_ledger.hpp"

namespace tandem::search {

namespace {

// Executes nothing: keeps the memory ledger and the (FLOPs, bytes) of every compute op issued
// while `recording`.
class LedgerRuntime final : public Runtime {
 public:
  struct Work {
    Flops flops;
    Bytes bytes;
    Phase phase;
    DType dtype;
  };
  LedgerRuntime(int rank, int world) : rank_(rank), world_(world) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Tensor alloc(std::string_view, std::vector<std::int64_t> shape, DType dtype, MemCategory category) override {
    Tensor t{next_id_++, std::move(shape), dtype};
    ledger_.allocate(t.id, t.bytes(), category);
    return t;
  }
  void release(const Tensor& t) override { ledger_.release(t.id); }
  void reacquire(const Tensor& t, MemCategory category) override { ledger_.allocate(t.id, t.bytes(), category); }
  // Freed at once: never later than any backend frees it, so the peak stays a lower bound.
  void release_after(const Tensor& t, Handle) override { release(t); }
  Handle compute(ComputeOp op, const Issue&) override {
    if (recording) work_.push_back({op.flops, op.bytes, op.phase, op.compute_dtype});
    return Handle{};
  }
  Handle communicate(CommOp, const Issue&) override { return Handle{}; }
  void wait(Handle) override {}
  Handle record(Stream) override { return Handle{}; }
  void synchronize() override {}
  void begin_iteration(int) override {}
  void end_iteration() override {}

  const MemoryLedger& ledger() const { return ledger_; }
  const std::vector<Work>& work() const { return work_; }
  bool recording = false;

 private:
  int rank_, world_;
  std::int32_t next_id_ = 0;
  MemoryLedger ledger_;
  std::vector<Work> work_;
};

// Ranks with equal keys run the same program (up to peers and tensor-parallel rank, which change
// neither shapes nor op counts).
std::vector<std::int64_t> program_keys(const Strategy& strategy) {
  const int world = strategy.world_size();
  std::vector<std::int64_t> keys(world);
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy)) {
    for (int r = 0; r < world; ++r) {
      const RankCoord c = hybrid->layout().coord_of(r);
      keys[r] = hybrid->micro_batches_per_replica()[c.dp] * hybrid->layout().pp_size() + c.pp;
    }
  } else if (const auto* data = dynamic_cast<const DataParallel*>(&strategy)) {
    for (int r = 0; r < world; ++r) keys[r] = data->micro_batches_per_replica()[r];
  } else {
    for (int r = 0; r < world; ++r) keys[r] = r;  // unknown strategy: trace every rank
  }
  return keys;
}

// Lower bounds of a rank's compute in one iteration: all of it, and its forward and backward
// ops (recomputation counts as backward).
struct ComputeBound {
  Seconds total_s = 0, forward_s = 0, backward_s = 0;
};

ComputeBound compute_lower_bound(const std::vector<LedgerRuntime::Work>& work, const DeviceProfile& device) {
  ComputeBound b;
  for (const auto& w : work) {
    // The cost model runs an op at the peak of its dtype (tensor cores) or at the fp32 peak
    // (vector units), times an efficiency <= 1: the better of the two peaks bounds either.
    const FlopsPerSecond best_flops_per_s =
        std::max(device.peak_flops_per_s(w.dtype), device.peak_flops_per_s(DType::fp32));
    const Seconds flop_s = best_flops_per_s > 0 ? w.flops / best_flops_per_s : 0;
    const Seconds memory_s = device.memory_bandwidth_bytes_per_s > 0 ? w.bytes / device.memory_bandwidth_bytes_per_s : 0;
    const Seconds op_s = device.launch_overhead_s + std::max(flop_s, memory_s);
    b.total_s += op_s;
    if (w.phase == Phase::forward) b.forward_s += op_s;
    if (w.phase == Phase::backward) b.backward_s += op_s;
  }
  return b;
}

// A pipeline without interleaving (GPipe, 1F1B) cannot beat its fill and drain: stage s starts
// only once micro-batch 0 went forward through stages 0..s-1, does all its forward and backward
// work, and its last backward (micro-batch m-1) still has to go back through stages s-1..0. Every
// micro-batch of a stage does the same work, so one is 1/m of the stage's total.
Seconds pipeline_lower_bound_s(const HybridParallel& hybrid, const std::vector<ComputeBound>& ranks) {
  const RankLayout& layout = hybrid.layout();
  const int p = layout.pp_size();
  if (p == 1 || static_cast<int>(hybrid.layers_per_virtual_stage().size()) != p) return 0;  // interleaved: v > 1
  Seconds bound = 0;
  for (int d = 0; d < layout.dp_size(); ++d) {
    const double m = static_cast<double>(hybrid.micro_batches_per_replica()[d]);
    Seconds fill = 0, drain = 0;  // one micro-batch through stages 0..s-1, forward and backward
    for (int s = 0; s < p; ++s) {
      const ComputeBound& stage = ranks[layout.rank_of({0, d, s})];
      bound = std::max(bound, fill + stage.forward_s + stage.backward_s + drain);
      fill += stage.forward_s / m;
      drain += stage.backward_s / m;
    }
  }
  return bound;
}

}  // namespace

AnalyticEstimate estimate_strategy(const Strategy& strategy, const Cluster& cluster) {
  const int world = strategy.world_size();
  const auto keys = program_keys(strategy);
  struct Traced {
    Bytes peak_bytes;
    std::vector<LedgerRuntime::Work> work;
  };
  std::map<std::int64_t, Traced> traced;
  // Per (program, device kind): the compute bound, computed once.
  std::map<std::tuple<std::int64_t, std::string>, ComputeBound> compute_cache;
  std::vector<ComputeBound> compute(world);
  AnalyticEstimate e;
  e.ranks.resize(world);
  for (int r = 0; r < world; ++r) {
    auto it = traced.find(keys[r]);
    if (it == traced.end()) {
      LedgerRuntime rt(r, world);
      auto program = strategy.program_for(r);
      program->setup(rt);
      rt.recording = true;
      rt.begin_iteration(0);
      program->train_step(rt, 0);
      rt.end_iteration();
      it = traced.emplace(keys[r], Traced{rt.ledger().peak(), rt.work()}).first;
    }
    const DeviceProfile& device = cluster.device_of(r);
    auto [cached, fresh] = compute_cache.try_emplace({keys[r], device.name});
    if (fresh) cached->second = compute_lower_bound(it->second.work, device);
    compute[r] = cached->second;
    e.ranks[r] = {it->second.peak_bytes, cached->second.total_s};
    e.iteration_time_s = std::max(e.iteration_time_s, cached->second.total_s);
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, it->second.peak_bytes);
    e.memory_fraction = std::max(e.memory_fraction, it->second.peak_bytes / device.memory_capacity_bytes);
  }
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy))
    e.iteration_time_s = std::max(e.iteration_time_s, pipeline_lower_bound_s(*hybrid, compute));
  for (int r = 0; r < world; ++r) {
    const DeviceProfile& d = cluster.device_of(r);
    e.energy_per_iteration_j += d.idle_power_w * e.iteration_time_s +
                                std::max(0.0, d.busy_power_w - d.idle_power_w) * e.ranks[r].compute_s;
  }
  return e;
}

}  // namespace tandem::search
