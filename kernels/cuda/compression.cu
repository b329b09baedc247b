#include "kernels/cuda/compression.cuh"

#include <cuda_fp16.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/rng.cuh"

// Exactness: nvcc contracts a*b + c into one FMA (one rounding) where the CPU build rounds the
// product and the sum apart (x86-64 without -mfma). Every such expression whose CPU result must be
// matched bit for bit is written with __fmul_rn / __fadd_rn / __fsub_rn (__dmul_rn / __dsub_rn),
// which nvcc never fuses. Products that are exact anyway (float·float in double, scaling by a
// power of two) are left as they are: fused or not, they round the same.

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 256;
constexpr I64 kMaxGridY = 65535;
constexpr double kPi = 3.141592653589793;  // std::numbers::pi (the .cu files are C++17)

// Elements of chunk `row` that hold data when `numel` elements are cut into chunks of `chunk`.
__host__ __device__ __forceinline__ I64 valid_in_row(I64 numel, I64 chunk, I64 row) {
  const I64 v = numel - row * chunk;
  return v < 0 ? 0 : (v > chunk ? chunk : v);
}

// fp16: the nearest half, round to nearest even, as _Float16 on the CPU. A NaN keeps its sign
// and the top 10 bits of its payload, quieted, as x86 converts it (vcvtps2ph and libgcc alike);
// __float2half_rn would give the canonical NaN instead. bf16: the CPU's integer rounding
// (compression_quantize.cpp), NaN returned as it is. Overflow gives ±inf on both.
__device__ __forceinline__ float round_to(float x, CodecFormat format) {
  if (format == CodecFormat::fp16) {
    if (isnan(x)) return __uint_as_float((__float_as_uint(x) & 0xFFFFE000u) | 0x00400000u);
    return __half2float(__float2half_rn(x));
  }
  if (format == CodecFormat::bf16) {
    if (isnan(x)) return x;
    std::uint32_t u = __float_as_uint(x);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return __uint_as_float(u & 0xFFFF0000u);
  }
  return x;
}

__global__ void round_kernel(float* y, const float* x, I64 n, CodecFormat format, bool accumulate) {
  TANDEM_GRID_LOOP(i, n) y[i] = round_to(accumulate ? __fadd_rn(y[i], x[i]) : x[i], format);
}

// ---------------------------------------------------------------- quantization

// Each row's scale is reduced in two passes so that a row of millions of elements spreads over
// many blocks, yet sums in a fixed order (the same bits on every run): partials per slice of the
// row, then one thread per row over its slices in order.
//   int8: max |x| (float; fmaxf skips NaN as the CPU's std::max does, and a max is exact in any
//         order, so the scale is the CPU's bit for bit);
//   sign: Σ |x| in double (the CPU sums in double in index order: another order may round the
//         double differently, which the float scale shows in its last bit at most, rarely).
__global__ void scale_partials(double* partial, const float* x, I64 numel, I64 chunk, I64 rows, bool sign) {
  __shared__ float fscratch[32];
  __shared__ double dscratch[32];
  for (I64 r = blockIdx.y; r < rows; r += gridDim.y) {
    const I64 valid = valid_in_row(numel, chunk, r);
    const float* xr = x + r * chunk;
    float absmax = 0.0f;
    double l1 = 0.0;
    for (I64 i = blockIdx.x * static_cast<I64>(blockDim.x) + threadIdx.x; i < valid;
         i += static_cast<I64>(gridDim.x) * blockDim.x) {
      const float a = fabsf(xr[i]);
      if (sign) l1 += a;
      else absmax = fmaxf(absmax, a);
    }
    const double v = sign ? block_sum(l1, dscratch) : static_cast<double>(block_max(absmax, fscratch));
    if (threadIdx.x == 0) partial[r * gridDim.x + blockIdx.x] = v;
  }
}

// The scale of each row into the row's first word: int8 max|x| / 127 (float division, as the
// CPU), sign mean |x| (double division, then the float cast).
__global__ void finish_scales(std::uint32_t* table, I64 row_words, I64 first_row, const double* partial, int slices,
                              I64 numel, I64 chunk, I64 rows, bool sign) {
  TANDEM_GRID_LOOP(r, rows) {
    double acc = 0.0;
    for (int b = 0; b < slices; ++b) {
      const double p = partial[r * slices + b];
      acc = sign ? acc + p : fmax(acc, p);
    }
    const I64 valid = valid_in_row(numel, chunk, r);
    float scale;
    if (sign) scale = valid > 0 ? static_cast<float>(acc / static_cast<double>(valid)) : 0.0f;
    else scale = static_cast<float>(acc) / 127.0f;
    table[(first_row + r) * row_words] = __float_as_uint(scale);
  }
}

// One thread per code word of a row (4 int8 codes or 32 signs), so that a word is built without
// atomics; words past the row's valid codes are not written, as on the CPU. The residual is read
// and written by the thread of its element only, so it may alias x.
template <bool kSign>
__global__ void encode_rows(std::uint32_t* table, I64 row_words, I64 first_row, float* residual, const float* x,
                            I64 numel, I64 chunk, I64 rows) {
  constexpr int kPerWord = kSign ? 32 : 4;
  for (I64 r = blockIdx.y; r < rows; r += gridDim.y) {
    const I64 valid = valid_in_row(numel, chunk, r);
    std::uint32_t* row = table + (first_row + r) * row_words;
    const float scale = __uint_as_float(row[0]);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    const float* xr = x + r * chunk;
    float* er = residual ? residual + r * chunk : nullptr;
    TANDEM_GRID_LOOP(w, (valid + kPerWord - 1) / kPerWord) {
      std::uint32_t word = 0;
      const I64 end = min(valid, (w + 1) * kPerWord);
      for (I64 i = w * kPerWord; i < end; ++i) {
        const float v = xr[i];
        float decoded;
        if constexpr (kSign) {
          const bool negative = signbit(v);
          if (negative) word |= 1u << (i % 32);
          decoded = negative ? -scale : scale;
        } else {
          float q = rintf(__fmul_rn(v, inv));                      // std::nearbyint: to nearest even
          q = q < -127.0f ? -127.0f : (127.0f < q ? 127.0f : q);  // std::clamp (NaN stays NaN)
          const auto code = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
          word |= static_cast<std::uint32_t>(code) << (8 * (i % 4));
          decoded = __fmul_rn(q, scale);
        }
        if (er) er[i] = __fsub_rn(v, decoded);
      }
      row[1 + w] = word;
    }
  }
}

// Element i of a quantized row (i < its valid count): int8 code · scale, or ±scale.
__device__ __forceinline__ float decode(const std::uint32_t* row, I64 i, bool sign) {
  const float scale = __uint_as_float(row[0]);
  if (sign) return (row[1 + i / 32] >> (i % 32)) & 1u ? -scale : scale;
  const auto code = static_cast<std::int8_t>(static_cast<std::uint8_t>(row[1 + i / 4] >> (8 * (i % 4))));
  return __fmul_rn(static_cast<float>(code), scale);
}

// The rows are added in row order, each element by one thread: the CPU's sum to the bit. Row 0
// replaces y unless accumulating (a −0 code stays −0, as on the CPU).
__global__ void dequantize_sum_kernel(float* y, const std::uint32_t* table, I64 numel, I64 row_words, I64 rows,
                                      bool sign, bool accumulate) {
  TANDEM_GRID_LOOP(i, numel) {
    float acc = decode(table, i, sign);
    if (accumulate) acc = __fadd_rn(y[i], acc);
    for (I64 r = 1; r < rows; ++r) acc = __fadd_rn(acc, decode(table + r * row_words, i, sign));
    y[i] = acc;
  }
}

__global__ void dequantize_rows_kernel(float* x, const std::uint32_t* table, I64 numel, I64 chunk, I64 row_words,
                                       bool sign) {
  TANDEM_GRID_LOOP(i, numel) {
    const I64 r = i / chunk;
    x[i] = decode(table + r * row_words, i - r * chunk, sign);
  }
}

// ---------------------------------------------------------------- top-k

// Sort keys: the bits of |x|. For non-negative floats the bit patterns order as the numbers do
// (±0 both +0, as std::abs gives), so a stable descending radix sort of (|x| bits, index) pairs
// puts the largest first and equal magnitudes in increasing index: the CPU's comparator. A NaN
// sorts above +inf here; the CPU's comparator has no order for NaN (unspecified choice there).
__global__ void magnitude_keys(std::uint32_t* keys, std::uint32_t* order, const float* x, I64 n) {
  TANDEM_GRID_LOOP(i, n) {
    keys[i] = __float_as_uint(fabsf(x[i]));
    order[i] = static_cast<std::uint32_t>(i);
  }
}

// The row from the chosen indices (already in increasing order). Indices are distinct, so each
// residual element is read (through x, which it may alias) and zeroed by one thread.
__global__ void write_top_k(std::int32_t* indices, float* values, float* residual, const float* x,
                            const std::uint32_t* chosen, I64 k) {
  TANDEM_GRID_LOOP(j, k) {
    const std::uint32_t i = chosen[j];
    indices[j] = static_cast<std::int32_t>(i);
    values[j] = x[i];
    if (residual) residual[i] = 0.0f;
  }
}

// ---------------------------------------------------------------- scatter sum

// Over every entry of every row: the first out-of-range one (flat position r·k + j, the CPU's
// order) and which rows are not strictly increasing (not as top_k writes them: they may hold an
// index twice).
__global__ void check_rows(const std::uint32_t* table, I64 rows, I64 k, I64 n, unsigned long long* first_bad,
                           int* unsorted) {
  TANDEM_GRID_LOOP(e, rows * k) {
    const I64 r = e / k, j = e - r * k;
    const std::uint32_t* row = table + r * 2 * k;
    const auto i = static_cast<std::int32_t>(row[j]);
    if (i < 0 || i >= n) atomicMin(first_bad, static_cast<unsigned long long>(e));
    if (j > 0 && i <= static_cast<std::int32_t>(row[j - 1])) unsorted[r] = 1;
  }
}

// Adds one row into y after the rows before it (one launch per row, so that a position several
// rows hold sums in the CPU's row order). A strictly increasing row names each position once and
// adds in parallel; any other row is added in order by a single thread, as the CPU does. No
// float atomics: their order (and, in global memory, their subnormal handling) is not the CPU's.
__global__ void add_row(float* y, I64 n, const std::uint32_t* row, I64 k, const int* unsorted) {
  const auto add = [&](I64 j) {
    const auto i = static_cast<std::int32_t>(row[j]);
    if (i >= 0 && i < n) y[i] += __uint_as_float(row[k + j]);
  };
  if (*unsorted) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      for (I64 j = 0; j < k; ++j) add(j);
    return;
  }
  TANDEM_GRID_LOOP(j, k) add(j);
}

// ---------------------------------------------------------------- PowerSGD

// One block does the whole modified Gram-Schmidt: every column step needs its column's norm and
// dot products, and P is [rows, rank] with a rank of a few columns, so one block sweeping the
// rows suffices. Each thread keeps to its own rows, so only the block sums cross threads.
// Accumulation in double as on the CPU; float·float products are exact in double, so a fused
// multiply-add there rounds as the CPU's separate ones. The order of the sums differs from the
// CPU's row loop (a fixed tree here): the double may differ in its last bits, the float result
// rarely in its last one.
constexpr int kOrthogonalizeThreads = 1024;
__global__ void gram_schmidt(float* p, I64 rows, I64 cols) {
  __shared__ double scratch[32];
  constexpr double kEpsilon = 1e-8;  // PyTorch powerSGD_hook's default epsilon
  for (I64 j = 0; j < cols; ++j) {
    double norm_sq = 0.0;
    for (I64 r = threadIdx.x; r < rows; r += blockDim.x) norm_sq += static_cast<double>(p[r * cols + j]) * p[r * cols + j];
    const double inv = 1.0 / (sqrt(block_sum(norm_sq, scratch)) + kEpsilon);
    for (I64 r = threadIdx.x; r < rows; r += blockDim.x) p[r * cols + j] = static_cast<float>(p[r * cols + j] * inv);
    for (I64 later = j + 1; later < cols; ++later) {
      double dot = 0.0;
      for (I64 r = threadIdx.x; r < rows; r += blockDim.x) dot += static_cast<double>(p[r * cols + j]) * p[r * cols + later];
      dot = block_sum(dot, scratch);
      for (I64 r = threadIdx.x; r < rows; r += blockDim.x)
        p[r * cols + later] = static_cast<float>(__dsub_rn(p[r * cols + later], __dmul_rn(dot, p[r * cols + j])));
    }
  }
}

// The CPU's draw (compression_lowrank.cpp) with the shared SplitMix64 (kernels/dropout_rng.hpp):
// the same integers, hence the same uniforms (the power-of-two scaling is exact); log, sqrt,
// sin and cos in double. sqrt is correctly rounded on both; CUDA's log / sin / cos are within
// 1-2 ulp of glibc's, which the float cast almost never shows.
__device__ __forceinline__ double uniform(std::uint64_t seed, std::uint64_t i) {
  return 1.0 - static_cast<double>(kernels::splitmix64(seed + (i + 1) * kernels::kGolden) >> 11) * 0x1.0p-53;
}
__global__ void gaussian_kernel(float* q, I64 n, std::uint64_t seed) {
  TANDEM_GRID_LOOP(pair, (n + 1) / 2) {
    const I64 i = 2 * pair;
    const auto c = static_cast<std::uint64_t>(i);  // the CPU counts pairs by their first element
    const double radius = sqrt(-2.0 * log(uniform(seed, 2 * c)));
    const double angle = 2.0 * kPi * uniform(seed, 2 * c + 1);
    q[i] = static_cast<float>(radius * cos(angle));
    if (i + 1 < n) q[i + 1] = static_cast<float>(radius * sin(angle));
  }
}

__global__ void subtract_scaled_kernel(float* x, const float* d, I64 n, float scale) {
  TANDEM_GRID_LOOP(i, n) x[i] = __fsub_rn(x[i], __fmul_rn(scale, d[i]));
}

// ---------------------------------------------------------------- host helpers

// One workspace request cut into pieces, each aligned for any element type.
class Carve {
 public:
  static std::size_t bytes(std::size_t n) { return (n + 255) / 256 * 256; }
  explicit Carve(void* base) : at_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(I64 count) {
    T* p = reinterpret_cast<T*>(at_);
    at_ += bytes(sizeof(T) * static_cast<std::size_t>(count));
    return p;
  }

 private:
  char* at_;
};

unsigned rows_grid(I64 rows) { return static_cast<unsigned>(rows < kMaxGridY ? rows : kMaxGridY); }

}  // namespace

void codec_round(float* y, const float* x, I64 n, CodecFormat format, bool accumulate, cudaStream_t stream) {
  if (n <= 0) return;
  if (format == CodecFormat::fp32 && !accumulate) {
    if (y != x)
      CUDA_CHECK(cudaMemcpyAsync(y, x, sizeof(float) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  round_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(y, x, n, format, accumulate);
  CUDA_CHECK_LAUNCH();
}

void quantize_rows(std::uint32_t* table, float* residual, const float* x, I64 numel, I64 chunk, I64 rows,
                   I64 first_row, CodecFormat format, const Workspace& workspace, cudaStream_t stream) {
  const I64 row_words = quantized_row_words(format, chunk);  // throws for a format that is not quantized
  if (rows <= 0) return;
  const bool sign = format == CodecFormat::sign;
  const I64 longest = valid_in_row(numel, chunk, 0);
  // Slices per row: enough blocks to fill the GPU for one long row, a few for short ones.
  const int slices = static_cast<int>(std::max<I64>(1, std::min<I64>(256, (longest + kThreads * 16 - 1) / (kThreads * 16))));
  auto* partial = static_cast<double*>(workspace(sizeof(double) * static_cast<std::size_t>(rows * slices)));
  scale_partials<<<dim3(static_cast<unsigned>(slices), rows_grid(rows)), kThreads, 0, stream>>>(partial, x, numel,
                                                                                                  chunk, rows, sign);
  CUDA_CHECK_LAUNCH();
  finish_scales<<<blocks_for(rows, kThreads), kThreads, 0, stream>>>(table, row_words, first_row, partial, slices,
                                                                     numel, chunk, rows, sign);
  CUDA_CHECK_LAUNCH();
  const I64 words = (longest + (sign ? 31 : 3)) / (sign ? 32 : 4);
  if (words <= 0) return;
  const dim3 grid(blocks_for(words, kThreads), rows_grid(rows));
  if (sign)
    encode_rows<true><<<grid, kThreads, 0, stream>>>(table, row_words, first_row, residual, x, numel, chunk, rows);
  else
    encode_rows<false><<<grid, kThreads, 0, stream>>>(table, row_words, first_row, residual, x, numel, chunk, rows);
  CUDA_CHECK_LAUNCH();
}

void dequantize_sum_rows(float* y, const std::uint32_t* table, I64 numel, I64 chunk, I64 rows, CodecFormat format,
                         bool accumulate, cudaStream_t stream) {
  const I64 row_words = quantized_row_words(format, chunk);
  if (rows <= 0 || numel <= 0) return;
  dequantize_sum_kernel<<<blocks_for(numel, kThreads), kThreads, 0, stream>>>(
      y, table, numel, row_words, rows, format == CodecFormat::sign, accumulate);
  CUDA_CHECK_LAUNCH();
}

void dequantize_rows(float* x, const std::uint32_t* table, I64 numel, I64 chunk, CodecFormat format,
                     cudaStream_t stream) {
  const I64 row_words = quantized_row_words(format, chunk);
  if (numel <= 0) return;
  dequantize_rows_kernel<<<blocks_for(numel, kThreads), kThreads, 0, stream>>>(x, table, numel, chunk, row_words,
                                                                               format == CodecFormat::sign);
  CUDA_CHECK_LAUNCH();
}

void top_k_select(std::int32_t* indices, float* values, float* residual, const float* x, I64 n, I64 k,
                  const Workspace& workspace, cudaStream_t stream) {
  if (k < 0 || k > n)
    throw std::invalid_argument("top_k_select: k " + std::to_string(k) + " outside [0, " + std::to_string(n) + "]");
  if (n > std::numeric_limits<std::int32_t>::max())
    throw std::invalid_argument("top_k_select: 32-bit indices cannot address " + std::to_string(n) + " elements");
  if (k == 0) return;
  const int items = static_cast<int>(n), kept = static_cast<int>(k);
  int index_bits = 1;  // radix bits of an index < n
  while (index_bits < 31 && (I64{1} << index_bits) < n) ++index_bits;
  using U32 = std::uint32_t;
  std::size_t sort_bytes = 0, order_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(nullptr, sort_bytes, static_cast<const U32*>(nullptr),
                                                       static_cast<U32*>(nullptr), static_cast<const U32*>(nullptr),
                                                       static_cast<U32*>(nullptr), items, 0, 31, stream));
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, order_bytes, static_cast<const U32*>(nullptr),
                                            static_cast<U32*>(nullptr), kept, 0, index_bits, stream));
  const std::size_t temp_bytes = std::max(sort_bytes, order_bytes);
  Carve carve(workspace(4 * Carve::bytes(sizeof(U32) * static_cast<std::size_t>(n)) + Carve::bytes(temp_bytes)));
  U32* keys = carve.take<U32>(n);
  U32* sorted_keys = carve.take<U32>(n);
  U32* order = carve.take<U32>(n);
  U32* by_magnitude = carve.take<U32>(n);
  void* temp = carve.take<char>(static_cast<I64>(temp_bytes));
  magnitude_keys<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(keys, order, x, n);
  CUDA_CHECK_LAUNCH();
  // Bits [0, 31): the sign bit of |x| is always clear.
  CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp, sort_bytes, keys, sorted_keys, order, by_magnitude, items,
                                                       0, 31, stream));
  // The k largest, back into increasing index order (into `order`, free again).
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, order_bytes, by_magnitude, order, kept, 0, index_bits, stream));
  write_top_k<<<blocks_for(k, kThreads), kThreads, 0, stream>>>(indices, values, residual, x, order, k);
  CUDA_CHECK_LAUNCH();
}

ScatterSums scatter_sum_rows(I64 n, const std::uint32_t* table, I64 rows, I64 k, const Workspace& workspace,
                             cudaStream_t stream) {
  using Flag = unsigned long long;
  Carve carve(workspace(Carve::bytes(sizeof(Flag)) + Carve::bytes(sizeof(int) * static_cast<std::size_t>(rows)) +
                        Carve::bytes(sizeof(float) * static_cast<std::size_t>(n))));
  Flag* first_bad = carve.take<Flag>(1);
  int* unsorted = carve.take<int>(rows);
  float* y = carve.take<float>(n);
  ScatterSums sums;
  sums.y = y;
  if (n > 0) CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * static_cast<std::size_t>(n), stream));
  if (rows <= 0 || k <= 0) return sums;
  CUDA_CHECK(cudaMemsetAsync(first_bad, 0xFF, sizeof(Flag), stream));
  CUDA_CHECK(cudaMemsetAsync(unsorted, 0, sizeof(int) * static_cast<std::size_t>(rows), stream));
  check_rows<<<blocks_for(rows * k, kThreads), kThreads, 0, stream>>>(table, rows, k, n, first_bad, unsorted);
  CUDA_CHECK_LAUNCH();
  for (I64 r = 0; r < rows; ++r) {
    add_row<<<blocks_for(k, kThreads), kThreads, 0, stream>>>(y, n, table + r * 2 * k, k, unsorted + r);
    CUDA_CHECK_LAUNCH();
  }
  // The host must know before the op returns (the CPU throws from inside it): wait for the flag.
  Flag bad = 0;
  CUDA_CHECK(cudaMemcpyAsync(&bad, first_bad, sizeof bad, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bad == std::numeric_limits<Flag>::max()) return sums;
  sums.bad_row = static_cast<I64>(bad) / k;
  const I64 j = static_cast<I64>(bad) % k;
  CUDA_CHECK(cudaMemcpyAsync(&sums.bad_index, table + sums.bad_row * 2 * k + j, sizeof sums.bad_index,
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return sums;
}

void orthogonalize_columns(float* p, I64 rows, I64 cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  gram_schmidt<<<1, kOrthogonalizeThreads, 0, stream>>>(p, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void gaussian_fill(float* q, I64 n, std::uint64_t seed, cudaStream_t stream) {
  if (n <= 0) return;
  gaussian_kernel<<<blocks_for((n + 1) / 2, kThreads), kThreads, 0, stream>>>(q, n, seed);
  CUDA_CHECK_LAUNCH();
}

void subtract_scaled(float* x, const float* d, I64 n, float scale, cudaStream_t stream) {
  if (n <= 0) return;
  subtract_scaled_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(x, d, n, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
