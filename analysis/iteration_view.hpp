// Iteration-relative views of a trace. A predicted and a measured trace start their clocks at
// different moments and may hold different iterations (a simulation predicts one steady-state
// iteration, a run measures ten), so analysis compares times relative to the start of each
// iteration: the earliest start of any op of any rank in that iteration, so that skew between
// ranks stays visible.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/trace.hpp"

namespace tandem {

struct IterationSpan {
  int iteration = 0;
  Seconds start_s = 0;  // earliest start over all ranks
  Seconds end_s = 0;    // latest end over all ranks
  Seconds duration_s() const { return end_s - start_s; }
};

// One span per iteration present in the trace, in iteration order.
std::vector<IterationSpan> iteration_spans(const Trace& trace);

// Each iteration's time: the period training advances by, from the previous iteration's end to
// its own (the first one: from its first op), as the backends and the simulator report it. For
// iterations run back to back it is the span; ranks that take turns on shared cores start an
// iteration at staggered times, so spans overlap and overstate the time per iteration.
std::vector<Seconds> iteration_periods_s(const std::vector<IterationSpan>& spans);
// Their mean.
Seconds mean_iteration_period_s(const std::vector<IterationSpan>& spans);

// The same records with start and end measured from their iteration's start.
Trace relative_to_iteration_start(const Trace& trace);

// An op's identity within its rank's iteration. Labels are unique within a rank's iteration by
// contract; should one repeat anyway, its occurrences are told apart by their order of start
// (`occurrence`), never merged.
struct OpKey {
  int rank = 0;
  int iteration = 0;
  std::string op_id;
  int occurrence = 0;
  auto operator<=>(const OpKey&) const = default;
  std::string display() const;  // "op_id" or "op_id#2"
};

// Keys every record, in the trace's record order (keys[i] belongs to trace.records[i]).
std::vector<OpKey> op_keys(const Trace& trace);

// The trace reduced to its mean iteration: one record per (rank, op id, occurrence) whose start
// and end are the means, over the iterations the op appears in, of its iteration-relative start
// and end; the other fields are the first occurrence's; every record gets iteration `iteration`.
Trace fold_to_mean_iteration(const Trace& trace, int iteration = 0);

// The iteration of median duration (the shorter of the two middle ones), its times relative to
// its start: a real iteration to draw, unlike the mean one whose averaged times may overlap.
Trace median_iteration(const Trace& trace);

// The trace without the iterations before `first_iteration` (e.g. a measured warm-up).
Trace drop_iterations_before(const Trace& trace, int first_iteration);

}  // namespace tandem
