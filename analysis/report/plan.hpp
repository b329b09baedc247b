// The report's "plan" section: what the strategy does with the cluster, in words and as a
// picture, and why it wins.
//   - from a trace's ranks (TraceRank: device group, node, stage, replica, layers, sequences):
//     which devices hold which pipeline stages, layers per stage, each device group's batch share,
//     and (from the trace's records) the collectives each device group runs per iteration;
//   - from search results: the heterogeneity gain (best heterogeneity-aware plan vs best uniform
//     one) and the winner against its runners-up (bubble/idle, exposed communication, compute,
//     memory headroom).
#pragma once

#include <string>
#include <vector>

#include "analysis/report/report.hpp"

namespace tandem::report {

// One device group's part of the plan (PlanGroup per node group of the trace's ranks).
struct PlanGroup {
  std::string group, device;
  int ranks = 0;
  int first_node = -1, last_node = -1;
  std::vector<int> stages;          // pipeline stages its ranks hold (ascending)
  std::vector<int> replicas;        // data-parallel replicas with a rank here
  long long sequences_min = -1, sequences_max = -1;  // per replica
  double batch_share = -1;          // of all sequences per iteration, by its replicas (0-1)
};

struct PlanSummary {
  std::vector<PlanGroup> groups;
  std::vector<int> layers_of_stage;  // by stage; -1 where unknown
  int stages = 0, replicas = 0, ranks = 0;
  long long sequences = 0;           // per iteration, all replicas
};

// From Trace::ranks; empty groups when the trace does not say where ranks ran.
PlanSummary plan_summary(const std::vector<TraceRank>& ranks);

// The plan in words: "64 devices ... 2 pipeline stages ... H100 replicas take 5 sequences each".
std::string plan_in_words(const PlanSummary& plan);

// The section ("" when the inputs say nothing of the plan).
std::string plan_section(const ReportInputs& inputs);

}  // namespace tandem::report
