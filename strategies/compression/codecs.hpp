// The codecs behind make_gradient_codec (gradient_codec.hpp), one file each:
//   half_codec.cpp       fp16 / bf16 casting (DDP fp16_compress_hook / bf16_compress_hook)
//   quantized_codec.cpp  int8 / 1-bit with error feedback (compressed all-reduce of 1-bit Adam)
//   top_k_codec.cpp      top-k with error feedback (all-gather of index/value pairs)
//   power_sgd_codec.cpp  PowerSGD rank r with error feedback (PyTorch powerSGD_hook)
#pragma once

#include <memory>

#include "strategies/compression/gradient_codec.hpp"

namespace tandem {

std::unique_ptr<GradientCodec> make_half_codec(const CompressionConfig& config);
std::unique_ptr<GradientCodec> make_quantized_codec(const CompressionConfig& config);
std::unique_ptr<GradientCodec> make_top_k_codec(const CompressionConfig& config);
std::unique_ptr<GradientCodec> make_power_sgd_codec(const CompressionConfig& config);

}  // namespace tandem
