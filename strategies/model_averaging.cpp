#include "strategies/model_averaging.hpp"

#include "strategies/ops.hpp"

namespace tandem {

void check_local_sgd(const ParallelConfig& parallel) {
  if (parallel.local_sgd_steps < 1)
    throw StrategyError("strategy.local_sgd_steps", "local SGD averages every H >= 1 steps");
  if (parallel.local_sgd_steps > 1 && parallel.offload_optimizer)
    throw StrategyError("strategy.offload_optimizer",
                        "local SGD averages the replicas' fp32 masters on the device: not with offload_optimizer");
  if (parallel.local_sgd_steps > 1 && (parallel.zero_stage != 0 || parallel.gradient_compression.enabled()))
    throw StrategyError("strategy.local_sgd_steps",
                        "local SGD keeps each replica's whole optimizer state and replaces the gradient "
                        "exchange: it needs zero_stage 0 and no gradient_compression");
  const int block = parallel.local_sgd_group_size;
  if (block < 1 || block > parallel.data_parallel_size || parallel.data_parallel_size % block != 0)
    throw StrategyError("strategy.local_sgd_group_size",
                        "hierarchical local SGD's blocks of replicas must divide data_parallel_size (" +
                            std::to_string(parallel.data_parallel_size) + ")");
  if (block > 1 && parallel.local_sgd_steps == 1)
    throw StrategyError("strategy.local_sgd_group_size",
                        "blocks of replicas stepping together are hierarchical local SGD's: it needs local_sgd_steps > 1");
  if (!(parallel.outer_lr > 0 && parallel.outer_lr <= 10))
    throw StrategyError("strategy.outer_lr", "DiLoCo's outer learning rate must be in (0, 10]");
  if (!(parallel.outer_momentum >= 0 && parallel.outer_momentum < 1))
    throw StrategyError("strategy.outer_momentum", "DiLoCo's outer momentum must be in [0, 1)");
  if ((parallel.outer_lr != 1.0f || parallel.outer_momentum != 0.0f) && parallel.local_sgd_steps == 1)
    throw StrategyError(parallel.outer_lr != 1.0f ? "strategy.outer_lr" : "strategy.outer_momentum",
                        "DiLoCo's outer optimizer steps local SGD's averages: it needs local_sgd_steps > 1");
}

std::int64_t block_micro_batches(const std::vector<std::int64_t>& micro_batches_per_replica, int replica,
                                 int block_size) {
  const std::size_t first = static_cast<std::size_t>(replica / block_size * block_size);
  std::int64_t sum = 0;
  for (std::size_t r = first; r < first + static_cast<std::size_t>(block_size) && r < micro_batches_per_replica.size(); ++r)
    sum += micro_batches_per_replica[r];
  return sum;
}

void OuterOptimizer::allocate(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers) {
  if (plain()) return;
  for (const Layer* layer : layers) {
    const std::vector<Tensor> values = optimizer.masters(layer->name(), layer->parameters());
    auto& state = state_[layer->name()];
    for (std::size_t j = 0; j < values.size(); ++j) {
      const TensorPlacement& where = layer->placements()[j];
      auto placed = [&](const char* what) {
        Tensor t = rt.alloc(where.name + "." + what, values[j].shape, DType::fp32, MemCategory::optimizer_state);
        TensorPlacement p = where;
        p.name += std::string(".") + what;
        rt.place(t, p);
        return t;
      };
      const Tensor anchor = placed("outer_anchor");
      rt.wait(ops::memcpy(rt, Phase::other, layer->name() + ".p" + std::to_string(j) + ".outer_anchor.init", values[j],
                          anchor));
      state.emplace_back(anchor, placed("outer_momentum"));
    }
  }
}

void OuterOptimizer::step(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
                          const std::function<bool(const Tensor&)>& include) const {
  if (plain()) return;
  for (const Layer* layer : layers) {
    const std::vector<Tensor> values = optimizer.masters(layer->name(), layer->parameters());
    const auto& state = state_.at(layer->name());
    for (std::size_t j = 0; j < values.size(); ++j) {
      if (include && !include(layer->parameters()[j])) continue;
      ElementwiseArgs args{ElementwiseFn::outer_nesterov, values[j].numel()};
      args.lr = lr_;
      args.momentum = momentum_;
      const std::vector<Tensor> in_place{values[j], state[j].first, state[j].second};
      ops::elementwise(rt, Phase::optimizer, layer->name() + ".p" + std::to_string(j) + ".outer_step", in_place,
                       in_place, args);
    }
  }
}

void average_models(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
                    const Group& replicas, bool with_moments, const OuterOptimizer* outer,
                    const std::function<bool(const Tensor&)>& include) {
  if (replicas.size() == 1 && (outer == nullptr || with_moments)) return;
  const auto taken = [&](const Layer& layer, std::size_t j) { return !include || include(layer.parameters()[j]); };
  std::vector<Tensor> values;
  for (const Layer* layer : layers) {
    const std::vector<Tensor> masters = optimizer.masters(layer->name(), layer->parameters());
    for (std::size_t j = 0; j < masters.size(); ++j)
      if (taken(*layer, j)) values.push_back(masters[j]);
    if (with_moments) {
      const std::vector<Tensor> moments = optimizer.moments(layer->name());  // (m, v) per parameter
      for (std::size_t j = 0; 2 * j + 1 < moments.size(); ++j)
        if (taken(*layer, j)) values.insert(values.end(), {moments[2 * j], moments[2 * j + 1]});
    }
  }
  if (replicas.size() > 1 && !values.empty())
    rt.wait(ops::all_reduce(rt, Phase::optimizer, "dp.params.average", values, replicas,
                            Issue{Stream::dp_comm, {rt.record(Stream::compute)}}, ReduceOp::avg));
  if (outer != nullptr && !with_moments) outer->step(rt, optimizer, layers, include);
  for (const Layer* layer : layers) {
    const std::vector<Tensor> masters = optimizer.masters(layer->name(), layer->parameters());
    for (std::size_t j = 0; j < masters.size(); ++j) {
      const Tensor& param = layer->parameters()[j];
      if (masters[j].id == param.id || !taken(*layer, j)) continue;
      ops::elementwise(rt, Phase::optimizer, layer->name() + ".p" + std::to_string(j) + ".average_cast", {masters[j]},
                       {param}, ElementwiseArgs{ElementwiseFn::cast, param.numel()});
    }
  }
}

}  // namespace tandem
