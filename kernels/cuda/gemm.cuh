// GEMMs through cuBLASLt on row-major fp32 storage (the layout contract of kernels/cpu/gemm.hpp),
// with per-shape plans (descriptors + the heuristic's best algorithm) cached on first use.
//
// Precision: MathMode::fp32 computes in fp32 (CUBLAS_COMPUTE_32F, no TF32) to check against the
// CPU backend; MathMode::bf16 runs the tensor cores on bf16-rounded inputs with fp32
// accumulation (CUBLAS_COMPUTE_32F_FAST_16BF) while storage stays fp32: the numerics of bf16
// mixed-precision training (bf16 products, fp32 master weights and optimizer state) without a
// second storage type in every kernel. When cuBLASLt offers no algorithm for a fast mode and a
// shape, the plan falls back to fp32 compute.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace tandem::kernels::cuda {

enum class MathMode : std::uint8_t { fp32, bf16 };
const char* to_string(MathMode mode);

// One batched row-major product C = alpha·op(A)·op(B) + beta·C, shapes in elements.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;                 // row-major leading dimensions
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // between batch entries
  std::int64_t batch = 1;
};

class Blas {
 public:
  explicit Blas(MathMode mode, std::size_t workspace_bytes = 32u << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  MathMode mode() const { return mode_; }
  void gemm(const GemmShape& shape, float alpha, const float* a, const float* b, float beta, float* c,
            cudaStream_t stream);
  // The CPU gemm_forward contract: C[m,n] (+)= op(A)·op(B), dense, `batch` consecutive products.
  void gemm_dense(float* c, const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k,
                  bool trans_a, bool trans_b, bool accumulate, std::int64_t batch, cudaStream_t stream);

 private:
  struct Plan;
  Plan& plan_for(const GemmShape& shape, int alignment_bytes, bool beta_zero);
  MathMode mode_;
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_;
  std::map<std::tuple<GemmShape, int, bool>, std::unique_ptr<Plan>> plans_;
};

bool operator<(const GemmShape& a, const GemmShape& b);

}  // namespace tandem::kernels::cuda
