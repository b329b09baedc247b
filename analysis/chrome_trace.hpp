// Export of a Tandem trace to the Chrome trace event format, which Perfetto (ui.perfetto.dev)
// and chrome://tracing open: one process per rank, one thread per stream, one complete ("X")
// event per op, times in microseconds.
#pragma once

#include <string>

#include "analysis/trace.hpp"

namespace tandem {

std::string chrome_trace_json(const Trace& trace);
void write_chrome_trace(const Trace& trace, const std::string& path);  // atomic

}  // namespace tandem
