// libtandem_mpi.so, built from this folder alone: the MPI calls of the distributed search
// (mpi_module_api.hpp), the only code linked against MPI. Nothing here may keep C++ state shared
// with `tandem`.
#include <mpi.h>

#include "distributed/mpi_module_api.hpp"

namespace {

int any_source(int rank) { return rank < 0 ? MPI_ANY_SOURCE : rank; }
int any_tag(int tag) { return tag < 0 ? MPI_ANY_TAG : tag; }

int init(int* rank, int* size) {
  int error = MPI_Init(nullptr, nullptr);
  if (error == MPI_SUCCESS) error = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (error == MPI_SUCCESS) error = MPI_Comm_size(MPI_COMM_WORLD, size);
  return error;
}

int finalize() { return MPI_Finalize(); }

int send(const char* bytes, int count, int to, int tag) {
  return MPI_Send(bytes, count, MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

int probe(int from, int tag, int* source, int* message_tag, int* count) {
  MPI_Status status;
  int error = MPI_Probe(any_source(from), any_tag(tag), MPI_COMM_WORLD, &status);
  if (error == MPI_SUCCESS) error = MPI_Get_count(&status, MPI_CHAR, count);
  *source = status.MPI_SOURCE;
  *message_tag = status.MPI_TAG;
  return error;
}

int receive(char* bytes, int count, int source, int tag) {
  return MPI_Recv(bytes, count, MPI_CHAR, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

const TandemMpiModule kModule{init, finalize, send, probe, receive};

}  // namespace

extern "C" __attribute__((visibility("default"))) const TandemMpiModule* tandem_mpi_module() { return &kModule; }
