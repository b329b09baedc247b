#include "kernels/cuda/compression_dispatch.hpp"

namespace tandem::kernels::cuda {

void run_codec(const OpTensors& c, const CodecArgs&, const StreamContext&) {
  c.fail("gradient compression codecs have no CUDA kernels yet (CPU backend and simulator only)");
}

}  // namespace tandem::kernels::cuda
