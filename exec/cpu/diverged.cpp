#include "exec/cpu/diverged.hpp"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>

namespace tandem::exec::cpu {
namespace {

std::string describe(int rank, int iteration, std::int64_t micro_batch, double loss) {
  char value[32];
  std::snprintf(value, sizeof value, "%g", loss);  // "nan", "inf", "-inf"
  const std::string which = micro_batch >= 0 ? " (micro-batch " + std::to_string(micro_batch) + ") is " + value +
                                                   " on rank " + std::to_string(rank)
                                             : " is " + std::string(value) + " (the mean over the ranks, seen by rank " +
                                                   std::to_string(rank) + ")";
  return "training diverged: the loss of iteration " + std::to_string(iteration) + which +
         "; a smaller learning rate (training.lr) or a checkpoint from before it may help";
}

}  // namespace

DivergedError::DivergedError(int rank, int iteration, std::int64_t micro_batch, double loss)
    : RunError(describe(rank, iteration, micro_batch, loss)), rank_(rank), iteration_(iteration),
      micro_batch_(micro_batch) {}

void require_finite_losses(int rank, int iteration, const std::vector<LossRecord>& losses) {
  // Records are appended as ops run: an iteration's are the last ones, in micro-batch order.
  auto first = losses.end();
  while (first != losses.begin() && std::prev(first)->iteration == iteration) --first;
  for (auto l = first; l != losses.end(); ++l)
    if (!std::isfinite(l->value)) throw DivergedError(rank, iteration, l->micro_batch, l->value);
}

}  // namespace tandem::exec::cpu
