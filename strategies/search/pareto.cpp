#include "strategies/search/pareto.hpp"

#include <algorithm>

namespace tandem::search {

const char* to_string(ParetoAxis axis) { return axis == ParetoAxis::memory ? "peak memory" : "cost"; }

std::vector<Scored> pareto_front(const std::vector<Scored>& candidates, ParetoAxis second) {
  auto measure = [&](const Scored& s) {
    return second == ParetoAxis::memory ? s.evaluation.peak_memory_bytes : s.evaluation.usd_per_iteration();
  };
  std::vector<const Scored*> feasible;
  for (const Scored& s : candidates)
    if (s.feasible()) feasible.push_back(&s);
  std::sort(feasible.begin(), feasible.end(), [](const Scored* a, const Scored* b) {
    return Ranked{a->evaluation.iteration_time_s, a->candidate} < Ranked{b->evaluation.iteration_time_s, b->candidate};
  });
  // Walking by increasing time, a point is on the front when it improves the second measure.
  std::vector<Scored> front;
  for (const Scored* s : feasible)
    if (front.empty() || measure(*s) < measure(front.back())) front.push_back(*s);
  return front;
}

}  // namespace tandem::search
