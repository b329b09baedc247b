#include "analysis/report/run_summary.hpp"

#include <algorithm>

#include "analysis/json_file.hpp"
#include "common/input_limits.hpp"

namespace tandem::report {

namespace {

std::map<std::string, Bytes> categories(const JsonFields& object) {
  std::map<std::string, Bytes> out;
  for (const auto& [name, value] : object.json().items()) {
    if (!value.is_number()) object.fail(name, "expected a number of bytes");
    out[name] = value.get<double>();
  }
  return out;
}

BreakdownRow breakdown_row(const std::string& label, const JsonFields& b) {
  return {label, b.number("compute_s"), b.number("exposed_comm_s"), b.number("idle_s")};
}

RunSummary headline(const JsonFields& doc, const std::string& path, const char* devices_key) {
  RunSummary s;
  s.file = path;
  s.scenario = doc.string("scenario");
  s.strategy = doc.optional_string("strategy");
  s.model = doc.optional_string("model");
  s.devices = static_cast<int>(doc.whole(devices_key, 0, limits::kMaxClusterDevices));
  s.iteration_time_s = doc.number("iteration_time_s");
  s.tokens_per_s = doc.number("tokens_per_s");
  s.mfu = doc.optional_number("mfu");
  return s;
}

}  // namespace

RunSummary read_prediction_json(const std::string& path) {
  const JsonInput input = read_json_input(path);
  const JsonFields doc(input);
  RunSummary s = headline(doc, path, "devices");
  s.breakdown.push_back(breakdown_row("mean over ranks", doc.object("time_breakdown_mean")));
  if (doc.has("time_breakdown_slowest_rank"))
    s.breakdown.push_back(breakdown_row("slowest rank (" + std::to_string(doc.whole("slowest_rank", 0, limits::kMaxClusterDevices)) + ")",
                                        doc.object("time_breakdown_slowest_rank")));
  for (std::size_t i = 0; i < doc.array("memory").size(); ++i) {
    const JsonFields g = doc.element("memory", i);
    MemoryRow row;
    row.label = g.string("group") + " [" + g.optional_string("device") + " x" +
                std::to_string(g.whole("ranks", 0, limits::kMaxClusterDevices)) + "]";
    row.peak_bytes = g.number("peak_max_bytes");
    row.capacity_bytes = g.number("capacity_bytes");
    row.by_category = categories(g.object("at_peak_bytes"));
    row.out_of_memory = g.optional_boolean("out_of_memory").value_or(false);
    s.memory.push_back(std::move(row));
    const std::string basis = g.optional_string("device_basis");
    const std::string line = g.optional_string("device") + ": " + basis;
    if (!basis.empty() && std::find(s.rests_on.begin(), s.rests_on.end(), line) == s.rests_on.end())
      s.rests_on.push_back(line);
  }
  if (doc.has("collectives_basis")) {
    const nlohmann::json& lines = doc.array("collectives_basis");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].is_string()) doc.fail("collectives_basis[" + std::to_string(i) + "]", "expected a string");
      s.rests_on.push_back("collectives, " + lines[i].get<std::string>());
    }
  }
  return s;
}

RunSummary read_measured_summary_json(const std::string& path) {
  const JsonInput input = read_json_input(path);
  const JsonFields doc(input);
  RunSummary s = headline(doc, path, "world_size");
  for (std::size_t i = 0; i < doc.array("ranks").size(); ++i) {
    const JsonFields r = doc.element("ranks", i);
    MemoryRow row;
    row.label = "rank " + std::to_string(r.whole("rank", 0, limits::kMaxClusterDevices));
    row.peak_bytes = r.number("peak_memory_bytes");
    if (r.has("memory_at_peak")) row.by_category = categories(r.object("memory_at_peak"));
    s.memory.push_back(std::move(row));
  }
  return s;
}

}  // namespace tandem::report
