#include "strategies/compression/codec_ops.hpp"

namespace tandem::codec_ops {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

Bytes sum_bytes(const std::vector<Tensor>& tensors, std::size_t first = 0) {
  Bytes total = 0;
  for (std::size_t i = first; i < tensors.size(); ++i) total += tensors[i].bytes();
  return total;
}

Bytes first_dtype_bytes(const std::vector<Tensor>& tensors) {
  return tensors.empty() ? dtype_bytes(DType::fp32) : dtype_bytes(tensors.front().dtype);
}

// 32-bit words of the rows a step writes or reads.
double table_words(const CodecArgs& a) {
  if (a.step == CodecStep::top_k) return 2.0 * d(a.k);
  if (a.step == CodecStep::scatter_sum) return d(a.rows) * 2.0 * d(a.k);
  const std::int64_t rows = a.step == CodecStep::dequantize_concat ? (a.numel + a.chunk - 1) / a.chunk : a.rows;
  return d(rows) * d(quantized_row_words(a.format, a.chunk));
}

}  // namespace

Flops codec_flops(const CodecArgs& a) {
  const double n = d(a.numel);
  switch (a.step) {
    case CodecStep::pack: return a.accumulate ? n : 0.0;
    case CodecStep::unpack: return 0.0;
    case CodecStep::quantize: return 3.0 * n;  // + n with error feedback (codec_cost knows)
    case CodecStep::dequantize_sum: return 2.0 * n * d(a.rows);
    case CodecStep::dequantize_concat: return n;
    case CodecStep::top_k: return kTopKPasses * n;
    case CodecStep::scatter_sum: return d(a.rows) * d(a.k);
    case CodecStep::orthogonalize: {
      const double c = d(a.cols), rows = a.cols > 0 ? n / c : 0.0;
      return rows * (3.0 * c + 2.0 * c * (c - 1.0));
    }
    case CodecStep::gaussian: return 0.0;
    case CodecStep::subtract_scaled: return 2.0 * n;
  }
  return 0.0;
}

ops::Cost codec_cost(const CodecArgs& a, const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  const double n = d(a.numel);
  constexpr double kWord = 4.0;  // block tables are 32-bit words
  const bool residual = out.size() > 1;  // quantize / top_k with error feedback
  ops::Cost c{codec_flops(a), 0.0};
  switch (a.step) {
    case CodecStep::pack:
      c.bytes = sum_bytes(in) + n * first_dtype_bytes(out) * (a.accumulate ? 2.0 : 1.0);
      break;
    case CodecStep::unpack: c.bytes = n * first_dtype_bytes(in) + sum_bytes(out); break;
    case CodecStep::quantize:
      c.bytes = 2.0 * n * first_dtype_bytes(in) + kWord * table_words(a) + (residual ? n * kWord : 0.0);
      if (residual) c.flops += n;
      break;
    case CodecStep::dequantize_sum: c.bytes = kWord * table_words(a) + 2.0 * n * first_dtype_bytes(out); break;
    case CodecStep::dequantize_concat: c.bytes = kWord * table_words(a) + sum_bytes(out); break;
    case CodecStep::top_k:
      c.bytes = kTopKPasses * n * first_dtype_bytes(in) + kWord * table_words(a) + (residual ? d(a.k) * kWord : 0.0);
      break;
    case CodecStep::scatter_sum: {
      const Bytes g = first_dtype_bytes(out);
      c.bytes = sum_bytes(out) + d(a.rows) * d(a.k) * (2.0 * kWord + 2.0 * g);
      break;
    }
    case CodecStep::orthogonalize: {
      const double cols = d(a.cols), rows = a.cols > 0 ? n / cols : 0.0;
      c.bytes = kWord * rows * (3.0 * cols + 5.0 * cols * (cols - 1.0) / 2.0);
      break;
    }
    case CodecStep::gaussian: c.bytes = n * first_dtype_bytes(out); break;
    case CodecStep::subtract_scaled: c.bytes = n * first_dtype_bytes(in) + 2.0 * n * first_dtype_bytes(out); break;
  }
  return c;
}

Handle codec(Runtime& rt, Phase phase, std::string label, const CodecArgs& args, std::vector<Tensor> inputs,
             std::vector<Tensor> outputs, const Issue& issue) {
  const ops::Cost cost = codec_cost(args, inputs, outputs);
  ComputeOp op;
  op.kind = OpKind::elementwise;
  op.phase = phase;
  op.label = std::move(label);
  op.args = args;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  op.compute_dtype = DType::fp32;
  return rt.compute(std::move(op), issue);
}

}  // namespace tandem::codec_ops
