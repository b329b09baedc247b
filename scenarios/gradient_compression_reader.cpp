#include "scenarios/gradient_compression_reader.hpp"

#include <limits>
#include <stdexcept>

namespace tandem {

CompressionConfig read_gradient_compression(const YamlNode& node) {
  CompressionConfig c;
  const auto parse_type = [](const YamlNode& n) {
    try {
      return parse_compression(n.as_string());
    } catch (const std::invalid_argument& e) {
      n.fail(e.what());
    }
  };
  if (!node.is_map()) {  // `gradient_compression: powerSGD`
    c.type = parse_type(node);
    return c;
  }
  // The fields of scenario_fields.hpp's kGradientCompressionFields (what `tandem fields` prints).
  node.only_keys({"type", "matrix_approximation_rank", "min_compression_rate", "use_error_feedback", "topk_ratio",
                  "random_seed"});
  c.type = parse_type(node["type"]);
  if (auto n = node.get("matrix_approximation_rank"))
    c.matrix_approximation_rank = static_cast<int>(n->count(limits::kMatrixApproximationRank));
  if (auto n = node.get("min_compression_rate")) c.min_compression_rate = n->non_negative();
  if (auto n = node.get("use_error_feedback")) c.use_error_feedback = n->as_bool();
  if (auto n = node.get("topk_ratio")) {
    c.topk_ratio = n->as_double();
    if (!(c.topk_ratio > 0.0 && c.topk_ratio <= 1.0))
      n->fail("topk_ratio must be in (0, 1] (the share of entries sent), not " + n->as_string());
  }
  if (auto n = node.get("random_seed"))
    c.seed = static_cast<std::uint64_t>(n->count({0, std::numeric_limits<long long>::max()}));
  return c;
}

}  // namespace tandem
