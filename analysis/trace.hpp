// The trace schema shared by prediction (sim) and measurement (cpu, cuda): one record per op.
// Analysis aligns a predicted and a measured trace by (rank, iteration, op id); the op id is the
// op's label, which the strategy and model code make unique within a rank's iteration, so the same
// op has the same id whichever backend ran it. Chrome trace / Perfetto JSON is an export of this
// schema (chrome_trace.hpp), not the schema itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/output_set.hpp"  // write_file_atomically, for the writers of traces and their exports
#include "common/units.hpp"
#include "strategies/op.hpp"
#include "strategies/runtime.hpp"

namespace tandem {

// The values of Phase (strategies/op.hpp: forward, backward, optimizer, other), for the readers
// and writers that list its names.
inline constexpr int kPhaseCount = static_cast<int>(Phase::other) + 1;

struct TraceRecord {
  int rank = 0;
  int iteration = 0;
  std::string op_id;  // the op's label
  OpKind kind = OpKind::gemm;
  Phase phase = Phase::other;
  Stream stream = Stream::compute;
  Seconds start_s = 0;
  Seconds end_s = 0;
  Flops flops = 0;
  Bytes bytes = 0;
  int peer = -1;      // send/recv
  int group_id = -1;  // collectives
  int group_size = 0;
};

// An op's record with the fields every op has (flops, peer and group are the caller's to add).
TraceRecord op_trace_record(int rank, int iteration, const std::string& label, OpKind kind, Phase phase,
                            Stream stream, Seconds start_s, Seconds end_s, Bytes bytes);
// The record of a compute op (with its FLOPs) or of a communication op (with its peer, or its
// group), as every backend writes them.
TraceRecord op_trace_record(int rank, int iteration, const ComputeOp& op, Stream stream, Seconds start_s,
                            Seconds end_s);
TraceRecord op_trace_record(int rank, int iteration, const CommOp& op, Stream stream, Seconds start_s,
                            Seconds end_s);

// Where a rank ran: its device profile, node group and global node, and its part of the plan
// (RankRole: pipeline stage, data-parallel replica, layers held, its replica's sequences per
// iteration; -1 when not known). Optional in a trace.
struct TraceRank {
  std::string device;  // device profile name ("H100-SXM")
  std::string group;   // node group name
  int node = -1;       // global node index
  int stage = -1;
  int replica = -1;
  int layers = -1;
  long long sequences = -1;
};

struct Trace {
  std::string source;   // "sim", "cpu", "cuda"
  std::string scenario; // scenario name
  std::vector<TraceRecord> records;
  std::vector<TraceRank> ranks;  // by rank; empty when not known
};

// The schema on disk, tandem-trace/2 (written), one record a line as an array of numbers:
//   {"schema": "tandem-trace/2", "source", "scenario",
//    "kinds": [...], "phases": [...], "streams": [...], "ops": [op ids...],   (name tables)
//    "ranks": [{"device", "group", "node", "stage", "replica", "layers", "sequences"}, ...]
//                                      (optional; the last four only when known, else -1)
//    "columns": ["rank", "iteration", "op", "kind", "phase", "stream", "start_ns", "dur_ns",
//                "flops", "bytes", "peer", "group_id", "group_size"],
//    "records": [[0, 0, 12, 3, 0, 0, 4000, 696964, 525336576, 2101346304], ...]}
// op, kind, phase and stream index the name tables; times are whole nanoseconds (end =
// start + dur); a record without peer or group stops after bytes (peer -1, group_id -1,
// group_size 0). Names written once and no key per record make it ~6x smaller than
// tandem-trace/1 ({"schema": "tandem-trace/1", "records": [{"rank", "iteration", "op_id", "kind",
// "phase", "stream", "start_s", "end_s", "flops", "bytes", "peer", "group_id", "group_size"}]}),
// which is still read. Written atomically (temporary file + rename). Reading validates every
// field and reports file, line, record index and field on bad input (InputError).
std::string trace_json(const Trace& trace);  // the file's text
void write_trace_json(const Trace& trace, const std::string& path);
Trace read_trace_json(const std::string& path);

}  // namespace tandem
