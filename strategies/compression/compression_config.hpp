// Gradient compression, an option of every strategy with a data-parallel dimension (the idea
// of PyTorch DDP's communication hooks): the data-parallel all-reduce of each gradient bucket
// is replaced by a codec's encode, a collective on the smaller encoded form, and a decode
// (gradient_codec.hpp). Field names follow what people already write:
//   type                      none | fp16_compress | bf16_compress   (DDP default hooks)
//                             int8 | onebit                          (quantized, DeepSpeed 1-bit Adam's
//                                                                     compressed all-reduce)
//                             topk                                   (sparsified, all-gather of pairs)
//                             powerSGD                               (PyTorch powerSGD_hook)
//   matrix_approximation_rank PowerSGD's rank r (PyTorch's argument and default, 1)
//   min_compression_rate      PowerSGD compresses a matrix only when its size over the rank-r
//                             factors' is at least this (PyTorch's argument and default, 2)
//   use_error_feedback        int8, onebit, topk, powerSGD: carry what the codec dropped into
//                             the next step (PyTorch's argument name; default true)
//   topk_ratio                fraction of a bucket's entries top-k sends, in (0, 1]
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

enum class Compression : std::uint8_t { none, fp16, bf16, int8, one_bit, top_k, power_sgd };

struct CompressionConfig {
  Compression type = Compression::none;
  int matrix_approximation_rank = 1;
  double min_compression_rate = 2.0;
  bool use_error_feedback = true;
  double topk_ratio = 0.01;
  std::uint64_t seed = 0;  // PowerSGD's initial Q (PyTorch's random_seed, default 0)

  bool enabled() const { return type != Compression::none; }
};

// The scenario name of a codec ("powerSGD"), and back; parse throws std::invalid_argument
// listing the names it knows.
const char* to_string(Compression type);
Compression parse_compression(const std::string& name);

// A short description for strategy names: "powerSGD(r=2, ef)".
std::string describe(const CompressionConfig& config);

}  // namespace tandem
