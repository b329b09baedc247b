// Reads a strategy's `gradient_compression` section (strategies/compression/compression_config.hpp
// says what each field does), e.g.
//   strategy:
//     type: data_parallel
//     data_parallel_size: 4
//     gradient_compression: {type: powerSGD, matrix_approximation_rank: 2}
// `gradient_compression: topk` (a bare name) takes the defaults. A wrong value fails at its field
// (file, line, field: exit status 2): an unknown codec, a rank < 1, a top-k ratio outside (0, 1].
#pragma once

#include "common/yaml_reader.hpp"
#include "strategies/compression/compression_config.hpp"

namespace tandem {

namespace limits {
// PowerSGD's rank: at least 1; 65,536 is beyond any matrix dimension of today's models.
inline constexpr CountRange kMatrixApproximationRank{1, 1 << 16};
}  // namespace limits

CompressionConfig read_gradient_compression(const YamlNode& node);

}  // namespace tandem
