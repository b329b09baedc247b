// Training that has diverged: a loss that is NaN or infinite (a learning rate far too large, an
// overflow in the model's numbers). Every step after it computes on NaNs, so a run that went on
// would print garbage losses and exit 0; instead the backend stops every rank at the first such
// loss and throws DivergedError naming the iteration, the rank and the micro-batch, and
// `tandem run` exits with its own status (kExitDiverged, cli/run_command.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/cpu_run.hpp"

namespace tandem::exec::cpu {

class DivergedError : public RunError {
 public:
  // micro_batch -1: the iteration's mean loss over the ranks (a multi-process run) is not finite.
  DivergedError(int rank, int iteration, std::int64_t micro_batch, double loss);
  int rank() const { return rank_; }
  int iteration() const { return iteration_; }
  std::int64_t micro_batch() const { return micro_batch_; }

 private:
  int rank_;
  int iteration_;
  std::int64_t micro_batch_;
};

// Throws DivergedError for the first loss of `iteration` in `losses` (a rank's records) that is
// not finite. Losses of other iterations are not looked at (they were checked in their turn).
void require_finite_losses(int rank, int iteration, const std::vector<LossRecord>& losses);

}  // namespace tandem::exec::cpu
