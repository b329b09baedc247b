// Report inputs with every section filled, built in memory from hand-made traces and summaries.
#pragma once

#include "analysis/report/report.hpp"
#include "tests/analysis/trace_builders.hpp"

namespace tandem::analysis_test {

inline report::ReportInputs full_report_inputs(const std::string& op_label = "a") {
  report::ReportInputs in;
  in.predicted_trace = trace_of("sim", {gemm(0, 0, op_label, 0, 1), all_reduce(0, 0, "ar", 1, 2),
                                        gemm(1, 0, op_label, 0, 1.5), all_reduce(1, 0, "ar", 1.5, 2)});
  in.measured_trace = trace_of("cpu", {gemm(0, 0, op_label, 0, 2), all_reduce(0, 0, "ar", 2, 4),
                                       gemm(1, 0, op_label, 0, 3), all_reduce(1, 0, "ar", 3, 4)});
  in.comparison = compare_traces(*in.predicted_trace, *in.measured_trace);
  report::RunSummary prediction;
  prediction.scenario = "synthetic";
  prediction.strategy = "data_parallel(dp=2)";
  prediction.iteration_time_s = 2;
  prediction.tokens_per_s = 1000;
  prediction.mfu = 0.4;
  prediction.breakdown.push_back({"mean over ranks", 1.25, 0.5, 0.25});
  prediction.memory.push_back({"gpus [H100 x2]", 3e9, 80e9, {{"parameters", 1e9}, {"activations", 2e9}}, false});
  in.prediction = prediction;
  report::RunSummary measured;
  measured.scenario = "synthetic";
  measured.iteration_time_s = 4;
  measured.tokens_per_s = 500;
  measured.memory.push_back({"rank 0", 3.5e9, 0, {{"parameters", 1e9}, {"activations", 2.5e9}}, false});
  in.measured = measured;
  report::SearchResults search;
  search.scenario = "synthetic";
  search.objective = "time";
  search.candidates.push_back({1, "dp=2", 2, 1000, 0.4, 3e9, 80e9, true, 1.25, 0.5, 0.25, true});
  search.candidates.push_back({2, "tp=2", 3, 700, 0.3, 2e9, 80e9, true, {}, {}, {}, true});
  search.candidates.push_back({3, "pp=2", 4, 500, 0.2, 2.5e9, 80e9, true, {}, {}, {}, false});
  in.search = search;
  return in;
}

}  // namespace tandem::analysis_test
