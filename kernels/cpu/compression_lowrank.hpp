// CPU reference kernels of PowerSGD's low-rank step (Vogels et al. 2019, arXiv 1905.13727,
// Algorithm 1; as PyTorch's powerSGD_hook runs it), besides its GEMMs (kernels/cpu/gemm.hpp):
// orthogonalising the columns of P, and drawing the initial Q from a seed every rank shares.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

// Modified Gram-Schmidt on the `cols` columns of row-major p [rows, cols], in place, as
// PyTorch's _orthogonalize_gram_schmidt: each column divided by (its norm + 1e-8), then removed
// from the columns after it. The epsilon keeps an all-zero column finite (it stays zero).
void orthogonalize_columns(float* p, std::int64_t rows, std::int64_t cols);

// q[0:n] = standard normal draws, a pure function of (seed, i) (SplitMix64 + Box-Muller), so
// every rank that draws with one seed holds the same Q without communicating.
void gaussian_fill(float* q, std::int64_t n, std::uint64_t seed);

}  // namespace tandem::kernels::cpu
