// libtandem_mpi.so, built from this folder alone: the MPI calls of the distributed search and of
// CPU-backend ranks as processes (mpi_module_api.hpp), the only code linked against MPI. Nothing
// here may keep C++ state shared with `tandem`.
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

int init_threads(int* rank, int* size) {
  int provided = 0;
  int error = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (error == MPI_SUCCESS && provided < MPI_THREAD_MULTIPLE) return MPI_ERR_OTHER;
  if (error == MPI_SUCCESS) error = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (error == MPI_SUCCESS) error = MPI_Comm_size(MPI_COMM_WORLD, size);
  return error;
}

MPI_Comm as_comm(void* comm) { return *static_cast<MPI_Comm*>(comm); }
MPI_Op as_op(int op) { return op == 1 ? MPI_MAX : MPI_SUM; }
// MPI counts are int: a larger buffer goes in pieces.
constexpr long long kPiece = 1LL << 30;

int group_comm(const int* ranks, int n, int tag, void** comm) {
  MPI_Group world_group, group;
  int error = MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  if (error == MPI_SUCCESS) error = MPI_Group_incl(world_group, n, ranks, &group);
  auto* handle = new MPI_Comm(MPI_COMM_NULL);
  if (error == MPI_SUCCESS) error = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, handle);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  if (error != MPI_SUCCESS) {
    delete handle;
    return error;
  }
  *comm = handle;
  return MPI_SUCCESS;
}

int all_reduce_f32(void* comm, float* data, long long count, int op) {
  for (long long at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(count - at < kPiece ? count - at : kPiece);
    if (int error = MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, as_op(op), as_comm(comm))) return error;
  }
  return MPI_SUCCESS;
}

int reduce_scatter_f32(void* comm, const float* packed, float* mine, const int* counts) {
  return MPI_Reduce_scatter(packed, mine, counts, MPI_FLOAT, MPI_SUM, as_comm(comm));
}

int all_gather_f32(void* comm, const float* mine, int my_count, float* packed, const int* counts, const int* displs) {
  return MPI_Allgatherv(mine, my_count, MPI_FLOAT, packed, counts, displs, MPI_FLOAT, as_comm(comm));
}

int broadcast_f32(void* comm, float* data, long long count, int root) {
  for (long long at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(count - at < kPiece ? count - at : kPiece);
    if (int error = MPI_Bcast(data + at, n, MPI_FLOAT, root, as_comm(comm))) return error;
  }
  return MPI_SUCCESS;
}

int all_to_all_f32(void* comm, const float* send_data, float* recv_data, int count) {
  return MPI_Alltoall(send_data, count, MPI_FLOAT, recv_data, count, MPI_FLOAT, as_comm(comm));
}

int send_f32(const float* data, int count, int to, int tag) {
  return MPI_Send(data, count, MPI_FLOAT, to, tag, MPI_COMM_WORLD);
}

int recv_f32(float* data, int count, int from, int tag) {
  return MPI_Recv(data, count, MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int isend_f32(const float* data, int count, int to, int tag, void** request) {
  auto* handle = new MPI_Request(MPI_REQUEST_NULL);
  const int error = MPI_Isend(data, count, MPI_FLOAT, to, tag, MPI_COMM_WORLD, handle);
  if (error != MPI_SUCCESS) {
    delete handle;
    return error;
  }
  *request = handle;
  return MPI_SUCCESS;
}

int wait(void* request) {
  auto* handle = static_cast<MPI_Request*>(request);
  const int error = MPI_Wait(handle, MPI_STATUS_IGNORE);
  delete handle;
  return error;
}

int test(void* request, int* done) {
  auto* handle = static_cast<MPI_Request*>(request);
  const int error = MPI_Test(handle, done, MPI_STATUS_IGNORE);
  if (error == MPI_SUCCESS && *done) delete handle;
  return error;
}

int all_reduce_f64(double* data, int count, int op) {
  return MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_DOUBLE, as_op(op), MPI_COMM_WORLD);
}

int abort_all(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

const TandemMpiModule kModule{init,           finalize,       send,           probe,
                              receive,        init_threads,   group_comm,     all_reduce_f32,
                              reduce_scatter_f32, all_gather_f32, broadcast_f32, all_to_all_f32,
                              send_f32,       recv_f32,       isend_f32,      wait,
                              test,           all_reduce_f64, abort_all};

}  // namespace

extern "C" __attribute__((visibility("default"))) const TandemMpiModule* tandem_mpi_module() { return &kModule; }
