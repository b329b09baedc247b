// OpenBLAS, opened on first use rather than linked: the pthreads build starts its thread pool when
// it is loaded, and those threads spin (sched_yield) in every command, even ones that never run a
// kernel (`tandem simulate` spent 7% of its profile there). Only the CPU backend's kernels, its
// thread-count control and the GEMM benchmark come here; cblas.h gives the functions' types.
#pragma once

#include <cblas.h>

namespace tandem::kernels::cpu {

struct OpenBlas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&openblas_get_num_threads) get_num_threads;
  decltype(&openblas_set_num_threads) set_num_threads;
};

// Loads libopenblas.so.0 the first time (thread-safe); throws LibraryError naming the library
// and dlerror's text when it or one of these functions is missing.
const OpenBlas& openblas();

}  // namespace tandem::kernels::cpu
