// How data-parallel replicas agree on gradients and step the optimizer; shared by every strategy
// with a data-parallel dimension (data_parallel, hybrid_parallel):
//   * GradientBuckets gathers gradients in the order backward produces them and reduces each
//     full bucket on the data-parallel stream while backward goes on (all-reduce, or
//     reduce-scatter when the optimizer state is sharded: ZeRO);
//   * ShardedAdam holds mixed-precision AdamW state (fp32 master, m, v), whole or as this rank's
//     1/N shard of every parameter (ZeRO-1/2/3), and steps it.
//   * with a GradientCodec (strategies/compression/gradient_codec.hpp), each all-reduce bucket
//     is reduced through it instead: encoded while backward goes on, decoded once it is done.
// A sharded parameter is split element-wise: member i of an N-member group owns elements
// [i*ceil(n/N), min(n, (i+1)*ceil(n/N))) of every tensor; a bucket's reduce-scatter and
// all-gather apply to each of its tensors that way (CommShards, strategies/op.hpp: the one
// convention every backend implements).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strategies/compression/gradient_codec.hpp"
#include "strategies/model.hpp"
#include "strategies/runtime.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// Elements of an n-element tensor that one member of `shards` owns (its storage; the last
// members' parts may hold fewer real elements), and where member `index`'s part starts.
std::int64_t shard_numel(std::int64_t n, int shards);
std::int64_t shard_offset(std::int64_t n, int shards, int index);
// The placement of member `index`'s part of a tensor placed at `whole` (ZeRO partitions).
TensorPlacement shard_placement(TensorPlacement whole, std::int64_t n, int shards, int index);

// Zeroes a layer's gradient buffers (labels "<prefix><layer>.g<j>.zero"), or its j-th one.
void zero_gradients(Runtime& rt, const Layer& layer, Phase phase, const std::string& label_prefix);
void zero_gradient(Runtime& rt, const Layer& layer, std::size_t j, Phase phase, const std::string& label_prefix);

class GradientBuckets {
 public:
  enum class Reduction { all_reduce, reduce_scatter };
  // `label` prefixes op labels ("dp" -> "dp.bucket3.all_reduce"); it must make them unique
  // within an iteration (add the micro-batch when buckets are reduced more than once).
  GradientBuckets(Group group, std::int64_t bucket_params, Reduction reduction);

  void set_label(std::string label) { label_ = std::move(label); }
  // ZeRO-2/3: free each bucket's full gradients once its reduce-scatter is done.
  void set_release_after_reduce(bool release) { release_after_reduce_ = release; }
  // All-reduce buckets go through `codec` (not owned; it keeps state across iterations, keyed
  // by the bucket labels, which stay the same from one iteration to the next). nullptr: plain.
  void set_codec(GradientCodec* codec) { codec_ = codec; }

  // Launches full buckets. With `shards` (one per gradient: ZeRO-2/3 partitions) the
  // reduce-scatter writes this rank's part there instead of in place, adding to it unless
  // `overwrite_shards` (the first micro-batch of a step starts the sums).
  void add(Runtime& rt, const std::vector<Tensor>& gradients, const std::vector<Tensor>& shards = {},
           bool overwrite_shards = false);
  void launch(Runtime& rt);                                     // launches what is left
  void wait_all(Runtime& rt);  // host waits for every bucket (a codec's later rounds and decode run here)
  const Group& group() const { return group_; }

 private:
  Group group_;
  std::int64_t limit_;
  Reduction reduction_;
  std::string label_ = "dp";
  bool release_after_reduce_ = false;
  std::vector<Tensor> current_, current_shards_;
  bool overwrite_ = false;
  std::int64_t current_params_ = 0;
  std::vector<Handle> handles_;
  int count_ = 0;
  GradientCodec* codec_ = nullptr;
  std::vector<std::pair<CodecBucket, Handle>> coded_;  // buckets in a codec's hands, their last collective
};

//
// Offloaded (ZeRO-Offload, Ren et al. 2021, arXiv 2101.06840; DeepSpeed's offload_optimizer with
// device cpu): the state (an fp32 master for every parameter, m, v) lives in the host's memory and
// the host's CPU steps it. Per parameter a step copies this rank's gradient shard to the host,
// runs AdamW there and copies the updated shard of the parameter back, all on the compute stream
// (DeepSpeed's default: the copies do not overlap backward). The device keeps no optimizer state.
class ShardedAdam {
 public:
  // `remainders`: a bf16 parameter's master is kept as its 16-bit remainder
  // (ParallelConfig::master_param_remainders).
  explicit ShardedAdam(int shards = 1, bool offload = false, bool remainders = false)
      : shards_(shards), offload_(offload), remainders_(remainders) {}
  // Allocates master (unless parameters are fp32), m and v for each parameter, 1/shards each:
  // member `shard_index`'s part, placed as "<parameter>.master|exp_avg|exp_avg_sq" of the
  // parameters' logical tensors (`placements`, parallel to params).
  void allocate(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params,
                const std::vector<TensorPlacement>& placements, int shard_index);
  // One AdamW step of this rank's shard of `owner`'s parameters (same order as allocate); params
  // and grads are whole tensors or this member's parts (kernels read a part from its start).
  void step(Runtime& rt, const std::string& owner, const std::vector<Tensor>& params,
            const std::vector<Tensor>& grads, const TrainingConfig& training, float grad_scale,
            int iteration, int shard_index);
  int shards() const { return shards_; }
  bool offloaded() const { return offload_; }
  // The fp32 values each parameter of `owner` is stepped in: its master copy, or the parameter
  // itself when it is fp32 (`params` as given to allocate; unsharded optimizers only).
  std::vector<Tensor> masters(const std::string& owner, const std::vector<Tensor>& params) const;
  // The moment estimates (exp_avg, exp_avg_sq) of `owner`'s parameters.
  std::vector<Tensor> moments(const std::string& owner) const;

 private:
  // Offloaded: the step's staging buffers in host memory, one pair per parameter (allocated at
  // the first step, when the gradients' dtype is known): the gradient shard and, for a 16-bit
  // parameter, its updated shard in that dtype.
  struct HostStaging {
    Tensor grad, param;
  };
  void offloaded_step(Runtime& rt, const std::string& label, const Tensor& param, const Tensor& grad,
                      const std::vector<Tensor>& states, HostStaging& staging, OptimizerArgs args);

  int shards_;
  bool offload_ = false;
  bool remainders_ = false;
  std::map<std::string, std::vector<HostStaging>> staging_;  // owner -> [param]
  std::map<std::string, std::vector<std::vector<Tensor>>> states_;  // owner -> [param][state]
  // owner -> [param] elements of the whole parameter (a ZeRO-3 step gets its partitions only).
  std::map<std::string, std::vector<std::int64_t>> numels_;
};

}  // namespace tandem
