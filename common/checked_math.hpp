// Size and count arithmetic that cannot wrap. A wrapped product is undefined behaviour and, worse,
// a silently wrong answer (a model with vocab_size 2^62 "fit in memory" at 2.4 MB): these throw
// std::overflow_error naming the quantity instead.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tandem {

[[noreturn]] inline void throw_overflow(std::string_view what, char op, long long a, long long b, int bits) {
  throw std::overflow_error(std::string(what) + " overflows: " + std::to_string(a) + " " + op + " " +
                            std::to_string(b) + " does not fit in " + std::to_string(bits) + "-bit integers");
}

// a * b, a + b: `what` names the quantity computed (read only on overflow).
template <typename T>
T checked_mul(T a, T b, std::string_view what) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what, 'x', a, b, 8 * sizeof(T));
  return r;
}

template <typename T>
T checked_add(T a, T b, std::string_view what) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what, '+', a, b, 8 * sizeof(T));
  return r;
}

// Σ over `terms` of the product of each term's factors, e.g. {{h, q}, {h, f, m}} = h·q + h·f·m.
inline std::int64_t checked_sum_of_products(std::initializer_list<std::initializer_list<std::int64_t>> terms,
                                            std::string_view what) {
  std::int64_t sum = 0;
  for (const auto& factors : terms) {
    std::int64_t product = 1;
    for (std::int64_t f : factors) product = checked_mul(product, f, what);
    sum = checked_add(sum, product, what);
  }
  return sum;
}

}  // namespace tandem
