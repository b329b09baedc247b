#include "sim/gpu_kernel_model.hpp"

#include <algorithm>
#include <initializer_list>
#include <type_traits>
#include <variant>

namespace tandem::sim::gpu {

namespace {

using I64 = std::int64_t;

I64 ceil_div(I64 a, I64 b) { return (a + b - 1) / b; }

// The 16-bit thread-block tiles cuBLAS picks among on Ampere and Hopper (User's Guide 2.3 lists
// 256×128, 128×256, 128×128, 128×64, 64×128 and 64×64 as the typical ones).
constexpr GemmTile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};

Seconds streaming_seconds(Bytes bytes, const DeviceProfile& device) {
  if (bytes <= 0) return 0.0;
  return bytes / (device.memory_bandwidth_bytes_per_s * device.gpu_kernels.memory_efficiency);
}

// ---- attention ----

// Megatron-LM's unfused attention (no flash): batched GEMMs over all s² scores of every head,
// its fused scaled-masked-softmax, and the dropout of the probabilities when there is one.
KernelTime unfused_attention(const ComputeOp& op, const AttentionArgs& a, const DeviceProfile& device) {
  const DType dt = op.compute_dtype;
  const double e = dtype_bytes(dt);
  const I64 bh = a.batch * a.heads;
  const I64 s = a.seq, kv_rows = a.kv_seq();  // query rows; key rows (the whole sequence under context parallelism)
  const I64 d = a.head_dim;
  const double scores = static_cast<double>(bh) * static_cast<double>(s) * static_cast<double>(kv_rows);
  const double qkv_bytes = static_cast<double>(bh) * static_cast<double>((s + kv_rows) * d) * e / 2;
  // Tensor conventions (strategies/ops.hpp): forward outputs {context, probs, [mask, dropped]},
  // backward inputs {qkv, [kv], context, probs, [mask, dropped], d_context} (the transformer
  // passes its context output; kernels/op_args.hpp reads the saved ones the same way).
  const std::size_t leading = a.cp_size > 1 ? 2 : 1;
  const bool dropout = a.backward ? op.inputs.size() > leading + 3 : op.outputs.size() > 2;

  // QKᵀ-shaped (s×t×d) and PV-shaped (s×d×t) batched GEMMs.
  const GemmPlan scores_gemm = plan_gemm(s, kv_rows, d, bh, 2 * qkv_bytes + scores * e, dt, device, e);
  const GemmPlan values_gemm = plan_gemm(s, d, kv_rows, bh, scores * e + 2 * qkv_bytes, dt, device, e);
  int kernels = 0;
  KernelTime t;
  auto gemm = [&](const GemmPlan& p) {
    t.flop_seconds += p.compute_s;
    t.seconds += p.seconds();
    ++kernels;
  };
  auto pass = [&](double bytes_per_score) {
    const Seconds m = streaming_seconds(scores * bytes_per_score, device);
    t.memory_seconds += m;
    t.seconds += m;
    ++kernels;
  };
  if (!a.backward) {
    gemm(scores_gemm);             // S = QKᵀ
    pass(2 * e);                   // fused scale + causal mask + softmax: read S, write P
    if (dropout) pass(2 * e + 1);  // read P, write the dropped P and the 1-byte mask
    gemm(values_gemm);             // O = P V
  } else {
    gemm(values_gemm);             // dV = Pᵀ dO
    gemm(scores_gemm);             // dP = dO Vᵀ
    if (dropout) pass(2 * e + 1);  // dP through the mask
    pass(3 * e);                   // softmax backward: read P and dP, write dS
    gemm(values_gemm);             // dQ = dS K
    gemm(values_gemm);             // dK = dSᵀ Q
  }
  t.seconds += kernels * device.launch_overhead_s;
  return t;
}

// Flash attention (one fused kernel each way): the causal FLOPs the op carries at the measured
// efficiency of the architecture's flash kernels, unless its bytes take longer. An older
// FlashAttention than the profile measured runs at the profile's speed for it, and every version
// computes over its kernel's head dim (flash_kernel_head_dim).
KernelTime flash_attention(const ComputeOp& op, const AttentionArgs& a, const DeviceProfile& device) {
  const auto& g = device.gpu_kernels;
  const double efficiency = a.backward ? g.flash_bwd_efficiency : g.flash_fwd_efficiency;
  const int version = g.flash_version_for(a.flash_version);
  // Unknown to the profile: scenarios::make_strategy refuses it first; priced as measured if not.
  const double known = g.flash_speed(a.flash_version);
  const double speed = known > 0 ? known : 1.0;
  const double padded = a.head_dim > 0 ? static_cast<double>(flash_kernel_head_dim(version, a.head_dim)) /
                                             static_cast<double>(a.head_dim)
                                       : 1.0;
  KernelTime t;
  t.flop_seconds = padded * op.flops / (device.peak_flops_per_s(op.compute_dtype) * efficiency * speed);
  t.memory_seconds = streaming_seconds(op.bytes, device);
  t.seconds = device.launch_overhead_s + std::max(t.flop_seconds, t.memory_seconds);
  return t;
}

// ---- streaming kernels with Megatron's fusions and passes ----

// Bytes Megatron's kernels move for an element-wise op Tandem issues on its own.
Bytes elementwise_bytes(const ComputeOp& op, const ElementwiseArgs& a, bool& runs_alone) {
  runs_alone = true;
  const double n = static_cast<double>(a.numel);
  switch (a.fn) {
    case ElementwiseFn::bias_add:
      if (!a.backward) {
        // Added in the GEMM's epilogue (QKV), in the fused bias-GeLU (fc1) or in the fused
        // bias-dropout-add (proj, fc2): no pass, no launch of its own.
        runs_alone = false;
        return 0;
      }
      return op.bytes;  // the bias gradient: a column sum over dY, a reduction of its own
    case ElementwiseFn::dropout:
      if (!a.backward) {
        // Fused bias-dropout-add: the dropped branch is neither written nor read back by the
        // residual add; what remains of the dropout is its 1-byte mask.
        runs_alone = false;
        return n;
      }
      return op.bytes;
    default: return op.bytes;
  }
}

// A fused cross-entropy (Megatron-Core's fused vocab-parallel kernel, apex's xentropy that
// flash-attn's training uses) reads the 16-bit logits once per pass: forward one pass (with the
// vocabulary split, a max pass and a sum-exp pass, the finish working on per-row stats), backward
// one read and one write of the logits' gradient.
Bytes fused_loss_bytes(const LossArgs& a, double e) {
  const double logits = static_cast<double>(a.tokens) * static_cast<double>(a.vocab);
  if (a.backward) return logits * 2 * e;
  return a.step == LossStep::shard_finish ? 0.0 : logits * e;
}

// Megatron's vocab-parallel cross-entropy on fp32 logits (the logits are cast to float first):
// forward cast (read e, write 4), max (read 4), subtract (4+4), exp (4+4), sum (read 4), divide
// (4+4); backward: scale the kept softmax by the loss gradient (4+4) and cast back (read 4,
// write e). Bytes per logit of this rank.
Bytes loss_bytes(const LossArgs& a, double e) {
  const double logits = static_cast<double>(a.tokens) * static_cast<double>(a.vocab);
  if (a.backward) return logits * (8 + 4 + e);
  switch (a.step) {
    case LossStep::shard_max: return logits * (e + 4 + 4);
    case LossStep::shard_sum_exp: return logits * (8 + 8 + 4);
    case LossStep::shard_finish: return logits * 8;
    case LossStep::full: break;
  }
  return logits * (e + 36);
}

// Megatron's mixed-precision optimizer step per parameter, grads of g bytes: inf check and
// unscale (fp16 loss scaling only: read + write g), the gradient norm (read g), fused Adam (read
// g, read and write fp32 master, m and v: 24), and the copy of the master into the 16-bit weight
// (read 4, write 2; none with a master kept as a remainder). Clipping rescales only when the norm
// exceeds the threshold: not counted. 16-bit gradients beside an fp32 master are cast to fp32
// first (read g, write 4; Megatron-LM's _copy_model_grads_to_main_grads, main_param.grad =
// model_param.grad.float(), at 6985e58 and in Megatron-Core's distributed optimizer; DeepSpeed's
// ZeRO optimizer likewise), and the step then reads that fp32 copy.
Bytes optimizer_bytes(const ComputeOp& op, const OptimizerArgs& a) {
  const DType param = op.inputs.empty() ? DType::bf16 : op.inputs[0].dtype;
  const double grad = op.inputs.size() > 1 ? dtype_bytes(op.inputs[1].dtype) : 4.0;
  // A master kept as a 16-bit remainder (ParallelConfig::master_param_remainders; inputs {param,
  // grad, master, m, v}) is stepped as the bf16 parameter and its remainder read and written, the
  // same 8 bytes as an fp32 master, and leaves no copy into the parameter to make.
  const bool remainder = op.inputs.size() > 4 && dtype_bytes(op.inputs[2].dtype) < 4;
  const bool fp32_master = param != DType::fp32 && !remainder;
  const bool cast_grad = fp32_master && grad < 4;
  const double g = cast_grad ? 4.0 : grad;  // what the step reads
  double per_element = (cast_grad ? grad + 4 : 0) + g + 24 + g;
  if (fp32_master) per_element += 4 + dtype_bytes(param);
  if (param == DType::fp16) per_element += 2 * g;
  return static_cast<double>(a.numel) * per_element;
}

KernelTime streaming(Bytes bytes, bool runs_alone, const DeviceProfile& device) {
  KernelTime t;
  t.memory_seconds = streaming_seconds(bytes, device);
  t.seconds = t.memory_seconds + (runs_alone ? device.launch_overhead_s : 0.0);
  return t;
}

// Transformer Engine's FP8 linear (transformer_engine/pytorch/module/linear.py, v1.8): the GEMM
// reads one-byte operands, and the 16-bit operand that is new in each call is quantized first by
// a kernel of its own, fp8_cast_transpose_fused, which reads it and writes its FP8 copy and the
// FP8 transpose the weight gradient will read: the input in the forward (or its recomputation),
// the output gradient in the data-gradient GEMM (grad_output_preprocess). The weight-gradient GEMM
// (the one that accumulates) reads both transposes as cast, and the weights are cast once per
// iteration (is_first_microbatch), not per GEMM: neither is priced here. The qkv and fc1 inputs
// arrive in FP8 already (LayerNormLinear writes the norm's output in FP8; under sequence
// parallelism the FP8 shard is what is gathered): only their transpose is priced. What
// quantization costs was measured in TE's
// GEMM profiling guide (docs/examples/gemm_profiling, 2026; a 5B layer config on an H200 NVL):
// 17% of FP8 current scaling's layer GEMM time (487 ms with quantization, 403 ms pre-quantized).
struct Fp8Gemm {
  Bytes operand_bytes = 0;  // what the GEMM kernel itself moves: FP8 A and B, C at its dtype
  KernelTime cast;          // the cast-transpose before it
};
Fp8Gemm fp8_gemm(const ComputeOp& op, const GemmArgs& a, double out_bytes, const DeviceProfile& device) {
  const double batch = static_cast<double>(std::max<I64>(a.batch, 1));
  const double a_elements = static_cast<double>(a.m) * static_cast<double>(a.k) * batch;
  const double b_elements = static_cast<double>(a.k) * static_cast<double>(a.n) * batch;
  Fp8Gemm g;
  g.operand_bytes = a_elements + b_elements + static_cast<double>(a.m) * static_cast<double>(a.n) * batch * out_bytes;
  if (!a.accumulate) {
    // An operand already in FP8 (the norm's output TE's LayerNormLinear writes in FP8) only needs
    // its transpose for the weight gradient: read 1, write 1.
    const double e = op.inputs.empty() ? 2.0 : dtype_bytes(op.inputs[0].dtype);
    g.cast = streaming(a_elements * (e > 1 ? e + 2 : 2), true, device);
  }
  return g;
}

// PyTorch's embedding backward (aten embedding_dense_backward) does not scatter into the weight's
// gradient: it allocates a dense gradient of the whole table, zero-filled, scatters the tokens'
// rows into it, and the framework then adds that table into the weight's gradient buffer
// (Megatron's main_grad.add_ in its gradient hook, or autograd's AccumulateGrad). Beyond the rows
// the op already moves, the table is written once (the zero fill, in the incoming gradient's
// dtype e), read once, and read and written once more in the buffer's dtype g: three kernels.
KernelTime embedding_backward(const ComputeOp& op, const EmbeddingArgs& a, const DeviceProfile& device) {
  const double e = op.inputs.empty() ? 2.0 : dtype_bytes(op.inputs[0].dtype);
  const double g = op.outputs.empty() ? e : dtype_bytes(op.outputs[0].dtype);
  const double table = static_cast<double>(a.vocab) * static_cast<double>(a.hidden);
  KernelTime t;
  t.memory_seconds = streaming_seconds(op.bytes + table * (2 * e + 2 * g), device);
  t.seconds = t.memory_seconds + 3 * device.launch_overhead_s;
  return t;
}

// The passes around a linear layer's GEMM (GemmArgs::WeightPass), each a kernel of its own, per
// weight element, e the 16-bit compute dtype's bytes and g the main gradient's:
//   weight_cast    the fp32 weight cast to 16 bits: read 4, write e;
//   grad_add       main_grad.add_(grad): read e and g, write g;
//   grad_cast_add  grad.to(fp32) (read e, write 4), then the add into the main gradient (read 4
//                  and g, write g).
KernelTime weight_passes(const GemmArgs& a, DType dtype, DType grad_dtype, const DeviceProfile& device) {
  const double e = dtype_bytes(dtype), g = dtype_bytes(grad_dtype);
  const auto batch = static_cast<double>(std::max<std::int64_t>(a.batch, 1));
  const double weight = static_cast<double>(a.k) * static_cast<double>(a.n) * batch;    // B of a forward
  const double gradient = static_cast<double>(a.m) * static_cast<double>(a.n) * batch;  // C of a weight gradient
  switch (a.weight_pass) {
    case GemmArgs::WeightPass::none: break;
    case GemmArgs::WeightPass::weight_cast: return streaming(weight * (4 + e), true, device);
    case GemmArgs::WeightPass::grad_add: return streaming(gradient * (e + 2 * g), true, device);
    case GemmArgs::WeightPass::grad_cast_add: {  // two kernels: the cast's bytes and the add's, two launches
      KernelTime t = streaming(gradient * ((e + 4) + (4 + 2 * g)), true, device);
      t.seconds += device.launch_overhead_s;
      return t;
    }
  }
  return {};
}

}  // namespace

std::int64_t flash_kernel_head_dim(int version, std::int64_t head_dim) {
  auto first_at_least = [&](std::initializer_list<std::int64_t> dims) {
    for (std::int64_t d : dims)
      if (head_dim <= d) return d;
    return head_dim;  // beyond the version's kernels: make_strategy refuses it
  };
  switch (version) {
    case 1: return first_at_least({32, 64, 128});                // v1.0.9 fmha_api.cpp, run_fmha_fwd
    case 2: return (head_dim + 31) / 32 * 32;                     // v2.0.0 flash_api.cpp, head_size_rounded
    case 3: return first_at_least({64, 96, 128, 192, 256});      // hopper/flash_api.cpp, round_up_headdim
    default: return head_dim;
  }
}

double gemm_tile_efficiency(const GemmTile& tile) {
  // A tile loads (m + n)·k operands for m·n·k multiply-adds: its reuse m·n / (m + n) bounds how
  // fast L2 and shared memory can feed the tensor cores. The User's Guide (2.3) reports tiles of
  // 128×128 and larger near the best GEMM speed and smaller ones slower; below 128×128 the tile
  // is taken as fed-bound, its speed in proportion to its reuse (128×64: 2/3, 64×64: 1/2).
  const double reuse = static_cast<double>(tile.m) * tile.n / (tile.m + tile.n);
  constexpr double kFullReuse = 128.0 * 128.0 / (128 + 128);
  return std::min(1.0, reuse / kFullReuse);
}

namespace {

// A tile's fixed cost, in k-steps of its main loop: the prologue that fills the multistage
// pipeline before the first MMA (CUTLASS's SM80 16-bit default, default_gemm_configuration.h:
// 3 stages of k = 64, two loaded ahead: 128) and the epilogue that writes the output tile at the
// SM's share of the HBM bandwidth while the tensor cores wait. Per output element the epilogue
// moves `out_bytes` in the time a k-step of 2 FLOPs takes at the SM's peak, so in k-steps it is
// out_bytes · peak / (2 · achievable bandwidth), whatever the tile (A100: ~170, H100: ~330).
double tile_overhead_k(double out_bytes, DType dtype, const DeviceProfile& device) {
  constexpr double kPrologueK = 128;
  const double bandwidth = device.memory_bandwidth_bytes_per_s * device.gpu_kernels.memory_efficiency;
  return kPrologueK + out_bytes * device.peak_flops_per_s(dtype) / (2 * bandwidth);
}

// Waves × one tile's time for the fastest tile, the main loop at `mainloop_efficiency` of the
// SM's peak.
GemmPlan fastest_tile(I64 m, I64 n, I64 k, I64 batch, double out_bytes, DType dtype, double mainloop_efficiency,
                      const DeviceProfile& device) {
  const int sms = device.gpu_kernels.sm_count;
  const double sm_flops_per_s = device.peak_flops_per_s(dtype) * mainloop_efficiency / sms;
  const double k_steps = static_cast<double>(std::max<I64>(k, 1)) + tile_overhead_k(out_bytes, dtype, device);
  GemmPlan best;
  for (const GemmTile& tile : kTiles) {
    GemmPlan p;
    p.tile = tile;
    p.tiles = ceil_div(std::max<I64>(m, 1), tile.m) * ceil_div(std::max<I64>(n, 1), tile.n) * std::max<I64>(batch, 1);
    p.waves = ceil_div(p.tiles, sms);
    const double tile_flops = 2.0 * tile.m * tile.n * k_steps;
    p.compute_s = static_cast<double>(p.waves) * tile_flops / (sm_flops_per_s * gemm_tile_efficiency(tile));
    if (best.tiles == 0 || p.compute_s < best.compute_s) best = p;
  }
  return best;
}

// The main loop's efficiency that reproduces the profile's measured GEMM: gemm_efficiency was
// measured at gemm_efficiency_shape, whose time includes its own waves and tile overheads.
double mainloop_efficiency(DType dtype, const DeviceProfile& device) {
  const auto& g = device.gpu_kernels;
  const auto [m, n, k] = g.gemm_efficiency_shape;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const Seconds measured = flops / (device.peak_flops_per_s(dtype) * g.gemm_efficiency_for(dtype));
  const Seconds at_full_speed = fastest_tile(m, n, k, 1, dtype_bytes(DType::bf16), dtype, 1.0, device).compute_s;
  return std::min(1.0, at_full_speed / measured);
}

}  // namespace

GemmPlan plan_gemm(I64 m, I64 n, I64 k, I64 batch, Bytes bytes, DType dtype, const DeviceProfile& device,
                   double out_bytes) {
  GemmPlan p = fastest_tile(m, n, k, batch, out_bytes, dtype, mainloop_efficiency(dtype, device), device);
  // gemm_efficiency is the best of a sweep over shapes (Bekman's "Maximum Achievable Matmul FLOPS":
  // the fastest shape found, mean of 100 runs after 50 warm-ups), so no shape runs faster. Without
  // this ceiling the tile model lets a GEMM whose k is longer than the sweep's (A100: shapes up to
  // 5376, per ml-engineering's compute/accelerator/benchmarks/README.md) amortise its tiles'
  // prologue and epilogue beyond anything measured (a weight-gradient GEMM with k = 32,768 tokens
  // came out at 91% of the A100's peak, above the 86.9% measured best).
  const double flops = 2.0 * static_cast<double>(std::max<I64>(m, 1)) * static_cast<double>(std::max<I64>(n, 1)) *
                       static_cast<double>(std::max<I64>(k, 1)) * static_cast<double>(std::max<I64>(batch, 1));
  p.compute_s =
      std::max(p.compute_s, flops / (device.peak_flops_per_s(dtype) * device.gpu_kernels.gemm_efficiency_for(dtype)));
  p.memory_s = streaming_seconds(bytes, device);
  return p;
}

KernelTime kernel_time(const ComputeOp& op, const DeviceProfile& device) {
  return std::visit(
      [&](const auto& a) -> KernelTime {
        using Args = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<Args, GemmArgs>) {
          // The epilogue writes C (and reads it first when accumulating, e.g. into fp32 main grads).
          const DType c = op.outputs.empty() ? op.compute_dtype : op.outputs[0].dtype;
          double out_bytes = dtype_bytes(c) * (a.accumulate ? 2.0 : 1.0);
          // The framework's passes around it (GemmArgs::WeightPass), each a kernel of its own; a
          // weight gradient accumulated by a pass leaves the GEMM as a 16-bit tensor.
          const KernelTime passes = weight_passes(a, op.compute_dtype, c, device);
          if (a.weight_pass == GemmArgs::WeightPass::grad_add || a.weight_pass == GemmArgs::WeightPass::grad_cast_add)
            out_bytes = dtype_bytes(op.compute_dtype);
          // An FP8 GEMM moves one-byte operands; Transformer Engine's cast before it is its own kernel.
          const Fp8Gemm fp8 = a.fp8() ? fp8_gemm(op, a, out_bytes, device) : Fp8Gemm{};
          GemmPlan p = plan_gemm(a.m, a.n, a.k, a.batch, a.fp8() ? fp8.operand_bytes : op.bytes, op.compute_dtype,
                                 device, out_bytes);
          // Communication overlapping it holds some SMs (GemmArgs::overlap_comm_sms): the math
          // runs on the others.
          const int sms = device.gpu_kernels.sm_count;
          if (a.overlap_comm_sms > 0 && a.overlap_comm_sms < sms)
            p.compute_s *= static_cast<double>(sms) / (sms - a.overlap_comm_sms);
          return {device.launch_overhead_s + p.seconds() + passes.seconds + fp8.cast.seconds, p.compute_s,
                  p.memory_s + passes.memory_seconds + fp8.cast.memory_seconds};
        } else if constexpr (std::is_same_v<Args, AttentionArgs>) {
          return a.flash ? flash_attention(op, a, device) : unfused_attention(op, a, device);
        } else if constexpr (std::is_same_v<Args, ElementwiseArgs>) {
          bool alone = true;
          const Bytes bytes = elementwise_bytes(op, a, alone);
          return streaming(bytes, alone, device);
        } else if constexpr (std::is_same_v<Args, LossArgs>) {
          // The op computes in fp32; its first input is the logits in the activation dtype.
          const DType logits = op.inputs.empty() ? DType::bf16 : op.inputs[0].dtype;
          const double e = dtype_bytes(logits);
          return streaming(a.fused ? fused_loss_bytes(a, e) : loss_bytes(a, e), true, device);
        } else if constexpr (std::is_same_v<Args, OptimizerArgs>) {
          return streaming(optimizer_bytes(op, a), true, device);
        } else if constexpr (std::is_same_v<Args, EmbeddingArgs>) {
          return a.backward ? embedding_backward(op, a, device) : streaming(op.bytes, true, device);
        } else {  // norms, embeddings, copies: their bytes at the streaming rate
          return streaming(op.bytes, true, device);
        }
      },
      op.args);
}

}  // namespace tandem::sim::gpu
