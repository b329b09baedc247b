#include "kernels/cuda/moe_dispatch.hpp"

namespace tandem::kernels::cuda {

void run_moe(const OpTensors& c, const MoeArgs&, const RunOptions&, const StreamContext&) {
  c.fail("mixture-of-experts routing has no CUDA kernels yet (CPU backend and simulator only)");
}

}  // namespace tandem::kernels::cuda
