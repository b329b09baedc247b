#include "strategies/search/rank_timeline.hpp"

#include <algorithm>

namespace tandem::search {

Seconds least_comm_seconds(const CommOp& op, int rank, BytesPerSecond port_bytes_per_s) {
  if (!(port_bytes_per_s > 0)) return 0;
  const double members = static_cast<double>(op.group.size());
  Bytes received = 0;
  switch (op.kind) {
    case OpKind::all_reduce: received = members > 1 ? op.bytes : 0; break;
    case OpKind::all_gather: received = members > 1 ? op.bytes * (members - 1) / members : 0; break;
    case OpKind::reduce_scatter: received = members > 1 ? op.bytes / members : 0; break;
    case OpKind::broadcast: received = members > 1 && op.root != rank ? op.bytes : 0; break;
    case OpKind::send:
    case OpKind::recv: received = op.bytes; break;
    default: received = 0; break;
  }
  return received / port_bytes_per_s;
}

Seconds RankTimeline::ready_s(const std::vector<Handle>& after) const {
  Seconds ready = 0;
  for (const Handle& h : after)
    if (h.valid()) ready = std::max(ready, handle_end_s_[h.id]);
  return ready;
}

Handle RankTimeline::finish(Seconds end_s) {
  handle_end_s_.push_back(end_s);
  return Handle{static_cast<std::int64_t>(handle_end_s_.size()) - 1};
}

Handle RankTimeline::compute(Seconds least_s, Phase phase, const std::vector<Handle>& after) {
  Seconds& host = stream_end_s_[static_cast<int>(Stream::compute)];
  host = std::max(host, ready_s(after)) + least_s;
  compute_s_ += least_s;
  if (phase == Phase::forward) forward_s_ += least_s;
  if (phase == Phase::backward) backward_s_ += least_s;
  return finish(host);
}

Handle RankTimeline::communicate(const CommOp& op, int rank, Stream stream, const std::vector<Handle>& after) {
  Seconds& end = stream_end_s_[static_cast<int>(stream)];
  const Seconds start = std::max({end, ready_s(after), host_end_s()});
  end = start + least_comm_seconds(op, rank, port_bytes_per_s_);
  return finish(end);
}

Handle RankTimeline::record(Stream stream) { return finish(stream_end_s_[static_cast<int>(stream)]); }

void RankTimeline::wait(Handle handle) {
  if (!handle.valid()) return;
  Seconds& host = stream_end_s_[static_cast<int>(Stream::compute)];
  host = std::max(host, handle_end_s_[handle.id]);
}

void RankTimeline::synchronize() {
  Seconds& host = stream_end_s_[static_cast<int>(Stream::compute)];
  for (Seconds end : stream_end_s_) host = std::max(host, end);
}

}  // namespace tandem::search
