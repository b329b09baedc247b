#include "kernels/cpu/openblas.hpp"

#include "common/shared_library.hpp"

namespace tandem::kernels::cpu {

const OpenBlas& openblas() {
  static const OpenBlas blas = [] {
    // The soname first (LD_LIBRARY_PATH and Debian's BLAS alternatives apply), then the build's.
    const SharedLibrary lib = SharedLibrary::open({"libopenblas.so.0", TANDEM_OPENBLAS_LIBDIR "/libopenblas.so.0"});
    return OpenBlas{lib.function<decltype(&cblas_sgemm)>("cblas_sgemm"),
                    lib.function<decltype(&openblas_get_num_threads)>("openblas_get_num_threads"),
                    lib.function<decltype(&openblas_set_num_threads)>("openblas_set_num_threads")};
  }();
  return blas;
}

}  // namespace tandem::kernels::cpu
