// The per-rank interface: what a strategy or a model may ask of the machine it runs on.
// It is written once; the simulator (sim/), the CPU reference backend and the CUDA backend
// (exec/) implement it. Nothing here knows which one is underneath.
//
// Semantics follow a GPU: the calling thread is the host; every op is enqueued on a stream and
// returns a Handle at once. Ops on one stream run in issue order; ops on different streams
// overlap. An op also waits for the handles listed in `after` (cudaStreamWaitEvent). `wait`
// blocks the host until a handle completes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/op.hpp"
#include "strategies/tensor.hpp"

namespace tandem {

struct Handle {
  std::int64_t id = -1;  // -1: already complete (nothing to wait for)
  bool valid() const { return id >= 0; }
};

// Streams by role. The compute stream is where the host's own work runs; the others carry
// communication so that it overlaps computation, as Megatron and DDP do.
// pp_send carries pipeline sends to a later stage, pp_send_prev those to an earlier one: each
// stream is FIFO and a send completes when its receiver takes it, so sends to two peers on one
// stream would wait for each other (zb_v sends both ways; strategies/zero_bubble_v.hpp).
enum class Stream : std::uint8_t { compute = 0, dp_comm = 1, tp_comm = 2, pp_send = 3, pp_recv = 4, pp_send_prev = 5 };
inline constexpr int kStreamCount = 6;
const char* to_string(Stream stream);

struct Issue {
  Stream stream = Stream::compute;
  std::vector<Handle> after;
  // A tensor-parallel collective Transformer Engine moves through its userbuffers
  // (--tp-comm-overlap) instead of NCCL's kernels. Backends run it as any collective; the
  // simulator keeps NCCL's affine timing for it, not the mid-size slowdown measured on NCCL's.
  bool userbuffers = false;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // ---- memory: every buffer is named and categorised, so peak memory and OOM are known ----
  virtual Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
                       MemCategory category) = 0;
  virtual void release(const Tensor& tensor) = 0;
  // Gives a released tensor storage again, with the same id, shape and dtype (its contents are
  // undefined until written). ZeRO-2/3 use it to keep full gradients and parameters only while a
  // layer needs them: release after use, reacquire (and all-gather into) before the next use.
  virtual void reacquire(const Tensor& tensor, MemCategory category) = 0;
  // Declares which part of a logical tensor `tensor` holds (TensorPlacement). Backends with
  // real memory initialise a parameter from it and checkpoint in global form; a tensor never
  // placed is its own whole logical tensor. The simulator has nothing to do.
  virtual void place(const Tensor& tensor, const TensorPlacement& placement) {
    (void)tensor;
    (void)placement;
  }
  // Stream-ordered release (cudaFreeAsync): the buffer is freed once `handle` completes, e.g.
  // an activation handed to an asynchronous send. A backend may do better than this default,
  // which blocks the host until the op is done.
  virtual void release_after(const Tensor& tensor, Handle handle) {
    wait(handle);
    release(tensor);
  }

  // ---- ops ----
  virtual Handle compute(ComputeOp op, const Issue& issue = {}) = 0;
  virtual Handle communicate(CommOp op, const Issue& issue = {}) = 0;

  // ---- asynchrony ----
  virtual void wait(Handle handle) = 0;
  // An event on `stream` (cudaEventRecord): completes when all work issued on it so far has.
  // A strategy passes it in Issue::after to order work across streams, e.g. a gradient bucket's
  // all-reduce on dp_comm after the backward ops that produced it on compute.
  virtual Handle record(Stream stream) = 0;
  virtual void synchronize() = 0;  // all streams drained

  // ---- iteration boundaries (trace records carry the iteration number) ----
  virtual void begin_iteration(int iteration) = 0;
  virtual void end_iteration() = 0;

  // ---- what a backend materialises ----
  // Rows of each expert's buffer under dropless routing (a mixture-of-experts layer without a
  // capacity factor), of `tokens` routed by this rank: a backend that executes holds every token
  // an expert may receive (the default); a cost model (the simulator, the search's ledger, the
  // layers' own measures) prices the busiest expert's expected load, `expected_rows`
  // (TransformerConfig::expected_busiest_expert_rows), as a dropless dispatcher moves and computes
  // only the tokens routed.
  virtual std::int64_t dropless_expert_rows(std::int64_t tokens, std::int64_t expected_rows) const {
    (void)expected_rows;
    return tokens;
  }
};

}  // namespace tandem
