#include "strategies/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace tandem {

const char* to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved_1f1b: return "interleaved_1f1b";
  }
  return "?";
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                 PipelineSchedule::interleaved_1f1b}) {
    if (name == to_string(s)) return s;
  }
  throw std::invalid_argument("unknown pipeline schedule '" + name +
                              "' (expected gpipe, 1f1b or interleaved_1f1b)");
}

const char* to_string(PipelineAction::Kind kind) {
  return kind == PipelineAction::Kind::forward ? "F" : "B";
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
  } else if (chunks != 1) {
    throw std::invalid_argument(what + "model chunks per stage must be 1, got " +
                                std::to_string(chunks) + " (use interleaved_1f1b)");
  }
}

namespace {

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
  }
  return 0;
}

std::optional<SteadyState> steady_state(PipelineSchedule schedule, int stages) {
  switch (schedule) {
    case PipelineSchedule::gpipe: return std::nullopt;
    case PipelineSchedule::one_f_one_b: return SteadyState{stages, 1};
    case PipelineSchedule::interleaved_1f1b: return SteadyState{2 * static_cast<std::int64_t>(stages), stages};
  }
  return std::nullopt;
}

std::vector<PipelineAction> pipeline_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches, int chunks) {
  const int p = stages, m = micro_batches, v = chunks;
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
  const double shrink = schedule == PipelineSchedule::interleaved_1f1b ? chunks : 1.0;
  return (stages - 1) / (shrink * micro_batches);
}

double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches, int chunks) {
  const double r = bubble_time_over_ideal(schedule, stages, micro_batches, chunks);
  return r / (1.0 + r);
}

int max_in_flight_micro_batches(const std::vector<PipelineAction>& actions) {
  int held = 0, peak = 0;
  for (const auto& a : actions) {
    held += a.kind == PipelineAction::Kind::forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<int> max_in_flight_per_chunk(const std::vector<PipelineAction>& actions, int chunks) {
  if (chunks < 1) throw std::invalid_argument("max_in_flight_per_chunk: chunks must be >= 1");
  std::vector<int> held(chunks, 0), peak(chunks, 0);
  for (const auto& a : actions) {
    if (a.chunk < 0 || a.chunk >= chunks) {
      throw std::invalid_argument("max_in_flight_per_chunk: action chunk " +
                                  std::to_string(a.chunk) + " outside 0.." +
                                  std::to_string(chunks - 1));
    }
    held[a.chunk] += a.kind == PipelineAction::Kind::forward ? 1 : -1;
    peak[a.chunk] = std::max(peak[a.chunk], held[a.chunk]);
  }
  return peak;
}

}  // namespace tandem
