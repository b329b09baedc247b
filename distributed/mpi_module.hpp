// libtandem_mpi.so (mpi_module_api.hpp), opened on first use from beside the running binary.
#pragma once

#include "distributed/mpi_module_api.hpp"

namespace tandem::distributed {

// Loads the module (and OpenMPI) the first time; throws LibraryError naming it and dlerror's text.
const TandemMpiModule& mpi_module();

// Throws std::runtime_error "<call> failed (MPI error N)" unless `error` is 0 (MPI_SUCCESS).
void check_mpi(int error, const char* call);

}  // namespace tandem::distributed
