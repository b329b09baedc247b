// Export of a Tandem trace to the Chrome trace event format, which Perfetto (ui.perfetto.dev)
// and chrome://tracing open: one process per rank, one thread per stream, one complete ("X")
// event per op, times in microseconds.
#pragma once

#include <string>

#include "analysis/trace.hpp"

namespace tandem {

std::string chrome_trace_json(const Trace& trace);
void write_chrome_trace(const Trace& trace, const std::string& path);  // atomic

// A predicted and a measured trace in one timeline, to scroll through side by side: one process
// per side (pids below), one thread per (rank, stream): tid = rank * kStreamCount + stream,
// named "rank R / stream". Each side keeps its own clock.
inline constexpr int kPredictedPid = 1;
inline constexpr int kMeasuredPid = 2;
std::string chrome_trace_pair_json(const Trace& predicted, const Trace& measured);
void write_chrome_trace_pair(const Trace& predicted, const Trace& measured, const std::string& path);  // atomic

}  // namespace tandem
