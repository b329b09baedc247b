// The CUDA gradient-compression kernels (kernels/cuda/compression.cuh) against the CPU
// references, op by op through both dispatchers: fp16 / bf16 rounding (ties, overflow,
// subnormals, NaN), int8 quantization with its residual, 1-bit codes, the dequantized sums and
// concatenations, top-k's selection (ties to the lower index) and the scatter sums bit for bit;
// the 1-bit scale (a double sum in another order) within a float ulp; PowerSGD's Gaussian draws
// and Gram-Schmidt (CUDA's double math functions, a double sum in another order) within fp32
// rounding; and the scatter sum's refusal of an index outside its tensor, in the CPU's words.
// Block tables fed to a decode are real encodings, made by the CPU reference. Skipped without a
// GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/compression_quantize.hpp"
#include "kernels/cpu/compression_topk.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::kernels::cuda::testing {
namespace {

using I64 = std::int64_t;
using Storage = std::vector<float>;
using cpu::testing::random_vector;

std::size_t count_of(I64 n) { return static_cast<std::size_t>(n); }
std::uint32_t* words(Storage& v) { return reinterpret_cast<std::uint32_t*>(v.data()); }
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

CodecArgs codec(CodecStep step, CodecFormat format, I64 numel) {
  CodecArgs a;
  a.step = step;
  a.format = format;
  a.numel = numel;
  return a;
}

ComputeOp codec_op(const CodecArgs& a, std::vector<Tensor> inputs, std::vector<Tensor> outputs) {
  return make_op(OpKind::elementwise, a, std::move(inputs), std::move(outputs), "dp.bucket0.codec");
}

// Random values with the cases rounding gets wrong first at the front: ties to even for bf16
// and fp16, overflow to infinity, fp16 subnormals and their ties, an fp32 subnormal, −0, ±inf,
// NaNs with payloads.
Storage rounding_cases(I64 n, std::uint32_t seed) {
  Storage v = random_vector(count_of(n), seed, -4.0f, 4.0f);
  const std::uint32_t special[] = {
      0x3F808000u, 0x3F818000u,  // bf16 ties: down to even, up to even
      0x3F801000u, 0x3F803000u,  // fp16 ties: down to even, up to even
      0x7F7FFFFFu, 0x477FF000u,  // FLT_MAX (bf16 and fp16 overflow), 65520 (fp16's tie with infinity)
      0x33800000u, 0x33000000u,  // 2^-24 (fp16's smallest subnormal), 2^-25 (its tie with zero)
      0x00000001u, 0x80000000u,  // fp32 subnormal, −0
      0x7F800000u, 0xFF800000u,  // ±inf
      0x7FC00000u, 0xFFA01234u,  // quiet NaN, negative signalling NaN with a payload
  };
  for (std::size_t i = 0; i < std::size(special); ++i) v[i] = from_bits(special[i]);
  return v;
}

// The same without NaNs: the NaN an addition returns is the hardware's own (x86 passes an
// operand's payload on, the GPU gives its canonical NaN), so sums are compared on numbers.
Storage without_nans(Storage v) {
  for (float& x : v)
    if (std::isnan(x)) x = 0.5f;
  return v;
}

TEST(CudaKernels, PackRoundsToFp16AndBf16AsTheCpu) {
  TANDEM_REQUIRE_GPU();
  const Tensor g0 = tensor(0, {5, 40}), g1 = tensor(1, {77}), x = tensor(2, {277});
  for (CodecFormat format : {CodecFormat::fp32, CodecFormat::fp16, CodecFormat::bf16}) {
    const std::string name = to_string(format);
    for (bool accumulate : {false, true}) {
      CodecArgs pack = codec(CodecStep::pack, format, 277);
      pack.accumulate = accumulate;
      Storage first = rounding_cases(200, 1), second = rounding_cases(77, 2);
      if (accumulate) {
        first = without_nans(first);
        second = without_nans(second);
      }
      const OpOutcome o = run_on_both(codec_op(pack, {g0, g1}, {x}), MathMode::fp32, 16, {}, {},
                                      {{0, first}, {1, second}});
      expect_bitwise_equal(o.gpu.at(2), o.cpu.at(2), name + (accumulate ? " pack accumulated" : " pack"));
    }
    const OpOutcome o = run_on_both(codec_op(codec(CodecStep::unpack, format, 277), {x}, {g0, g1}), MathMode::fp32,
                                    16, {}, {}, {{2, rounding_cases(277, 3)}});
    expect_bitwise_equal(o.gpu.at(0), o.cpu.at(0), name + " unpack, first tensor");
    expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), name + " unpack, second tensor");
  }
}

struct QuantizeCase {
  I64 numel, rows, chunk, first_row;
};

// Values in [-1, 1] with a few zeros of either sign (a sign code for −0).
Storage gradient(I64 n, std::uint32_t seed) {
  Storage v = random_vector(count_of(n), seed);
  for (I64 i = 0; i < n; i += 97) v[count_of(i)] = (i / 97) % 2 ? -0.0f : 0.0f;
  return v;
}

// A sign table: the codes bit for bit, the scale words (Σ|x| in double, in another order than
// the CPU's) within a float ulp.
void expect_sign_rows(const Storage& gpu, const Storage& cpu, I64 row_words, const std::string& what) {
  Storage g = gpu, c = cpu, g_scales, c_scales;
  for (std::size_t r = 0; r < g.size() / count_of(row_words); ++r) {
    g_scales.push_back(g[r * count_of(row_words)]);
    c_scales.push_back(c[r * count_of(row_words)]);
    g[r * count_of(row_words)] = c[r * count_of(row_words)] = 0.0f;
  }
  expect_bitwise_equal(g, c, what + " codes");
  for (std::size_t r = 0; r < c_scales.size(); ++r)
    EXPECT_NEAR(g_scales[r], c_scales[r], 1.2e-7 * std::abs(c_scales[r])) << what << " scale of row " << r;
}

TEST(CudaKernels, Int8AndSignQuantizationWithErrorFeedbackMatchCpuBitForBit) {
  TANDEM_REQUIRE_GPU();
  const std::vector<QuantizeCase> cases = {
      {1000, 4, 334, 1},      // a short last chunk, then a row past the data (its scale only)
      {300'000, 2, 150'000, 0},  // rows long enough to be reduced by many blocks
      {37, 1, 37, 0},
  };
  std::uint32_t seed = 5;
  for (const QuantizeCase& q : cases)
    for (CodecFormat format : {CodecFormat::int8, CodecFormat::sign})
      for (bool feedback : {true, false}) {
        const std::string what = std::string(to_string(format)) + " numel " + std::to_string(q.numel) +
                                 (feedback ? " with error feedback" : "");
        const I64 row_words = quantized_row_words(format, q.chunk);
        CodecArgs a = codec(CodecStep::quantize, format, q.numel);
        a.chunk = q.chunk;
        a.rows = q.rows;
        a.first_row = q.first_row;
        // The residual is the input itself, as the codecs keep it; the table's other rows keep
        // their (random) words.
        const Tensor x = tensor(0, {q.numel}), table = tensor(1, {q.first_row + q.rows, row_words}, DType::int32);
        std::vector<Tensor> outputs{table};
        if (feedback) outputs.push_back(x);
        const OpOutcome o = run_on_both(codec_op(a, {x}, outputs), MathMode::fp32, 16, {}, {},
                                        {{0, gradient(q.numel, seed++)}});
        if (format == CodecFormat::int8) {
          expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), what + ": table");
          if (feedback) expect_bitwise_equal(o.gpu.at(0), o.cpu.at(0), what + ": residual");
        } else {
          expect_sign_rows(o.gpu.at(1), o.cpu.at(1), row_words, what + ": table");
          if (feedback) {
            EXPECT_LE(cpu::testing::rel_error(o.gpu.at(0), o.cpu.at(0)), 1e-6) << what << ": residual";
          }
        }
      }
}

// The block table of x's `rows` chunks, encoded by the CPU reference.
Storage cpu_table(const Storage& x, I64 chunk, I64 rows, CodecFormat format) {
  const I64 row_words = quantized_row_words(format, chunk), numel = static_cast<I64>(x.size());
  Storage table(count_of(rows * row_words));
  for (I64 r = 0; r < rows; ++r)
    cpu::quantize_row(words(table) + r * row_words, x.data() + r * chunk, std::clamp<I64>(numel - r * chunk, 0, chunk),
                      format, nullptr);
  return table;
}

TEST(CudaKernels, DequantizedSumsAndConcatenationsMatchCpuBitForBit) {
  TANDEM_REQUIRE_GPU();
  const I64 numel = 1000, members = 3, chunk = 334;
  for (CodecFormat format : {CodecFormat::int8, CodecFormat::sign}) {
    const std::string name = to_string(format);
    const I64 row_words = quantized_row_words(format, chunk);
    const Storage table = cpu_table(gradient(numel, 9), chunk, members, format);
    const Tensor t = tensor(0, {members, row_words}, DType::int32);
    // A member's sum of the chunks it received (the last member's chunk is short).
    for (I64 valid : {chunk, numel - 2 * chunk})
      for (bool accumulate : {false, true}) {
        CodecArgs sum = codec(CodecStep::dequantize_sum, format, valid);
        sum.chunk = chunk;
        sum.rows = members;
        sum.accumulate = accumulate;
        const OpOutcome o =
            run_on_both(codec_op(sum, {t}, {tensor(1, {valid})}), MathMode::fp32, 16, {}, {}, {{0, table}});
        expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1),
                             name + " dequantize_sum of " + std::to_string(valid) + (accumulate ? " accumulated" : ""));
      }
    // Everyone's decoded chunks into the bucket's gradients.
    CodecArgs concat = codec(CodecStep::dequantize_concat, format, numel);
    concat.chunk = chunk;
    concat.rows = members;
    const OpOutcome o = run_on_both(codec_op(concat, {t}, {tensor(1, {600}), tensor(2, {400})}), MathMode::fp32, 16,
                                    {}, {}, {{0, table}});
    expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), name + " dequantize_concat, first tensor");
    expect_bitwise_equal(o.gpu.at(2), o.cpu.at(2), name + " dequantize_concat, second tensor");
  }
}

// Magnitudes from a handful of values, both signs: most entries tie with many others.
Storage tied(I64 n) {
  Storage v(count_of(n));
  for (I64 i = 0; i < n; ++i) v[count_of(i)] = static_cast<float>((i * 37) % 11 - 5) * 0.25f;
  return v;
}

TEST(CudaKernels, TopKSelectsTheCpusEntriesTiesToTheLowerIndex) {
  TANDEM_REQUIRE_GPU();
  struct Case {
    I64 n, k;
    bool ties;
  };
  for (const Case& c : {Case{5000, 777, true}, Case{200'000, 2000, false}, Case{64, 64, true}, Case{10, 1, true},
                        Case{3, 0, false}})
    for (bool feedback : {true, false}) {
      const std::string what = "n " + std::to_string(c.n) + " k " + std::to_string(c.k) + (c.ties ? " ties" : "") +
                               (feedback ? " with error feedback" : "");
      CodecArgs a = codec(CodecStep::top_k, CodecFormat::fp32, c.n);
      a.k = c.k;
      a.first_row = 2;  // rows 0, 1 and 3 keep their words
      const Tensor x = tensor(0, {c.n}), pairs = tensor(1, {4, 2 * c.k}, DType::int32);
      std::vector<Tensor> outputs{pairs};
      if (feedback) outputs.push_back(x);
      const OpOutcome o = run_on_both(codec_op(a, {x}, outputs), MathMode::fp32, 16, {}, {},
                                      {{0, c.ties ? tied(c.n) : random_vector(count_of(c.n), 3)}});
      expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), what + ": pairs");
      if (feedback) expect_bitwise_equal(o.gpu.at(0), o.cpu.at(0), what + ": residual");
    }
}

// A top-k table [rows, 2k]: rows 0 and 1 are real selections (they overlap), row 2 repeats
// indices out of order (not what top_k writes, yet the CPU adds it all, in order).
Storage scatter_table(I64 n, I64 k) {
  Storage table(count_of(3 * 2 * k));
  for (I64 r = 0; r < 2; ++r) {
    const Storage x = random_vector(count_of(n), 20 + static_cast<std::uint32_t>(r));
    auto* row = words(table) + r * 2 * k;
    cpu::top_k_select(reinterpret_cast<std::int32_t*>(row), reinterpret_cast<float*>(row + k), x.data(), n, k, nullptr);
  }
  auto* row = words(table) + 2 * 2 * k;
  const Storage values = random_vector(count_of(k), 30);
  for (I64 j = 0; j < k; ++j) {
    row[j] = static_cast<std::uint32_t>((j * 13) % 20);
    std::memcpy(row + k + j, &values[count_of(j)], sizeof(float));
  }
  return table;
}

TEST(CudaKernels, ScatterSumAddsEveryRowInTheCpusOrder) {
  TANDEM_REQUIRE_GPU();
  const I64 n = 1000, k = 50;
  CodecArgs a = codec(CodecStep::scatter_sum, CodecFormat::fp32, n);
  a.rows = 3;
  a.k = k;
  const OpOutcome o = run_on_both(
      codec_op(a, {tensor(0, {3, 2 * k}, DType::int32)}, {tensor(1, {700}), tensor(2, {300})}), MathMode::fp32, 16, {},
      {}, {{0, scatter_table(n, k)}});
  expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), "scatter_sum, first tensor");
  expect_bitwise_equal(o.gpu.at(2), o.cpu.at(2), "scatter_sum, second tensor");
}

TEST(CudaKernels, ScatterSumRefusesAnIndexOutsideItsTensor) {
  TANDEM_REQUIRE_GPU();
  const I64 n = 40, k = 4;
  Storage table = scatter_table(n, k);
  words(table)[2 * k + 2] = static_cast<std::uint32_t>(n);  // row 1: one past the end, then below zero
  words(table)[2 * k + 3] = static_cast<std::uint32_t>(-1);
  CodecArgs a = codec(CodecStep::scatter_sum, CodecFormat::fp32, n);
  a.rows = 3;
  a.k = k;
  const ComputeOp op = codec_op(a, {tensor(0, {3, 2 * k}, DType::int32)}, {tensor(1, {n})});
  std::map<int, Storage> values{{0, table}, {1, Storage(count_of(n))}};
  const std::string on_cpu = refusal([&] { cpu::run(op, [&](const Tensor& t) { return values.at(t.id).data(); }); });
  EXPECT_NE(on_cpu.find("row 1: scatter_add: index 40 outside [0, 40)"), std::string::npos) << on_cpu;
  EXPECT_EQ(refusal([&] { run_on_device(op, {{0, table}, {1, Storage(count_of(n))}}); }), on_cpu);
}

TEST(CudaKernels, PowerSgdStepsMatchCpu) {
  TANDEM_REQUIRE_GPU();
  // Q's initial draw: the same integers; log / sin / cos in CUDA's double math, within fp32 rounding.
  for (I64 n : {I64{1}, I64{301}, I64{4096}}) {
    CodecArgs draw = codec(CodecStep::gaussian, CodecFormat::fp32, n);
    draw.seed = 0x5eed0000u + static_cast<std::uint64_t>(n);
    expect_agree(codec_op(draw, {}, {tensor(0, {n})}), MathMode::fp32, 1e-6);
  }
  // Gram-Schmidt on P [rows, rank] in place, a zero column included (it stays zero).
  for (const auto& [rows, cols] : {std::pair<I64, I64>{500, 4}, {5000, 2}, {7, 7}, {3000, 1}}) {
    CodecArgs orth = codec(CodecStep::orthogonalize, CodecFormat::fp32, rows * cols);
    orth.cols = cols;
    Storage p = random_vector(count_of(rows * cols), 40);
    if (cols > 2)
      for (I64 r = 0; r < rows; ++r) p[count_of(r * cols + 1)] = 0.0f;
    const Tensor t = tensor(0, {rows, cols});
    const OpOutcome o = run_on_both(codec_op(orth, {t}, {t}), MathMode::fp32, 16, {}, {}, {{0, p}});
    EXPECT_LE(cpu::testing::rel_error(o.gpu.at(0), o.cpu.at(0)), 1e-6) << rows << "x" << cols;
  }
  // The residual M -= P·Qᵀ / members: bit for bit.
  CodecArgs keep = codec(CodecStep::subtract_scaled, CodecFormat::fp32, 999);
  keep.scale = 1.0f / 3.0f;
  const OpOutcome o = run_on_both(codec_op(keep, {tensor(0, {999})}, {tensor(1, {999})}));
  expect_bitwise_equal(o.gpu.at(1), o.cpu.at(1), "subtract_scaled");
}

}  // namespace
}  // namespace tandem::kernels::cuda::testing
