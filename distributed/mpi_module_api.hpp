// The contract between `tandem` and libtandem_mpi.so, the module that holds every MPI call of the
// distributed search. `tandem` does not link MPI: OpenMPI (and hwloc, libevent) load only when
// `search --mpi` opens the module (mpi_module.hpp). Plain C types only, so the module shares no
// C++ state with the binary.
#pragma once

extern "C" {

// Every function returns MPI_SUCCESS (0) or MPI's error code. Ranks and tags are MPI's; -1 as a
// source or tag means "any".
struct TandemMpiModule {
  int (*init)(int* rank, int* size);
  int (*finalize)();
  int (*send)(const char* bytes, int count, int to, int tag);
  // Waits for the next message from `from` with `tag`; says who sent it, its tag and its size.
  int (*probe)(int from, int tag, int* source, int* message_tag, int* count);
  // Receives that message (its size, its sender and its tag, as probe said).
  int (*receive)(char* bytes, int count, int source, int tag);
};

// The module's one exported symbol.
const TandemMpiModule* tandem_mpi_module();
}
