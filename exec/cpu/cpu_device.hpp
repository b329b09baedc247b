// The CPU backend of the per-rank interface (strategies/runtime.hpp): one CpuDevice per rank;
// ranks are threads of this process, each with its own memory.
//
// Memory. Every tensor is a zero-filled array of numel() fp32 values whatever its declared dtype
// (the storage contract of kernels/cpu/dispatch.hpp); a MemoryLedger counts the DECLARED bytes
// by category, so peak memory means the same as in the simulator. At alloc() a parameter gets
// its deterministic initial value as a whole tensor (data.hpp), a data tensor ("mb{k}.tokens",
// "mb{k}.labels", "mb{k}.features") its batch from the run's DataSource. place() (the model's
// or strategy's TensorPlacement) re-initialises a parameter as its part of the logical tensor,
// and an fp32 master copy ("<param>.master", optimizer state) as the same part of its
// parameter's initial value (mixed-precision frameworks copy the parameters into the master at
// setup). Placements also give the global form of the training state (placed_snapshot,
// restore_global): checkpoints hold logical tensors, whatever strategy wrote them.
//
// Streams. The compute stream is the host thread, as in the simulator: a compute op runs
// synchronously in compute() through kernels::cpu::run, timed with steady_clock, and returns an
// already complete Handle. Communication on another stream is queued to one worker thread per
// (rank, stream), started on first use, which runs its ops in issue order after their
// Issue::after handles, so a gradient all-reduce on dp_comm overlaps the backward still running
// on the host. Communication on Stream::compute runs on the host thread. wait() blocks the host
// on a condition variable; record(stream) returns the last op issued on that stream;
// release_after() frees the buffer when the op completes (on the worker).
// Hand-offs. A thread that waits for a queued op that its stream has not started yet runs the
// stream's ops up to it itself, in order (one op of a stream runs at a time, on the worker or on
// a waiter): the host needs the result anyway, and handing the op to the worker and back costs
// two thread wake-ups, each up to a scheduler tick when the cores are busy. Host and worker
// threads run only while they hold one of the run's core permits, which they give back while
// they wait (core_gate.hpp): never more running threads than cores. A wait spins for up to
// 100 us first while no thread (a standby worker included) is queued for a core.
//
// Collectives and messages go through the run's SharedMemoryComm (shared_memory_collectives.hpp),
// whose reduce-scatter and all-gather are in place; out-of-place parts (CommShards) are copied
// (or added) from and to them here, and parts along a dimension (sequence parallelism) go
// through a member-major staging copy, so that member i's block is its flat part.
// a collective instance is keyed "g{group}s{stream}#{n}", n counting this rank's collectives on
// that group and stream (members issue them in the same order).
//
// Failures. Every op's exception is reported once to the run (CpuRunContext::fail: the first
// failure wins, names the rank and the op label) and aborts the run: every blocking wait (host
// waits, worker dependencies, collectives) then throws AbortedError within ~20 ms, so the other
// ranks unwind instead of hanging. Waits also end after the run's timeout.
//
// Trace. Every op gives one TraceRecord (analysis/trace.hpp) with op_id = label, times relative
// to the run's epoch: a compute op from kernel start to end, a communication op from when its
// worker starts it (dependencies met) to its completion, as the simulator records them.
//
// Micro-batches. `micro_batch_offset` maps this rank's micro-batch k to the global micro-batch
// offset + k: the data it reads, and the dropout masks (kernels draw them from the op label, so
// the label's "mb{k}." is rewritten to the global index before the kernel runs; the trace keeps
// the original label). Losses: the loss-mean op (an elementwise scale whose output is smaller
// than its input, kernels/cpu/dispatch.hpp) is recognised and its scalar recorded per global
// micro-batch, so no strategy has to hand the loss over.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/trace.hpp"
#include "exec/cpu/core_gate.hpp"
#include "exec/cpu/data.hpp"
#include "exec/cpu/global_state.hpp"
#include "exec/cpu/shared_memory_collectives.hpp"
#include "kernels/cpu/moe.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/runtime.hpp"

namespace tandem::exec::cpu {

// An op's failure, carrying its label (the driver names rank and op in the run's error).
class OpError : public std::runtime_error {
 public:
  OpError(std::string label, const std::string& message)
      : std::runtime_error(message), label_(std::move(label)) {}
  const std::string& label() const { return label_; }

 private:
  std::string label_;
};

struct DeviceSettings : TrainingSettings {
  std::chrono::milliseconds timeout{60'000};
  int cores = 0;  // core permits of the run's threads (core_gate.hpp); 0: this machine's cores
  // Failure injection (tests): rank `fail_rank` throws when it executes the op `fail_op`.
  int fail_rank = -1;
  std::string fail_op;
  int fail_iteration = -1;  // -1: any iteration
  std::vector<double> compute_slowdown;  // per rank (RunOptions::compute_slowdown)
};

// What a run's devices share: settings, the communicator, the clock, the first failure.
class CpuRunContext {
 public:
  // Ranks as threads of this process: a SharedMemoryComm joins them.
  CpuRunContext(int world_size, DeviceSettings settings);
  // Ranks as processes (one rank here): `comm` reaches the others (distributed/mpi_rank_comm.hpp).
  CpuRunContext(int world_size, DeviceSettings settings, std::unique_ptr<RankComm> comm);

  const DeviceSettings& settings() const { return settings_; }
  RankComm& comm() { return *comm_; }
  CoreGate& gate() { return gate_; }
  int world_size() const { return world_; }
  double now_s() const;  // seconds since the run's epoch
  std::chrono::steady_clock::time_point epoch() const { return epoch_; }

  // Records a failure (the first one wins) and aborts the run. True when this failure is the
  // one recorded (the first), so a caller can keep details of its own about it.
  bool fail(int rank, const std::string& op_label, const std::string& message);
  bool aborted() const { return comm_->aborted(); }
  bool failed() const;
  // "rank 1 failed in op mb0.layer0.attn.qkv.fwd: ..." (empty when nothing failed).
  std::string failure() const;

 private:
  int world_;
  DeviceSettings settings_;
  std::unique_ptr<RankComm> comm_;
  CoreGate gate_;
  std::chrono::steady_clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::string failure_;
};

struct LossRecord {
  int iteration = 0;
  std::int64_t micro_batch = 0;  // global
  float value = 0;
};

class CpuDevice final : public Runtime {
 public:
  CpuDevice(int rank, CpuRunContext& context, std::int64_t micro_batch_offset = 0);
  ~CpuDevice() override;  // shutdown()
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  // Runtime
  int rank() const override { return rank_; }
  int world_size() const override { return context_.world_size(); }
  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
               MemCategory category) override;
  void release(const Tensor& tensor) override;
  void reacquire(const Tensor& tensor, MemCategory category) override;
  void release_after(const Tensor& tensor, Handle handle) override;
  void place(const Tensor& tensor, const TensorPlacement& placement) override;
  Handle compute(ComputeOp op, const Issue& issue) override;
  Handle communicate(CommOp op, const Issue& issue) override;
  void wait(Handle handle) override;
  Handle record(Stream stream) override;
  void synchronize() override;
  void begin_iteration(int iteration) override;
  void end_iteration() override;

  // Stops and joins the stream workers (idempotent). The driver calls it for every device only
  // once all ranks are done: a worker may still be inside a collective reading another rank's
  // buffers, so no device's memory may go away before every worker has stopped.
  void shutdown();

  // ---- results (read after the run) ----
  float* data(const Tensor& tensor);  // this rank's storage of a live tensor
  const MemoryLedger& memory() const { return memory_; }
  const std::vector<TraceRecord>& trace_records() const { return trace_; }
  const std::vector<LossRecord>& losses() const { return losses_; }
  const std::vector<std::pair<double, double>>& iteration_windows() const { return windows_; }
  double compute_s() const { return compute_s_; }
  double comm_busy_s() const { return comm_busy_s_; }
  std::size_t compute_ops() const { return compute_ops_; }
  // The expert load of every forward routing this rank ran (mixture-of-experts models).
  const kernels::cpu::RouterLoad& router_load() const { return router_load_; }
  std::size_t comm_ops() const { return comm_ops_; }
  // Live tensors of the given categories by name (e.g. parameters for equivalence tests and
  // checkpoints). Names must be unique among them.
  std::map<std::string, std::vector<float>> snapshot(const std::set<MemCategory>& categories) const;
  // Live tensors of the given categories with their placements (unplaced ones: whole tensors
  // under their own name): the global form of a rank's state (global_state.hpp).
  std::vector<PlacedTensor> placed_snapshot(const std::set<MemCategory>& categories) const;
  // Overwrites the live tensors of these categories with their parts of the logical tensors in
  // `global` (restoring a checkpoint, possibly written by another strategy). Every live tensor's
  // logical tensor must be there with its global size; otherwise std::runtime_error naming the
  // first mismatch (nothing is half-restored).
  // Returns the names of the logical tensors it used.
  std::set<std::string> restore_global(const std::map<std::string, std::vector<float>>& global,
                                       const std::set<MemCategory>& categories);

 private:
  struct Buffer {
    std::unique_ptr<float[]> data;
    std::int64_t numel = 0;
    MemCategory category = MemCategory::activations;
  };
  struct OpState {
    bool done = false;
    bool failed = false;
    std::string label;
    std::vector<int> release_on_completion;
    int stream = -1;  // the worker whose queue holds it (communication off the compute stream)
  };
  struct PendingComm {
    CommOp op;
    std::vector<Handle> after;
    Stream stream = Stream::compute;
    std::int64_t handle = -1;
    std::string key;  // collective instance
    int iteration = 0;
    // The op before it on its stream, still outstanding when this one was queued (a posted send,
    // which completes when its receiver copies it): this one runs after it, so that a stream's
    // ops complete in issue order (synchronize and record wait for the last one only).
    std::int64_t previous = -1;
  };
  struct Worker {
    std::deque<PendingComm> queue;
    std::thread thread;
    std::int64_t last_handle = -1;
    bool busy = false;  // one of its ops is running (on the worker or on a waiting thread)
    // Off its core until queued for one (core_gate.hpp: prepare_sleep): wake_worker_locked.
    bool asleep = false;
    CoreGate::Waiter sleeper;
    // Work was queued while it slept and it is not woken yet: the host wakes it only once it
    // moves on (a compute op, a wait for something else), since a host that waits for this
    // very op next runs it itself (a tensor-parallel all-reduce): waking the worker for it
    // would pass the op to another thread and back, two hand-offs that wait for a core each.
    bool wake_pending = false;
  };

  // A thread that holds a core and waits for an op (wait_handle) sleeps off it: the thread that
  // makes its wait actionable (the op completes, or its stream's queue reaches it) queues it for
  // a core (core_gate.hpp: prepare_sleep). Notified to queue itself instead, it ran at once on a
  // core another rank held, or waited for that rank's time slice (0.2-0.5 ms gaps in tensor
  // parallel steps of 4 ranks on 2 cores).
  struct HandleSleeper {
    std::int64_t handle = -1;
    CoreSleeper core;
  };

  float* storage_locked(const Tensor& tensor, const std::string& label);
  // Whether a wait for `handle` can go on: the op is done, the run aborted, or its stream is
  // idle with the op at the head of its queue (the waiter runs it). Under mutex_.
  bool actionable_locked(std::int64_t handle) const;
  // Queues the sleepers whose wait is actionable for a core. Under mutex_.
  void queue_actionable_sleepers_locked();
  void release_locked(int tensor_id);
  void wait_handle(std::int64_t handle);
  // The comm op's time and trace record.
  void record_comm(const CommOp& op, Stream stream, int iteration, double start, double end);
  // Posts a send on an idle stream (no earlier op queued or running, its dependencies done):
  // false when it must queue for the stream's worker instead.
  bool try_post_send(const PendingComm& pending);
  void worker_loop(Stream stream);
  // Queues a sleeping worker for a core as a standby (it has work or must stop): it wakes once
  // it has one. Under mutex_.
  void wake_worker_locked(Worker& w);
  // Wakes the workers whose wake-up was deferred (Worker::wake_pending), but `except`'s. The
  // _locked form under mutex_.
  void wake_deferred_workers(int except_stream = -1);
  void wake_deferred_workers_locked(int except_stream = -1);
  // Runs a queued op taken from `w` (busy set by the caller): its dependencies, then the op; on
  // failure fails the run and the rest of the queue. Clears busy. False when it failed.
  bool run_queued(Worker& w, PendingComm& pending);
  void run_comm(PendingComm& pending);
  void complete(std::int64_t handle, bool failed);
  void check_injection(const std::string& label, int iteration) const;
  void sharded_collective(const CommOp& op, const std::string& key);
  TensorPlacement placement_locked(int tensor_id) const;
  void check_aborted() const;
  void add_trace(TraceRecord record);
  FlatBuffer flat_buffer(const CommOp& op);

  int rank_;
  CpuRunContext& context_;
  std::int64_t micro_batch_offset_;

  mutable std::mutex mutex_;
  std::condition_variable op_done_;   // an op completed (or failed)
  std::vector<HandleSleeper*> handle_sleepers_;
  bool stopping_ = false;

  std::unordered_map<int, Buffer> buffers_;
  // Released storage by size, reused by the next tensor of that size (a step allocates the same
  // shapes every iteration). Why: a fresh buffer of 128 KB or more is mmap'ed by malloc, zeroed
  // page by page (faults) and unmapped when freed: ~40 us before each op that made one (the
  // logits, the MLP's activations), 9% of gpt-tiny's step at micro-batch 4.
  std::unordered_map<std::int64_t, std::vector<std::unique_ptr<float[]>>> free_storage_;
  // Fills a data tensor ("mb{k}.tokens", ...; exec/cpu/data.hpp) from the run's DataSource, at the
  // sequence positions `where` names (none: the whole sequence); other tensors are left alone.
  void fill_data(const Tensor& t, std::string_view name, float* data, const TensorPlacement& where) const;
  std::unique_ptr<float[]> take_storage_locked(std::int64_t numel);  // zeroed, under mutex_
  std::unordered_map<int, std::string> names_;
  std::unordered_map<int, TensorPlacement> placements_;
  std::unordered_map<int, std::int64_t> releasing_;  // tensor -> op whose completion frees it
  MemoryLedger memory_;
  int next_tensor_id_ = 0;

  std::deque<OpState> ops_;  // by handle id
  std::array<Worker, kStreamCount> workers_;
  std::map<std::string, int> channel_instances_;

  int iteration_ = -1;
  double iteration_start_s_ = 0;
  std::vector<std::pair<double, double>> windows_;
  std::vector<TraceRecord> trace_;
  std::vector<LossRecord> losses_;
  double compute_s_ = 0, comm_busy_s_ = 0;
  std::size_t compute_ops_ = 0, comm_ops_ = 0;
  kernels::cpu::RouterLoad router_load_;
};

}  // namespace tandem::exec::cpu
