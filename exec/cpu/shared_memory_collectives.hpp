// Real collectives and point-to-point messages between ranks that are threads of one process
// (the CPU backend, exec/cpu/cpu_device.hpp). The data moves through shared memory: no copy to a
// staging area except where an in-place algorithm needs one (all-to-all).
//
// One SharedMemoryComm per run is shared by all ranks. It holds a rendezvous table: a collective
// instance is keyed by a string every member computes identically (the CPU device uses
// "g{group id}s{stream}#{n}": the n-th collective its rank issued on that group and stream, as
// the simulator does). Each member posts its buffer (pointers, no copy); the LAST member to
// arrive then does the whole collective, every member's share, reading and writing the posted
// buffers directly, and releases the others, which were waiting for it and leave at once (their
// buffers are not touched after that). On a CPU whose cores are shared by more threads than
// cores, splitting the work over the members would need every member to get a core twice (its
// share, then a barrier): each such wake-up can wait a scheduler tick; this way the collective
// completes on the thread that is already running, and each waiting member needs one wake-up.
// The result does not depend on which member does the work, nor on timing.
//
// Buffers. A FlatBuffer is a list of spans, one per tensor (CommOp::bucket: several tensors
// reduced as one buffer; a single tensor is one span). Every member's flat size must be equal
// (for reduce-scatter and all-gather, every span's). Conventions (strategies/op.hpp, CommShards):
//   all_reduce      in place on the whole buffer: the reduction over all members is written
//                   into every member's buffer.
//   reduce_scatter  `buffer` is the full input; member i's part of EACH span is
//                   shard_range(span size, n, i) (per tensor, never of the concatenation), and
//                   its reduced part is written in place there (NCCL's in-place layout); the
//                   rest of its buffer is left untouched.
//   all_gather      `buffer` is the full output; member i's input is its own part of each span,
//                   which it copies to nobody: every member copies the other members' parts
//                   from their buffers into its own.
//   broadcast       every member copies the root's buffer (root: a global rank of the group).
//   all_to_all      the buffer is n equal chunks; chunk j of member i goes to chunk i of member
//                   j. Each member stages a private copy of its buffer before barrier 1 (the
//                   exchange is in place). The size must be divisible by n.
// Parts: shard_range(size, n, i) = [i·c, min((i+1)·c, size)) with c = ceil(size / n), i.e.
// equal parts when n divides size, else the last ones shorter (or empty). Out-of-place parts
// and parts along a dimension (CommShards::tensors, ::dim) are the device's business: it
// copies them to and from these in-place layouts (cpu_device.hpp).
// Determinism. Reductions sum member values in ascending GLOBAL RANK order, left to right in
// fp32: result = ((x_r0 + x_r1) + x_r2) + ..., whatever the group's ring order and the timing;
// avg divides that sum by n; max takes the maximum. Results are therefore bit-identical from
// run to run and equal to a naive loop over the ranks in that order, and every member receives
// the same bits (data-parallel replicas stay identical).
//
// Point-to-point. send/recv are matched by (src, dst, tag) in FIFO order (issue order of each
// side). A send is a rendezvous, as an NCCL send and the simulator's are: it completes once the
// message is in the receiver's buffer, copied straight from the sender's. As in a collective,
// the side that arrives second does the copy (into the posted receive buffer, or from the
// posted send buffer) and releases the waiting side: one wake-up per message. Sizes must match.
//
// Waiting. A member that must wait spins for up to 100 us while no rank is queued for a core,
// then sleeps on its own condition variable, woken only once its condition holds (not at every
// notification), and gives its core permit back meanwhile, preferably to a member it waits for
// (core_gate.hpp).
// Never hang. Every blocking wait ends after `timeout` (a std::runtime_error naming the
// collective, the group and the members that never arrived) or as soon as abort() is called
// (AbortedError): a failed rank aborts the run and every other rank unblocks within ~10 ms.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/cpu/core_gate.hpp"
#include "exec/cpu/flat_buffer.hpp"
#include "exec/cpu/rank_comm.hpp"
#include "strategies/op.hpp"

namespace tandem::exec::cpu {

class SharedMemoryComm final : public RankComm {
 public:
  explicit SharedMemoryComm(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  SharedMemoryComm(const SharedMemoryComm&) = delete;
  SharedMemoryComm& operator=(const SharedMemoryComm&) = delete;

  // Unblocks every waiter (they throw AbortedError); later calls throw at once.
  void abort() override;
  bool aborted() const override { return aborted_.load(std::memory_order_acquire); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // A collective by global rank `rank` (a member of `group`). `key` identifies this instance
  // (the same on every member); `label` names the op in errors. `root` is a global rank.
  void all_reduce(const std::string& key, const std::string& label, const Group& group, int rank,
                  const FlatBuffer& buffer, ReduceOp reduce) override;
  void reduce_scatter(const std::string& key, const std::string& label, const Group& group,
                      int rank, const FlatBuffer& buffer, ReduceOp reduce) override;
  void all_gather(const std::string& key, const std::string& label, const Group& group, int rank,
                  const FlatBuffer& buffer) override;
  void broadcast(const std::string& key, const std::string& label, const Group& group, int rank,
                 const FlatBuffer& buffer, int root) override;
  void all_to_all(const std::string& key, const std::string& label, const Group& group, int rank,
                  const FlatBuffer& buffer) override;

  // Point-to-point between global ranks.
  void send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) override;
  void recv(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) override;
  // A send that nobody waits for: the message is copied at once when its receive is posted,
  // else left in the mailbox for the receiver to copy when it arrives. `done` is called once the
  // message is in the receiver's buffer (on this thread, or on the receiver's), with "" or the
  // receiver's error. `buffer` must stay valid until then. Why: a pipeline stage's send needs no
  // thread of its own; handing it to a stream worker cost a core hand-off per message, and on
  // shared cores every extra wake-up waits for a core.
  void post_send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer, SendDone done) override;

  // Instances currently in the rendezvous table (0 after a clean run).
  std::size_t pending() const;

 private:
  struct Instance;
  struct Message;
  using Deadline = std::chrono::steady_clock::time_point;

  // Posts `buffer` as this member's. The last member to arrive checks that the sizes match,
  // runs `work` (every member's share of the collective) and releases the others, which wait
  // for it. Every member throws the same error when the sizes do not match.
  void collective(const std::string& key, const std::string& label, OpKind kind, const Group& group,
                  int rank, const FlatBuffer& buffer, int root, const std::function<void(Instance&)>& work);
  // A blocked waiter: woken only when its condition holds (or the run aborts), so that a
  // notification does not wake every blocked thread of the run to re-check (each such wake-up
  // takes a core from a running rank on a machine whose cores are all busy).
  struct Sleeper {
    std::condition_variable cv;
    std::function<bool()> ready;
    // A thread that gave its core up (sleep_off_core): the thread that makes it ready queues it
    // for a core instead of waking it (core_gate.hpp: prepare_sleep), once.
    bool off_core = false;
    CoreSleeper core;
  };
  // Wakes the sleepers whose condition holds (under the lock).
  void notify_locked();
  // Blocks (under lock) until `ready`, abort or `deadline`; true when the deadline passed.
  bool sleep_until(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready, Deadline deadline);
  // sleep_until for a thread that holds a core: it gives the core up (preferably to a thread of
  // a rank `awaited` accepts) and wakes holding one again.
  bool sleep_off_core(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready, Deadline deadline,
                      const std::function<bool(int)>& awaited);
  // Waits for `ready` (under lock), off the core (core_gate.hpp).
  // `awaited`: the ranks it waits for (their threads get this thread's core first, core_gate.hpp).
  template <class Pred, class Describe>
  void wait(std::unique_lock<std::mutex>& lock, Deadline deadline, Pred ready,
            Describe describe_timeout, const std::function<bool(int)>& awaited);

  std::chrono::milliseconds timeout_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;
  std::vector<Sleeper*> sleepers_;
  std::map<std::string, std::shared_ptr<Instance>> instances_;
  // One side of a message: posts `buffer`, or completes the other side's posting.
  void p2p(bool sending, int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer,
           SendDone posted = {});
  // Postings waiting for their other side, by (src, dst, tag), in issue order.
  using Mailboxes = std::map<std::tuple<int, int, int>, std::vector<std::shared_ptr<Message>>>;
  Mailboxes sends_, receives_;
};

}  // namespace tandem::exec::cpu
