#include "strategies/data_parallel.hpp"

#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "strategies/gradient_sync.hpp"
#include "strategies/model_averaging.hpp"
#include "strategies/parameter_server.hpp"
#include "strategies/ops.hpp"

namespace tandem {

namespace {

class DataParallelRank final : public RankProgram {
 public:
  DataParallelRank(std::shared_ptr<const Model> model, BatchShape batch, const TrainingConfig& training,
                   const ParallelConfig& parallel, const Group& group, Group block, std::int64_t my_micro_batches,
                   std::int64_t all_micro_batches, std::int64_t block_micro_batches,
                   std::unique_ptr<GradientCodec> codec)
      : model_(std::move(model)), batch_(batch), training_(training), parallel_(parallel), group_(group),
        block_(std::move(block)), micro_batches_(my_micro_batches), all_micro_batches_(all_micro_batches),
        block_micro_batches_(block_micro_batches),
        optimizer_(1, parallel.offload_optimizer, parallel.master_param_remainders), codec_(std::move(codec)),
        outer_(parallel.outer_lr, parallel.outer_momentum) {}

  void setup(Runtime& rt) override {
    layers_ = model_->build_layers(batch_, ParallelContext{});
    // Servers that step the optimizer send parameters back: no optimizer here, the pulls go into
    // the parameters.
    const bool servers_step = codec_ && codec_->updates_parameters();
    std::map<int, Tensor> parameter_of;
    for (auto& layer : layers_) {
      layer->allocate(rt, /*with_gradients=*/true);
      if (!servers_step) optimizer_.allocate(rt, layer->name(), layer->parameters(), layer->placements(), 0);
      for (std::size_t j = 0; j < layer->gradients().size(); ++j)
        parameter_of[layer->gradients()[j].id] = layer->parameters()[j];
    }
    if (servers_step) codec_->set_parameters(std::move(parameter_of));
    else outer_.allocate(rt, optimizer_, layer_pointers());
  }

  void train_step(Runtime& rt, int iteration) override {
    const bool local = parallel_.local_sgd_steps > 1;
    if (local && parallel_.local_sgd_group_size == 1) return local_step(rt, iteration);
    // Synchronous over every replica, or (hierarchical local SGD) over this replica's block.
    const Group& reduced_over = local ? block_ : group_;
    if (codec_) codec_->begin_step(rt, iteration);  // a stale exchange's pulls: overlap the whole step
    zero_gradients(rt);
    GradientBuckets buckets(reduced_over, parallel_.ddp_bucket_size, GradientBuckets::Reduction::all_reduce);
    buckets.set_codec(codec_.get());
    for (int mb = 0; mb < micro_batches_; ++mb) {
      const bool last = mb + 1 == micro_batches_;
      forward(rt, mb);
      // Backward; during the last micro-batch each layer's gradients are final as soon as its
      // backward is done, so they join a bucket at once (overlap with the layers still to go).
      Tensor grad;
      for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
        grad = (*it)->backward(rt, grad, mb);
        if (last && parallel_.overlap_grad_reduce) buckets.add(rt, (*it)->gradients());
      }
      if (grad.valid()) rt.release(grad);
    }
    if (!parallel_.overlap_grad_reduce)
      for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) buckets.add(rt, (*it)->gradients());
    buckets.launch(rt);
    buckets.wait_all(rt);
    // A stale exchange's gradients are those of step iteration - delay: the optimizer makes that
    // step's update (none before the first one arrives).
    const int delay = codec_ ? codec_->update_delay() : 0;
    if (iteration >= delay && !(codec_ && codec_->updates_parameters()))
      optimizer_step(rt, iteration - delay,
                     1.0f / static_cast<float>(local ? block_micro_batches_ : all_micro_batches_));
    if (local && ++steps_since_average_ == parallel_.local_sgd_steps) average_parameters(rt, false);
  }

  // A checkpoint (or the run's end) holds one model: the replicas' average, optimizer moments
  // included (they are each replica's own between averagings).
  void settle(Runtime& rt) override {
    if (parallel_.local_sgd_steps == 1) return;
    average_parameters(rt, /*with_moments=*/true);
  }

 private:
  // Local SGD: this replica's micro-batches, its own step (its gradients averaged over them), and
  // every local_sgd_steps steps the replicas' average.
  void local_step(Runtime& rt, int iteration) {
    zero_gradients(rt);
    for (int mb = 0; mb < micro_batches_; ++mb) {
      forward(rt, mb);
      Tensor grad;
      for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) grad = (*it)->backward(rt, grad, mb);
      if (grad.valid()) rt.release(grad);
    }
    optimizer_step(rt, iteration, 1.0f / static_cast<float>(micro_batches_));
    if (++steps_since_average_ == parallel_.local_sgd_steps) average_parameters(rt, false);
  }

  void average_parameters(Runtime& rt, bool with_moments) {
    steps_since_average_ = 0;
    average_models(rt, optimizer_, layer_pointers(), group_, with_moments, &outer_);
  }
  std::vector<const Layer*> layer_pointers() const {
    std::vector<const Layer*> layers;
    for (const auto& layer : layers_) layers.push_back(layer.get());
    return layers;
  }

  void forward(Runtime& rt, int mb) {
    Tensor x = model_->make_input(rt, batch_, mb);
    for (auto& layer : layers_) x = layer->forward(rt, x, mb);
    rt.release(x);  // the loss
  }

  void zero_gradients(Runtime& rt) {
    for (auto& layer : layers_) tandem::zero_gradients(rt, *layer, Phase::other, "");
  }

  void optimizer_step(Runtime& rt, int iteration, float grad_scale) {
    for (auto& layer : layers_)
      optimizer_.step(rt, layer->name(), layer->parameters(), layer->gradients(), training_, grad_scale,
                      iteration, 0);
  }

  std::shared_ptr<const Model> model_;
  BatchShape batch_;
  TrainingConfig training_;
  ParallelConfig parallel_;
  const Group& group_;
  Group block_;  // hierarchical local SGD: the replicas stepping with this one (itself alone: 1)
  std::int64_t micro_batches_;
  std::int64_t all_micro_batches_;
  std::int64_t block_micro_batches_;
  std::vector<std::unique_ptr<Layer>> layers_;
  ShardedAdam optimizer_;  // whole state: plain data parallelism shards nothing
  std::unique_ptr<GradientCodec> codec_;  // compression or parameter servers; null: plain all-reduce
  OuterOptimizer outer_;  // DiLoCo over local SGD (plain: nothing)
  int steps_since_average_ = 0;           // local SGD: steps since the replicas last averaged
};

}  // namespace

DataParallel::DataParallel(std::shared_ptr<const Model> model, TrainingConfig training,
                           ParallelConfig parallel, std::vector<double> replica_speeds)
    : model_(std::move(model)), training_(std::move(training)), parallel_(parallel) {
  const int dp = parallel_.data_parallel_size;
  if (parallel_.tensor_model_parallel_size != 1)
    throw StrategyError("strategy.tensor_model_parallel_size", "data_parallel runs with tensor_model_parallel_size 1");
  if (parallel_.pipeline_model_parallel_size != 1)
    throw StrategyError("strategy.pipeline_model_parallel_size", "data_parallel runs with pipeline_model_parallel_size 1");
  if (parallel_.zero_stage != 0)
    throw StrategyError("strategy.zero_stage", "data_parallel keeps full optimizer state (zero_stage 0)");
  if (parallel_.sequence_parallel)
    throw StrategyError("strategy.sequence_parallel", "sequence parallelism needs tensor parallelism");
  if (parallel_.overlap_param_gather)
    throw StrategyError("strategy.overlap_param_gather", "overlapping the parameter all-gather needs zero_stage 1 or 2");
  if (parallel_.tp_comm_overlap)
    throw StrategyError("strategy.tp_comm_overlap", "tensor-parallel communication overlap needs tensor parallelism");
  check_gradient_compression(parallel_);
  check_local_sgd(parallel_);
  check_parameter_servers(parallel_);
  micro_batches_ = tandem::micro_batches_per_replica(training_, dp, parallel_.batch_split, replica_speeds);
  for (int r = 0; r < dp; ++r) {
    const double speed = static_cast<std::size_t>(r) < replica_speeds.size() ? replica_speeds[static_cast<std::size_t>(r)] : 1.0;
    replica_speeds_.push_back(speed > 0 && std::isfinite(speed) ? speed : 1.0);
  }
  group_.id = 0;
  group_.ranks.resize(dp);
  std::iota(group_.ranks.begin(), group_.ranks.end(), 0);
}

std::string DataParallel::name() const {
  const CompressionConfig& c = parallel_.gradient_compression;
  return "data_parallel(dp=" + std::to_string(parallel_.data_parallel_size) +
         (parallel_.local_sgd_steps > 1 ? ", local SGD H=" + std::to_string(parallel_.local_sgd_steps) : "") +
         (parallel_.local_sgd_group_size > 1 ? " in blocks of " + std::to_string(parallel_.local_sgd_group_size) : "") +
         (parallel_.batch_split == BatchSplit::proportional ? ", proportional split" : "") +
         (c.enabled() ? ", " + describe(c) : "") +
         (parallel_.parameter_servers > 0 ? ", " + std::to_string(parallel_.parameter_servers) + " parameter server(s)"
                                          : "") +
         (parallel_.parameter_server_staleness > 0
              ? " with staleness " + std::to_string(parallel_.parameter_server_staleness)
              : "") +
         (parallel_.parameter_server_asynchronous ? " asynchronous"
          : parallel_.parameter_server_optimizer  ? " stepping the optimizer"
                                                  : "") +
         ")";
}

std::optional<ReplicaStructure> DataParallel::replica_structure() const {
  // Servers are no replicas, and every replica talks to them: nothing to mirror.
  if (parallel_.parameter_servers > 0) return std::nullopt;
  ReplicaStructure r;
  r.replicas = parallel_.data_parallel_size;
  r.replica_of.resize(r.replicas);
  std::iota(r.replica_of.begin(), r.replica_of.end(), 0);
  r.position_of.assign(r.replicas, 0);
  r.work_of = micro_batches_;
  return r;
}

std::vector<RankRole> DataParallel::rank_roles() const {
  std::vector<RankRole> roles;
  for (int rank = 0; rank < parallel_.data_parallel_size; ++rank)
    roles.push_back({0, rank, -1, micro_batches_[rank] * training_.micro_batch_size});
  for (int s = 0; s < parallel_.parameter_servers; ++s) roles.push_back({-1, -1, 0, 0});  // servers hold no layers
  return roles;
}

BatchShape DataParallel::batch_shape() const { return batch_shape_of(training_); }

int DataParallel::world_size() const { return parallel_.data_parallel_size + parallel_.parameter_servers; }

std::unique_ptr<RankProgram> DataParallel::program_for(int rank) const {
  const int workers = parallel_.data_parallel_size;
  if (rank >= workers)
  {
    std::optional<ServerOptimizer> optimizer;
    if (servers_step()) {
      const std::int64_t all = std::accumulate(micro_batches_.begin(), micro_batches_.end(), std::int64_t{0});
      optimizer = ServerOptimizer{training_, 1.0f / static_cast<float>(all), std::nullopt};
      if (parallel_.parameter_server_asynchronous) {
        // Each worker's step lasts in proportion to its micro-batches over its speed.
        AsynchronousPushes a;
        a.jitter = parallel_.parameter_server_jitter;
        a.seed = parallel_.parameter_server_seed;
        for (int w = 0; w < workers; ++w) {
          const double mb = static_cast<double>(micro_batches_.at(static_cast<std::size_t>(w)));
          a.step_s.push_back(std::max(mb, 1.0) / replica_speeds_.at(static_cast<std::size_t>(w)));
          a.grad_scale.push_back(1.0f / static_cast<float>(std::max<std::int64_t>(1, micro_batches_.at(static_cast<std::size_t>(w)))));
        }
        optimizer->asynchronous = std::move(a);
      }
    }
    return make_server_program([this] { return program_for(0); }, rank, workers, world_size(),
                               parallel_.parameter_server_staleness, std::move(optimizer));
  }
  // The gradients' exchange: through the servers, or the all-reduce (plain or compressed).
  std::unique_ptr<GradientCodec> codec;
  if (parallel_.parameter_servers > 0) {
    std::vector<int> servers(static_cast<std::size_t>(parallel_.parameter_servers));
    std::iota(servers.begin(), servers.end(), workers);
    codec = make_push_pull_exchange(std::move(servers), parallel_.parameter_server_partition_bytes,
                                    parallel_.parameter_server_staleness, servers_step(),
                                    parallel_.parameter_server_asynchronous);
  } else {
    codec = make_gradient_codec(parallel_.gradient_compression);
  }
  const std::int64_t all = std::accumulate(micro_batches_.begin(), micro_batches_.end(), std::int64_t{0});
  // Hierarchical local SGD's block: consecutive replicas (ranks), numbered after the whole group (id 0).
  const int size = parallel_.local_sgd_group_size;
  Group block;
  block.id = 1 + rank / size;
  for (int r = rank / size * size; r < (rank / size + 1) * size; ++r) block.ranks.push_back(r);
  return std::make_unique<DataParallelRank>(model_, batch_shape(), training_, parallel_, group_, std::move(block),
                                            micro_batches_.at(rank), all,
                                            block_micro_batches(micro_batches_, rank, size), std::move(codec));
}

}  // namespace tandem
