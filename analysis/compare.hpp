// `tandem compare`: a predicted and a measured trace of the same scenario, aligned op by op.
//
// Alignment. Ops are matched by (rank, iteration, op id) on iteration-relative times
// (iteration_view.hpp). When both traces hold the same iterations they are matched iteration by
// iteration ("by_iteration"); otherwise (typically one predicted steady-state iteration against
// several measured ones) each trace is first reduced to its mean iteration and those are matched
// ("mean_iteration"). An op found on one side only is counted and listed, never dropped silently.
//
// Errors are signed and relative to the measurement: (predicted - measured) / measured, so a
// positive error is an over-prediction. Group totals (per op kind, rank, stream) sum the
// durations of matched ops only, so both sides of a total cover the same ops, and are per
// iteration (divided by the number of aligned iterations).
//
// Each side's critical path (critical_path.hpp) is that of its mean iteration.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/anomalies.hpp"
#include "analysis/critical_path.hpp"
#include "analysis/iteration_view.hpp"
#include "analysis/trace.hpp"

namespace tandem {

enum class IterationAlignment { automatic, by_iteration, mean_iteration };

struct CompareOptions {
  IterationAlignment alignment = IterationAlignment::automatic;
  int measured_warmup_iterations = 0;  // measured iterations to leave out, from the first one
  std::size_t largest_differences = 20;  // how many ops to list, largest |difference| first
};

struct TimeTotals {
  Seconds predicted_s = 0;
  Seconds measured_s = 0;
  int ops = 0;  // matched ops in the group (all aligned iterations)
  Seconds difference_s() const { return predicted_s - measured_s; }
  std::optional<double> error() const;  // relative; none when nothing was measured
};

struct OpDifference {
  OpKey key;
  OpKind kind = OpKind::gemm;
  Stream stream = Stream::compute;
  Seconds predicted_s = 0;  // durations
  Seconds measured_s = 0;
  Seconds difference_s() const { return predicted_s - measured_s; }
};

struct UnmatchedOp {
  OpKey key;
  OpKind kind = OpKind::gemm;
  Stream stream = Stream::compute;
  Seconds duration_s = 0;
};

struct TraceSummary {
  std::string file;  // where it was read from (empty for an in-memory trace)
  std::string source;
  std::string scenario;
  int records = 0;
  std::vector<IterationSpan> iterations;  // those compared
  Seconds iteration_time_s = 0;           // mean over `iterations`
  std::map<int, Seconds> rank_finish_s;   // mean iteration: each rank's last end
  CriticalPath critical_path;             // of the mean iteration
};

struct Comparison {
  TraceSummary predicted;
  TraceSummary measured;
  IterationAlignment alignment = IterationAlignment::by_iteration;  // the one used
  int aligned_iterations = 0;
  std::optional<double> iteration_time_error;  // relative, signed
  TimeTotals matched;  // all matched ops
  std::map<OpKind, TimeTotals> by_kind;
  std::map<int, TimeTotals> by_rank;
  std::map<Stream, TimeTotals> by_stream;
  int matched_ops = 0;
  std::vector<UnmatchedOp> predicted_only;
  std::vector<UnmatchedOp> measured_only;
  std::vector<OpDifference> largest_differences;  // by |difference|, largest first
  Anomalies measured_anomalies;  // stragglers and slow ops in the measured trace (anomalies.hpp)
  // What the reader should know before trusting the numbers (traces of differently named
  // scenarios: a renamed copy, or a mistake).
  std::vector<std::string> warnings;
};

Comparison compare_traces(const Trace& predicted, const Trace& measured, const CompareOptions& options = {});

// Reads both files (InputError on a malformed one) and refuses a mismatched pair: an empty trace
// or no op in common (InputError naming the file and field). Traces of differently named
// scenarios are compared with a warning: ops matching by (rank, iteration, op id) is the check.
Comparison compare_trace_files(const std::string& predicted_path, const std::string& measured_path,
                               const CompareOptions& options = {});

const char* to_string(IterationAlignment alignment);
nlohmann::json to_json(const Comparison& comparison);
std::string to_text(const Comparison& comparison);

}  // namespace tandem
