// One colour per op kind, never shared: the timelines colour bars by kind, and two kinds in one
// colour (a GEMM and an all-gather, say) would read as one. Kelly's colours of maximum contrast,
// compute kinds in the blues/greens/browns, communication in the oranges/pinks/violets.
#pragma once

#include "strategies/op.hpp"

namespace tandem::report {

// "#rrggbb"; distinct for every OpKind (a test holds it).
const char* op_kind_colour(OpKind kind);

}  // namespace tandem::report
