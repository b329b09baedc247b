// The readers under fuzzing, one function each, called as the command line calls them: shared by
// the harnesses (fuzz_<reader>.cpp) and the regression test that replays every input once found
// to break one (tests/fuzz/fuzz_regression_test.cpp over fuzz/regressions/<reader>/).
#pragma once

#include <string>

#include "analysis/trace.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "platforms/cluster.hpp"
#include "platforms/device.hpp"
#include "scenarios/convergence_table.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/search_spec.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem::fuzz {

// `tandem simulate FILE`: the scenario, its strategy built at load (an impossible one refused).
inline void read_scenario(const std::string& path) { load_scenario(path); }

// `tandem search FILE`: the scenario with its search: section, and the space enumerated (the
// candidates a search would simulate), without simulating any.
inline void read_search(const std::string& path) {
  const SearchScenario spec = load_search_scenario(path);
  search::enumerate(spec.space, spec.base.cluster, spec.base.training);
}

inline void read_cluster(const std::string& path) { load_cluster(path); }
inline void read_device(const std::string& path) { load_device_profile(path); }
inline void read_trace(const std::string& path) { read_trace_json(path); }                 // compare, report
inline void read_checkpoint(const std::string& path) { exec::cpu::load_checkpoint(path); }  // run --resume
inline void read_convergence(const std::string& path) { load_convergence_table(path); }     // search's convergence:

}  // namespace tandem::fuzz
