// How a CPU-backend rank reaches its peers: the collectives and messages CpuDevice issues, over
// one interface with two implementations.
//   SharedMemoryComm (shared_memory_collectives.hpp)  ranks are threads of one process;
//   MpiRankComm (distributed/mpi_rank_comm.hpp)       ranks are processes launched by mpirun,
//                                                     one rank each (MPI's collectives).
// The conventions of the buffers (in-place layouts, parts, roots as global ranks, reductions in
// fp32) are SharedMemoryComm's, stated in its header; an implementation keeps them exactly.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "exec/cpu/flat_buffer.hpp"
#include "strategies/op.hpp"

namespace tandem::exec::cpu {

class RankComm {
 public:
  virtual ~RankComm() = default;

  // Unblocks every waiter of this process (they throw AbortedError); later calls throw at once.
  virtual void abort() = 0;
  virtual bool aborted() const = 0;

  // A collective by global rank `rank` (a member of `group`). `key` identifies this instance
  // (the same on every member: group, stream and the member's count of collectives there);
  // `label` names the op in errors. `root` is a global rank.
  virtual void all_reduce(const std::string& key, const std::string& label, const Group& group, int rank,
                          const FlatBuffer& buffer, ReduceOp reduce) = 0;
  virtual void reduce_scatter(const std::string& key, const std::string& label, const Group& group, int rank,
                              const FlatBuffer& buffer, ReduceOp reduce) = 0;
  virtual void all_gather(const std::string& key, const std::string& label, const Group& group, int rank,
                          const FlatBuffer& buffer) = 0;
  virtual void broadcast(const std::string& key, const std::string& label, const Group& group, int rank,
                         const FlatBuffer& buffer, int root) = 0;
  virtual void all_to_all(const std::string& key, const std::string& label, const Group& group, int rank,
                          const FlatBuffer& buffer) = 0;

  // Point-to-point between global ranks, matched by (src, dst, tag) in issue order.
  virtual void send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) = 0;
  virtual void recv(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) = 0;
  // A send that nobody waits for: `done` is called (with "" or an error) once `buffer` may be
  // reused; `buffer` must stay valid until then.
  using SendDone = std::function<void(const std::string& error)>;
  virtual void post_send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer,
                         SendDone done) = 0;
};

}  // namespace tandem::exec::cpu
