#include "strategies/model_averaging.hpp"

#include "strategies/ops.hpp"

namespace tandem {

void check_local_sgd(const ParallelConfig& parallel) {
  if (parallel.local_sgd_steps < 1)
    throw StrategyError("strategy.local_sgd_steps", "local SGD averages every H >= 1 steps");
  if (parallel.local_sgd_steps > 1 && (parallel.zero_stage != 0 || parallel.gradient_compression.enabled()))
    throw StrategyError("strategy.local_sgd_steps",
                        "local SGD keeps each replica's whole optimizer state and replaces the gradient "
                        "exchange: it needs zero_stage 0 and no gradient_compression");
}

void average_models(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
                    const Group& replicas, bool with_moments) {
  if (replicas.size() == 1) return;
  std::vector<Tensor> values;
  for (const Layer* layer : layers) {
    for (const Tensor& m : optimizer.masters(layer->name(), layer->parameters())) values.push_back(m);
    if (with_moments)
      for (const Tensor& m : optimizer.moments(layer->name())) values.push_back(m);
  }
  rt.wait(ops::all_reduce(rt, Phase::optimizer, "dp.params.average", values, replicas,
                          Issue{Stream::dp_comm, {rt.record(Stream::compute)}}, ReduceOp::avg));
  for (const Layer* layer : layers) {
    const std::vector<Tensor> masters = optimizer.masters(layer->name(), layer->parameters());
    for (std::size_t j = 0; j < masters.size(); ++j) {
      const Tensor& param = layer->parameters()[j];
      if (masters[j].id == param.id) continue;
      ops::elementwise(rt, Phase::optimizer, layer->name() + ".p" + std::to_string(j) + ".average_cast", {masters[j]},
                       {param}, ElementwiseArgs{ElementwiseFn::cast, param.numel()});
    }
  }
}

}  // namespace tandem
