#include "strategies/op.hpp"

#include <stdexcept>
#include <string>

#include "strategies/runtime.hpp"

namespace tandem {

bool runs_on_host(const ComputeOp& op) {
  if (const auto* copy = std::get_if<MemcpyArgs>(&op.args)) return copy->host != HostCopy::none;
  if (const auto* step = std::get_if<OptimizerArgs>(&op.args)) return step->on_host;
  return false;
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::gemm: return "gemm";
    case OpKind::attention: return "attention";
    case OpKind::norm: return "norm";
    case OpKind::elementwise: return "elementwise";
    case OpKind::embedding: return "embedding";
    case OpKind::loss: return "loss";
    case OpKind::optimizer: return "optimizer";
    case OpKind::memcpy: return "memcpy";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_gather: return "all_gather";
    case OpKind::broadcast: return "broadcast";
    case OpKind::all_to_all: return "all_to_all";
  }
  return "?";
}

bool is_communication(OpKind kind) { return kind >= OpKind::send; }
bool is_collective(OpKind kind) { return kind >= OpKind::all_reduce; }

std::pair<std::int64_t, std::int64_t> CommOp::buffer_range() const {
  const std::int64_t n = buffer.numel();
  if (part_numel < 0) return {0, n};
  if (part_offset < 0 || part_offset > n || part_numel > n - part_offset)
    throw std::logic_error("op " + label + ": part [" + std::to_string(part_offset) + ", +" +
                           std::to_string(part_numel) + ") outside its buffer of " + std::to_string(n));
  return {part_offset, part_numel};
}

const char* to_string(MoeStep step) {
  switch (step) {
    case MoeStep::route: return "moe_route";
    case MoeStep::dispatch: return "moe_dispatch";
    case MoeStep::combine: return "moe_combine";
    case MoeStep::regroup: return "moe_regroup";
    case MoeStep::count: return "moe_count";
  }
  return "?";
}

const char* to_string(Fp8Format format) {
  switch (format) {
    case Fp8Format::none: return "none";
    case Fp8Format::e4m3: return "e4m3";
    case Fp8Format::e5m2: return "e5m2";
  }
  return "?";
}

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    case Phase::other: return "other";
  }
  return "?";
}

const char* to_string(Stream stream) {
  switch (stream) {
    case Stream::compute: return "compute";
    case Stream::dp_comm: return "dp_comm";
    case Stream::tp_comm: return "tp_comm";
    case Stream::pp_send: return "pp_send";
    case Stream::pp_recv: return "pp_recv";
    case Stream::pp_send_prev: return "pp_send_prev";
  }
  return "?";
}

int Group::index_of(int global_rank) const {
  for (int i = 0; i < size(); ++i)
    if (ranks[i] == global_rank) return i;
  return -1;
}

}  // namespace tandem
