#include "strategies/compression/codec_args.hpp"

#include <stdexcept>

namespace tandem {

const char* to_string(CodecStep step) {
  switch (step) {
    case CodecStep::pack: return "pack";
    case CodecStep::unpack: return "unpack";
    case CodecStep::quantize: return "quantize";
    case CodecStep::dequantize_sum: return "dequantize_sum";
    case CodecStep::dequantize_concat: return "dequantize_concat";
    case CodecStep::top_k: return "top_k";
    case CodecStep::scatter_sum: return "scatter_sum";
    case CodecStep::orthogonalize: return "orthogonalize";
    case CodecStep::gaussian: return "gaussian";
    case CodecStep::subtract_scaled: return "subtract_scaled";
  }
  return "?";
}

const char* to_string(CodecFormat format) {
  switch (format) {
    case CodecFormat::fp32: return "fp32";
    case CodecFormat::fp16: return "fp16";
    case CodecFormat::bf16: return "bf16";
    case CodecFormat::int8: return "int8";
    case CodecFormat::sign: return "sign";
  }
  return "?";
}

std::int64_t quantized_row_words(CodecFormat format, std::int64_t chunk) {
  if (format == CodecFormat::int8) return 1 + (chunk + 3) / 4;
  if (format == CodecFormat::sign) return 1 + (chunk + 31) / 32;
  throw std::invalid_argument(std::string("quantized_row_words: not a quantized format: ") + to_string(format));
}

}  // namespace tandem
