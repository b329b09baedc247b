#include "strategies/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "strategies/zero_bubble_v.hpp"

namespace tandem {

const char* to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved_1f1b: return "interleaved_1f1b";
    case PipelineSchedule::zb_h1: return "zb_h1";
    case PipelineSchedule::zb_v: return "zb_v";
  }
  return "?";
}

bool splits_backward(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::zb_h1 || schedule == PipelineSchedule::zb_v;
}

int virtual_stage(PipelineSchedule schedule, int chunk, int stage, int stages) {
  if (schedule == PipelineSchedule::zb_v && chunk == 1) return 2 * stages - 1 - stage;
  return chunk * stages + stage;
}
int stage_of_virtual_stage(PipelineSchedule schedule, int virtual_stage, int stages) {
  if (schedule == PipelineSchedule::zb_v && virtual_stage >= stages) return 2 * stages - 1 - virtual_stage;
  return virtual_stage % stages;
}
int chunk_of_virtual_stage(PipelineSchedule, int virtual_stage, int stages) { return virtual_stage / stages; }

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                 PipelineSchedule::interleaved_1f1b, PipelineSchedule::zb_h1, PipelineSchedule::zb_v}) {
    if (name == to_string(s)) return s;
  }
  throw std::invalid_argument("unknown pipeline schedule '" + name +
                              "' (expected gpipe, 1f1b, interleaved_1f1b, zb_h1 or zb_v)");
}

const char* to_string(PipelineAction::Kind kind) {
  switch (kind) {
    case PipelineAction::Kind::forward: return "F";
    case PipelineAction::Kind::backward: return "B";
    case PipelineAction::Kind::weight: return "W";
  }
  return "?";
}

void validate_pipeline(PipelineSchedule schedule, int stages, int micro_batches, int chunks) {
  const std::string what = std::string(to_string(schedule)) + " pipeline: ";
  if (stages < 1) {
    throw std::invalid_argument(what + "stages must be >= 1, got " + std::to_string(stages));
  }
  if (micro_batches < 1) {
    throw std::invalid_argument(what + "micro-batches must be >= 1, got " +
                                std::to_string(micro_batches));
  }
  if (schedule == PipelineSchedule::interleaved_1f1b) {
    if (chunks < 2) {
      throw std::invalid_argument(what + "model chunks per stage must be >= 2, got " +
                                  std::to_string(chunks));
    }
    if (micro_batches % stages != 0) {
      throw std::invalid_argument(what + "micro-batches (" + std::to_string(micro_batches) +
                                  ") must be a multiple of the stages (" +
                                  std::to_string(stages) + ")");
    }
  } else if (schedule == PipelineSchedule::zb_v) {
    if (chunks != 2)
      throw std::invalid_argument(what + "model chunks per stage must be 2 (its V), got " + std::to_string(chunks));
  } else if (chunks != 1) {
    throw std::invalid_argument(what + "model chunks per stage must be 1, got " +
                                std::to_string(chunks) + " (use interleaved_1f1b)");
  }
}

namespace {

// ZB-H1 (header): stage s's 1F1B order with each backward cut into B and W, and the W passes
// delayed by s: the W after B_i is W_{i-s}, the last s ones after the last B.
std::vector<PipelineAction> zero_bubble_h1(int stage, int p, int m) {
  using Kind = PipelineAction::Kind;
  std::vector<PipelineAction> out;
  int next_w = 0;
  for (const PipelineAction& a : pipeline_actions(PipelineSchedule::one_f_one_b, stage, p, m, 1)) {
    out.push_back(a);
    if (a.kind == Kind::backward && a.micro_batch - stage >= 0) out.push_back({Kind::weight, next_w++, 0});
  }
  while (next_w < m) out.push_back({Kind::weight, next_w++, 0});
  return out;
}

void validate_stage(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                    int chunks) {
  validate_pipeline(schedule, stages, micro_batches, chunks);
  if (stage < 0 || stage >= stages) {
    throw std::invalid_argument(std::string(to_string(schedule)) + " pipeline: stage " +
                                std::to_string(stage) + " outside 0.." +
                                std::to_string(stages - 1));
  }
}

}  // namespace

int warmup_forwards(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                    int chunks) {
  validate_stage(schedule, stage, stages, micro_batches, chunks);
  switch (schedule) {
    case PipelineSchedule::gpipe: return micro_batches;
    case PipelineSchedule::one_f_one_b: return std::min(stages - stage - 1, micro_batches);
    case PipelineSchedule::interleaved_1f1b: {
      const int total = micro_batches * chunks;
      if (micro_batches == stages) return total;  // Megatron: all forwards, then all backwards
      return std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
    }
    case PipelineSchedule::zb_h1: return std::min(stages - stage - 1, micro_batches);  // as 1F1B
    case PipelineSchedule::zb_v: {
      const auto order = zero_bubble_v(stages, micro_batches);
      const auto& actions = order->stages[static_cast<std::size_t>(stage)];
      return static_cast<int>(std::find_if(actions.begin(), actions.end(),
                                           [](const PipelineAction& a) { return a.kind != PipelineAction::Kind::forward; }) -
                              actions.begin());
    }
  }
  return 0;
}

std::optional<SteadyState> steady_state(PipelineSchedule schedule, int stages) {
  switch (schedule) {
    case PipelineSchedule::gpipe: return std::nullopt;
    case PipelineSchedule::one_f_one_b: return SteadyState{stages, 1};
    case PipelineSchedule::interleaved_1f1b: return SteadyState{2 * static_cast<std::int64_t>(stages), stages};
    case PipelineSchedule::zb_h1:
    case PipelineSchedule::zb_v: return std::nullopt;  // not shown periodic: every micro-batch is simulated
  }
  return std::nullopt;
}

std::vector<PipelineAction> pipeline_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches, int chunks) {
  const int p = stages, m = micro_batches, v = chunks;
  if (schedule == PipelineSchedule::zb_h1) {
    validate_stage(schedule, stage, stages, micro_batches, chunks);
    return zero_bubble_h1(stage, p, m);
  }
  if (schedule == PipelineSchedule::zb_v) {
    validate_stage(schedule, stage, stages, micro_batches, chunks);
    return zero_bubble_v(p, m)->stages[static_cast<std::size_t>(stage)];
  }
  const int warmup = warmup_forwards(schedule, stage, p, m, v);  // validates
  const int total = m * v;
  // k-th forward / backward in the stage's own order (Megatron's get_model_chunk_id and
  // get_microbatch_id_in_model_chunk). With v = 1 they reduce to micro-batch k, chunk 0 for any
  // m, so GPipe and 1F1B share the code.
  auto fwd = [&](int k) {
    return PipelineAction{PipelineAction::Kind::forward, (k / (p * v)) * p + k % p, (k / p) % v};
  };
  auto bwd = [&](int k) {
    return PipelineAction{PipelineAction::Kind::backward, (k / (p * v)) * p + k % p,
                          v - 1 - (k / p) % v};
  };
  std::vector<PipelineAction> out;
  out.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  const int steady = total - warmup;
  for (int i = 0; i < steady; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int k = steady; k < total; ++k) out.push_back(bwd(k));
  return out;
}

double bubble_time_over_ideal(PipelineSchedule schedule, int stages, int micro_batches,
                              int chunks) {
  validate_pipeline(schedule, stages, micro_batches, chunks);
  if (schedule == PipelineSchedule::zb_v) {  // its unit-time order: 6m units of work per stage
    const int ideal = 6 * micro_batches;
    return static_cast<double>(zero_bubble_v(stages, micro_batches)->makespan_units - ideal) / ideal;
  }
  const double shrink = schedule == PipelineSchedule::interleaved_1f1b ? chunks
                        : schedule == PipelineSchedule::zb_h1          ? 3.0
                                                                       : 1.0;
  return (stages - 1) / (shrink * micro_batches);
}

double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches, int chunks) {
  const double r = bubble_time_over_ideal(schedule, stages, micro_batches, chunks);
  return r / (1.0 + r);
}

namespace {
// +1 for a forward, -1 for what releases a micro-batch (its W when backwards are split), else 0.
int held_change(const PipelineAction& a, bool split) {
  if (a.kind == PipelineAction::Kind::forward) return 1;
  const bool releases = split ? a.kind == PipelineAction::Kind::weight : a.kind == PipelineAction::Kind::backward;
  return releases ? -1 : 0;
}
bool has_weight_actions(const std::vector<PipelineAction>& actions) {
  return std::any_of(actions.begin(), actions.end(),
                     [](const PipelineAction& a) { return a.kind == PipelineAction::Kind::weight; });
}
}  // namespace

int max_in_flight_micro_batches(const std::vector<PipelineAction>& actions) {
  const bool split = has_weight_actions(actions);
  int held = 0, peak = 0;
  for (const auto& a : actions) {
    held += held_change(a, split);
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<int> max_in_flight_per_chunk(const std::vector<PipelineAction>& actions, int chunks) {
  if (chunks < 1) throw std::invalid_argument("max_in_flight_per_chunk: chunks must be >= 1");
  const bool split = has_weight_actions(actions);
  std::vector<int> held(chunks, 0), peak(chunks, 0);
  for (const auto& a : actions) {
    if (a.chunk < 0 || a.chunk >= chunks) {
      throw std::invalid_argument("max_in_flight_per_chunk: action chunk " +
                                  std::to_string(a.chunk) + " outside 0.." +
                                  std::to_string(chunks - 1));
    }
    held[a.chunk] += held_change(a, split);
    peak[a.chunk] = std::max(peak[a.chunk], held[a.chunk]);
  }
  return peak;
}

}  // namespace tandem
