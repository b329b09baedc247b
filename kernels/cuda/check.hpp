// Error checks for CUDA, cuBLAS and NCCL calls: a failing call throws CudaError naming the call,
// the file and the line (a GPU error is never silently ignored, and never aborts the process:
// the driver reports it as the failing op's error).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tandem::kernels::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(const char* what, const std::string& detail, const char* file,
                                          int line) {
  throw CudaError(std::string(what) + " failed: " + detail + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace tandem::kernels::cuda

#define CUDA_CHECK(call)                                                                     \
  do {                                                                                       \
    const cudaError_t tandem_status_ = (call);                                               \
    if (tandem_status_ != cudaSuccess)                                                       \
      ::tandem::kernels::cuda::throw_cuda_error(#call, cudaGetErrorString(tandem_status_),   \
                                                __FILE__, __LINE__);                         \
  } while (0)

// After a kernel launch: a bad configuration shows up here, not at the next call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call)                                                                   \
  do {                                                                                       \
    const int tandem_status_ = static_cast<int>(call);                                       \
    if (tandem_status_ != 0)                                                                 \
      ::tandem::kernels::cuda::throw_cuda_error(#call, "cublas status " +                    \
                                                std::to_string(tandem_status_),              \
                                                __FILE__, __LINE__);                         \
  } while (0)
