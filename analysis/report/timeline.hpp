// The report's timelines: one iteration of each side (predicted, measured) on one shared time
// axis, at the page's full width, zoomable (wheel, buttons) and pannable (drag) together.
//
// Ranks are grouped by where they ran and what they hold: a lane group per (device group,
// pipeline stage), from the trace's ranks (TraceRank). Each group shows its first rank, with 3
// more behind a "more ranks" toggle, so every device group and stage is on screen at 64 or
// 4,096 ranks and the page stays small; every rank is in the Perfetto export.
//
// A rank's lane (one per side) draws its compute stream as the thick top row and each
// communication stream it used as a thin row below; bars are coloured by op kind
// (op_colours.hpp). Bars are drawn in microseconds inside an <svg preserveAspectRatio="none">
// whose viewBox the page's script moves, so no text lives inside the zoomed drawing: labels and
// the axis are HTML beside it.
#pragma once

#include <string>
#include <vector>

#include "analysis/trace.hpp"

namespace tandem::report {

struct TimelineSide {
  std::string name;  // "predicted (sim)"
  Trace iteration;   // one iteration, times from its start
};

// The lane groups of a set of ranks: (device group, stage) in order of their first rank.
struct LaneGroup {
  std::string group;   // node group name ("" when the trace does not say)
  std::string device;  // device profile name
  int stage = -1;
  std::vector<int> ranks;  // ascending
};
std::vector<LaneGroup> lane_groups(const std::vector<TraceRank>& ranks, const std::vector<int>& ranks_seen);

// The timelines' HTML (toolbar, axis, legend, lane groups). `ranks`: where each rank ran (either
// side's Trace::ranks; may be empty).
std::string timelines_html(const std::vector<TimelineSide>& sides, const std::vector<TraceRank>& ranks);

// The page's script that zooms and pans every timeline together (empty-safe: does nothing on a
// page without timelines).
extern const char* const kTimelineScript;

}  // namespace tandem::report
