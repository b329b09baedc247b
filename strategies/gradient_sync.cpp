#include "strategies/gradient_sync.hpp"

#include "strategies/ops.hpp"

namespace tandem {

std::int64_t shard_numel(std::int64_t n, int shards) { return (n + shards - 1) / shards; }

void zero_gradients(Runtime& rt, const Layer& layer, Phase phase, const std::string& label_prefix) {
  int j = 0;
  for (const Tensor& g : layer.gradients())
    ops::elementwise(rt, phase, label_prefix + layer.name() + ".g" + std::to_string(j++) + ".zero", {g}, {g},
                     ElementwiseArgs{ElementwiseFn::scale, g.numel(), false});
}

GradientBuckets::GradientBuckets(Group group, std::int64_t bucket_params, Reduction reduction)
    : group_(std::move(group)), limit_(bucket_params), reduction_(reduction) {}

void GradientBuckets::add(Runtime& rt, const std::vector<Tensor>& gradients) {
  for (const Tensor& g : gradients) {
    current_.push_back(g);
    current_params_ += g.numel();
    if (current_params_ >= limit_) launch(rt);
  }
}

void GradientBuckets::launch(Runtime& rt) {
  if (current_.empty()) return;
  // On the data-parallel stream, after the backward ops that produced these gradients.
  const Issue issue{Stream::dp_comm, {rt.record(Stream::compute)}};
  const std::string label = label_ + ".bucket" + std::to_string(count_++);
  Handle h = reduction_ == Reduction::all_reduce
                 ? ops::all_reduce(rt, Phase::backward, label + ".all_reduce", current_, group_, issue)
                 : ops::reduce_scatter(rt, Phase::backward, label + ".reduce_scatter", current_, group_, issue);
  if (release_after_reduce_)
    for (const Tensor& g : current_) rt.release_after(g, h);
  handles_.push_back(h);
  current_.clear();
  current_params_ = 0;
}

void GradientBuckets::wait_all(Runtime& rt) {
  for (const Handle& h : handles_) rt.wait(h);
  handles_.clear();
  count_ = 0;
}

void ShardedAdam::allocate(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params) {
  auto& states = states_[owner];
  for (const Tensor& p : params) {
    const std::int64_t n = shard_numel(p.numel(), shards_);
    const std::string base = owner + ".p" + std::to_string(states.size());
    std::vector<Tensor> s;
    if (p.dtype != DType::fp32)
      s.push_back(rt.alloc(base + ".master", {n}, DType::fp32, MemCategory::optimizer_state));
    s.push_back(rt.alloc(base + ".exp_avg", {n}, DType::fp32, MemCategory::optimizer_state));
    s.push_back(rt.alloc(base + ".exp_avg_sq", {n}, DType::fp32, MemCategory::optimizer_state));
    states.push_back(std::move(s));
  }
}

void ShardedAdam::step(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params,
                       const std::vector<Tensor>& grads, const TrainingConfig& training, float grad_scale,
                       int iteration, int shard_index) {
  const auto& states = states_.at(owner);
  for (std::size_t j = 0; j < params.size(); ++j) {
    OptimizerArgs args;
    const std::int64_t n = params[j].numel();
    const std::int64_t per = shard_numel(n, shards_);
    args.offset = std::min(n, per * shard_index);
    args.numel = std::min(n, args.offset + per) - args.offset;
    args.lr = training.lr;
    args.weight_decay = training.weight_decay;
    args.grad_scale = grad_scale;
    args.step = iteration + 1;
    ops::adamw(rt, owner + ".p" + std::to_string(j) + ".adamw", params[j], grads[j], states[j], args);
  }
}

}  // namespace tandem
