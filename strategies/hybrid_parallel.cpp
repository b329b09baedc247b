#include "strategies/hybrid_parallel.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "strategies/gradient_sync.hpp"
#include "strategies/model_averaging.hpp"
#include "strategies/null_runtime.hpp"
#include "strategies/ops.hpp"

namespace tandem {

namespace {

// Activation shapes at every layer boundary, found by running one micro-batch's forward on a
// runtime that executes nothing: a receiving pipeline stage allocates its input buffer from it.
std::vector<Tensor> boundary_tensors(const Model& model, const BatchShape& batch, const ParallelContext& ctx) {
  NullRuntime probe;
  auto layers = model.build_layers(batch, ctx);
  std::vector<Tensor> out;
  Tensor x = model.make_input(probe, batch, 0, ctx);
  for (auto& layer : layers) {
    layer->allocate(probe, false);
    x = layer->forward(probe, x, 0);
    out.push_back(x);
  }
  return out;
}

class HybridRank final : public RankProgram {
 public:
  struct Plan {
    std::shared_ptr<const Model> model;
    BatchShape batch;
    TrainingConfig training;
    ParallelConfig parallel;
    HybridConfig hybrid;
    const RankLayout* layout = nullptr;
    std::vector<int> first_layer_of_virtual_stage;  // index into the model's layers, size p*v+1
    std::int64_t micro_batches = 1;                 // of this rank's replica
    std::int64_t all_micro_batches = 1;
    std::int64_t block_micro_batches = 1;            // of this rank's hierarchical local SGD block
  };

  HybridRank(Plan plan, int rank)
      : plan_(std::move(plan)), rank_(rank), me_(plan_.layout->coord_of(rank)),
        codec_(make_gradient_codec(plan_.parallel.gradient_compression)),
        outer_(plan_.parallel.outer_lr, plan_.parallel.outer_momentum) {
    const RankLayout& l = *plan_.layout;
    ctx_.tp_size = l.tp_size();
    ctx_.tp_rank = me_.tp;
    ctx_.tp_group = l.tensor_group(rank);
    ctx_.sequence_parallel = plan_.parallel.sequence_parallel;
    ctx_.tp_comm_overlap = plan_.parallel.tp_comm_overlap;
    ctx_.recompute = plan_.parallel.recompute_granularity;
    ctx_.cp_size = l.cp_size();
    ctx_.cp_rank = me_.cp;
    ctx_.cp_group = l.context_group(rank);
    ctx_.split_backward = splits_backward(plan_.hybrid.schedule);
    const int ep = plan_.parallel.expert_model_parallel_size;
    ctx_.ep_size = ep;
    ctx_.ep_rank = me_.dp % ep;
    ctx_.ep_group = l.expert_group(rank, ep);
    expert_data_group_ = l.expert_data_group(rank, ep);
    // Gradients are summed (and ZeRO shards kept) over the replicas and, with context
    // parallelism, over the ranks that hold the other parts of their sequences.
    data_group_ = l.data_context_group(rank);
    block_group_ = l.data_block_group(rank, plan_.parallel.local_sgd_group_size);
    dp_index_ = data_group_.index_of(rank);
    expert_dp_index_ = expert_data_group_.index_of(rank);
  }

  void setup(Runtime& rt) override {
    const int p = plan_.layout->pp_size(), v = plan_.hybrid.virtual_stages;
    auto all = plan_.model->build_layers(plan_.batch, ctx_);
    if (p > 1) boundaries_ = boundary_tensors(*plan_.model, plan_.batch, ctx_);
    const int zero = plan_.parallel.zero_stage;
    const int n = zero >= 1 ? data_group_.size() : 1;
    optimizer_ = ShardedAdam(n, plan_.parallel.offload_optimizer, plan_.parallel.master_param_remainders);
    expert_optimizer_ = ShardedAdam(expert_data_group_.size(), plan_.parallel.offload_optimizer,
                                    plan_.parallel.master_param_remainders);
    chunks_.resize(v);
    for (int c = 0; c < v; ++c) {
      const int k = virtual_stage_of(c);
      for (int i = plan_.first_layer_of_virtual_stage[k]; i < plan_.first_layer_of_virtual_stage[k + 1]; ++i) {
        Layer& layer = *all[i];
        // ZeRO-2/3 keep no persistent full gradient: a shard accumulator instead.
        layer.allocate(rt, /*with_gradients=*/true);
        if (ctx_.ep_size > 1) mark_expert_parameters(layer);
        if (shards_experts_apart()) {
          // ZeRO with expert parallelism: the experts' optimizer state (and ZeRO-2/3 shards below)
          // over the replicas holding the same experts (Megatron-Core's expert-data-parallel
          // group), the rest over all.
          const auto [dense, experts] = split_by_experts(layer, layer.parameters());
          const auto [dense_where, experts_where] = split_by_experts(layer, layer.placements());
          optimizer_.allocate(rt, layer.name(), dense, dense_where, dp_index_);
          expert_optimizer_.allocate(rt, layer.name(), experts, experts_where, expert_dp_index_);
        } else {
          optimizer_.allocate(rt, layer.name(), layer.parameters(), layer.placements(), zero >= 1 ? dp_index_ : 0);
        }
        Shards& shards = shards_[layer.name()];
        const auto& where = layer.placements();
        if (zero >= 2) {
          for (std::size_t j = 0; j < layer.gradients().size(); ++j) {
            const Tensor& g = layer.gradients()[j];
            rt.release(g);
            shards.grads.push_back(rt.alloc(where[j].name + ".grad_shard", {shard_numel(g.numel(), shards_of(layer, j))},
                                            g.dtype, MemCategory::gradients));
          }
        }
        if (zero >= 3) {
          // This rank's part of each parameter, placed so that it starts as that part of the
          // logical tensor (the full parameter is gathered from the parts before each use).
          for (std::size_t j = 0; j < layer.parameters().size(); ++j) {
            const Tensor& w = layer.parameters()[j];
            rt.release(w);
            const int parts = shards_of(layer, j);
            shards.params.push_back(rt.alloc(where[j].name + ".param_shard", {shard_numel(w.numel(), parts)}, w.dtype,
                                             MemCategory::parameters));
            rt.place(shards.params.back(),
                     shard_placement(where[j], w.numel(), parts, expert_parameters_.count(w.id) ? expert_dp_index_ : dp_index_));
            param_shard_[w.id] = shards.params.back();
          }
        }
        chunks_[c].push_back(std::move(all[i]));
      }
    }
    outer_.allocate(rt, optimizer_, layer_pointers());
    // Where each gradient lives (layer, index): a borrowed gradient is zeroed under its owner's label.
    for (auto& chunk : chunks_)
      for (auto& layer : chunk)
        for (std::size_t j = 0; j < layer->gradients().size(); ++j) grad_owner_[layer->gradients()[j].id] = {layer.get(), j};
  }

  void train_step(Runtime& rt, int iteration) override {
    const bool local = plan_.parallel.local_sgd_steps > 1;
    if (local && plan_.parallel.local_sgd_group_size == 1) return local_step(rt, iteration);
    const int p = plan_.layout->pp_size(), v = plan_.hybrid.virtual_stages;
    const auto actions = pipeline_actions(plan_.hybrid.schedule, me_.pp, p, static_cast<int>(plan_.micro_batches), v);
    // The last backward of each chunk (its last W when backwards are split): its gradients are
    // then final (ZeRO-0/1 reduce them).
    const auto completes = ctx_.split_backward ? PipelineAction::Kind::weight : PipelineAction::Kind::backward;
    std::vector<int> last_backward(v, -1);
    for (int i = 0; i < static_cast<int>(actions.size()); ++i)
      if (actions[i].kind == completes) last_backward[actions[i].chunk] = i;

    gather_stale_parameters(rt);
    zero_all_gradients(rt);
    const auto reduction = plan_.parallel.zero_stage >= 1 ? GradientBuckets::Reduction::reduce_scatter
                                                          : GradientBuckets::Reduction::all_reduce;
    // Synchronous over every replica, or (hierarchical local SGD, ZeRO 0) over this replica's block.
    GradientBuckets buckets(local ? block_group_ : data_group_, plan_.parallel.ddp_bucket_size, reduction);
    buckets.set_release_after_reduce(plan_.parallel.zero_stage >= 2);
    buckets.set_codec(codec_.get());
    // Expert parallelism: this rank's experts' gradients are summed with the replicas holding the
    // same experts only.
    std::optional<GradientBuckets> expert_buckets;
    if (ctx_.ep_size > 1) {
      expert_buckets.emplace(expert_data_group_, plan_.parallel.ddp_bucket_size, reduction);
      expert_buckets->set_release_after_reduce(plan_.parallel.zero_stage >= 2);
    }
    expert_buckets_ = expert_buckets ? &*expert_buckets : nullptr;
    std::vector<bool> reduced_once(v, false);  // ZeRO-2/3: the first reduction starts the sums
    // Without --overlap-grad-reduce (Megatron's local DDP, DeepSpeed's pipeline engine) the final
    // gradients are reduced after the last backward, not layer by layer during it. ZeRO-2/3 reduce
    // every micro-batch's gradients as they come (none survives the next).
    const bool overlap_reduce = plan_.parallel.overlap_grad_reduce || plan_.parallel.zero_stage >= 2;
    std::vector<std::pair<int, int>> reduce_after;  // (micro-batch, chunk) of each last backward
    const auto label_buckets = [&](const std::string& tag) {
      buckets.set_label("dp." + tag);
      if (expert_buckets) expert_buckets->set_label("ep_dp." + tag);
    };
    const auto launch_buckets = [&] {
      buckets.launch(rt);
      if (expert_buckets) expert_buckets->launch(rt);
    };
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const PipelineAction& a = actions[i];
      if (a.kind == PipelineAction::Kind::forward) {
        forward(rt, a.micro_batch, a.chunk);
      } else if (a.kind == PipelineAction::Kind::backward && ctx_.split_backward) {
        backward(rt, a.micro_batch, a.chunk, nullptr, false);  // B: input gradients only
      } else {
        // ZeRO-2/3 reduce every micro-batch (no full gradient survives it); others only once.
        const bool last = i == last_backward[a.chunk];
        const bool reduce = plan_.parallel.zero_stage >= 2 || (last && overlap_reduce);
        if (last && !overlap_reduce) reduce_after.emplace_back(a.micro_batch, a.chunk);
        label_buckets("mb" + std::to_string(a.micro_batch) + ".c" + std::to_string(a.chunk));
        if (a.kind == PipelineAction::Kind::weight) weights(rt, a.micro_batch, a.chunk, reduce ? &buckets : nullptr);
        else backward(rt, a.micro_batch, a.chunk, reduce ? &buckets : nullptr, !reduced_once[a.chunk]);
        if (reduce) {
          launch_buckets();
          reduced_once[a.chunk] = true;
        }
      }
      post_receives_ahead(rt, actions, static_cast<std::size_t>(i));
    }
    send_held_gradient(rt);
    for (const auto& [mb, c] : reduce_after) {
      label_buckets("after.c" + std::to_string(c));
      for (auto it = chunks_[c].rbegin(); it != chunks_[c].rend(); ++it) reduce_final_gradients(rt, **it, mb, buckets, true);
      launch_buckets();
    }
    buckets.wait_all(rt);
    if (expert_buckets) expert_buckets->wait_all(rt);
    expert_buckets_ = nullptr;
    sync_tied_embedding(rt);
    // Each micro-batch's loss is a mean over its tokens; a context-parallel rank's over its part.
    optimizer_step(rt, iteration, 1.0f / static_cast<float>((local ? plan_.block_micro_batches : plan_.all_micro_batches) *
                                                            plan_.layout->cp_size()));
    if (local && ++steps_since_average_ == plan_.parallel.local_sgd_steps) average_parameters(rt, false);
  }

  void settle(Runtime& rt) override {
    if (plan_.parallel.local_sgd_steps > 1) return average_parameters(rt, /*with_moments=*/true);
    if (!parameters_stale_) return;
    parameters_stale_ = false;
    rt.wait(gather_updated_parameters(rt, all_parameters(), "dp.params.all_gather"));
  }

 private:
  int virtual_stages() const { return plan_.layout->pp_size() * plan_.hybrid.virtual_stages; }
  // This stage's chunk c as a global virtual stage, and the stage holding virtual stage k.
  int virtual_stage_of(int c) const { return virtual_stage(plan_.hybrid.schedule, c, me_.pp, plan_.layout->pp_size()); }
  int stage_of(int k) const { return stage_of_virtual_stage(plan_.hybrid.schedule, k, plan_.layout->pp_size()); }
  int peer_of(int k) const { return plan_.layout->rank_of({me_.tp, me_.dp, stage_of(k), me_.cp}); }
  static Tensor take(std::map<int, Tensor>& handed, int mb) {
    const auto it = handed.find(mb);
    if (it == handed.end()) throw std::logic_error("micro-batch " + std::to_string(mb) + " was not handed over");
    const Tensor t = it->second;
    handed.erase(it);
    return t;
  }
  // Whether virtual stage k's neighbour k2 is on this rank too (zb_v's turn of the V, on the last
  // stage): the tensor then passes from chunk to chunk here, without a send.
  bool here(int k2) const { return stage_of(k2) == me_.pp; }
  // The send stream towards virtual stage k's rank (strategies/runtime.hpp: one per direction).
  Stream send_stream_to(int k) const { return stage_of(k) > me_.pp ? Stream::pp_send : Stream::pp_send_prev; }
  std::string tag_label(int mb, int k, const char* what) const {
    return "mb" + std::to_string(mb) + ".vs" + std::to_string(k) + "." + what;
  }

  void forward(Runtime& rt, int mb, int c) {
    const int k = virtual_stage_of(c);
    Tensor x;
    if (k == 0) {
      x = plan_.model->make_input(rt, plan_.batch, mb, ctx_);
    } else if (here(k - 1)) {
      x = take(handed_activations_, mb);
    } else {
      // The activation from the previous virtual stage (tag 2k: forward traffic into k).
      x = received(rt, {PipelineAction::Kind::forward, mb, c});
    }
    send_held_gradient(rt);  // DeepSpeed's TrainSchedule: after this step's receive
    for (auto& layer : chunks_[c]) {
      wait_for_fresh_parameters(rt, *layer);
      gather_parameters(rt, *layer, Phase::forward, mb);
      x = layer->forward(rt, x, mb);
      scatter_parameters(rt, *layer);
    }
    if (k == virtual_stages() - 1) {
      rt.release(x);  // the loss
    } else if (here(k + 1)) {
      handed_activations_[mb] = x;
    } else {
      send_boundary(rt, Phase::forward, tag_label(mb, k, "send_act"), x, peer_of(k + 1), send_stream_to(k + 1),
                    2 * (k + 1));
    }
  }

  // Megatron-LM's scatter/gather of pipeline tensors (ParallelConfig::pipeline_scatter_gather):
  // the elements {offset, count} of a boundary tensor this tensor-group member moves, or
  // {0, -1} (the whole tensor) where it does not apply: a tensor already split by sequence
  // parallelism, a single-member group, or a size the group does not divide.
  std::pair<std::int64_t, std::int64_t> boundary_part(const Tensor& t) const {
    const int members = ctx_.tp_group.size();
    if (!plan_.parallel.pipeline_scatter_gather || members == 1 || plan_.parallel.sequence_parallel ||
        t.numel() % members != 0)
      return {0, -1};
    const std::int64_t part = t.numel() / members;
    return {me_.tp * part, part};
  }
  // A stage's output (or input gradient) to the neighbouring stage once the computation before it
  // is done; with blocking sends (ParallelConfig::pipeline_blocking_p2p) the compute stream waits
  // for it, as torch.distributed.send's work.wait() makes it.
  void send_boundary(Runtime& rt, Phase phase, const std::string& label, const Tensor& t, int peer, Stream stream,
                     int tag) {
    const Issue issue{stream, {rt.record(Stream::compute)}};
    const auto [offset, count] = boundary_part(t);
    const Handle sent = count < 0 ? ops::send(rt, phase, label, t, peer, issue, tag)
                                  : ops::send_part(rt, phase, label, t, offset, count, peer, issue, tag);
    if (plan_.parallel.pipeline_blocking_p2p) rt.wait(sent);
    rt.release_after(t, sent);
  }
  // A receive posted for an action: the tensor it fills, the handle of the receive, and whether
  // the part it received is still to be all-gathered over the tensor group.
  struct PostedReceive {
    Tensor tensor;
    Handle received;
    bool gather = false;
  };
  // The label and phase of the receive `a` needs.
  std::string receive_label(const PipelineAction& a) const {
    const bool forward = a.kind == PipelineAction::Kind::forward;
    return tag_label(a.micro_batch, virtual_stage_of(a.chunk), forward ? "recv_act" : "recv_grad");
  }
  static Phase receive_phase(const PipelineAction& a) {
    return a.kind == PipelineAction::Kind::forward ? Phase::forward : Phase::backward;
  }
  // Whether `a` receives its input (a forward) or its output's gradient (a backward) from
  // another rank.
  bool receives(const PipelineAction& a) const {
    const int k = virtual_stage_of(a.chunk);
    if (a.kind == PipelineAction::Kind::forward) return k != 0 && !here(k - 1);
    if (a.kind == PipelineAction::Kind::backward) return k != virtual_stages() - 1 && !here(k + 1);
    return false;
  }
  // Posts the receive `a` needs (its whole tensor, or its part) and keeps it for `received`. A
  // blocking receive starts only once the computation before it is done (NCCL's receive kernel
  // waits for the stream it was called from); an overlapped one at once.
  void post_receive(Runtime& rt, const PipelineAction& a) {
    const int k = virtual_stage_of(a.chunk);
    const bool forward = a.kind == PipelineAction::Kind::forward;
    const Tensor& spec = boundaries_[plan_.first_layer_of_virtual_stage[forward ? k : k + 1] - 1];
    const Tensor t = rt.alloc(tag_label(a.micro_batch, k, forward ? "input" : "output_grad"), spec.shape,
                              spec.dtype, MemCategory::activations);
    const std::string label = receive_label(a);
    const Phase phase = receive_phase(a);
    const int peer = peer_of(forward ? k - 1 : k + 1), tag = forward ? 2 * k : 2 * k + 1;
    Issue issue{Stream::pp_recv, {}};
    if (plan_.parallel.pipeline_blocking_p2p) issue.after.push_back(rt.record(Stream::compute));
    const auto [offset, count] = boundary_part(t);
    const Handle received = count < 0 ? ops::recv(rt, phase, label, t, peer, issue, tag)
                                      : ops::recv_part(rt, phase, label, t, offset, count, peer, issue, tag);
    posted_receives_[{a.kind, a.micro_batch, a.chunk}] = {t, received, count >= 0};
  }
  // What `a` received, once it has arrived (posted now unless posted ahead). The all-gather of a
  // part is issued only now: posted ahead, it would queue the tensor group's collectives of the
  // passes in between behind a transfer they do not need.
  Tensor received(Runtime& rt, const PipelineAction& a) {
    const auto key = std::tuple{a.kind, a.micro_batch, a.chunk};
    if (!posted_receives_.contains(key)) post_receive(rt, a);
    const PostedReceive r = posted_receives_.at(key);
    posted_receives_.erase(key);
    if (!r.gather) {
      rt.wait(r.received);
    } else {
      rt.wait(ops::all_gather(rt, receive_phase(a), receive_label(a) + ".allgather", r.tensor, ctx_.tp_group,
                              Issue{Stream::tp_comm, {r.received}}));
    }
    return r.tensor;
  }
  // Megatron-Core's --overlap-p2p-communication (ParallelConfig::overlap_p2p_comm), in its
  // interleaved schedule (its other schedules ignore the flag): after each pass, the receives of
  // the next two actions are posted, in the order they will be needed, so each transfer runs under
  // the pass before it.
  void post_receives_ahead(Runtime& rt, const std::vector<PipelineAction>& actions, std::size_t done) {
    if (!plan_.parallel.overlap_p2p_comm || plan_.hybrid.schedule != PipelineSchedule::interleaved_1f1b) return;
    for (std::size_t j = done + 1; j < std::min(actions.size(), done + 3); ++j) {
      const PipelineAction& a = actions[j];
      if (receives(a) && !posted_receives_.contains({a.kind, a.micro_batch, a.chunk})) post_receive(rt, a);
    }
  }
  // A blocking pipeline's input gradient waiting for the next step's start (DeepSpeed's SendGrad).
  struct HeldSend {
    std::string label;
    Tensor tensor;
    int peer = -1;
    Stream stream = Stream::pp_send_prev;
    int tag = 0;
  };
  void send_held_gradient(Runtime& rt) {
    if (!held_gradient_) return;
    const HeldSend send = std::move(*held_gradient_);
    held_gradient_.reset();
    send_boundary(rt, Phase::backward, send.label, send.tensor, send.peer, send.stream, send.tag);
  }

  // `first_reduction`: ZeRO-2/3 overwrite the gradient shards instead of adding to them.
  void backward(Runtime& rt, int mb, int c, GradientBuckets* buckets, bool first_reduction) {
    const int k = virtual_stage_of(c);
    send_held_gradient(rt);  // a cool-down step sends the last gradient before it receives
    Tensor grad;
    if (k != virtual_stages() - 1 && here(k + 1)) {
      grad = take(handed_gradients_, mb);
    } else if (k != virtual_stages() - 1) {
      // The gradient of this stage's output from the next virtual stage (tag 2k+1).
      grad = received(rt, {PipelineAction::Kind::backward, mb, c});
    }
    auto& layers = chunks_[c];
    std::set<int> fresh;  // ZeRO-2/3: full gradients made live for this micro-batch
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      Layer& layer = **it;
      if (plan_.parallel.zero_stage >= 2) {
        // A fresh full gradient for this micro-batch (also for a borrowed one, the tied table
        // the output layer accumulates into before its owner does); its reduce-scatter frees it.
        std::vector<Tensor> needed = layer.borrowed_gradients();
        needed.insert(needed.end(), layer.gradients().begin(), layer.gradients().end());
        for (const Tensor& g : needed) {
          if (!fresh.insert(g.id).second) continue;
          rt.reacquire(g, MemCategory::gradients);
          const auto& [owner, j] = grad_owner_.at(g.id);
          zero_gradient(rt, *owner, j, Phase::backward, "mb" + std::to_string(mb) + ".");
        }
      }
      gather_parameters(rt, layer, Phase::backward, mb);
      grad = layer.backward(rt, grad, mb);
      scatter_parameters(rt, layer);
      if (buckets != nullptr) reduce_final_gradients(rt, layer, mb, *buckets, first_reduction);
    }
    if (k == 0) {
      if (grad.valid()) rt.release(grad);
    } else if (here(k - 1)) {
      handed_gradients_[mb] = grad;
    } else {
      HeldSend send{tag_label(mb, k, "send_grad"), grad, peer_of(k - 1), send_stream_to(k - 1), 2 * (k - 1) + 1};
      // DeepSpeed's TrainSchedule sends it at the start of the next step, after that step's receive.
      if (plan_.parallel.pipeline_blocking_p2p) held_gradient_ = std::move(send);
      else send_boundary(rt, Phase::backward, send.label, send.tensor, send.peer, send.stream, send.tag);
    }
  }

  // The W pass of a split backward (zb_h1): the chunk's layers' weight gradients, last layer
  // first; with `buckets`, this micro-batch completes them and they are reduced as they finish.
  void weights(Runtime& rt, int mb, int c, GradientBuckets* buckets) {
    auto& layers = chunks_[c];
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      Layer& layer = **it;
      layer.backward_weights(rt, mb);
      if (buckets != nullptr) reduce_final_gradients(rt, layer, mb, *buckets, true);
    }
  }

  // A layer's gradients, final after micro-batch `mb`: their tensor-parallel partial sums, then
  // into the buckets that reduce them over the replicas.
  void reduce_final_gradients(Runtime& rt, const Layer& layer, int mb, GradientBuckets& buckets, bool first_reduction) {
    reduce_tensor_partial_gradients(rt, layer, mb);
    add_gradients(rt, layer, buckets, first_reduction);
  }

  // A layer's final gradients into the buckets: its experts' (expert parallelism) into the
  // expert-data-parallel buckets, the rest into `buckets`.
  void add_gradients(Runtime& rt, const Layer& layer, GradientBuckets& buckets, bool first_reduction) {
    const std::vector<Tensor> experts = layer.expert_gradients();
    if (experts.empty() || expert_buckets_ == nullptr)
      return buckets.add(rt, layer.gradients(), shards_[layer.name()].grads, first_reduction);
    const auto [dense, mine] = split_by_experts(layer, layer.gradients());
    if (plan_.parallel.zero_stage < 2) {
      buckets.add(rt, dense, {}, first_reduction);
      expert_buckets_->add(rt, mine, {}, first_reduction);
      return;
    }
    const auto [dense_shards, expert_shards] = split_by_experts(layer, shards_[layer.name()].grads);
    buckets.add(rt, dense, dense_shards, first_reduction);
    expert_buckets_->add(rt, mine, expert_shards, first_reduction);
  }

  // Sequence parallelism (and a router under expert-tensor parallelism): the partial gradients of
  // replicated parameters are summed over the tensor-parallel group once final, on the
  // data-parallel stream, so the bucket reductions issued after them on that stream see the sums.
  void reduce_tensor_partial_gradients(Runtime& rt, const Layer& layer, int mb) {
    const std::vector<Tensor> partial = layer.tensor_partial_gradients();
    if (partial.empty()) return;
    ops::all_reduce(rt, Phase::backward, "mb" + std::to_string(mb) + "." + layer.name() + ".sp_grads.all_reduce",
                    partial, ctx_.tp_group, Issue{Stream::dp_comm, {rt.record(Stream::compute)}});
  }

  // ZeRO-3: a layer's full parameters (and a borrowed tied table) exist only while it computes.
  std::vector<Tensor> used_parameters(const Layer& layer) const {
    std::vector<Tensor> used = layer.parameters();
    for (const Tensor& w : layer.borrowed_parameters()) used.push_back(w);
    return used;
  }
  void gather_parameters(Runtime& rt, Layer& layer, Phase phase, int mb) {
    if (plan_.parallel.zero_stage < 3) return;
    const std::vector<Tensor> used = used_parameters(layer);
    std::vector<Tensor> parts;
    for (const Tensor& w : used) {
      rt.reacquire(w, MemCategory::parameters);
      parts.push_back(param_shard_.at(w.id));
    }
    const std::string label = "mb" + std::to_string(mb) + "." + layer.name() + ".zero3_gather." +
                              (phase == Phase::forward ? "fwd" : "bwd");
    const Issue issue{Stream::dp_comm, {rt.record(Stream::compute)}};
    if (!shards_experts_apart()) {
      rt.wait(ops::all_gather(rt, phase, label, used, data_group_, CommShards{parts, -1, false}, issue));
      return;
    }
    // The experts' parts over the replicas holding them, the rest over all.
    std::vector<Tensor> dense, dense_parts, experts, expert_parts;
    for (std::size_t i = 0; i < used.size(); ++i) {
      const bool expert = expert_parameters_.count(used[i].id) > 0;
      (expert ? experts : dense).push_back(used[i]);
      (expert ? expert_parts : dense_parts).push_back(parts[i]);
    }
    if (!dense.empty()) ops::all_gather(rt, phase, label, dense, data_group_, CommShards{dense_parts, -1, false}, issue);
    if (!experts.empty())
      ops::all_gather(rt, phase, "ep_" + label, experts, expert_data_group_, CommShards{expert_parts, -1, false}, issue);
    rt.wait(rt.record(Stream::dp_comm));
  }
  void scatter_parameters(Runtime& rt, Layer& layer) {
    if (plan_.parallel.zero_stage < 3) return;
    for (const Tensor& w : used_parameters(layer)) rt.release(w);
  }

  void zero_all_gradients(Runtime& rt) {
    if (plan_.parallel.zero_stage >= 2) return;  // full gradients are reacquired fresh
    for (auto& chunk : chunks_)
      for (auto& layer : chunk) zero_gradients(rt, *layer, Phase::other, "");
  }

  // Megatron keeps a copy of a tied word embedding on the last pipeline stage; the first and last
  // stage all-reduce its gradient so both copies stay equal.
  void sync_tied_embedding(Runtime& rt) {
    const int p = plan_.layout->pp_size(), last = stage_of(virtual_stages() - 1);
    // One table when the embedding and the head share a rank (p == 1, zb_v's first stage).
    if (p == 1 || last == 0 || (me_.pp != 0 && me_.pp != last)) return;
    const Layer* holder = me_.pp == 0 ? chunks_.front().front().get() : chunks_.back().back().get();
    const Tensor* grad = holder->tied_gradient();
    if (grad == nullptr) return;
    // ZeRO-2/3 keep the gradient as this rank's part only: both stages hold the same part.
    const Tensor& summed = plan_.parallel.zero_stage >= 2
                               ? shards_.at(holder->name()).grads.at(grad_owner_.at(grad->id).second)
                               : *grad;
    rt.wait(ops::all_reduce(rt, Phase::backward, "embedding.tied_grad.all_reduce", summed,
                            plan_.layout->embedding_group(rank_), Issue{Stream::dp_comm, {rt.record(Stream::compute)}}));
  }

  // ZeRO-1/2: every rank updated its part of the parameters; the new values are all-gathered on
  // the data-parallel stream (the experts' over the expert-data-parallel group: the ranks that
  // shared out their update).
  Handle gather_updated_parameters(Runtime& rt, const std::vector<Tensor>& updated, const std::string& label) {
    const Issue issue{Stream::dp_comm, {rt.record(Stream::compute)}};
    if (!shards_experts_apart()) return ops::all_gather(rt, Phase::optimizer, label, updated, data_group_, issue);
    std::vector<Tensor> dense, experts;
    for (const Tensor& w : updated) (expert_parameters_.count(w.id) ? experts : dense).push_back(w);
    if (!dense.empty()) ops::all_gather(rt, Phase::optimizer, label, dense, data_group_, issue);
    if (!experts.empty() && expert_data_group_.size() > 1)  // (ep = dp: each rank updated its experts whole)
      ops::all_gather(rt, Phase::optimizer, "ep_" + label, experts, expert_data_group_, issue);
    return rt.record(Stream::dp_comm);  // both, in the stream's order
  }
  // ZeRO with expert parallelism keeps the experts' optimizer state apart (expert_optimizer_) and
  // shards their gradients and parameters (ZeRO-2/3) over the expert-data-parallel group.
  bool shards_experts_apart() const { return plan_.parallel.zero_stage >= 1 && ctx_.ep_size > 1; }
  // Into how many parts ZeRO splits parameter j of `layer` (its gradient, its state).
  int shards_of(const Layer& layer, std::size_t j) const {
    if (plan_.parallel.zero_stage < 1) return 1;
    return expert_parameters_.count(layer.parameters()[j].id) ? expert_data_group_.size() : data_group_.size();
  }
  // Records which of `layer`'s parameters are its experts' (those whose gradients are
  // expert_gradients()), once, at setup.
  void mark_expert_parameters(const Layer& layer) {
    const std::vector<Tensor> experts = layer.expert_gradients();
    for (std::size_t j = 0; j < layer.parameters().size(); ++j)
      if (std::any_of(experts.begin(), experts.end(), [&](const Tensor& g) { return g.id == layer.gradients()[j].id; }))
        expert_parameters_.insert(layer.parameters()[j].id);
  }
  // Items one per parameter of `layer` (the parameters, their placements, gradients or shards):
  // the rest's first, the experts' second, each in the layer's order.
  template <typename T>
  std::pair<std::vector<T>, std::vector<T>> split_by_experts(const Layer& layer, const std::vector<T>& per_parameter) const {
    std::pair<std::vector<T>, std::vector<T>> out;
    for (std::size_t j = 0; j < per_parameter.size(); ++j)
      (expert_parameters_.count(layer.parameters()[j].id) ? out.second : out.first).push_back(per_parameter[j]);
    return out;
  }
  std::vector<Tensor> all_parameters() const {
    std::vector<Tensor> all;
    for (const auto& chunk : chunks_)
      for (const auto& layer : chunk)
        for (const Tensor& w : layer->parameters()) all.push_back(w);
    return all;
  }
  bool gathers_parameters() const {
    const int zero = plan_.parallel.zero_stage;
    return (zero == 1 || zero == 2) && data_group_.size() > 1;
  }
  // --overlap-param-gather: the last step's parameters, one all-gather per layer in the order of
  // the forward, issued together at the start of the step; each layer waits for its own before
  // its first forward (Megatron-Core's forward pre-hook), so the later ones overlap computation.
  void gather_stale_parameters(Runtime& rt) {
    if (!parameters_stale_) return;
    parameters_stale_ = false;
    for (auto& chunk : chunks_)
      for (auto& layer : chunk)
        fresh_parameters_[layer.get()] =
            gather_updated_parameters(rt, layer->parameters(), "dp." + layer->name() + ".params.all_gather");
  }
  void wait_for_fresh_parameters(Runtime& rt, const Layer& layer) {
    const auto it = fresh_parameters_.find(&layer);
    if (it == fresh_parameters_.end()) return;
    rt.wait(it->second);
    fresh_parameters_.erase(it);
  }

  // Local SGD (strategy.local_sgd_steps): the replica's own pipeline step, its gradients summed
  // inside it (sequence-parallel partials over the tensor group, the tied embedding between the
  // first and last stage) but not over the replicas, then every H steps the replicas' average.
  void local_step(Runtime& rt, int iteration) {
    const int p = plan_.layout->pp_size(), v = plan_.hybrid.virtual_stages;
    zero_all_gradients(rt);
    for (const PipelineAction& a : pipeline_actions(plan_.hybrid.schedule, me_.pp, p, static_cast<int>(plan_.micro_batches), v)) {
      if (a.kind == PipelineAction::Kind::forward) forward(rt, a.micro_batch, a.chunk);
      else backward(rt, a.micro_batch, a.chunk, nullptr, false);
    }
    send_held_gradient(rt);
    for (auto& chunk : chunks_)
      for (auto& layer : chunk) {
        reduce_tensor_partial_gradients(rt, *layer, static_cast<int>(plan_.micro_batches) - 1);
        if (ctx_.ep_size > 1) scale_expert_gradients(rt, *layer);
      }
    rt.wait(rt.record(Stream::dp_comm));
    sync_tied_embedding(rt);
    optimizer_step(rt, iteration, 1.0f / static_cast<float>(plan_.micro_batches));
    if (++steps_since_average_ == plan_.parallel.local_sgd_steps) average_parameters(rt, false);
  }
  // A local step's expert gradients sum the tokens of this rank's whole expert-parallel block (every
  // member's tokens routed to its experts), the rest this replica's only: 1/ep makes them a mean over
  // as many micro-batches as the step's scale counts.
  void scale_expert_gradients(Runtime& rt, const Layer& layer) {
    for (const Tensor& g : layer.expert_gradients()) {
      ElementwiseArgs scale{ElementwiseFn::scale, g.numel()};
      scale.factor = 1.0f / static_cast<float>(ctx_.ep_size);
      ops::elementwise(rt, Phase::backward, layer.name() + ".expert_grads.local_scale", {g}, {g}, scale);
    }
  }
  void average_parameters(Runtime& rt, bool with_moments) {
    steps_since_average_ = 0;
    if (ctx_.ep_size == 1) return average_models(rt, optimizer_, layer_pointers(), data_group_, with_moments, &outer_);
    // Expert parallelism: the experts are averaged over the replicas holding the same ones, the
    // rest over every replica.
    const auto expert = [this](const Tensor& p) { return expert_parameters_.count(p.id) > 0; };
    average_models(rt, optimizer_, layer_pointers(), data_group_, with_moments, &outer_,
                   [&](const Tensor& p) { return !expert(p); });
    average_models(rt, optimizer_, layer_pointers(), expert_data_group_, with_moments, &outer_, expert);
  }
  std::vector<const Layer*> layer_pointers() const {
    std::vector<const Layer*> layers;
    for (const auto& chunk : chunks_)
      for (const auto& layer : chunk) layers.push_back(layer.get());
    return layers;
  }

  void optimizer_step(Runtime& rt, int iteration, float grad_scale) {
    for (auto& chunk : chunks_)
      for (auto& layer : chunk) {
        // ZeRO-2/3 step on the gradient (and parameter) shards this rank holds.
        const Shards& shards = shards_[layer->name()];
        const auto& grads = plan_.parallel.zero_stage >= 2 ? shards.grads : layer->gradients();
        const auto& params = plan_.parallel.zero_stage >= 3 ? shards.params : layer->parameters();
        // Which part of the full tensors this rank updates: its own under ZeRO (a part tensor
        // is read from its start, a full one at the part's offset); the whole without ZeRO.
        const int shard_index = plan_.parallel.zero_stage >= 1 ? dp_index_ : 0;
        if (shards_experts_apart()) {
          const auto [dense_params, expert_params] = split_by_experts(*layer, params);
          const auto [dense_grads, expert_grads] = split_by_experts(*layer, grads);
          optimizer_.step(rt, layer->name(), dense_params, dense_grads, plan_.training, grad_scale, iteration, dp_index_);
          expert_optimizer_.step(rt, layer->name(), expert_params, expert_grads, plan_.training, grad_scale, iteration,
                                 expert_dp_index_);
          continue;
        }
        optimizer_.step(rt, layer->name(), params, grads, plan_.training, grad_scale, iteration, shard_index);
      }
    // ZeRO-1/2 gather the updated parameters now, or during the next step's forward (ZeRO-3 keeps
    // them sharded until each use gathers them).
    if (!gathers_parameters()) return;
    if (plan_.parallel.overlap_param_gather) parameters_stale_ = true;
    else rt.wait(gather_updated_parameters(rt, all_parameters(), "dp.params.all_gather"));
  }

  Plan plan_;
  int rank_;
  RankCoord me_;
  ParallelContext ctx_;
  Group data_group_;
  Group expert_data_group_;                    // expert parallelism: the replicas holding my experts
  GradientBuckets* expert_buckets_ = nullptr;  // during a step with expert parallelism
  Group block_group_;  // hierarchical local SGD: the replicas (at this position) stepping with this one
  int dp_index_ = 0;  // this rank's index in its data-parallel group (its ZeRO part)
  std::vector<Tensor> boundaries_;
  std::map<int, Tensor> param_shard_;                          // ZeRO-3: full parameter id -> its part
  std::map<int, std::pair<const Layer*, std::size_t>> grad_owner_;  // gradient id -> (layer, index)
  // zb_v's last stage: chunk 0's output and chunk 1's input gradient, per micro-batch, kept here
  // between the two chunks' passes.
  std::map<int, Tensor> handed_activations_, handed_gradients_;
  std::vector<std::vector<std::unique_ptr<Layer>>> chunks_;
  ShardedAdam optimizer_;
  ShardedAdam expert_optimizer_;        // ZeRO with expert parallelism: the experts' (shards_experts_apart)
  std::set<int> expert_parameters_;     // expert parallelism: the ids of this rank's experts' parameters
  int expert_dp_index_ = 0;             // this rank's index in its expert-data-parallel group
  struct Shards {
    std::vector<Tensor> grads, params;  // ZeRO-2 gradient and ZeRO-3 parameter shards
  };
  std::map<std::string, Shards> shards_;  // by layer name
  int steps_since_average_ = 0;    // local SGD: steps since the replicas last averaged
  bool parameters_stale_ = false;  // --overlap-param-gather: the last step's update not yet gathered
  std::optional<HeldSend> held_gradient_;  // pipeline_blocking_p2p: the last backward's, not yet sent
  // Receives posted before their action runs (overlap_p2p_comm), by (kind, micro-batch, chunk).
  std::map<std::tuple<PipelineAction::Kind, int, int>, PostedReceive> posted_receives_;
  std::map<const Layer*, Handle> fresh_parameters_;  // its per-layer gathers this step
  std::unique_ptr<GradientCodec> codec_;  // gradient compression of the data-parallel all-reduce; null: plain
  OuterOptimizer outer_;                  // DiLoCo over local SGD (plain: nothing)
};

// Mixture-of-experts models: expert parallelism's size, and the knobs not built with experts yet.
void check_experts(const Model& model, const ParallelConfig& p) {
  const std::int64_t experts = model.experts();
  const int ep = p.expert_model_parallel_size;
  const std::string field = "strategy.expert_model_parallel_size";
  if (ep < 1) throw StrategyError(field, "must be at least 1");
  if (experts == 0) {
    if (ep > 1) throw StrategyError(field, "needs a model with experts (num_moe_experts)");
    return;
  }
  if (p.data_parallel_size % ep)
    throw StrategyError(field, std::to_string(ep) + " does not divide data_parallel_size " +
                                   std::to_string(p.data_parallel_size) + " (experts split over blocks of replicas)");
  if (experts % ep)
    throw StrategyError(field, std::to_string(ep) + " does not divide the model's " + std::to_string(experts) + " experts");
  // Tensor parallelism splits each expert's width too (expert-tensor parallelism, transformer.hpp).
  // Context parallelism splits each sequence: the experts' gradients are summed over the
  // context-parallel ranks too (expert_data_group) and the load-balancing loss over the whole
  // sequences (its picks per expert all-reduced over the context-parallel group, transformer.cpp).
  // Local SGD averages the experts over the replicas holding the same ones (average_parameters);
  // hierarchical blocks would need the experts' gradients summed within a block's share of them.
  const char* not_built = " with experts is not built yet";
  if (p.local_sgd_steps > 1 && p.local_sgd_group_size > 1 && ep > 1)
    throw StrategyError("strategy.local_sgd_group_size", std::string("hierarchical local SGD (local_sgd_group_size > 1)") + not_built);
  if (p.gradient_compression.enabled())
    throw StrategyError("strategy.gradient_compression", std::string("gradient compression") + not_built);
}

}  // namespace

HybridParallel::HybridParallel(std::shared_ptr<const Model> model, TrainingConfig training,
                               ParallelConfig parallel, HybridConfig hybrid, std::vector<RankDevice> devices)
    : model_(std::move(model)),
      training_(std::move(training)),
      parallel_(parallel),
      hybrid_(std::move(hybrid)),
      layout_(parallel.tensor_model_parallel_size, parallel.data_parallel_size,
              parallel.pipeline_model_parallel_size, hybrid_.order, parallel.context_parallel_size) {
  if (parallel_.parameter_servers != 0 || parallel_.parameter_server_staleness != 0)
    throw StrategyError(parallel_.parameter_servers != 0 ? "strategy.parameter_servers" : "strategy.parameter_server_staleness",
                        "parameter servers are built for the data_parallel strategy");
  if (static_cast<int>(devices.size()) != layout_.world_size())
    throw StrategyError("strategy", "one device description per rank is needed");
  if (parallel_.sequence_parallel && parallel_.tensor_model_parallel_size == 1)
    throw StrategyError("strategy.sequence_parallel", "sequence parallelism needs tensor_model_parallel_size > 1");
  check_local_sgd(parallel_);
  if (layout_.cp_size() > 1 && parallel_.local_sgd_steps > 1)
    throw StrategyError("strategy.local_sgd_steps",
                        "local SGD with context parallelism is not built (its ranks must sum gradients every step)");
  if (parallel_.overlap_param_gather && parallel_.zero_stage != 1 && parallel_.zero_stage != 2)
    throw StrategyError("strategy.overlap_param_gather",
                        "overlapping the parameter all-gather needs zero_stage 1 or 2 (the distributed optimizer)");
  if (parallel_.pipeline_blocking_p2p && hybrid_.schedule != PipelineSchedule::one_f_one_b)
    throw StrategyError("strategy.pipeline_blocking_p2p", std::string("DeepSpeed's pipeline engine runs 1F1B only "
                                                                      "(pipeline_schedule: 1f1b), not ") +
                                                              to_string(hybrid_.schedule));
  if (hybrid_.schedule == PipelineSchedule::zb_v && hybrid_.virtual_stages != 2)
    throw StrategyError("strategy.virtual_pipeline_model_parallel_size",
                        "zb_v runs two chunks per stage (its V), got " + std::to_string(hybrid_.virtual_stages));
  if (splits_backward(hybrid_.schedule)) {
    // W passes run after their B: a per-micro-batch gradient reduction (ZeRO-2/3), TE's bulk
    // overlap of the weight-gradient GEMMs and local SGD's own step are not split that way here.
    if (parallel_.zero_stage >= 2)
      throw StrategyError("strategy.pipeline_schedule", std::string(to_string(hybrid_.schedule)) +
                                                            " needs zero_stage 0 or 1 (ZeRO-2/3 reduce every backward)");
    if (parallel_.tp_comm_overlap)
      throw StrategyError("strategy.pipeline_schedule", std::string(to_string(hybrid_.schedule)) + " with tp_comm_overlap is not built");
    if (parallel_.local_sgd_steps > 1)
      throw StrategyError("strategy.pipeline_schedule", std::string(to_string(hybrid_.schedule)) + " with local SGD is not built");
  }
  // As Megatron-Core asserts: Transformer Engine overlaps sequence parallelism's collectives.
  if (parallel_.tp_comm_overlap && !parallel_.sequence_parallel)
    throw StrategyError("strategy.tp_comm_overlap", "tensor-parallel communication overlap needs sequence_parallel");
  check_gradient_compression(parallel_);
  check_experts(*model_, parallel_);
  if (layout_.cp_size() > 1) {
    try {
      ParallelContext cp;
      cp.cp_size = layout_.cp_size();
      cp.cp_group = layout_.context_group(0);
      model_->build_layers(batch_shape(), cp);
    } catch (const std::invalid_argument& e) {
      throw StrategyError("strategy.context_parallel_size", e.what());
    }
  }
  try {
    ParallelContext tp;
    tp.tp_size = layout_.tp_size();
    tp.tp_group = layout_.tensor_group(0);
    tp.sequence_parallel = parallel_.sequence_parallel;
    tp.recompute = parallel_.recompute_granularity;
    tp.cp_size = layout_.cp_size();
    model_->build_layers(batch_shape(), tp);
  } catch (const StrategyError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw StrategyError("strategy.tensor_model_parallel_size", e.what());
  }
  check_tensor_groups(devices);
  split_batch(devices);
  if (parallel_.expert_model_parallel_size > 1 &&
      std::adjacent_find(micro_batches_.begin(), micro_batches_.end(), std::not_equal_to<>()) != micro_batches_.end())
    throw StrategyError("strategy.batch_split", "expert parallelism needs every replica to run as many micro-batches "
                                                "(their all-to-alls pair up): the batch did not split evenly");
  partition_layers(devices);
  devices_ = std::move(devices);
  try {
    for (std::int64_t m : micro_batches_)
      validate_pipeline(hybrid_.schedule, layout_.pp_size(), static_cast<int>(m), hybrid_.virtual_stages);
  } catch (const std::invalid_argument& e) {
    throw StrategyError("strategy.pipeline_schedule", e.what());
  }
}

std::optional<ReplicaStructure> HybridParallel::replica_structure() const {
  ReplicaStructure r;
  r.replicas = layout_.dp_size();
  r.work_of = micro_batches_;
  r.exchanging_replicas = std::max(1, parallel_.expert_model_parallel_size);
  for (int rank = 0; rank < layout_.world_size(); ++rank) {
    const RankCoord c = layout_.coord_of(rank);
    r.replica_of.push_back(c.dp);
    r.position_of.push_back(c.tp + layout_.tp_size() * (c.cp + layout_.cp_size() * c.pp));
  }
  return r;
}

std::vector<RankRole> HybridParallel::rank_roles() const {
  std::vector<RankRole> roles;
  const std::vector<int> layers = layers_per_stage();
  for (int rank = 0; rank < layout_.world_size(); ++rank) {
    const RankCoord c = layout_.coord_of(rank);
    roles.push_back({c.pp, c.dp, layers[static_cast<std::size_t>(c.pp)],
                     micro_batches_[c.dp] * training_.micro_batch_size});
  }
  return roles;
}

std::vector<int> HybridParallel::layers_per_stage() const {
  const int p = layout_.pp_size();
  std::vector<int> out(static_cast<std::size_t>(p), 0);
  for (std::size_t k = 0; k < virtual_stage_layers_.size(); ++k)
    out[static_cast<std::size_t>(stage_of_virtual_stage(hybrid_.schedule, static_cast<int>(k), p))] += virtual_stage_layers_[k];
  return out;
}

std::optional<PipelineStructure> HybridParallel::pipeline_structure() const {
  const std::optional<SteadyState> steady = steady_state(hybrid_.schedule, layout_.pp_size());
  if (layout_.pp_size() < 2 || !steady) return std::nullopt;
  if (std::adjacent_find(micro_batches_.begin(), micro_batches_.end(), std::not_equal_to<>()) != micro_batches_.end())
    return std::nullopt;
  return PipelineStructure{micro_batches_.front(), steady->from, steady->period};
}

std::unique_ptr<Strategy> HybridParallel::with_micro_batches(std::int64_t micro_batches) const {
  TrainingConfig training = training_;
  training.global_batch_size = micro_batches * training_.micro_batch_size * layout_.dp_size();
  return std::make_unique<HybridParallel>(model_, training, parallel_, hybrid_, devices_);
}

std::optional<TensorStructure> HybridParallel::tensor_structure() const {
  if (layout_.tp_size() < 2) return std::nullopt;
  TensorStructure t;
  t.group_size = layout_.tp_size();
  for (int rank = 0; rank < layout_.world_size(); ++rank) {
    RankCoord c = layout_.coord_of(rank);
    c.tp = 0;
    t.leader_of.push_back(layout_.rank_of(c));
  }
  return t;
}

BatchShape HybridParallel::batch_shape() const { return batch_shape_of(training_); }

void HybridParallel::check_tensor_groups(const std::vector<RankDevice>& devices) const {
  // A tensor-parallel group talks at every layer: it must not cross nodes or device kinds.
  for (int r = 0; r < layout_.world_size(); ++r) {
    const Group g = layout_.tensor_group(r);
    for (int member : g.ranks)
      if (devices[member].node != devices[g.ranks[0]].node || devices[member].kind != devices[g.ranks[0]].kind)
        throw StrategyError("strategy.tensor_model_parallel_size",
                            "tensor-parallel group of rank " + std::to_string(r) + " spans " +
                                (devices[member].kind != devices[g.ranks[0]].kind ? "device kinds" : "nodes") +
                                " (ranks " + std::to_string(g.ranks.front()) + ".." + std::to_string(g.ranks.back()) +
                                "); choose a size that fits in one node");
  }
}

// The least of `figure` over the ranks whose coordinates pass `member`.
double HybridParallel::least_over(const std::vector<RankDevice>& devices, const std::function<bool(const RankCoord&)>& member,
                                  double RankDevice::*figure) const {
  double least = std::numeric_limits<double>::infinity();
  for (int r = 0; r < layout_.world_size(); ++r)
    if (member(layout_.coord_of(r))) least = std::min(least, devices[r].*figure);
  return least;
}

void HybridParallel::split_batch(const std::vector<RankDevice>& devices) {
  // A replica runs as fast as its slowest device.
  std::vector<double> speed(layout_.dp_size(), 0);
  for (int d = 0; d < layout_.dp_size(); ++d)
    speed[d] = least_over(devices, [&](const RankCoord& c) { return c.dp == d; }, &RankDevice::speed);
  micro_batches_ = tandem::micro_batches_per_replica(training_, layout_.dp_size(), parallel_.batch_split, speed);
}

void HybridParallel::partition_layers(const std::vector<RankDevice>& devices) {
  const int p = layout_.pp_size(), v = hybrid_.virtual_stages, stages = p * v;
  // Layers that move between stages: all but the first (embedding) and the last (head + loss).
  const auto layers = model_->build_layers(batch_shape(), ParallelContext{});
  const int movable = static_cast<int>(layers.size()) - 2;
  std::vector<int> per_stage;  // per pipeline stage (all chunks of it together)
  if (!hybrid_.layers_per_stage.empty()) {
    if (static_cast<int>(hybrid_.layers_per_stage.size()) != p)
      throw StrategyError("strategy.pipeline_layers", "needs one layer count per pipeline stage (" + std::to_string(p) + ")");
    if (std::accumulate(hybrid_.layers_per_stage.begin(), hybrid_.layers_per_stage.end(), 0) != movable)
      throw StrategyError("strategy.pipeline_layers", "layer counts must add up to the model's " +
                                                          std::to_string(movable) + " layers");
    per_stage = hybrid_.layers_per_stage;
  } else if (hybrid_.partition == HybridConfig::Partition::uniform || p == 1) {
    if (movable % stages != 0)
      throw StrategyError("strategy.pipeline_model_parallel_size",
                          std::to_string(movable) + " layers do not split evenly over " + std::to_string(stages) +
                              " (virtual) pipeline stages");
    per_stage.assign(p, movable / p);
  } else {
    // Heterogeneity: layer counts in proportion to each stage's speed (its slowest device) ...
    std::vector<double> speed(p);
    for (int s = 0; s < p; ++s)
      speed[s] = least_over(devices, [&](const RankCoord& c) { return c.pp == s; }, &RankDevice::speed);
    // In whole chunks' worth (v layers at a time): a stage's chunks share its layers evenly.
    if (movable % v != 0)
      throw StrategyError("strategy.virtual_pipeline_model_parallel_size",
                          std::to_string(movable) + " layers do not split into chunks of " + std::to_string(v));
    if (movable < p * v) throw StrategyError("strategy.pipeline_model_parallel_size", "more (virtual) stages than layers");
    const auto shares = split_proportionally(movable / v, speed);
    for (const auto share : shares) per_stage.push_back(static_cast<int>(share) * v);
    // ... and within their memory: model states (16 bytes per parameter, sharded by TP and ZeRO)
    // plus the activations of the micro-batches a stage keeps in flight (1F1B: p - s).
    const double bytes_per_layer_param = 16.0 / layout_.tp_size() /
                                         (parallel_.zero_stage >= 1 ? layout_.dp_size() : 1);
    const double params_per_layer = static_cast<double>(layers[1]->parameter_count());
    const double act_per_layer = layers[1]->saved_activation_bytes();
    auto demand = [&](int s, int count) {
      return count * (params_per_layer * bytes_per_layer_param + act_per_layer * (p - s));
    };
    auto capacity = [&](int s) {
      return least_over(devices, [&](const RankCoord& c) { return c.pp == s; }, &RankDevice::memory_bytes);
    };
    for (int guard = 0; guard < movable * p; ++guard) {
      int worst = -1;
      for (int s = 0; s < p; ++s)
        if (per_stage[s] > v && demand(s, per_stage[s]) > capacity(s) && (worst < 0 || demand(s, per_stage[s]) - capacity(s) > demand(worst, per_stage[worst]) - capacity(worst)))
          worst = s;
      if (worst < 0) break;
      int roomiest = -1;
      for (int s = 0; s < p; ++s)
        if (s != worst && demand(s, per_stage[s] + v) <= capacity(s) &&
            (roomiest < 0 || capacity(s) - demand(s, per_stage[s]) > capacity(roomiest) - demand(roomiest, per_stage[roomiest])))
          roomiest = s;
      if (roomiest < 0) break;  // nowhere to go: the prediction will say out of memory
      per_stage[worst] -= v, per_stage[roomiest] += v;
    }
  }
  // Chunks of a stage share its layers evenly (interleaving needs that).
  std::vector<int> per_virtual(stages);
  for (int s = 0; s < p; ++s) {
    if (per_stage[s] % v != 0)
      throw StrategyError("strategy.virtual_pipeline_model_parallel_size",
                          "stage " + std::to_string(s) + "'s " + std::to_string(per_stage[s]) +
                              " layers do not split into " + std::to_string(v) + " chunks");
    for (int c = 0; c < v; ++c) per_virtual[virtual_stage(hybrid_.schedule, c, s, p)] = per_stage[s] / v;
  }
  virtual_stage_layers_ = per_virtual;
}

std::string HybridParallel::name() const {
  std::string n = "hybrid(tp=" + std::to_string(layout_.tp_size()) + ", pp=" + std::to_string(layout_.pp_size()) +
                  ", dp=" + std::to_string(layout_.dp_size());
  if (layout_.cp_size() > 1) n += ", cp=" + std::to_string(layout_.cp_size());
  if (parallel_.expert_model_parallel_size > 1) n += ", ep=" + std::to_string(parallel_.expert_model_parallel_size);
  if (parallel_.sequence_parallel) n += parallel_.tp_comm_overlap ? ", sp overlapped" : ", sp";
  if (parallel_.zero_stage > 0) n += ", zero" + std::to_string(parallel_.zero_stage);
  if (parallel_.recompute_granularity != Recompute::none) n += std::string(", recompute ") + to_string(parallel_.recompute_granularity);
  if (layout_.pp_size() > 1) n += std::string(", ") + to_string(hybrid_.schedule);
  if (hybrid_.virtual_stages > 1) n += " v=" + std::to_string(hybrid_.virtual_stages);
  if (parallel_.batch_split == BatchSplit::proportional) n += ", proportional batch";
  if (parallel_.gradient_compression.enabled()) n += ", " + describe(parallel_.gradient_compression);
  if (hybrid_.partition == HybridConfig::Partition::proportional && layout_.pp_size() > 1) n += ", proportional stages";
  if (parallel_.local_sgd_steps > 1) n += ", local SGD H=" + std::to_string(parallel_.local_sgd_steps);
  if (parallel_.local_sgd_group_size > 1) n += " in blocks of " + std::to_string(parallel_.local_sgd_group_size);
  return n + ")";
}

std::unique_ptr<RankProgram> HybridParallel::program_for(int rank) const {
  HybridRank::Plan plan;
  plan.model = model_;
  plan.batch = batch_shape();
  plan.training = training_;
  plan.parallel = parallel_;
  plan.hybrid = hybrid_;
  plan.layout = &layout_;
  // Virtual stage k holds layers [first[k], first[k+1]) of the model's list: the embedding joins
  // virtual stage 0, the head the last one.
  plan.first_layer_of_virtual_stage.push_back(0);
  for (std::size_t k = 0; k < virtual_stage_layers_.size(); ++k)
    plan.first_layer_of_virtual_stage.push_back(plan.first_layer_of_virtual_stage.back() + virtual_stage_layers_[k] +
                                                (k == 0 ? 1 : 0));
  plan.first_layer_of_virtual_stage.back() += 1;  // the head
  const RankCoord me = layout_.coord_of(rank);
  plan.micro_batches = micro_batches_.at(me.dp);
  plan.all_micro_batches = std::accumulate(micro_batches_.begin(), micro_batches_.end(), std::int64_t{0});
  plan.block_micro_batches = block_micro_batches(micro_batches_, me.dp, parallel_.local_sgd_group_size);
  return std::make_unique<HybridRank>(std::move(plan), rank);
}

}  // namespace tandem
