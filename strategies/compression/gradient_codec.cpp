#include "strategies/compression/gradient_codec.hpp"

#include "strategies/compression/codecs.hpp"

namespace tandem {

std::unique_ptr<GradientCodec> make_gradient_codec(const CompressionConfig& config) {
  switch (config.type) {
    case Compression::none: return nullptr;
    case Compression::fp16:
    case Compression::bf16: return make_half_codec(config);
    case Compression::int8:
    case Compression::one_bit: return make_quantized_codec(config);
    case Compression::top_k: return make_top_k_codec(config);
    case Compression::power_sgd: return make_power_sgd_codec(config);
  }
  return nullptr;
}

std::int64_t bucket_numel(const std::vector<Tensor>& gradients) {
  std::int64_t n = 0;
  for (const Tensor& g : gradients) n += g.numel();
  return n;
}

Issue after_handle(Handle h) { return Issue{Stream::compute, {h}}; }

Issue on_dp_stream(Runtime& rt) { return Issue{Stream::dp_comm, {rt.record(Stream::compute)}}; }

}  // namespace tandem
