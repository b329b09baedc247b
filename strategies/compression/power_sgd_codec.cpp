// PowerSGD (Vogels et al. 2019, arXiv 1905.13727, Algorithm 1 with error feedback), as
// PyTorch's powerSGD_hook runs it: every gradient of two or more dimensions, seen as a matrix
// M [rows = shape[0], cols = the rest], is approximated at rank r = min(rank, rows, cols) by one
// step of subspace iteration, warm-started from the previous step's Q:
//   M += residual (error feedback)     P = M·Q            all-reduce P       (round 0)
//   P = orthogonalize(P)               Q = Mᵀ·P           all-reduce Q       (round 1)
//   gradient = P·Qᵀ (the sum's approximation)            residual = M − gradient / N
// so the wire carries (rows + cols)·r numbers per matrix instead of rows·cols. Like PyTorch, a
// matrix is compressed only when rows·cols > min_compression_rate·(rows + cols)·r; the others
// (and every vector: biases, norm weights) are all-reduced as they are with the round-0 P's.
// With r = min(rows, cols) the approximation is exact (tested): P spans M's column space.
// The residual follows PyTorch (the local M minus this rank's share of the global
// approximation), so that the residuals summed over ranks are exactly what the sum lost.
#include <algorithm>

#include "strategies/compression/codec_ops.hpp"
#include "strategies/compression/codecs.hpp"

namespace tandem {
namespace {

// FNV-1a: a stable hash of a bucket's label, so that every rank draws the same initial Q.
std::uint64_t stable_hash(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

class PowerSgdCodec final : public GradientCodec {
 public:
  explicit PowerSgdCodec(const CompressionConfig& config) : config_(config) {}

  int rounds() const override { return 2; }

  Handle round(Runtime& rt, int round, const CodecBucket& b, Handle previous) override {
    State& s = state(rt, b);
    if (round == 0) {
      std::vector<Tensor> wire = s.uncompressed;
      for (const Factors& f : s.factors) {
        CodecArgs pack{CodecStep::pack, CodecFormat::fp32, f.rows * f.cols};
        pack.accumulate = config_.use_error_feedback;
        codec_ops::codec(rt, Phase::backward, f.label + ".pack", pack, {f.gradient}, {f.m});
        ops::gemm(rt, Phase::backward, f.label + ".p", f.m, f.q, f.p, GemmArgs{f.rows, f.rank, f.cols});
        wire.push_back(f.p);
      }
      return ops::all_reduce(rt, Phase::backward, b.label + ".p.all_reduce", wire, b.group, on_dp_stream(rt));
    }
    if (s.factors.empty()) return previous;
    std::vector<Tensor> wire;
    Issue issue = after_handle(previous);
    for (const Factors& f : s.factors) {
      CodecArgs orth{CodecStep::orthogonalize, CodecFormat::fp32, f.rows * f.rank};
      orth.cols = f.rank;
      codec_ops::codec(rt, Phase::backward, f.label + ".orthogonalize", orth, {f.p}, {f.p}, issue);
      issue = {};
      GemmArgs mt_p{f.cols, f.rank, f.rows};
      mt_p.trans_a = true;
      ops::gemm(rt, Phase::backward, f.label + ".q", f.m, f.p, f.q, mt_p);
      wire.push_back(f.q);
    }
    return ops::all_reduce(rt, Phase::backward, b.label + ".q.all_reduce", wire, b.group, on_dp_stream(rt));
  }

  void finish(Runtime& rt, const CodecBucket& b, Handle last) override {
    const State& s = states_.at(b.label);
    Issue issue = after_handle(last);
    for (const Factors& f : s.factors) {
      GemmArgs p_qt{f.rows, f.cols, f.rank};
      p_qt.trans_b = true;
      ops::gemm(rt, Phase::backward, f.label + ".decompress", f.p, f.q, f.gradient, p_qt, issue);
      issue = {};
      if (!config_.use_error_feedback) continue;
      CodecArgs keep{CodecStep::subtract_scaled, CodecFormat::fp32, f.rows * f.cols};
      keep.scale = 1.0f / static_cast<float>(b.group.size());
      codec_ops::codec(rt, Phase::backward, f.label + ".residual", keep, {f.gradient}, {f.m});
    }
    if (s.factors.empty()) rt.wait(last);
  }

 private:
  struct Factors {
    std::string label;
    Tensor gradient;
    std::int64_t rows = 0, cols = 0, rank = 0;
    Tensor m, p, q;  // fp32 [rows, cols] (M: residual + gradient), [rows, r], [cols, r]
  };
  struct State {
    std::vector<Factors> factors;
    std::vector<Tensor> uncompressed;
  };

  State& state(Runtime& rt, const CodecBucket& b) { return states_.get(b.label, [&] { return make_state(rt, b); }); }

  State make_state(Runtime& rt, const CodecBucket& b) const {
    State s;
    for (std::size_t j = 0; j < b.gradients.size(); ++j) {
      const Tensor& g = b.gradients[j];
      Factors f;
      f.rows = g.shape.size() >= 2 ? g.shape[0] : 0;
      f.cols = f.rows > 0 ? g.numel() / f.rows : 0;
      f.rank = std::min<std::int64_t>({config_.matrix_approximation_rank, f.rows, f.cols});
      const double full = static_cast<double>(f.rows) * static_cast<double>(f.cols);
      const double compressed = static_cast<double>(f.rows + f.cols) * static_cast<double>(f.rank);
      if (f.rank < 1 || !(compressed * config_.min_compression_rate < full)) {
        s.uncompressed.push_back(g);
        continue;
      }
      f.label = b.label + ".g" + std::to_string(j);
      f.gradient = g;
      f.m = rt.alloc(f.label + ".powersgd_error", {f.rows, f.cols}, DType::fp32, kept_category(config_.use_error_feedback));
      f.p = rt.alloc(f.label + ".powersgd_p", {f.rows, f.rank}, DType::fp32, MemCategory::comm_buffers);
      f.q = rt.alloc(f.label + ".powersgd_q", {f.cols, f.rank}, DType::fp32, MemCategory::optimizer_state);
      CodecArgs draw{CodecStep::gaussian, CodecFormat::fp32, f.cols * f.rank};
      draw.seed = config_.seed ^ stable_hash(f.label);
      codec_ops::codec(rt, Phase::backward, f.label + ".q_init", draw, {}, {f.q});
      s.factors.push_back(f);
    }
    return s;
  }

  CompressionConfig config_;
  BucketStates<State> states_;
};

}  // namespace

std::unique_ptr<GradientCodec> make_power_sgd_codec(const CompressionConfig& config) {
  return std::make_unique<PowerSgdCodec>(config);
}

}  // namespace tandem
