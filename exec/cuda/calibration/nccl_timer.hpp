// NCCL collectives and send/recv timed among this process's GPUs, for calibration: one
// communicator per GPU (ncclCommInitAll), one stream and one buffer each; an op is enqueued on
// every member inside one NCCL group and timed on the host from launch to the last stream's end
// (median over the measured repetitions), nccl-tests' convention for sizes (the whole buffer).
#pragma once

#include <memory>

#include "common/units.hpp"
#include "strategies/op.hpp"

namespace tandem::exec::cuda {

class NcclTimer {
 public:
  // The first `devices` GPUs (at least 2), with buffers of `max_bytes` each.
  NcclTimer(int devices, Bytes max_bytes);
  ~NcclTimer();
  NcclTimer(const NcclTimer&) = delete;
  NcclTimer& operator=(const NcclTimer&) = delete;

  // `kind` among the first `members` GPUs (send/recv: GPU 0 to GPU 1). Median seconds.
  Seconds seconds(OpKind kind, Bytes bytes, int members, int warmup, int iterations);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tandem::exec::cuda
