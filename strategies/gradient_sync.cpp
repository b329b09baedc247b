#include "strategies/gradient_sync.hpp"

#include <algorithm>
#include <stdexcept>

#include "strategies/ops.hpp"

namespace tandem {

std::int64_t shard_numel(std::int64_t n, int shards) { return (n + shards - 1) / shards; }

std::int64_t shard_offset(std::int64_t n, int shards, int index) {
  return std::min(n, shard_numel(n, shards) * index);
}

TensorPlacement shard_placement(TensorPlacement whole, std::int64_t n, int shards, int index) {
  whole.flat_offset += shard_offset(n, shards, index);
  return whole;
}

void zero_gradient(Runtime& rt, const Layer& layer, std::size_t j, Phase phase, const std::string& label_prefix) {
  const Tensor& g = layer.gradients().at(j);
  ops::elementwise(rt, phase, label_prefix + layer.name() + ".g" + std::to_string(j) + ".zero", {g}, {g},
                   ElementwiseArgs{ElementwiseFn::scale, g.numel(), false});
}

void zero_gradients(Runtime& rt, const Layer& layer, Phase phase, const std::string& label_prefix) {
  for (std::size_t j = 0; j < layer.gradients().size(); ++j) zero_gradient(rt, layer, j, phase, label_prefix);
}

GradientBuckets::GradientBuckets(Group group, std::int64_t bucket_params, Reduction reduction)
    : group_(std::move(group)), limit_(bucket_params), reduction_(reduction) {}

void GradientBuckets::add(Runtime& rt, const std::vector<Tensor>& gradients,
                          const std::vector<Tensor>& shards, bool overwrite_shards) {
  if (!shards.empty() && shards.size() != gradients.size())
    throw std::logic_error("GradientBuckets::add: one shard per gradient");
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const Tensor& g = gradients[i];
    if (!shards.empty()) {
      if (!current_.empty() && (current_shards_.empty() || overwrite_ != overwrite_shards)) launch(rt);
      current_shards_.push_back(shards[i]);
      overwrite_ = overwrite_shards;
    } else if (!current_shards_.empty()) {
      launch(rt);
    }
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
  Handle h;
  if (codec_ && reduction_ == Reduction::all_reduce) {
    CodecBucket bucket{label, std::move(current_), group_};
    const Handle first = codec_->round(rt, 0, bucket, Handle{});
    coded_.emplace_back(std::move(bucket), first);
    current_.clear();
    current_params_ = 0;
    return;
  }
  if (reduction_ == Reduction::all_reduce)
    h = ops::all_reduce(rt, Phase::backward, label + ".all_reduce", current_, group_, issue);
  else if (current_shards_.empty())
    h = ops::reduce_scatter(rt, Phase::backward, label + ".reduce_scatter", current_, group_, issue);
  else
    h = ops::reduce_scatter(rt, Phase::backward, label + ".reduce_scatter", current_, group_,
                            CommShards{current_shards_, -1, !overwrite_}, issue);
  if (release_after_reduce_)
    for (const Tensor& g : current_) rt.release_after(g, h);
  handles_.push_back(h);
  current_.clear();
  current_shards_.clear();
  current_params_ = 0;
}

void GradientBuckets::wait_all(Runtime& rt) {
  // A codec's later rounds bucket by bucket (each waits for its own previous collective, while
  // the next buckets' collectives go on), then the decodes.
  for (int round = 1; codec_ && round < codec_->rounds(); ++round)
    for (auto& [bucket, last] : coded_) last = codec_->round(rt, round, bucket, last);
  for (const auto& [bucket, last] : coded_) codec_->finish(rt, bucket, last);
  coded_.clear();
  for (const Handle& h : handles_) rt.wait(h);
  handles_.clear();
  count_ = 0;
}

void ShardedAdam::allocate(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params,
                           const std::vector<TensorPlacement>& placements, int shard_index) {
  if (placements.size() != params.size()) throw std::logic_error("ShardedAdam: one placement per parameter");
  auto& states = states_[owner];
  for (std::size_t j = 0; j < params.size(); ++j) {
    const Tensor& p = params[j];
    const std::int64_t n = shard_numel(p.numel(), shards_);
    const std::string base = owner + ".p" + std::to_string(states.size());
    const TensorPlacement part = shard_placement(placements[j], p.numel(), shards_, shard_index);
    std::vector<Tensor> s;
    const MemCategory category = offload_ ? MemCategory::host_optimizer_state : MemCategory::optimizer_state;
    auto state = [&](const char* what, DType dtype = DType::fp32) {
      s.push_back(rt.alloc(base + "." + what, {n}, dtype, category));
      TensorPlacement where = part;
      where.name += std::string(".") + what;
      rt.place(s.back(), where);
    };
    // Offloaded, an fp32 parameter also gets its host copy: the one the host's CPU steps.
    // A remainder holds the low 16 bits of the fp32 master whose high 16 are the bf16 parameter:
    // the values stepped are the fp32 master's (backends store every tensor in fp32).
    if (p.dtype != DType::fp32 || offload_)
      state("master", remainders_ && p.dtype == DType::bf16 ? DType::bf16 : DType::fp32);
    state("exp_avg");
    state("exp_avg_sq");
    states.push_back(std::move(s));
    numels_[owner].push_back(p.numel());
  }
}

std::vector<Tensor> ShardedAdam::masters(const std::string& owner, const std::vector<Tensor>& params) const {
  if (shards_ != 1) throw std::logic_error("ShardedAdam::masters: the optimizer is sharded");
  if (offload_) throw std::logic_error("ShardedAdam::masters: the optimizer is offloaded to the host");
  const auto& states = states_.at(owner);
  std::vector<Tensor> out;
  for (std::size_t j = 0; j < params.size(); ++j) out.push_back(params[j].dtype == DType::fp32 ? params[j] : states.at(j).front());
  return out;
}

std::vector<Tensor> ShardedAdam::moments(const std::string& owner) const {
  std::vector<Tensor> out;
  for (const auto& state : states_.at(owner)) out.insert(out.end(), state.end() - 2, state.end());
  return out;
}

void ShardedAdam::step(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params,
                       const std::vector<Tensor>& grads, const TrainingConfig& training, float grad_scale,
                       int iteration, int shard_index) {
  const auto& states = states_.at(owner);
  for (std::size_t j = 0; j < params.size(); ++j) {
    OptimizerArgs args;
    const std::int64_t n = numels_.at(owner).at(j);
    args.offset = shard_offset(n, shards_, shard_index);
    args.numel = std::min(n, args.offset + shard_numel(n, shards_)) - args.offset;
    args.lr = training.lr;
    args.weight_decay = training.weight_decay;
    args.grad_scale = grad_scale;
    args.step = static_cast<std::int64_t>(iteration) + 1;  // iteration may be INT_MAX
    const std::string label = owner + ".p" + std::to_string(j);
    if (!offload_) {
      ops::adamw(rt, label + ".adamw", params[j], grads[j], states[j], args);
      continue;
    }
    auto& staging = staging_[owner];
    if (staging.size() <= j) {
      const std::string base = label + ".host";
      HostStaging s;
      s.grad = rt.alloc(base + ".grad", {args.numel}, grads[j].dtype, MemCategory::host_buffers);
      if (params[j].dtype != DType::fp32)
        s.param = rt.alloc(base + ".param", {args.numel}, params[j].dtype, MemCategory::host_buffers);
      staging.push_back(s);
    }
    offloaded_step(rt, label, params[j], grads[j], states[j], staging[j], args);
  }
}

void ShardedAdam::offloaded_step(Runtime& rt, const std::string& label, const Tensor& param, const Tensor& grad,
                                 const std::vector<Tensor>& states, HostStaging& staging, OptimizerArgs args) {
  // A whole tensor is read at this shard's offset; a ZeRO-2/3 part is the shard itself.
  const auto offset_in = [&](const Tensor& t) { return t.numel() >= args.offset + args.numel ? args.offset : 0; };
  ops::copy_host(rt, Phase::optimizer, label + ".grad_to_host", grad, offset_in(grad), staging.grad, 0, args.numel,
                 HostCopy::to_host);
  // On the host the shard is whole: the update reads everything from its start.
  const std::int64_t param_offset = offset_in(param);
  args.offset = 0;
  args.on_host = true;
  // states = {master, m, v}: a 16-bit parameter's host shard is written from the master; an fp32
  // one is the master itself.
  const bool fp32 = param.dtype == DType::fp32;
  const Tensor& host_param = fp32 ? states[0] : staging.param;
  std::vector<Tensor> host_states(fp32 ? states.begin() + 1 : states.begin(), states.end());
  ops::adamw(rt, label + ".adamw", host_param, staging.grad, std::move(host_states), args);
  ops::copy_host(rt, Phase::optimizer, label + ".param_from_host", host_param, 0, param, param_offset, args.numel,
                 HostCopy::from_host);
}

}  // namespace tandem
