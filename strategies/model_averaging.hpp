// Local SGD's model average (strategy.local_sgd_steps): the data-parallel replicas' mean of the
// fp32 values the optimizer steps (master copies, or the parameters themselves when fp32), and of
// its moments when asked, in one all-reduce over the replicas; the means are then cast back into
// parameters stored in another dtype. Data-parallel and hybrid strategies share it.
#pragma once

#include <vector>

#include "strategies/gradient_sync.hpp"
#include "strategies/model.hpp"
#include "strategies/runtime.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// Throws StrategyError("strategy.local_sgd_steps") unless `parallel`'s period is >= 1 and, when it
// is above 1, the optimizer state is whole (zero_stage 0) and no codec replaces the exchange.
void check_local_sgd(const ParallelConfig& parallel);

// `optimizer` holds the whole state of `layers` (unsharded); `replicas` is this rank's data-parallel
// group. Blocks the host until the mean is in place.
void average_models(Runtime& rt, const ShardedAdam& optimizer, const std::vector<const Layer*>& layers,
                    const Group& replicas, bool with_moments);

}  // namespace tandem
