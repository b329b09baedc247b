// Data parallelism, written once against the per-rank interface.
//
// Every rank holds the whole model. Each iteration a rank runs its share of the global batch as
// micro-batches, accumulating gradients; during the last micro-batch's backward, gradients are
// gathered into buckets (in the order backward produces them) and each full bucket is
// all-reduced on the data-parallel stream while backward goes on (overlap, as PyTorch DDP and
// Megatron-LM do). Then every rank steps its optimizer (mixed-precision AdamW: fp32 master
// weights, m and v).
//
// On clusters of several device kinds the global batch can be split in proportion to each
// replica's speed, so that fast replicas do not wait for slow ones at the all-reduce; gradients
// are then weighted by each replica's share of the batch before the sum.
//
// With parameter_servers S > 0 ranks dp..dp+S-1 are servers that sum the gradients instead of the
// all-reduce (strategies/parameter_server.hpp); the replicas are ranks 0..dp-1. Asynchronous servers
// (parameter_server_asynchronous) apply each replica's push alone, in an order drawn from the
// replicas' step times (strategies/parameter_server_order.hpp): the replicas run ahead of one another.
#pragma once

#include <memory>
#include <vector>

#include "strategies/model.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

class DataParallel final : public Strategy {
 public:
  // `replica_speeds`: one weight per rank (e.g. peak FLOP/s), used by BatchSplit::proportional.
  DataParallel(std::shared_ptr<const Model> model, TrainingConfig training, ParallelConfig parallel,
               std::vector<double> replica_speeds);

  std::string name() const override;
  // The replicas, then the parameter servers (if any).
  int world_size() const override;
  std::unique_ptr<RankProgram> program_for(int rank) const override;
  std::int64_t sequences_per_iteration() const override { return training_.global_batch_size; }
  // Every rank is a replica.
  std::optional<ReplicaStructure> replica_structure() const override;
  int iteration_period() const override { return parallel_.local_sgd_steps; }
  bool uses_host() const override { return parallel_.offload_optimizer; }
  int irregular_iterations() const override { return parallel_.parameter_server_staleness; }
  bool ranks_run_ahead() const override { return parallel_.parameter_server_asynchronous; }
  // Every rank a replica of the whole model (layers -1: not split), with its batch share.
  std::vector<RankRole> rank_roles() const override;

  // Micro-batches each replica runs per iteration.
  const std::vector<std::int64_t>& micro_batches_per_replica() const { return micro_batches_; }
  // The data-parallel group (all ranks); id 0.
  const Group& group() const { return group_; }
  BatchShape batch_shape() const;

 private:
  std::shared_ptr<const Model> model_;
  TrainingConfig training_;
  ParallelConfig parallel_;
  // The servers step the optimizer (asked for, or asynchronous servers, which always do).
  bool servers_step() const { return parallel_.parameter_server_optimizer || parallel_.parameter_server_asynchronous; }

  std::vector<std::int64_t> micro_batches_;
  std::vector<double> replica_speeds_;  // per replica (its speed weight; 1 when none was given)
  Group group_;
};

}  // namespace tandem
