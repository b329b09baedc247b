// The bad inputs through the real binary: each one is a single line on stderr naming the
// file, the line (the record's line for a trace, the byte for a checkpoint) and the field, with
// exit status 2 — never a SimGrid abort or deadlock, a wrapped number run as if valid, or raw
// library text. Inputs are edits of the bundled files, so they follow what is bundled.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/trace.hpp"
#include "platforms/cluster.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using cli_test::run_tandem;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

// Exit 2 and one line holding every piece of `expected`.
void expect_one_line_input_error(const std::string& args, const std::vector<std::string>& expected) {
  const cli_test::CliRun run = run_tandem(args);
  EXPECT_EQ(run.status, 2) << args << "\n" << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << args << "\n" << run.err;
  for (const std::string& piece : expected) EXPECT_NE(run.err.find(piece), std::string::npos) << piece << "\n" << run.err;
  for (const char* raw : {"bad conversion", "json.exception", "Impossible", "Deadlock", "terminate"})
    EXPECT_EQ(run.err.find(raw), std::string::npos) << raw << "\n" << run.err;
}

TEST(BadInputCli, ScenarioNumbersThatWrappedOrOverflowed) {
  test::TempDir dir;
  const std::string tiny = test::bundled_text("scenarios/gpt-tiny-localhost.yaml");
  struct Case {
    std::string from, to, field;
  };
  for (const Case& c : std::vector<Case>{
           {"data_parallel_size: 2", "data_parallel_size: 4294967298", "strategy.data_parallel_size"},
           {"lr: 0.001", "lr: 1e308", "training.lr"},
           {"seq_length: 32", "seq_length: 64", "training.seq_length"},
           {"global_batch_size: 8", "global_batch_size: 2147483648", "training.global_batch_size"},
           {"cluster: localhost", "cluster: localhost\ncluster: no-such-cluster", "cluster"},
           {"data_parallel_size: 2", "data_parallel_size: 2\nsimulation: { iterations: 4294967297 }",
            "simulation.iterations"}}) {
    const std::string text = replaced(tiny, c.from, c.to);
    const std::string path = dir.write("bad.yaml", text);
    const int line = test::line_of(text, c.to.substr(c.to.rfind('\n') + 1));
    expect_one_line_input_error("simulate " + path, {path + ":" + std::to_string(line), "field '" + c.field + "'"});
  }
}

TEST(BadInputCli, PlatformValuesThatAbortedOrDeadlockedSimGrid) {
  test::TempDir dir;
  const std::string cluster = replaced(test::bundled_text("platforms/clusters/localhost.yaml"), "device: cpu-generic",
                                       "device: device.yaml");
  const std::string device = test::bundled_text("platforms/devices/cpu-generic.yaml");
  const std::string scenario = replaced(test::bundled_text("scenarios/gpt-tiny-localhost.yaml"), "cluster: localhost",
                                        "cluster: cluster.yaml");
  struct Case {
    const char* file;
    std::string from, to, field;
  };
  for (const Case& c : std::vector<Case>{
           {"cluster.yaml", "bandwidth_gb_per_s: 3.2", "bandwidth_gb_per_s: 1e300", "node_groups[0].intra_node.bandwidth_gb_per_s"},
           {"cluster.yaml", "bandwidth_gb_per_s: 3.2", "bandwidth_gb_per_s: 1e-320", "node_groups[0].intra_node.bandwidth_gb_per_s"},
           {"device.yaml", "peak_fp32_tflops: 0.096", "peak_fp32_tflops: 1e-320", "peak_fp32_tflops"},
           {"device.yaml", "launch_overhead_us: 1", "launch_overhead_us: 1e308", "launch_overhead_us"}}) {
    dir.write("scenario.yaml", scenario);
    dir.write("cluster.yaml", std::string(c.file) == "cluster.yaml" ? replaced(cluster, c.from, c.to) : cluster);
    const std::string bad_device = std::string(c.file) == "device.yaml" ? replaced(device, c.from, c.to) : device;
    dir.write("device.yaml", bad_device);
    const std::string bad_file = (dir.path() / c.file).string();
    expect_one_line_input_error("simulate " + (dir.path() / "scenario.yaml").string(),
                                {bad_file + ":", "field '" + c.field + "'"});
  }
}

TEST(BadInputCli, NonRegularFilesAreRefusedAtOnce) {
  expect_one_line_input_error("simulate /dev/zero", {"/dev/zero", "not a regular file"});
  expect_one_line_input_error("compare /dev/zero /dev/zero", {"/dev/zero", "not a regular file"});
}

TEST(BadInputCli, CommandLineNumbersAreRangeChecked) {
  expect_one_line_input_error("simulate gpt-tiny-localhost --iterations 4294967297", {"command line", "--iterations"});
  expect_one_line_input_error("search search-tiny-h100 --top 4294967297", {"command line", "--top"});
  expect_one_line_input_error("run gpt-tiny-localhost --timeout nan", {"command line", "--timeout"});
}

TEST(BadInputCli, ATraceErrorNamesItsRecordsLineAndField) {
  test::TempDir dir;
  const std::string good = (dir.path() / "good.json").string();
  TraceRecord r;
  r.rank = 1;
  write_trace_json(Trace{"sim", "x", {r}}, good);
  std::ifstream in(good);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // tandem-trace/2: a record is a row of numbers, the rank first.
  const std::string bad_text = replaced(text, "\n[1,", "\n[4294967297,");
  const std::string bad = dir.write("bad.json", bad_text);
  expect_one_line_input_error("compare " + good + " " + bad,
                              {bad + ":" + std::to_string(test::line_of(bad_text, "4294967297")),
                               "field 'records[0].rank'"});
}

}  // namespace
}  // namespace tandem
