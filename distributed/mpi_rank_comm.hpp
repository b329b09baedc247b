// CPU-backend ranks as processes: each process of `mpirun -np N tandem run --backend cpu ...`
// holds one rank, and its collectives and messages go through MPI (libtandem_mpi.so, opened by
// distributed/mpi_module.hpp). The buffer conventions are SharedMemoryComm's (rank_comm.hpp):
// multi-tensor buffers are packed member-major for MPI and unpacked in place.
//
// What differs from ranks as threads, on purpose:
//   - one communicator per (group, stream), made the first time it is used by the group's members
//     only (MPI_Comm_create_group): collectives on one stream of a group keep MPI's call order,
//     streams of a group never interleave on one communicator;
//   - sums are MPI's (its own order of additions), so results equal the threads' within fp32
//     rounding, not bit for bit;
//   - a send nobody waits for is copied and handed to MPI_Isend; its buffer is free at once;
//   - no timeout: a peer that dies ends the job (mpirun), a peer that hangs is the supervisor's
//     to detect (run --elastic heartbeats); abort() only stops this process's later calls.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/mpi_module_api.hpp"
#include "exec/common/process_run.hpp"
#include "exec/cpu/rank_comm.hpp"

namespace tandem::distributed {

// MPI initialised with threads (once per process); this process's world rank and size.
struct MpiWorld {
  int rank = 0;
  int size = 1;
};
MpiWorld init_mpi_threads();

class MpiRankComm final : public exec::cpu::RankComm {
 public:
  explicit MpiRankComm(const TandemMpiModule& mpi);
  ~MpiRankComm() override;
  MpiRankComm(const MpiRankComm&) = delete;
  MpiRankComm& operator=(const MpiRankComm&) = delete;

  void abort() override { aborted_.store(true); }
  bool aborted() const override { return aborted_.load(); }

  void all_reduce(const std::string& key, const std::string& label, const Group& group, int rank,
                  const exec::cpu::FlatBuffer& buffer, ReduceOp reduce) override;
  void reduce_scatter(const std::string& key, const std::string& label, const Group& group, int rank,
                      const exec::cpu::FlatBuffer& buffer, ReduceOp reduce) override;
  void all_gather(const std::string& key, const std::string& label, const Group& group, int rank,
                  const exec::cpu::FlatBuffer& buffer) override;
  void broadcast(const std::string& key, const std::string& label, const Group& group, int rank,
                 const exec::cpu::FlatBuffer& buffer, int root) override;
  void all_to_all(const std::string& key, const std::string& label, const Group& group, int rank,
                  const exec::cpu::FlatBuffer& buffer) override;
  void send(int src, int dst, int tag, const std::string& label, const exec::cpu::FlatBuffer& buffer) override;
  void recv(int src, int dst, int tag, const std::string& label, const exec::cpu::FlatBuffer& buffer) override;
  void post_send(int src, int dst, int tag, const std::string& label, const exec::cpu::FlatBuffer& buffer,
                 SendDone done) override;

  // Waits for every posted send (before MPI is finalised).
  void flush();

 private:
  struct GroupComm;
  // The communicator of the key's group and stream ("g3s1#7" -> "g3s1"), made on first use.
  void* comm_of(const std::string& key, const Group& group);
  void check_live(const std::string& label) const;

  const TandemMpiModule& mpi_;
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<GroupComm>> comms_;
  struct PostedSend {
    void* request = nullptr;
    std::vector<float> copy;
  };
  std::vector<std::unique_ptr<PostedSend>> posted_;  // under mutex_
};

// The processes of a CPU run under mpirun (join_iteration, checkpoints: process_run.hpp).
class MpiProcessGroup final : public exec::ProcessGroup {
 public:
  MpiProcessGroup(const TandemMpiModule& mpi, MpiWorld world) : mpi_(mpi), world_(world) {}
  int rank() const override { return world_.rank; }
  int world_size() const override { return world_.size; }
  void sum(std::vector<double>& values) override;
  void max(std::vector<double>& values) override;

 private:
  const TandemMpiModule& mpi_;
  MpiWorld world_;
};

}  // namespace tandem::distributed
