// One rank's iteration replayed as a lower bound of its length: the rank's own streams and
// dependencies, each op at the least time it can take, no waiting for peers. Whatever a backend
// adds (peers arriving late, links shared, efficiencies below 1) only makes the real iteration
// longer, so the search may prune a candidate whose bound cannot beat the best simulated one.
//
// The replay follows the per-rank interface's semantics (runtime.hpp) as the simulator realises
// them (sim/sim_device.cpp):
//   - ops on one stream run one after another; an op also waits for its `after` handles;
//   - a communication op starts only after the compute issued before it (the simulator runs the
//     pending compute first);
//   - the compute stream is the host's timeline: `wait` and `synchronize` hold it.
// A communication op takes at least the bytes a member must receive over the fastest port a
// device of the cluster has (least_comm_seconds); a compute op what the caller says.
#pragma once

#include <cstdint>
#include <vector>

#include "common/units.hpp"
#include "strategies/op.hpp"
#include "strategies/runtime.hpp"

namespace tandem::search {

// The least time `op` keeps its stream busy on a member of its group when every byte it must
// receive arrives at `port_bytes_per_s`:
//   all_reduce       every element of the result depends on every member: at least the buffer
//                    (a member that reduces a part itself receives (n-1) shares of it instead);
//   all_gather       the other members' parts, (n-1)/n of the buffer;
//   reduce_scatter   its own reduced part, 1/n (a switch may reduce in the network);
//   broadcast        the buffer (the root: nothing);
//   send, recv       the message (the transfer ends on both sides together);
//   all_to_all       0 (no bound claimed).
Seconds least_comm_seconds(const CommOp& op, int rank, BytesPerSecond port_bytes_per_s);

class RankTimeline {
 public:
  explicit RankTimeline(BytesPerSecond port_bytes_per_s) : port_bytes_per_s_(port_bytes_per_s) {}

  // Each call returns the next handle id (0, 1, 2, ...), the same sequence on every timeline
  // replaying the same program.
  Handle compute(Seconds least_s, Phase phase, const std::vector<Handle>& after);
  Handle communicate(const CommOp& op, int rank, Stream stream, const std::vector<Handle>& after);
  Handle record(Stream stream);
  void wait(Handle handle);
  void synchronize();

  // When the compute stream (the host) is done: a lower bound of the iteration.
  Seconds host_end_s() const { return stream_end_s_[static_cast<int>(Stream::compute)]; }
  Seconds compute_s() const { return compute_s_; }    // compute stream busy
  Seconds forward_s() const { return forward_s_; }    // of which forward ops
  Seconds backward_s() const { return backward_s_; }  // of which backward ops (recomputation included)

 private:
  Seconds ready_s(const std::vector<Handle>& after) const;
  Handle finish(Seconds end_s);

  BytesPerSecond port_bytes_per_s_;
  Seconds stream_end_s_[kStreamCount] = {};
  std::vector<Seconds> handle_end_s_;
  Seconds compute_s_ = 0, forward_s_ = 0, backward_s_ = 0;
};

}  // namespace tandem::search
