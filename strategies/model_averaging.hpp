// Local SGD's model average (strategy.local_sgd_steps): the data-parallel replicas' mean of the
// fp32 values the optimizer steps (master copies, or the parameters themselves when fp32), and of
// its moments when asked, in one all-reduce over the replicas; the means are then cast back into
// parameters stored in another dtype. Data-parallel and hybrid strategies share it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strategies/gradient_sync.hpp"
#include "strategies/model.hpp"
#include "strategies/runtime.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// Throws StrategyError("strategy.local_sgd_steps") unless `parallel`'s period is >= 1 and, when it
// is above 1, the optimizer state is whole (zero_stage 0) and no codec replaces the exchange; and
// ("strategy.local_sgd_group_size") unless the block size is 1, or divides the data-parallel size
// under local SGD.
void check_local_sgd(const ParallelConfig& parallel);

// The micro-batches per iteration of the block of `block_size` consecutive replicas that holds
// `replica` (hierarchical local SGD's synchronous block), from the micro-batches per replica.
std::int64_t block_micro_batches(const std::vector<std::int64_t>& micro_batches_per_replica, int replica,
                                 int block_size);

// DiLoCo's outer optimizer over local SGD's averages: per parameter an fp32 anchor (the model as
// last synchronised, from the start a copy of the optimizer's fp32 values) and a momentum
// buffer, placed as "<parameter>.outer_anchor|outer_momentum" (checkpoints keep them). Plain
// (lr 1, momentum 0): nothing allocated, the average is the model.
class OuterOptimizer {
 public:
  OuterOptimizer(float lr, float momentum) : lr_(lr), momentum_(momentum) {}
  bool plain() const { return lr_ == 1.0f && momentum_ == 0.0f; }
  void allocate(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers);
  // After the replicas' average landed in the optimizer's fp32 values: the outer step, in place,
  // on the parameters `include` takes (all when empty).
  void step(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
            const std::function<bool(const Tensor&)>& include = {}) const;

 private:
  float lr_, momentum_;
  std::map<std::string, std::vector<std::pair<Tensor, Tensor>>> state_;  // layer -> [param] (anchor, momentum)
};

// `optimizer` holds the whole state of `layers` (unsharded); `replicas` is this rank's data-parallel
// group. With `outer` (DiLoCo; not for a settle's average, `with_moments`), the average is its
// outer gradient. Blocks the host until the mean is in place. `include`: only these parameters (and
// their state) are averaged over `replicas` (all when empty): a mixture of experts averages its
// experts over the replicas that hold the same ones and the rest over every replica.
void average_models(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
                    const Group& replicas, bool with_moments, const OuterOptimizer* outer = nullptr,
                    const std::function<bool(const Tensor&)>& include = {});

}  // namespace tandem
