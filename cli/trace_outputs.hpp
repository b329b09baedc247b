// The trace files `simulate` and `run` write, the same way: where each rank ran (for the
// timeline's process names), only the ranks asked for (--trace-ranks), gzip for names ending in
// .gz, staged in the command's output set.
#pragma once

#include <string>

#include "analysis/trace.hpp"
#include "common/output_set.hpp"
#include "platforms/cluster.hpp"
#include "strategies/strategy.hpp"

namespace tandem::cli {

struct TraceOutputs {
  std::string trace_path;         // --trace: Tandem schema ("" for none)
  std::string chrome_trace_path;  // --chrome-trace: Perfetto timeline ("" for none)
  std::string ranks;              // --trace-ranks: "0-7,32" ("" for every rank)
};

// Throws InputError (field --trace-ranks) for a rank list that does not fit `world`.
void check_trace_outputs(const TraceOutputs& o, int world);
// Stages the trace files asked for, the ranks' places and roles (the strategy's) filled in.
void stage_trace_outputs(OutputSet& outputs, Trace trace, const Cluster& cluster, const Strategy& strategy,
                         const TraceOutputs& o);

}  // namespace tandem::cli
