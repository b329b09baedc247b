// The simulated per-rank interface: one SimDevice per rank, driven by the rank's main actor.
//
// The main actor plays the host and the compute stream together: a compute op advances its
// clock by the cost model's duration (fused with its neighbours when allowed). Communication is
// handed to one actor per communication stream, which runs its ops in issue order after their
// dependencies, as point-to-point transfers on the modeled network (collectives through
// sim/collectives). `wait` blocks the main actor on a condition variable until the op is done.
#pragma once

#include <simgrid/s4u.hpp>

#include <array>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/trace.hpp"
#include "platforms/cluster.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/core_turns.hpp"
#include "sim/simulation.hpp"
#include "sim/tensor_folding.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/runtime.hpp"

namespace tandem::sim {

// What all devices of one simulation share: the platform, the options, and the rendezvous table
// that tells each member of a collective when the last member arrived.
struct SimulationContext {
  const Cluster* cluster = nullptr;
  SimulationOptions options;
  const FoldPlan* fold = nullptr;          // which ranks run an actor; the others are ghosts
  std::vector<simgrid::s4u::Host*> hosts;  // by global rank, ghosts included
  // Per global node, its host's CPU (Strategy::uses_host); empty otherwise.
  std::vector<simgrid::s4u::Host*> node_hosts;
  TopologyView topology;

  // Which members have arrived at one collective; ghosts (folded replicas) wait here for the
  // member they mirror before they send or receive, as they would in the unfolded run.
  struct Arrivals {
    std::set<int> ranks;
    simgrid::s4u::MutexPtr mutex = simgrid::s4u::Mutex::create();
    simgrid::s4u::ConditionVariablePtr changed = simgrid::s4u::ConditionVariable::create();
    void arrive(int rank);
    void wait_for(int rank);
    bool arrived(int rank);
  };
  struct Rendezvous {
    Seconds last_arrival_s = 0;
    int arrived = 0;
    int departed = 0;
    std::shared_ptr<Arrivals> arrivals;  // collectives only
    simgrid::s4u::BarrierPtr barrier;    // collectives with a measured cost only
    simgrid::s4u::BarrierPtr done;       // the same, on shared cores: the work is over
  };
  std::unordered_map<std::string, Rendezvous> rendezvous;

  // The algorithm chosen for a collective depends only on its group, kind and size, so every
  // member reuses the first member's choice (choosing costs O(group size)).
  struct Choice {
    CollectiveAlgorithm algorithm;
    CollectiveFidelity fidelity;
    int nccl_ctas = -1;  // SMs NCCL's kernel holds (its channels); -1: not asked yet
  };
  std::map<std::tuple<int, int, Bytes>, Choice> choices;

  // Durations of folded tensor groups' collectives (tensor_folding.hpp).
  TensorCollectiveMemo tensor_collectives;

  // Per shared-cores machine (NodeGroup::shared_cores) whose ranks outnumber its cores: their turns.
  std::map<std::string, std::unique_ptr<CoreTurns>> core_turns;
  // Per shared-cores machine: its ranks' kernel times over the calibrated ones (core_contention.hpp).
  std::map<std::string, double> kernel_time_factor;
};

class SimDevice final : public Runtime, public PointToPoint {
 public:
  SimDevice(int rank, SimulationContext& context);
  ~SimDevice() override;

  // Runtime
  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(context_.hosts.size()); }
  // A cost model: dropless experts at their expected load (Runtime::dropless_expert_rows).
  std::int64_t dropless_expert_rows(std::int64_t, std::int64_t expected_rows) const override { return expected_rows; }
  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
               MemCategory category) override;
  void release(const Tensor& tensor) override;
  void reacquire(const Tensor& tensor, MemCategory category) override;
  void release_after(const Tensor& tensor, Handle handle) override;
  Handle compute(ComputeOp op, const Issue& issue) override;
  Handle communicate(CommOp op, const Issue& issue) override;
  void wait(Handle handle) override;
  Handle record(Stream stream) override;
  void synchronize() override;
  void begin_iteration(int iteration) override;
  void end_iteration() override;

  // PointToPoint (used by collectives running on this device's stream actors)
  simgrid::s4u::CommPtr send_async(int dst_rank, Bytes bytes, const std::string& channel) override;
  simgrid::s4u::CommPtr recv_async(int src_rank, Bytes bytes, const std::string& channel) override;

  // Results, read after the simulation.
  const MemoryLedger& memory() const { return memory_; }
  const RankResult& totals() const { return totals_; }
  // Every iteration's (start, end), warm-up included.
  const std::vector<std::pair<Seconds, Seconds>>& iteration_windows() const { return windows_; }
  std::vector<TraceRecord>& trace_records() { return trace_; }
  // The rank's program is over: its shared core (if any) goes to the next rank.
  void leave_cores();
  std::size_t compute_executions() const { return compute_executions_; }
  // Energy over the run, which ended at `end_s`, of a device with its own host (no shared cores).
  Joules energy_j(Seconds end_s) const;
  bool shares_cores() const { return compute_host_ != nullptr; }
  std::size_t compute_ops() const { return compute_ops_; }
  std::size_t comm_ops() const { return comm_ops_; }

 private:
  struct OpState {
    bool done = false;
    Seconds start_s = 0;
    Seconds effective_start_s = 0;  // when the last peer arrived
    Seconds end_s = 0;
    std::vector<int> release_on_completion;  // tensor ids freed when the op completes
    std::vector<int> members;  // the ranks the op waits for (its group, or its peer)
    std::string rendezvous_key;  // its entry in SimulationContext::rendezvous
    int expected = 0;            // members that arrive there (ghosts excepted)
    bool arrived = false;        // this member has (run_comm started)
    bool priced = false;         // priced on issue: runs [start_s, end_s] without an actor
    int nccl_ctas = 0;           // SMs its NCCL kernel holds from start to end (0: none)
    Bytes nccl_hbm_bytes = 0;    // what its data moving reads and writes in this GPU's memory
  };
  struct PendingComm {
    CommOp op;
    std::vector<Handle> after;
    Stream stream = Stream::compute;
    std::int64_t handle = -1;
    std::string channel;
    std::string rendezvous_key;
    int members = 0;
  };
  struct StreamQueue {
    std::deque<PendingComm> queue;
    simgrid::s4u::ConditionVariablePtr has_work;
    bool started = false;
    bool running = false;       // its actor is running an op
    Seconds running_since_s = 0;  // when that op started (or an earlier one: never later)
    Seconds busy_until_s = 0;   // end of the last op priced on issue on it
    std::int64_t last_handle = -1;
  };

  void flush_compute();  // executes the fused compute block (a chunked GEMM's deferred part included)
  // An op of the node's host (ZeRO-Offload): a copy over the device's PCIe link, or the host
  // CPU's optimizer step, after the device's queued kernels; the compute stream waits for it.
  Handle run_on_host(const ComputeOp& op);
  void run_pending_compute();  // the same, leaving a chunked GEMM's deferred part for the next collective
  Seconds kernel_start(Seconds op_start, Seconds op_end) const;  // after the launch overhead
  // Shared cores (core_turns.hpp): takes a core, paying the hand-off when it came from another rank.
  void take_core();
  // Runs `wait` as a wait for the op's other members: the core may pass to another rank
  // meanwhile, unless they have all arrived (then the wait is the data moving, which the real
  // backend's last member does on its own core, without sleeping).
  template <class Wait>
  void wait_off_core(const OpState& op, Wait wait);
  void block_on(std::int64_t handle);  // main actor: wait and classify the blocked time
  void stream_loop(Stream stream);     // body of a communication stream's actor
  void run_comm(const PendingComm& pending, OpState& state);
  // The measured cost of collective `op` when its members are this node's threads sharing memory
  // (NodeGroup::collective_costs), else nullptr: it then runs as transfers over the links.
  const CollectiveCost* measured_cost(const CommOp& op) const;
  // A collective with a measured cost: every member waits for the last, which does the work.
  void run_measured_collective(const PendingComm& pending, const CollectiveCost& cost);
  SimulationContext::Choice& choice_for(const CommOp& op);  // algorithm and fidelity (cached)
  // A folded tensor group's collective whose duration is known (TensorCollectiveMemo) runs
  // without its stream's actor when nothing else of the group or the stream is in flight: it
  // starts after the pending compute block, ends a known time later, and completes when the host
  // next waits (finish_priced) or time passes its end (retire_priced). Exact: the stream's actor
  // would start it at the same moment and sleep the same time.
  bool may_price_on_issue(const CommOp& op, const Issue& issue) const;
  bool price_on_issue(const CommOp& op, const Issue& issue);  // true: issued as the last op
  void finish_priced(std::int64_t handle);  // a stream's actor waits for its end
  void wait_priced(std::int64_t handle);    // the host's timeline waits for its end
  void retire_priced(Seconds now);          // completes those whose end has passed
  // Where the host's timeline is: the clock plus what it has issued and not yet run.
  Seconds host_time() const { return simgrid::s4u::Engine::get_clock() + pending_compute_s_; }
  TensorCollectiveMemo::Key tensor_memo_key(OpKind kind, Bytes bytes, CollectiveAlgorithm algorithm) const;
  // Whether `op` is a collective of this rank's folded tensor group (tensor_folding.hpp).
  bool in_folded_tensor_group(const CommOp& op) const;
  // Runs such a collective: priced from the first identical one when it is alone on the group's
  // links, else as flows (and remembered when it was alone from start to end).
  void run_folded_tensor_collective(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                                    CollectiveFidelity fidelity);
  void add_trace(TraceRecord record);  // but for the unmeasured iteration after the measured ones
  bool measuring() const;
  bool cooling_down() const;  // past the measured iterations
  bool is_ghost(int rank) const { return context_.fold != nullptr && !context_.fold->simulated(rank); }
  // A ghost's side of a transfer: an actor on the ghost's host that waits until the rank the ghost
  // mirrors has reached the collective on `channel`, then sends (or receives) `bytes`.
  void spawn_ghost_side(int ghost, const std::string& channel, const std::string& mailbox, Bytes bytes, bool sends);
  // Whether the rank `ghost` mirrors has reached the collective on `channel` (a point-to-point
  // message has no arrivals: at once). Then the ghost's side would start at once: the transfer
  // runs host to host, with no actor made for it.
  bool ghost_ready(int ghost, const std::string& channel) const;
  // The arrivals at the collective running on `channel`; null for a point-to-point message.
  std::shared_ptr<SimulationContext::Arrivals> arrivals_on(const std::string& channel) const;

  int rank_;
  SimulationContext& context_;
  const DeviceProfile& device_;
  simgrid::s4u::Host* host_;
  simgrid::s4u::Host* compute_host_ = nullptr;  // shared cores (platform_builder.hpp), else null
  double compute_slowdown_ = 1;  // a straggler's (sim/reliability/straggler.hpp)
  CoreTurns* turns_ = nullptr;                   // the shared cores' turns (more ranks than cores), else null

  MemoryLedger memory_;
  int next_tensor_id_ = 0;

  Seconds pending_compute_s_ = 0;  // fused block (and priced waits) not yet run
  // The part of a GEMM that feeds a chunked reduce-scatter (GemmArgs::comm_overlap) past its
  // first chunk: it runs once that collective is issued, overlapping it.
  Seconds deferred_compute_s_ = 0;
  void resume_deferred() { run_deferred(std::exchange(deferred_compute_s_, 0.0)); }
  void run_deferred(Seconds seconds) {  // on the host's timeline, after what it has issued
    if (seconds <= 0) return;
    pending_compute_s_ += seconds;
    last_compute_end_s_ = host_time();
  }
  // The data-moving window of the last op block_on waited for (when it had one).
  struct Window {
    Seconds start_s = 0, end_s = 0;
    bool memory_bound = false;  // a kernel's: bound by HBM bandwidth rather than its SMs
  };
  Window last_blocked_;
  // Kernels that run while an NCCL kernel of this rank is resident get the SMs and the HBM
  // bandwidth it leaves (sim/comm_contention.hpp). The compute stream's kernels are on the host's timeline ahead of
  // the clock, a collective's window is known when it ends: then the kernels it overlapped are
  // slowed, as a debt the compute stream pays before its next kernel (absorbed by any idle time
  // since the last one).
  std::deque<Window> compute_windows_;  // this rank's kernels, in issue order
  Seconds last_compute_end_s_ = 0;
  Seconds contention_debt_s_ = 0;
  int nccl_ctas(const CommOp& op, const Issue& issue);  // SMs the op's NCCL kernel holds
  Bytes nccl_hbm_bytes(const CommOp& op) const;         // what it moves through this GPU's HBM
  void charge_contention(const OpState& state);        // when `state` has ended
  void pay_contention();                                // before the compute stream goes on
  void forget_old_windows();                            // those no op in flight can overlap
  // Of a GEMM of `duration` that consumes a chunked all-gather whose data moved in `gather` while
  // the host, ready at `ready_s`, waited: the part its chunks ran meanwhile.
  static Seconds hidden_by_chunks(const GemmArgs& gemm, Seconds duration, Seconds ready_s, Window gather);
  Seconds busy_s_ = 0;             // compute stream busy over the whole run (energy)
  Seconds last_compute_start_s_ = 0;  // when the last executed block started (after taking a core)
  // Ops by handle id. Completed ops at the front are dropped (a long simulation issues millions;
  // keeping them all was a tenth of its time in fresh memory): their handles read as done. A
  // deque keeps references to the others stable as ops are added and dropped.
  class OpTable {
   public:
    std::int64_t next_handle() const { return base_ + static_cast<std::int64_t>(ops_.size()); }
    OpState& push() { return ops_.emplace_back(); }
    OpState& back() { return ops_.back(); }
    OpState& operator[](std::int64_t handle) {
      if (handle >= base_) return ops_[static_cast<std::size_t>(handle - base_)];
      dropped_ = OpState{};
      dropped_.done = true;
      return dropped_;
    }
    const OpState& operator[](std::int64_t handle) const {
      static const OpState kDropped = [] {
        OpState done;
        done.done = true;
        return done;
      }();
      return handle >= base_ ? ops_[static_cast<std::size_t>(handle - base_)] : kDropped;
    }
    // Renames a tensor an op frees when it completes; false if none frees it.
    bool rename_release(int from, int to) {
      for (OpState& op : ops_)
        for (int& id : op.release_on_completion)
          if (id == from) {
            id = to;
            return true;
          }
      return false;
    }
    void drop_completed_front() {
      while (!ops_.empty() && ops_.front().done && ops_.front().release_on_completion.empty()) {
        ops_.pop_front();
        ++base_;
      }
    }

   private:
    std::deque<OpState> ops_;
    std::int64_t base_ = 0;  // handle of ops_.front()
    OpState dropped_;        // what a dropped op reads as: done, nothing pending
  };
  OpTable ops_;
  std::array<StreamQueue, kStreamCount> streams_;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr op_done_;
  std::map<std::string, int> channel_instances_;  // per channel: collectives issued so far
  // Per channel: the arrivals of the collective this device is running on it.
  std::map<std::string, std::shared_ptr<SimulationContext::Arrivals>> running_arrivals_;

  int tensor_in_flight_ = 0;              // this group's collectives running (folded tensor groups)
  Seconds tensor_busy_until_s_ = 0;       // end of its last collective priced on issue
  std::deque<std::int64_t> priced_;       // ops priced on issue, not yet complete, in issue order
  int releasing_in_flight_ = 0;           // ops run by a stream's actor that free memory when done
  int next_stale_id_ = 1 << 30;           // ledger ids of storage a reacquired tensor left to an op in flight
  std::int64_t tensor_started_ = 0;      // and started so far

  int iteration_ = -1;
  Seconds iteration_start_s_ = 0;
  std::vector<std::pair<Seconds, Seconds>> windows_;
  RankResult totals_;  // compute / exposed / comm busy accumulate over measured iterations
  std::vector<TraceRecord> trace_;
  std::size_t compute_executions_ = 0, compute_ops_ = 0, comm_ops_ = 0;
};

}  // namespace tandem::sim
