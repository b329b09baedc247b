// Tests and benchmarks link the simulator into themselves: nothing to load.
#include "sim/simulation.hpp"

namespace tandem::sim {

void load_simulator() {}

}  // namespace tandem::sim
