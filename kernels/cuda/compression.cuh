// CUDA kernels of the gradient-compression codecs (strategies/compression/): the same math as
// the CPU references kernels/cpu/compression_{quantize,topk,lowrank}.hpp, whose headers state
// the contract, on the block-table wire format of strategies/compression/codec_args.hpp.
// compression_dispatch.cpp maps a codec op's tensors onto these calls.
//
// Equal to the CPU bit for bit: fp16 / bf16 rounding (the CPU's integer bf16 rounding, NaN kept),
// int8 scales and codes and their residuals (no FMA contraction where the CPU rounds twice),
// 1-bit codes, dequantized sums (rows added in the CPU's order), top-k's selection (the k largest
// |x|, ties to the lower index, written by index), scatter sums (rows added one after another in
// the CPU's order), subtract_scaled. Equal to within the last float bit, rarely: the sign scale
// and Gram-Schmidt's norms and dot products, summed in double in another order than the CPU's
// sequential loop (the double sums round differently, the float cast almost never shows it), and
// the Gaussian draws (CUDA's double log / sin / cos are within 1-2 ulp of glibc's). Every
// function enqueues on `stream` and returns at once, except scatter_sum_rows (it reports a bad
// index to the host). NaN: a NaN the kernels pass on keeps the CPU's bits; one an addition makes
// (an accumulating pack over a NaN) is the GPU's canonical NaN, where x86 passes an operand's on.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention.cuh"  // Workspace
#include "strategies/compression/codec_args.hpp"

namespace tandem::kernels::cuda {

// y[i] = round(accumulate ? y[i] + x[i] : x[i]) to `format` (fp16 / bf16; fp32 copies) for i < n.
// x may equal y.
void codec_round(float* y, const float* x, std::int64_t n, CodecFormat format, bool accumulate, cudaStream_t stream);

// Encodes `rows` chunks of `chunk` elements of x[0:numel] (format int8 or sign; the last chunks
// may hold fewer valid elements, or none) into table rows first_row.. (row_words words each,
// quantized_row_words). With `residual` (may alias x), writes x − decode there for every valid
// element. Words of a row past its valid codes are left as they are, as on the CPU.
void quantize_rows(std::uint32_t* table, float* residual, const float* x, std::int64_t numel, std::int64_t chunk,
                   std::int64_t rows, std::int64_t first_row, CodecFormat format, const Workspace& workspace,
                   cudaStream_t stream);
// y[0:numel] (+)= Σ over `rows` table rows of their decode (numel <= chunk), added row by row.
void dequantize_sum_rows(float* y, const std::uint32_t* table, std::int64_t numel, std::int64_t chunk,
                         std::int64_t rows, CodecFormat format, bool accumulate, cudaStream_t stream);
// x[0:numel] = the decoded rows one after another (row r holds elements [r·chunk, (r+1)·chunk)).
void dequantize_rows(float* x, const std::uint32_t* table, std::int64_t numel, std::int64_t chunk, CodecFormat format,
                     cudaStream_t stream);

// indices[0:k], values[0:k] = the k entries of largest |x| among x[0:n] (ties to the lower
// index), in increasing index order; with `residual` (may alias x) those entries are zeroed
// there. 0 <= k <= n <= INT32_MAX.
void top_k_select(std::int32_t* indices, float* values, float* residual, const float* x, std::int64_t n,
                  std::int64_t k, const Workspace& workspace, cudaStream_t stream);

// The dense sum of a top-k table, and its first out-of-range entry in row order (bad_row < 0:
// none).
struct ScatterSums {
  const float* y = nullptr;
  std::int64_t bad_row = -1;
  std::int32_t bad_index = 0;
};
// y[0:n] = 0, then for each of the `rows` top-k rows ([k indices, k values], 2k words each) in
// order, y[index] += value; y lives in the workspace (valid until its next request). Entries
// whose index falls outside [0, n) are skipped and the first is reported: this call waits for
// the stream to read that back.
ScatterSums scatter_sum_rows(std::int64_t n, const std::uint32_t* table, std::int64_t rows, std::int64_t k,
                             const Workspace& workspace, cudaStream_t stream);

// Modified Gram-Schmidt on the columns of row-major p [rows, cols], in place (PyTorch's
// _orthogonalize_gram_schmidt with epsilon 1e-8, as kernels/cpu/compression_lowrank.hpp).
void orthogonalize_columns(float* p, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// q[0:n] = standard normal draws, the CPU's function of (seed, i) (SplitMix64 + Box-Muller).
void gaussian_fill(float* q, std::int64_t n, std::uint64_t seed, cudaStream_t stream);
// x[0:n] -= scale · d[0:n]
void subtract_scaled(float* x, const float* d, std::int64_t n, float scale, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
