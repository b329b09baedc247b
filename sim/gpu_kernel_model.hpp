// How long one kernel takes on a GPU whose profile carries `gpu_kernels:` constants
// (platforms/device.hpp), kernel by kernel as Megatron-LM runs a training step on it. The roofline
// of sim/cost_model.hpp treats every op as its FLOPs or its bytes at a fixed fraction of the peak;
// this model says why a kernel falls short of the peak:
//
//   GEMM       cuBLAS splits C[m,n] into thread-block tiles and runs them in waves of one tile
//              per SM (NVIDIA, "Matrix Multiplication Background User's Guide", ch. 3: tile and
//              wave quantization). A GEMM takes ceil(tiles / SMs) waves of one tile's work; the
//              tile is the one of cuBLAS's usual shapes that finishes first. A tile costs its k
//              steps plus a fixed prologue/epilogue (so a short k is slow), at a main-loop speed
//              that reproduces the profile's measured GEMM, scaled by the tile's operand reuse
//              (see gemm_tile_efficiency). A GEMM that moves more bytes than it computes is bound
//              by memory_efficiency of the HBM bandwidth instead.
//   attention  flash (FlashAttention-1/2/3, cuDNN): the causal FLOPs at the profile's measured
//              forward/backward efficiency for its flash_version (the version before it at
//              flash_previous_version_speed), over the head dim the version's kernels pad to. Unfused (Megatron-LM 2021): the batched GEMMs QKᵀ and
//              PV over all s² scores (the causal mask does not skip work) plus Megatron's fused
//              scaled-masked-softmax and the dropout of the probabilities, each a pass over the
//              s² matrices at HBM speed.
//   streaming  norms, element-wise, embedding, memcpy: bytes at memory_efficiency, with Megatron's
//              fusions (bias-add in the GEMM epilogue or the fused bias-GeLU / bias-dropout-add
//              kernels: the bias pass moves nothing of its own; the dropout before the residual
//              add does not write and re-read its output). An embedding's backward builds PyTorch's
//              dense gradient of the whole table (zero fill, scatter, add into the gradient buffer).
//   loss       Megatron's vocab-parallel cross-entropy: the fp32 passes it makes over the logits
//              (cast, max, subtract, exp, sum, divide forward; one-hot subtract, scale, cast back),
//              or a fused kernel's one read (and one write backward) of the 16-bit logits.
//   passes     what a framework runs around a linear layer's GEMM (GemmArgs::WeightPass): PyTorch
//              AMP's weight cast, an unfused accumulation of the weight gradient; before an FP8
//              GEMM, Transformer Engine's cast-transpose of its 16-bit input (forward) or output
//              gradient (data gradient), which the GEMM then reads as one-byte operands.
//   optimizer  Megatron's mixed-precision step per parameter: unscale and inf check (fp16 only),
//              gradient norm, clipping, fused Adam, copy of the fp32 master into the 16-bit weights
//              (none when the master is kept as a 16-bit remainder).
// Every kernel that runs on its own adds the profile's launch overhead.
#pragma once

#include <cstdint>

#include "common/units.hpp"
#include "platforms/device.hpp"
#include "strategies/op.hpp"

namespace tandem::sim::gpu {

// cuBLAS's usual thread-block tile for a 16-bit GEMM (User's Guide, 2.3).
struct GemmTile {
  int m = 0;
  int n = 0;
};

// How a GEMM ran: the tile chosen, its waves over the SMs, and its time without launch overhead.
struct GemmPlan {
  GemmTile tile;
  std::int64_t tiles = 0;
  std::int64_t waves = 0;
  Seconds compute_s = 0;  // waves × one tile's time
  Seconds memory_s = 0;   // operand bytes at the achievable HBM bandwidth
  Seconds seconds() const { return compute_s > memory_s ? compute_s : memory_s; }
};

// The head dim FlashAttention `version` computes a head of `head_dim` at: its kernels exist for a
// few head dims and a head runs in the smallest one that holds it, padded (v1: 32, 64, 128; v2:
// multiples of 32; v3: 64, 96, 128, 192, 256). Version 0 (unknown) pads nothing.
std::int64_t flash_kernel_head_dim(int version, std::int64_t head_dim);

// The largest head dim FlashAttention `version` has a kernel for (v1: 128; v2, v3: 256).
inline std::int64_t flash_max_head_dim(int version) { return version == 1 ? 128 : 256; }

// Fraction of a tile's SM peak the tile reaches relative to a 128×128 tile (1 from 128×128 up).
double gemm_tile_efficiency(const GemmTile& tile);

// The fastest tile for an m×n×k GEMM (batch independent ones) of `bytes` operand traffic whose
// epilogue writes `out_bytes` per output element. A tile's time is its k-steps plus a fixed
// prologue/epilogue cost (in k-steps), at a main-loop speed set so that the profile's measured
// GEMM (gemm_efficiency at gemm_efficiency_shape) comes out as measured.
GemmPlan plan_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, Bytes bytes,
                   DType dtype, const DeviceProfile& device, double out_bytes = 2);

struct KernelTime {
  Seconds seconds = 0;         // including launch overhead
  Seconds flop_seconds = 0;    // the arithmetic-bound part
  Seconds memory_seconds = 0;  // the memory-bound part
};

// The op's time on a GPU profile with gpu_kernels.present().
KernelTime kernel_time(const ComputeOp& op, const DeviceProfile& device);

}  // namespace tandem::sim::gpu
