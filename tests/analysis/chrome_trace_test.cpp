#include "analysis/chrome_trace.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::all_reduce;
using analysis_test::gemm;
using analysis_test::trace_of;

// What Perfetto's JSON importer needs: a traceEvents list whose complete events carry name, ph,
// pid, tid, ts and a non-negative dur, and metadata events naming processes and threads.
void expect_loadable(const nlohmann::json& doc, std::size_t ops) {
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::size_t complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e["name"].is_string());
    ASSERT_TRUE(e["pid"].is_number_integer());
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e["tid"].is_number_integer());
      EXPECT_TRUE(e["ts"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
    } else {
      EXPECT_EQ(e["ph"], "M");
      EXPECT_TRUE(e["args"].is_object());
    }
  }
  EXPECT_EQ(complete, ops);
}

const Trace kPredicted = trace_of("sim", {gemm(0, 0, "a", 0, 1), all_reduce(1, 0, "ar", 1, 2)});
const Trace kMeasured = trace_of("cpu", {gemm(0, 0, "a", 5, 7), all_reduce(1, 0, "ar", 7, 9), gemm(1, 0, "b", 5, 6)});

TEST(ChromeTrace, EachSideIsALoadableTimelineWithAProcessPerRank) {
  for (const Trace* trace : {&kPredicted, &kMeasured}) {
    const nlohmann::json doc = nlohmann::json::parse(chrome_trace_json(*trace));
    expect_loadable(doc, trace->records.size());
    std::set<int> pids;
    for (const auto& e : doc["traceEvents"]) if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
    EXPECT_EQ(pids, (std::set<int>{0, 1}));
  }
}

TEST(ChromeTrace, ThePairPutsEachSideInItsOwnProcessAndEachRankStreamInItsOwnThread) {
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace_pair_json(kPredicted, kMeasured));
  expect_loadable(doc, kPredicted.records.size() + kMeasured.records.size());
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X" && e["name"] == "ar") {
      EXPECT_EQ(e["tid"], 1 * kStreamCount + static_cast<int>(Stream::dp_comm));
    }
  }
  EXPECT_EQ(process_names.at(kPredictedPid), "predicted (sim)");
  EXPECT_EQ(process_names.at(kMeasuredPid), "measured (cpu)");
  EXPECT_EQ(thread_names.at({kMeasuredPid, 1 * kStreamCount + static_cast<int>(Stream::dp_comm)}), "rank 1 / dp_comm");
  EXPECT_EQ(thread_names.size(), 5u);  // predicted: 2 threads, measured: 3
}

TEST(ChromeTrace, ProcessesAreNamedWithTheRanksDeviceAndNode) {
  Trace trace = kPredicted;
  trace.ranks = {{"H100-SXM", "h100", 0}, {"A100-SXM-80GB", "a100", 4}};
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace_json(trace));
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == "process_name") names.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"rank 0: H100-SXM, node 0 (h100)", "rank 1: A100-SXM-80GB, node 4 (a100)"}));
}

TEST(ChromeTrace, TimesAreKeptToTheNanosecondAndOnlyNonZeroArgsWritten) {
  Trace trace = trace_of("sim", {gemm(0, 0, "a", 1.0 / 3, 2.0 / 3)});
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace_json(trace));
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["ts"].get<double>(), 333333.333);
    EXPECT_EQ(e["dur"].get<double>(), 333333.334);  // end and start rounded alike: no gap between ops
    EXPECT_FALSE(e.contains("args")) << e.dump();  // no FLOPs, bytes, peer or group; one iteration
  }
}

}  // namespace
}  // namespace tandem
