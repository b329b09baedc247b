// Report inputs with every section filled, built in memory from hand-made traces and summaries.
#pragma once

#include "analysis/report/report.hpp"
#include "tests/analysis/trace_builders.hpp"

namespace tandem::analysis_test {

// A simulated plan as the search writes it for the report (80 GB devices, fitting): named fields,
// where a positional aggregate once put the 12th value (meant as `pareto`) into `goodput`.
inline report::SearchCandidate search_candidate(int rank, const std::string& strategy, double iteration_s,
                                                double tokens_per_s, double mfu, double peak_bytes, bool pareto) {
  report::SearchCandidate c;
  c.rank = rank;
  c.strategy = strategy;
  c.iteration_time_s = iteration_s;
  c.tokens_per_s = tokens_per_s;
  c.mfu = mfu;
  c.peak_memory_bytes = peak_bytes;
  c.memory_capacity_bytes = 80e9;
  c.fits_in_memory = true;
  c.pareto = pareto;
  return c;
}

// A week's goodput estimate: one trial with two failures (a restart, then a wait for a repair
// running shrunk), the time by use and cause, and a checkpoint-interval sweep.
inline report::GoodputSummary week_of_goodput() {
  constexpr double kDay = 86400;
  report::GoodputSummary g;
  g.scenario = "synthetic";
  g.policy = "shrink";
  g.devices = 64;
  g.horizon_s = 7 * kDay;
  g.trials = 100;
  g.goodput = {0.95, 0.94, 0.96};
  g.tokens_per_s = {9.5e5, 9.4e5, 9.6e5};
  g.failures = {2.1, 1.8, 2.4};
  g.failure_free_tokens_per_s = 1e6;
  g.iteration_s = 2.5;
  g.checkpoint_interval_s = 1800;
  g.time_s = {{"useful", 0.95 * g.horizon_s}, {"checkpoint", 0.01 * g.horizon_s}, {"degraded", 0.02 * g.horizon_s}};
  g.by_cause["gpu"] = {0.01 * g.horizon_s, 0.005 * g.horizon_s, 0.005 * g.horizon_s};
  g.timeline = {{0, "running", 1, 0},
                {2 * kDay, "restarting", 0, 1},
                {2 * kDay + 600, "running", 1, 1},
                {5 * kDay, "restarting", 0, 2},
                {5 * kDay + 600, "running", 0.5, 2},
                {6 * kDay, "running", 1, 2}};
  g.best_interval_s = 1800;
  g.young_s = 1750;
  g.daly_s = 1700;
  for (double interval : {600.0, 1200.0, 1800.0, 3600.0, 7200.0})
    g.sweep.push_back({interval, 0.95 - 1e-6 * (interval - 1800) * (interval - 1800) / 1800});
  return g;
}

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
  search.candidates.push_back(search_candidate(1, "dp=2", 2, 1000, 0.4, 3e9, true));
  search.candidates.back().compute_s = 1.25;
  search.candidates.back().exposed_comm_s = 0.5;
  search.candidates.back().idle_s = 0.25;
  search.candidates.push_back(search_candidate(2, "tp=2", 3, 700, 0.3, 2e9, true));
  search.candidates.push_back(search_candidate(3, "pp=2", 4, 500, 0.2, 2.5e9, false));
  in.search = search;
  in.goodput = week_of_goodput();
  return in;
}

// A heterogeneous run of `world` ranks (a multiple of 16, 8 per node): the first half on H100
// nodes (group "h100"), the second on A100 nodes ("a100"); two pipeline stages inside each half
// (18 and 14 layers), world/4 replicas per half, H100 replicas 12 sequences, A100 ones 4 (75 % and
// 25 % of the batch). Every rank runs every op kind (so every colour is drawn), A100 ranks 1.6x
// slower, over two iterations; `measured`: also a measured trace, 10 % slower. Search results
// with a heterogeneity gain and four runners-up.
inline report::ReportInputs heterogeneous_report_inputs(int world, bool measured = true) {
  const int half = world / 2, quarter = world / 4;
  std::vector<TraceRank> ranks;
  for (int r = 0; r < world; ++r) {
    const bool h100 = r < half;
    const int local = h100 ? r : r - half;
    const int stage = local / quarter;
    const int replica = (h100 ? 0 : quarter) + local % quarter;
    ranks.push_back({h100 ? "H100-SXM" : "A100-SXM-80GB", h100 ? "h100" : "a100", r / 8, stage, replica,
                     stage == 0 ? 18 : 14, h100 ? 12 : 4});
  }
  auto build = [&](const std::string& source, double scale) {
    std::vector<TraceRecord> records;
    for (int iteration = 0; iteration < 2; ++iteration)
      for (int r = 0; r < world; ++r) {
        const double speed = (r < half ? 1.0 : 1.6) * scale;
        double t = iteration * 0.1 * 1.6 * scale;
        auto add = [&](const std::string& id, OpKind kind, Stream stream, double length_s, int group_size = 0) {
          TraceRecord rec = op(r, iteration, id, kind, stream, t, t + length_s * speed);
          if (group_size > 0) rec.group_id = 1, rec.group_size = group_size, rec.bytes = 1 << 20;
          records.push_back(rec);
          if (stream == Stream::compute) t += length_s * speed;
        };
        add("embed", OpKind::embedding, Stream::compute, 2e-3);
        add("recv", OpKind::recv, Stream::pp_recv, 1e-3, 2);
        for (int layer = 0; layer < 6; ++layer) {
          const std::string l = "l" + std::to_string(layer) + ".";
          add(l + "norm", OpKind::norm, Stream::compute, 0.5e-3);
          add(l + "ag", OpKind::all_gather, Stream::tp_comm, 0.8e-3, 2);
          add(l + "qkv", OpKind::gemm, Stream::compute, 3e-3);
          add(l + "attn", OpKind::attention, Stream::compute, 2e-3);
          add(l + "rs", OpKind::reduce_scatter, Stream::tp_comm, 0.8e-3, 2);
          add(l + "act", OpKind::elementwise, Stream::compute, 0.4e-3);
          add(l + "a2a", OpKind::all_to_all, Stream::tp_comm, 0.3e-3, 2);
          add(l + "copy", OpKind::memcpy, Stream::compute, 0.2e-3);
        }
        add("loss", OpKind::loss, Stream::compute, 1e-3);
        add("send", OpKind::send, Stream::pp_send, 1e-3, 2);
        add("grads", OpKind::all_reduce, Stream::dp_comm, 6e-3, quarter * 2);
        add("bcast", OpKind::broadcast, Stream::dp_comm, 0.5e-3, quarter * 2);
        add("adam", OpKind::optimizer, Stream::compute, 4e-3);
      }
    Trace trace{source, "llama3-8b-mixed", std::move(records), ranks};
    return trace;
  };
  report::ReportInputs in;
  in.predicted_trace = build("sim", 1.0);
  if (measured) {
    in.measured_trace = build("cpu", 1.1);
    in.comparison = compare_traces(*in.predicted_trace, *in.measured_trace);
  }
  report::RunSummary prediction;
  prediction.scenario = "llama3-8b-mixed";
  prediction.strategy = "hybrid(tp=1 pp=2 dp=" + std::to_string(half) + ")";
  prediction.model = "llama3-8b";
  prediction.devices = world;
  prediction.iteration_time_s = 0.16;
  prediction.tokens_per_s = 4e5;
  prediction.mfu = 0.55;
  prediction.breakdown.push_back({"mean over ranks", 0.12, 0.02, 0.02});
  prediction.memory.push_back({"h100 [H100-SXM x" + std::to_string(half) + "]", 60e9, 80e9,
                               {{"parameters", 16e9}, {"activations", 44e9}}, false});
  prediction.memory.push_back({"a100 [A100-SXM-80GB x" + std::to_string(half) + "]", 50e9, 80e9,
                               {{"parameters", 16e9}, {"activations", 34e9}}, false});
  in.prediction = prediction;
  report::SearchResults search;
  search.scenario = "search-llama3-8b-mixed";
  search.objective = "time";
  const char* names[] = {"tp=1 pp=2 dp=32 batch=proportional", "tp=2 pp=1 dp=32 batch=proportional",
                         "tp=1 pp=2 dp=32 rc=selective batch=proportional", "tp=2 pp=2 dp=16 batch=proportional",
                         "tp=1 pp=2 dp=32 batch=even"};
  for (int i = 0; i < 5; ++i) {
    search.candidates.push_back(search_candidate(i + 1, names[i], 0.16 + 0.01 * i + (i == 4 ? 0.1 : 0),
                                                 4e5 / (1 + 0.06 * i), 0.55 - 0.02 * i, (60 - 5 * i) * 1e9, i < 3));
    search.candidates.back().compute_s = 0.12 + 0.004 * i;
    search.candidates.back().exposed_comm_s = 0.02 + 0.005 * i;
    search.candidates.back().idle_s = 0.02 + 0.001 * i;
  }
  search.heterogeneity = report::HeterogeneityComparison{names[0], names[4], 0.16, 0.30, 46.7};
  in.search = search;
  in.goodput = week_of_goodput();
  return in;
}

}  // namespace tandem::analysis_test
