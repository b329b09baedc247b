// Hand-built traces for the analysis tests: one record per call, times in seconds.
#pragma once

#include <string>

#include "analysis/trace.hpp"

namespace tandem::analysis_test {

inline TraceRecord op(int rank, int iteration, const std::string& id, OpKind kind, Stream stream, Seconds start_s,
                      Seconds end_s) {
  return op_trace_record(rank, iteration, id, kind, Phase::other, stream, start_s, end_s, 0);
}

inline TraceRecord gemm(int rank, int iteration, const std::string& id, Seconds start_s, Seconds end_s) {
  return op(rank, iteration, id, OpKind::gemm, Stream::compute, start_s, end_s);
}

inline TraceRecord all_reduce(int rank, int iteration, const std::string& id, Seconds start_s, Seconds end_s) {
  TraceRecord r = op(rank, iteration, id, OpKind::all_reduce, Stream::dp_comm, start_s, end_s);
  r.group_id = 0;
  r.group_size = 2;
  return r;
}

inline Trace trace_of(const std::string& source, std::vector<TraceRecord> records) {
  return Trace{source, "synthetic", std::move(records), {}};
}

}  // namespace tandem::analysis_test
