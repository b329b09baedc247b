#include "kernels/cuda/gemm.cuh"

#include <cublasLt.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

namespace tandem::kernels::cuda {

const char* to_string(MathMode mode) { return mode == MathMode::fp32 ? "fp32" : "bf16"; }

bool operator<(const GemmShape& a, const GemmShape& b) {
  auto key = [](const GemmShape& s) {
    return std::tie(s.trans_a, s.trans_b, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.stride_a, s.stride_b,
                    s.stride_c, s.batch);
  };
  return key(a) < key(b);
}

struct Blas::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace_bytes = 0;
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

cublasLtHandle_t lt(void* handle) { return static_cast<cublasLtHandle_t>(handle); }

// A column-major layout of `rows` x `cols` with leading dimension ld, batched.
cublasLtMatrixLayout_t layout(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                              std::int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, static_cast<std::uint64_t>(rows),
                                          static_cast<std::uint64_t>(cols), std::max<std::int64_t>(ld, 1)));
  if (batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(batch);
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof stride));
  }
  return l;
}

// The largest power of two (<= 256) dividing the address and every column / batch step: what
// cuBLASLt may assume about the pointers of a plan.
int alignment_of(const void* p, std::int64_t ld, std::int64_t stride) {
  std::uint64_t v = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uint64_t>(ld * 4) |
                    static_cast<std::uint64_t>(stride * 4) | 256u;
  return static_cast<int>(v & (~v + 1));
}

}  // namespace

Blas::Blas(MathMode mode, std::size_t workspace_bytes) : mode_(mode), workspace_bytes_(workspace_bytes) {
  cublasLtHandle_t h = nullptr;
  CUBLAS_CHECK(cublasLtCreate(&h));
  handle_ = h;
  CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

Blas::~Blas() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(lt(handle_));
}

Blas::Plan& Blas::plan_for(const GemmShape& s, int alignment_bytes, bool beta_zero) {
  auto key = std::make_tuple(s, alignment_bytes, beta_zero);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: swap the operands, keep the
  // transposition flags, and view every row-major matrix as its column-major transpose.
  const std::int64_t mc = s.n, nc = s.m, kc = s.k;
  auto plan = std::make_unique<Plan>();
  plan->a = s.trans_b ? layout(kc, mc, s.ldb, s.batch, s.stride_b) : layout(mc, kc, s.ldb, s.batch, s.stride_b);
  plan->b = s.trans_a ? layout(nc, kc, s.lda, s.batch, s.stride_a) : layout(kc, nc, s.lda, s.batch, s.stride_a);
  plan->c = layout(mc, nc, s.ldc, s.batch, s.stride_c);
  const cublasOperation_t op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;

  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes_, sizeof workspace_bytes_));
  const std::uint32_t align = static_cast<std::uint32_t>(alignment_bytes);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));

  const cublasComputeType_t fast = CUBLAS_COMPUTE_32F_FAST_16BF;
  bool found = false;
  for (cublasComputeType_t compute : {mode_ == MathMode::bf16 ? fast : CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F}) {
    if (plan->desc) cublasLtMatmulDescDestroy(plan->desc);
    plan->desc = nullptr;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt(handle_), plan->desc, plan->a, plan->b, plan->c,
                                                             plan->c, pref, 1, &result, &returned);
    if (st == CUBLAS_STATUS_SUCCESS && returned > 0) {
      plan->algo = result.algo;
      plan->workspace_bytes = result.workspaceSize;
      found = true;
      break;
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  (void)beta_zero;
  if (!found)
    throw CudaError("cuBLASLt has no algorithm for a " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                    std::to_string(s.k) + " GEMM (batch " + std::to_string(s.batch) + ")");
  return *plans_.emplace(key, std::move(plan)).first->second;
}

void Blas::gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                cudaStream_t stream) {
  if (s.m <= 0 || s.n <= 0 || s.batch <= 0) return;
  if (s.k <= 0) {  // C = beta·C: only the beta = 0 case occurs (a fresh product)
    if (beta != 0.0f) return;
    for (std::int64_t i = 0; i < s.batch; ++i)
      CUDA_CHECK(cudaMemset2DAsync(c + i * s.stride_c, sizeof(float) * s.ldc, 0, sizeof(float) * s.n, s.m, stream));
    return;
  }
  const int alignment = std::min({alignment_of(a, s.lda, s.stride_a), alignment_of(b, s.ldb, s.stride_b),
                                  alignment_of(c, s.ldc, s.stride_c)});
  Plan& p = plan_for(s, alignment, beta == 0.0f);
  // Operands swapped (see plan_for): cuBLASLt's A is our B.
  CUBLAS_CHECK(cublasLtMatmul(lt(handle_), p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c, &p.algo,
                              workspace_, p.workspace_bytes, stream));
}

void Blas::gemm_dense(float* c, const float* a, const float* b, std::int64_t m, std::int64_t n, std::int64_t k,
                      bool trans_a, bool trans_b, bool accumulate, std::int64_t batch, cudaStream_t stream) {
  GemmShape s;
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = trans_a ? m : k;
  s.ldb = trans_b ? k : n;
  s.ldc = n;
  s.stride_a = m * k;
  s.stride_b = k * n;
  s.stride_c = m * n;
  s.batch = batch;
  gemm(s, 1.0f, a, b, accumulate ? 1.0f : 0.0f, c, stream);
}

}  // namespace tandem::kernels::cuda
