#include "strategies/compression/compression_config.hpp"

#include <sstream>
#include <stdexcept>

namespace tandem {

const char* to_string(Compression type) {
  switch (type) {
    case Compression::none: return "none";
    case Compression::fp16: return "fp16_compress";
    case Compression::bf16: return "bf16_compress";
    case Compression::int8: return "int8";
    case Compression::one_bit: return "onebit";
    case Compression::top_k: return "topk";
    case Compression::power_sgd: return "powerSGD";
  }
  return "?";
}

Compression parse_compression(const std::string& name) {
  if (name == "none") return Compression::none;
  if (name == "fp16_compress" || name == "fp16") return Compression::fp16;
  if (name == "bf16_compress" || name == "bf16") return Compression::bf16;
  if (name == "int8") return Compression::int8;
  if (name == "onebit" || name == "1bit") return Compression::one_bit;
  if (name == "topk") return Compression::top_k;
  if (name == "powerSGD" || name == "powersgd") return Compression::power_sgd;
  throw std::invalid_argument("unknown gradient compression '" + name +
                              "' (expected none, fp16_compress, bf16_compress, int8, onebit, topk or powerSGD)");
}

std::string describe(const CompressionConfig& c) {
  std::ostringstream out;
  out << to_string(c.type);
  const bool ef = c.use_error_feedback && c.type != Compression::fp16 && c.type != Compression::bf16;
  if (c.type == Compression::power_sgd) out << "(r=" << c.matrix_approximation_rank << (ef ? ", ef)" : ")");
  else if (c.type == Compression::top_k) out << "(" << c.topk_ratio << (ef ? ", ef)" : ")");
  else if (ef) out << "(ef)";
  return out.str();
}

}  // namespace tandem
