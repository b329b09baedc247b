#include <stdexcept>

#include "strategies/model.hpp"

namespace tandem {

const char* to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::none: return "none";
    case Fp8Recipe::e4m3: return "e4m3";
    case Fp8Recipe::hybrid: return "hybrid";
  }
  return "?";
}

Fp8Recipe parse_fp8_recipe(const std::string& text) {
  if (text == "none") return Fp8Recipe::none;
  if (text == "e4m3") return Fp8Recipe::e4m3;
  if (text == "hybrid") return Fp8Recipe::hybrid;
  throw std::invalid_argument("unknown FP8 format '" + text + "' (expected none, e4m3 or hybrid)");
}

}  // namespace tandem
