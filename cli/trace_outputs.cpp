#include "cli/trace_outputs.hpp"

#include <stdexcept>

#include "analysis/chrome_trace.hpp"
#include "analysis/trace_ranks.hpp"
#include "common/gzip.hpp"
#include "common/input_error.hpp"

namespace tandem::cli {

namespace {
std::vector<bool> rank_mask(const TraceOutputs& o, int world) {
  try {
    return parse_rank_list(o.ranks, world);
  } catch (const std::invalid_argument& e) {
    throw InputError("command line", 0, "--trace-ranks", e.what());
  }
}
}  // namespace

void check_trace_outputs(const TraceOutputs& o, int world) {
  if (!o.ranks.empty()) rank_mask(o, world);
}

void stage_trace_outputs(OutputSet& outputs, Trace trace, const Cluster& cluster, const Strategy& strategy,
                         const TraceOutputs& o) {
  const int world = strategy.world_size();
  trace.ranks = trace_ranks(cluster, world, strategy.rank_roles());
  if (!o.ranks.empty()) keep_ranks(trace, rank_mask(o, world));
  if (!o.trace_path.empty()) outputs.stage(o.trace_path, gzipped_if_named(o.trace_path, trace_json(trace)));
  if (!o.chrome_trace_path.empty())
    outputs.stage(o.chrome_trace_path, gzipped_if_named(o.chrome_trace_path, chrome_trace_json(trace)));
}

}  // namespace tandem::cli
