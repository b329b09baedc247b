#include "strategies/strategy.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tandem {

std::unique_ptr<Strategy> Strategy::with_micro_batches(std::int64_t) const { return nullptr; }

std::vector<std::int64_t> split_proportionally(std::int64_t total, const std::vector<double>& weights) {
  const std::size_t n = weights.size();
  if (n == 0) throw std::invalid_argument("no replicas to split a batch over");
  if (total < static_cast<std::int64_t>(n))
    throw std::invalid_argument("fewer micro-batches than replicas");
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  // Every replica gets one micro-batch first; the rest is shared by weight.
  const std::int64_t rest = total - static_cast<std::int64_t>(n);
  std::vector<std::int64_t> shares(n, 1);
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Ideal share of the whole, minus the one already given.
    const double ideal = static_cast<double>(total) * weights[i] / sum - 1.0;
    const auto whole = static_cast<std::int64_t>(std::max(0.0, ideal));
    shares[i] += whole;
    given += whole;
    remainders.push_back({std::max(0.0, ideal) - static_cast<double>(whole), i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t j = 0; given < rest; j = (j + 1) % n, ++given) shares[remainders[j].second] += 1;
  // Over-allocation can only come from clamping; take back from the largest shares.
  while (given > rest) {
    auto it = std::max_element(shares.begin(), shares.end());
    *it -= 1;
    --given;
  }
  return shares;
}

BatchShape batch_shape_of(const TrainingConfig& training) {
  BatchShape b;
  b.micro_batch = training.micro_batch_size;
  b.seq_len = training.seq_length;
  b.dtype = training.precision;
  // PyTorch AMP keeps the weights in fp32 (no separate master copy); Megatron keeps 16-bit weights.
  b.param_dtype = training.autocast ? DType::fp32 : training.precision;
  b.fp8 = training.fp8;
  b.autocast = training.autocast;
  b.grad_accumulation = training.autocast ? GradAccumulation::cast_add : training.grad_accumulation;
  b.grad_dtype = training.accumulate_allreduce_grads_in_fp32 ? DType::fp32 : training.precision;
  return b;
}

std::vector<std::int64_t> micro_batches_per_replica(const TrainingConfig& training, int replicas,
                                                    BatchSplit split, const std::vector<double>& replica_speeds) {
  if (replicas < 1) throw StrategyError("strategy.data_parallel_size", "must be at least 1");
  if (training.global_batch_size % training.micro_batch_size != 0)
    throw StrategyError("training.global_batch_size",
                        "global_batch_size " + std::to_string(training.global_batch_size) +
                            " is not divisible by micro_batch_size " + std::to_string(training.micro_batch_size));
  const std::int64_t micro_batches = training.global_batch_size / training.micro_batch_size;
  if (split == BatchSplit::even) {
    if (micro_batches % replicas != 0)
      throw StrategyError("training.global_batch_size",
                          "global_batch_size " + std::to_string(training.global_batch_size) +
                              " is not divisible by micro_batch_size x data_parallel_size = " +
                              std::to_string(training.micro_batch_size * replicas));
    return std::vector<std::int64_t>(replicas, micro_batches / replicas);
  }
  if (static_cast<int>(replica_speeds.size()) < replicas)
    throw StrategyError("strategy.batch_split", "proportional split needs a speed for every replica");
  if (micro_batches < replicas)
    throw StrategyError("training.global_batch_size", "fewer micro-batches (" + std::to_string(micro_batches) +
                                                          ") than data-parallel replicas (" +
                                                          std::to_string(replicas) + ")");
  return split_proportionally(micro_batches,
                              std::vector<double>(replica_speeds.begin(), replica_speeds.begin() + replicas));
}

void check_gradient_compression(const ParallelConfig& parallel) {
  const CompressionConfig& c = parallel.gradient_compression;
  if (!c.enabled()) return;
  if (parallel.zero_stage != 0)
    throw StrategyError("strategy.gradient_compression",
                        "gradient compression replaces the all-reduce of zero_stage 0 (zero_stage is " +
                            std::to_string(parallel.zero_stage) + ")");
  if (c.type == Compression::power_sgd && c.matrix_approximation_rank < 1)
    throw StrategyError("strategy.gradient_compression.matrix_approximation_rank",
                        "must be at least 1, not " + std::to_string(c.matrix_approximation_rank));
  if (c.type == Compression::top_k && !(c.topk_ratio > 0.0 && c.topk_ratio <= 1.0))
    throw StrategyError("strategy.gradient_compression.topk_ratio",
                        "must be in (0, 1], not " + std::to_string(c.topk_ratio));
  // Top-k sends 32-bit indices into its bucket.
  if (c.type == Compression::top_k && parallel.ddp_bucket_size > std::numeric_limits<std::int32_t>::max())
    throw StrategyError("strategy.ddp_bucket_size", "top-k compression indexes a bucket with 32-bit indices: at most " +
                                                        std::to_string(std::numeric_limits<std::int32_t>::max()) +
                                                        " parameters per bucket");
  if (!(c.min_compression_rate >= 0.0))
    throw StrategyError("strategy.gradient_compression.min_compression_rate", "must be >= 0");
}

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

}  // namespace tandem
