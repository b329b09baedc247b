// CPU reference kernels of top-k sparsification (strategies/compression/): choose the k entries
// of largest magnitude, send them as (index, value) pairs, and add every rank's pairs into a
// dense sum. With error feedback the entries sent are zeroed in the residual and the rest waits
// for a later step (Stich et al. 2018, "Sparsified SGD with memory", arXiv 1809.07599; Deep
// Gradient Compression, Lin et al. 2018, arXiv 1712.01887).
//
// Ties in magnitude go to the lower index, and the pairs are written in increasing index order,
// so that the selection is a pure function of x (every backend and every run agree).
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

// indices[0:k], values[0:k] = the k entries of largest |x| among x[0:n] (k <= n), by index.
// With `residual` (may alias x): residual[index] = 0 for every entry sent.
void top_k_select(std::int32_t* indices, float* values, const float* x, std::int64_t n, std::int64_t k,
                  float* residual);
// y[indices[j]] += values[j] for j < k; throws std::out_of_range for an index outside [0, n).
void scatter_add(float* y, std::int64_t n, const std::int32_t* indices, const float* values, std::int64_t k);

}  // namespace tandem::kernels::cpu
