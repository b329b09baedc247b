// CPU reference GEMM (fp32) through CBLAS (OpenBLAS on Debian). No hand-written loops: the
// reference for the matmul itself is the vendor BLAS, which the tests hold against a naive
// triple loop and the benchmark holds against cblas_sgemm called directly.
//
// Layout: row-major everywhere, as in strategies/ops.hpp.
//   C[m,n] (+)= op(A)[m,k] · op(B)[k,n]
//   A is stored [m,k] (lda = k), or [k,m] (lda = m) when trans_a;
//   B is stored [k,n] (ldb = n), or [n,k] (ldb = k) when trans_b;
//   C is stored [m,n] (ldc = n).
// Batched GEMM: `batch` independent products over contiguous operands, batch i reading
// A + i·m·k, B + i·k·n and writing C + i·m·n.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

// The raw CBLAS call with explicit leading dimensions (row-major): C = alpha·op(A)·op(B) +
// beta·C. With beta == 0 the previous contents of C are never read (NaN-safe, BLAS semantics).
// Throws std::invalid_argument when a size does not fit BLAS's 32-bit int.
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
           float* c, std::int64_t ldc);

// The GemmArgs form: C (+)= op(A)·op(B), `accumulate` selects += (gradient accumulation).
void gemm_forward(float* c, const float* a, const float* b, std::int64_t m, std::int64_t n,
                  std::int64_t k, bool trans_a, bool trans_b, bool accumulate,
                  std::int64_t batch = 1);

// Gradients of C = op(A)·op(B) given dC, ACCUMULATED (+=) into dA / dB (either may be null).
// dop(A) = dC·op(B)ᵀ and dop(B) = op(A)ᵀ·dC, transposed back when the operand is stored
// transposed. This is what a linear layer's two backward GEMMs compute; the models issue them as
// separate gemm ops, so this function exists for tests and for callers outside the op stream.
void gemm_backward(float* da, float* db, const float* dc, const float* a, const float* b,
                   std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b,
                   std::int64_t batch = 1);

// OpenBLAS's worker-thread count (process-wide, not per calling thread). A CPU backend running
// one rank per thread may want 1 (or cores / ranks) to avoid oversubscription.
int blas_threads();
void set_blas_threads(int threads);

}  // namespace tandem::kernels::cpu
