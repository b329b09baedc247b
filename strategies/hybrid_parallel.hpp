// The 3D hybrid, as Megatron-LM and DeepSpeed run it: data x tensor x pipeline parallelism, with
// sequence parallelism, ZeRO stages 1-3 over the data-parallel group, activation recomputation,
// and the pipeline schedules of pipeline_schedule.hpp. Written once against the per-rank
// interface.
//
//   tensor     the model's layers are built sharded over the tensor group (Megatron column/row
//              parallel linears; the layers issue their own all-reduces / reduce-scatters);
//   pipeline   each stage holds a contiguous range of layers (v chunks per stage when
//              interleaved); activations go forward and their gradients backward as
//              point-to-point transfers; the stages' layer counts are uniform, proportional to
//              the stages' device speed (heterogeneous clusters), or given explicitly;
//   data       gradients reduced over the data-parallel group in buckets during the last
//              micro-batch's backward (all-reduce; reduce-scatter under ZeRO, then the updated
//              parameters all-gathered); replicas may take batch shares proportional to their
//              throughput;
//   ZeRO-1     optimizer state sharded; ZeRO-2 also gradients (reduced every micro-batch, full
//              gradients kept only around a layer's backward); ZeRO-3 also parameters
//              (all-gathered before each layer's forward and backward, released after).
//              Member i of the data-parallel group owns part i of every tensor (CommShards);
//              ZeRO-2/3 reduce-scatter each micro-batch's gradients out of place into the
//              gradient partitions (the first one overwrites, later ones add); a layer that
//              borrows the tied table (the output layer) gathers it and makes its gradient live
//              too. Partitions are placed in their logical tensors (TensorPlacement).
//   context    with context_parallel_size cp > 1, each sequence is split over cp ranks (coordinate
//              right after tensor parallelism) in load-balanced zigzag chunks; attention
//              all-gathers K and V over the context group (and reduce-scatters their gradient);
//              gradients are summed, and ZeRO shards kept, over the data and context ranks
//              together (RankLayout::data_context_group), as Megatron-Core does;
//   sequence   with SP, the partial gradients of the layers' tensor_partial_gradients() are
//              all-reduced over the tensor group on the data-parallel stream, before the
//              bucket reductions (Megatron's layernorm/bias gradient all-reduce).
//
// The tied word embedding of a pipelined model has a copy on the last stage; the two copies'
// gradients are all-reduced between the first and last stage, as Megatron-LM does.
#pragma once

#include <functional>

#include <memory>
#include <vector>

#include "strategies/model.hpp"
#include "strategies/pipeline_schedule.hpp"
#include "strategies/rank_layout.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

struct HybridConfig {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;              // model chunks per pipeline stage (interleaved)
  RankOrder order = RankOrder::tp_dp_pp;
  // Transformer layers per pipeline stage (empty: decided by `pipeline_partition`).
  std::vector<int> layers_per_stage;
  enum class Partition { uniform, proportional } partition = Partition::uniform;
};

// What a rank's device can do, for heterogeneity-aware partitions.
struct RankDevice {
  double speed = 1;           // e.g. peak FLOP/s in the training dtype
  double memory_bytes = 0;    // capacity
  int node = 0;               // global node index
  std::string kind;           // device profile name
};

class HybridParallel final : public Strategy {
 public:
  // `devices`: one entry per rank (sizes tp*dp*pp). Throws StrategyError for an impossible
  // configuration, naming the knob.
  HybridParallel(std::shared_ptr<const Model> model, TrainingConfig training, ParallelConfig parallel,
                 HybridConfig hybrid, std::vector<RankDevice> devices);

  std::string name() const override;
  int world_size() const override { return layout_.world_size(); }
  std::unique_ptr<RankProgram> program_for(int rank) const override;
  std::int64_t sequences_per_iteration() const override { return training_.global_batch_size; }
  // Replicas are the data-parallel coordinate; a position is a (tensor, pipeline) pair (stages
  // are partitioned per stage, the same in every replica).
  std::optional<ReplicaStructure> replica_structure() const override;
  // Tensor groups are members with the same (dp, pp): layers are sharded evenly over them (the
  // model checks divisibility), and every other group (data, pipeline, embedding) joins ranks of
  // one tensor position.
  std::optional<TensorStructure> tensor_structure() const override;
  // 1F1B and interleaved pipelines whose replicas run equal micro-batch counts.
  std::optional<PipelineStructure> pipeline_structure() const override;
  int iteration_period() const override { return parallel_.local_sgd_steps; }
  // --overlap-param-gather: the first iteration starts from parameters already in place; every
  // later one all-gathers the previous step's update during its forward, so the steady iteration
  // is the second.
  int irregular_iterations() const override {
    return parallel_.overlap_param_gather && parallel_.data_parallel_size > 1 ? 1 : 0;
  }
  bool uses_host() const override { return parallel_.offload_optimizer; }
  // Stage = pp coordinate, replica = dp coordinate, layers = its chunks' layers, sequences =
  // its replica's micro-batches x micro-batch size.
  std::vector<RankRole> rank_roles() const override;
  std::unique_ptr<Strategy> with_micro_batches(std::int64_t micro_batches) const override;

  const RankLayout& layout() const { return layout_; }
  PipelineSchedule schedule() const { return hybrid_.schedule; }
  // Transformer layers held by each virtual stage (chunk c of stage s is virtual stage c*p+s).
  const std::vector<int>& layers_per_virtual_stage() const { return virtual_stage_layers_; }
  // Transformer layers per pipeline stage, all its chunks together (the schedule says which
  // virtual stages a stage holds).
  std::vector<int> layers_per_stage() const;
  const std::vector<std::int64_t>& micro_batches_per_replica() const { return micro_batches_; }
  BatchShape batch_shape() const;

 private:
  void partition_layers(const std::vector<RankDevice>& devices);
  void split_batch(const std::vector<RankDevice>& devices);
  void check_tensor_groups(const std::vector<RankDevice>& devices) const;
  double least_over(const std::vector<RankDevice>& devices, const std::function<bool(const RankCoord&)>& member,
                    double RankDevice::*figure) const;

  std::shared_ptr<const Model> model_;
  TrainingConfig training_;
  ParallelConfig parallel_;
  HybridConfig hybrid_;
  RankLayout layout_;
  std::vector<RankDevice> devices_;
  std::vector<int> virtual_stage_layers_;
  std::vector<std::int64_t> micro_batches_;  // per data-parallel replica
};

}  // namespace tandem
