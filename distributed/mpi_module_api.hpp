// The contract between `tandem` and libtandem_mpi.so, the module that holds every MPI call: the
// distributed search's, and those of CPU-backend runs whose ranks are processes
// (distributed/mpi_rank_comm.hpp). `tandem` does not link MPI: OpenMPI (and hwloc, libevent) load only when
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

  // --- CPU-backend ranks as processes (mpi_rank_comm.hpp). Counts are fp32 elements. ---
  // MPI_Init_thread with MPI_THREAD_MULTIPLE (a rank's streams call MPI from their own threads);
  // fails when the library cannot give that level.
  int (*init_threads)(int* rank, int* size);
  // A communicator of `ranks` (world ranks; its rank i is ranks[i]), created by those members
  // only (MPI_Comm_create_group, `tag` tells concurrent creations apart). *comm is the handle.
  int (*group_comm)(const int* ranks, int n, int tag, void** comm);
  // In place over `comm`: op 0 sum, 1 max.
  int (*all_reduce_f32)(void* comm, float* data, long long count, int op);
  // Member i receives counts[i] reduced elements of the member-major `packed` input.
  int (*reduce_scatter_f32)(void* comm, const float* packed, float* mine, const int* counts);
  // Every member's `mine` (counts[i] elements) into `packed`, member-major at displs[i].
  int (*all_gather_f32)(void* comm, const float* mine, int my_count, float* packed, const int* counts,
                        const int* displs);
  int (*broadcast_f32)(void* comm, float* data, long long count, int root);
  // `count` elements to and from every member.
  int (*all_to_all_f32)(void* comm, const float* send, float* recv, int count);
  // Point-to-point over the world's communicator (a tag's messages keep their order).
  int (*send_f32)(const float* data, int count, int to, int tag);
  int (*recv_f32)(float* data, int count, int from, int tag);
  // A send that returns at once; *request is waited for with wait().
  int (*isend_f32)(const float* data, int count, int to, int tag, void** request);
  int (*wait)(void* request);
  // *done = 1 (and the request freed) once it completed; 0 otherwise.
  int (*test)(void* request, int* done);
  // Over the world: element-wise op 0 sum, 1 max of doubles, in place.
  int (*all_reduce_f64)(double* data, int count, int op);
  // Ends every process of the job (a rank that cannot go on).
  int (*abort_all)(int code);
};

// The module's one exported symbol.
const TandemMpiModule* tandem_mpi_module();
}
