// The trade-off a person picks from when no single strategy wins: the feasible candidates no
// other candidate beats on both iteration time and the second measure (peak memory, or cost per
// iteration).
#pragma once

#include <vector>

#include "strategies/search/search.hpp"

namespace tandem::search {

enum class ParetoAxis { memory, cost };
const char* to_string(ParetoAxis axis);

// Sorted by iteration time (ties: canonical order); equal points keep only the first.
std::vector<Scored> pareto_front(const std::vector<Scored>& candidates, ParetoAxis second);

}  // namespace tandem::search
