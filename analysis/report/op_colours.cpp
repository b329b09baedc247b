#include "analysis/report/op_colours.hpp"

#include <array>

namespace tandem::report {

const char* op_kind_colour(OpKind kind) {
  // In OpKind's order (strategies/op.hpp).
  static constexpr std::array<const char*, kOpKindCount> colours = {
      "#0067a5",  // gemm: blue
      "#875692",  // attention: purple
      "#8db600",  // norm: yellow green
      "#c2b280",  // elementwise: buff
      "#654522",  // embedding: yellowish brown
      "#be0032",  // loss: red
      "#848482",  // optimizer: grey
      "#dcd300",  // memcpy: greenish yellow
      "#f38400",  // send: orange
      "#f6a600",  // recv: orange yellow
      "#008856",  // all_reduce: green
      "#e68fac",  // reduce_scatter: purplish pink
      "#a1caf1",  // all_gather: light blue
      "#882d17",  // broadcast: reddish brown
      "#604e97",  // all_to_all: violet
  };
  return colours[static_cast<std::size_t>(kind)];
}

}  // namespace tandem::report
