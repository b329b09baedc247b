// Between search candidates and scenarios: the scenario that runs a candidate (the base
// scenario with the candidate's knobs, as a hybrid strategy), and the candidate a scenario's
// strategy is.
#pragma once

#include "scenarios/scenario.hpp"
#include "strategies/search/candidate.hpp"

namespace tandem {

// `base` with its strategy replaced by the candidate's; knobs the search does not turn
// (gradient bucket size, overlap) are kept from `base`. A candidate with a node selection runs on
// that part of the base cluster.
Scenario scenario_for(const Scenario& base, const search::Candidate& candidate);

// The candidate a scenario's strategy is (a data-parallel strategy is the hybrid with tp = pp = 1).
search::Candidate candidate_of(const Scenario& scenario);

}  // namespace tandem
