#include "exec/common/step_measurement.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis/calibration/fit.hpp"

namespace tandem::exec {

using cpu::IterationStats;
using cpu::RunResult;

calibration::StepMeasurement step_from_trace(const RunResult& run, int warmup, Seconds longest_own_gap_s) {
  calibration::StepMeasurement step;
  std::vector<double> step_times;
  for (const IterationStats& it : run.iterations) {
    if (!it.warmup) step_times.push_back(it.time_s);
  }
  step.step_s = calibration::median(step_times);

  // Per op label and iteration, its durations on the ranks that ran it: a compute op's is their
  // median (replicas run side by side); a collective's the shortest (the last member to arrive:
  // the transfer without the wait for peers). Then the median over iterations.
  struct Op {
    const TraceRecord* first = nullptr;
    std::map<int, std::vector<double>> by_iteration;
  };
  std::map<std::string, Op> by_label;
  std::map<int, Seconds> kernels_by_rank;  // compute kernel time over the measured iterations
  std::vector<std::string> order;  // issue order of the first rank, for a readable result
  const int first_measured = run.first_iteration + warmup;
  for (const TraceRecord& r : run.trace.records) {
    if (r.iteration < first_measured) continue;
    auto [entry, inserted] = by_label.try_emplace(r.op_id);
    if (inserted) {
      entry->second.first = &r;
      order.push_back(r.op_id);
    }
    entry->second.by_iteration[r.iteration].push_back(r.end_s - r.start_s);
    if (!is_communication(r.kind) && r.stream == Stream::compute) kernels_by_rank[r.rank] += r.end_s - r.start_s;
  }
  if (kernels_by_rank.size() >= 2) {
    Seconds sum = 0, slowest = 0;
    for (const auto& [rank, seconds] : kernels_by_rank) {
      sum += seconds;
      slowest = std::max(slowest, seconds);
    }
    if (sum > 0) step.slowest_replica_kernel_ratio = slowest * static_cast<double>(kernels_by_rank.size()) / sum;
  }
  // Gaps between consecutive compute kernels of rank 0, within each measured iteration, but for
  // those around a communication op (a tensor-parallel all-reduce between two kernels is not
  // the dispatch cost of either).
  std::map<int, std::vector<std::pair<double, double>>> kernels_by_iteration;
  std::map<int, std::vector<double>> comm_starts_by_iteration;
  for (const TraceRecord& r : run.trace.records) {
    if (r.iteration < first_measured || r.rank != 0) continue;
    if (is_communication(r.kind)) comm_starts_by_iteration[r.iteration].push_back(r.start_s);
    else if (r.stream == Stream::compute) kernels_by_iteration[r.iteration].push_back({r.start_s, r.end_s});
  }
  std::vector<double> gaps;
  for (auto& [iteration, spans] : kernels_by_iteration) {
    std::sort(spans.begin(), spans.end());
    const std::vector<double>& comm_starts = comm_starts_by_iteration[iteration];
    for (std::size_t i = 1; i < spans.size(); ++i) {
      const double from = spans[i - 1].second, to = spans[i].first;
      const bool around_comm = std::any_of(comm_starts.begin(), comm_starts.end(),
                                           [&](double t) { return t >= from && t <= to; });
      if (!around_comm) gaps.push_back(std::max(0.0, to - from));
    }
  }
  // The mean of the gaps shorter than longest_own_gap_s: dispatch, bookkeeping and the buffer
  // allocations the device makes between kernels, all per-op costs of a real run.
  double sum = 0;
  int counted = 0;
  for (double gap : gaps) {
    if (gap < longest_own_gap_s) {
      sum += gap;
      ++counted;
    }
  }
  if (counted > 0) step.launch_gap_s = sum / counted;

  for (const std::string& label : order) {
    const Op& op = by_label.at(label);
    const bool comm = is_communication(op.first->kind);
    std::vector<double> durations;
    for (const auto& [iteration, on_ranks] : op.by_iteration) {
      durations.push_back(comm ? *std::min_element(on_ranks.begin(), on_ranks.end()) : calibration::median(on_ranks));
    }
    calibration::OpTiming t;
    t.label = label;
    t.kind = op.first->kind;
    t.flops = op.first->flops;
    t.bytes = op.first->bytes;
    t.group_size = op.first->kind == OpKind::send || op.first->kind == OpKind::recv ? 2 : op.first->group_size;
    t.seconds = calibration::median(durations);
    step.ops.push_back(t);
  }
  return step;
}

}  // namespace tandem::exec
