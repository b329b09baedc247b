#include "kernels/cpu/gemm.hpp"

#include "kernels/cpu/openblas.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace tandem::kernels::cpu {
namespace {

int blas_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw std::invalid_argument(std::string("sgemm: ") + what + " = " + std::to_string(v) +
                                " does not fit a BLAS int");
  return static_cast<int>(v);
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
           float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty inner dimension: C = beta·C. Not every BLAS accepts k = 0 with its leading
    // dimension rules, so do the scaling here (it is not a matmul loop).
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  // Leading dimensions must be >= 1 even for degenerate shapes.
  openblas().sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                   trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
                   blas_int(k, "k"), alpha, a, blas_int(std::max<std::int64_t>(lda, 1), "lda"), b,
                   blas_int(std::max<std::int64_t>(ldb, 1), "ldb"), beta, c,
                   blas_int(std::max<std::int64_t>(ldc, 1), "ldc"));
}

void gemm_forward(float* c, const float* a, const float* b, std::int64_t m, std::int64_t n,
                  std::int64_t k, bool trans_a, bool trans_b, bool accumulate,
                  std::int64_t batch) {
  const std::int64_t lda = trans_a ? m : k;
  const std::int64_t ldb = trans_b ? k : n;
  const float beta = accumulate ? 1.0f : 0.0f;
  for (std::int64_t i = 0; i < batch; ++i)
    sgemm(trans_a, trans_b, m, n, k, 1.0f, a + i * m * k, lda, b + i * k * n, ldb, beta,
          c + i * m * n, n);
}

void gemm_backward(float* da, float* db, const float* dc, const float* a, const float* b,
                   std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b,
                   std::int64_t batch) {
  const std::int64_t lda = trans_a ? m : k;
  const std::int64_t ldb = trans_b ? k : n;
  for (std::int64_t i = 0; i < batch; ++i) {
    const float* A = a + i * m * k;
    const float* B = b + i * k * n;
    const float* dC = dc + i * m * n;
    if (da) {
      float* dA = da + i * m * k;
      if (!trans_a)  // dA[m,k] += dC[m,n] · op(B)ᵀ
        sgemm(false, !trans_b, m, k, n, 1.0f, dC, n, B, ldb, 1.0f, dA, k);
      else  // A stored [k,m]: dA += (dC·op(B)ᵀ)ᵀ = op(B)·dCᵀ
        sgemm(trans_b, true, k, m, n, 1.0f, B, ldb, dC, n, 1.0f, dA, m);
    }
    if (db) {
      float* dB = db + i * k * n;
      if (!trans_b)  // dB[k,n] += op(A)ᵀ · dC
        sgemm(!trans_a, false, k, n, m, 1.0f, A, lda, dC, n, 1.0f, dB, n);
      else  // B stored [n,k]: dB += (op(A)ᵀ·dC)ᵀ = dCᵀ·op(A)
        sgemm(true, trans_a, n, k, m, 1.0f, dC, n, A, lda, 1.0f, dB, k);
    }
  }
}

int blas_threads() { return openblas().get_num_threads(); }

void set_blas_threads(int threads) { openblas().set_num_threads(std::max(threads, 1)); }

}  // namespace tandem::kernels::cpu
