// The critical path of one iteration, inferred from a trace's timestamps.
//
// A trace has no explicit dependency edges, so the path is reconstructed backwards from the op
// that ends the iteration (the latest end over all ranks), with these rules:
//  1. Rendezvous. A collective (same op id and group on every member) or a send/recv pair (the
//     n-th send from rank a to rank b matches the n-th recv on b from a) cannot complete before
//     its last member arrives, so the path passes through the instance that started last: the
//     others merely waited for it ("rendezvous: last arrival").
//  2. Predecessor. The op X just reached was released by the latest-ending op among
//       - the previous op on X's own stream (stream order, always a true dependency), and
//       - the ops on X's rank's other streams that ended by X's start (a cross-stream wait:
//         e.g. the optimizer waiting for the gradient all-reduce),
//     preferring the own-stream op on a tie. The path stops when X has no predecessor.
// Between two consecutive path ops there may be a gap (launch overhead, host work, waiting that
// the trace does not explain); gaps are reported, never hidden: the steps' durations plus their
// gaps add up exactly to the path length. A gap is negative where two steps overlap (which the
// averaged times of a folded trace can produce).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/trace.hpp"

namespace tandem {

enum class PathLink { first, stream_order, cross_stream, rendezvous };
const char* to_string(PathLink link);

struct CriticalPathStep {
  TraceRecord op;
  Seconds gap_before_s = 0;  // previous step's end (or the iteration start) to this op's start
  PathLink reached_by = PathLink::first;  // how the path came to this op from the previous step
};

struct CriticalPath {
  std::vector<CriticalPathStep> steps;  // in time order; the last one ends the iteration
  Seconds length_s = 0;  // iteration start (earliest op start) to the end of the last step
  Seconds busy_s = 0;    // sum of the steps' durations
  Seconds gap_s = 0;     // sum of the gaps: length_s - busy_s
  std::map<OpKind, Seconds> busy_by_kind_s;
};

// `records` are one iteration's ops (every rank); times in any common origin.
CriticalPath critical_path(const std::vector<TraceRecord>& records);

}  // namespace tandem
