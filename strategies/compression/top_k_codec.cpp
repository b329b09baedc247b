// Top-k sparsification with error feedback (Stich et al. 2018, arXiv 1809.07599; Lin et al.
// 2018, arXiv 1712.01887): each rank sends the k = ceil(topk_ratio · n) entries of largest
// magnitude of its bucket (plus its residual) as (index, value) pairs, all-gathered, since
// the ranks' index sets differ and cannot be summed on the way (a sparse all-gather); every
// rank adds all N sets into the dense sum. Each rank receives (N−1)·k pairs of 8 bytes: the
// ring all-reduce of the dense bucket moves 2·(N−1)/N·n·|g| per rank, so top-k pays while
// N·8·ratio < 2·|g|: below about |g| / (4·ratio) ranks (1% of bf16 gradients: 50 ranks).
// Error feedback keeps the entries not sent for later steps; without it they are dropped.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "strategies/compression/codec_ops.hpp"
#include "strategies/compression/codecs.hpp"

namespace tandem {
namespace {

class TopKCodec final : public GradientCodec {
 public:
  explicit TopKCodec(const CompressionConfig& config)
      : ratio_(config.topk_ratio), error_feedback_(config.use_error_feedback) {}

  int rounds() const override { return 1; }

  Handle round(Runtime& rt, int, const CodecBucket& b, Handle) override {
    State& s = state(rt, b);
    CodecArgs pack{CodecStep::pack, CodecFormat::fp32, s.numel};
    pack.accumulate = error_feedback_;
    codec_ops::codec(rt, Phase::backward, b.label + ".pack", pack, b.gradients, {s.residual});
    CodecArgs select{CodecStep::top_k, CodecFormat::fp32, s.numel};
    select.first_row = std::max(0, b.group.index_of(rt.rank()));
    select.k = s.k;
    std::vector<Tensor> out{s.pairs};
    if (error_feedback_) out.push_back(s.residual);
    codec_ops::codec(rt, Phase::backward, b.label + ".top_k", select, {s.residual}, out);
    return ops::all_gather(rt, Phase::backward, b.label + ".all_gather", s.pairs, b.group, on_dp_stream(rt));
  }

  void finish(Runtime& rt, const CodecBucket& b, Handle last) override {
    const State& s = states_.at(b.label);
    CodecArgs scatter{CodecStep::scatter_sum, CodecFormat::fp32, s.numel};
    scatter.rows = b.group.size();
    scatter.k = s.k;
    codec_ops::codec(rt, Phase::backward, b.label + ".scatter_sum", scatter, {s.pairs}, b.gradients,
                     after_handle(last));
  }

 private:
  struct State {
    std::int64_t numel = 0, k = 0;
    Tensor residual;  // fp32 [numel]: the residual (error feedback) or the work buffer
    Tensor pairs;     // int32 [members, 2k]: each member's indices then values
  };

  State& state(Runtime& rt, const CodecBucket& b) { return states_.get(b.label, [&] { return make_state(rt, b); }); }

  State make_state(Runtime& rt, const CodecBucket& b) const {
    State s;
    s.numel = bucket_numel(b.gradients);
    if (s.numel > std::numeric_limits<std::int32_t>::max())  // one tensor larger than the bucket limit
      throw std::length_error(b.label + ": top-k's 32-bit indices cannot address a bucket of " +
                              std::to_string(s.numel) + " elements");
    s.k = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(ratio_ * static_cast<double>(s.numel))), 1,
                                   std::max<std::int64_t>(1, s.numel));
    s.residual = rt.alloc(b.label + ".topk_error", {s.numel}, DType::fp32, kept_category(error_feedback_));
    s.pairs = rt.alloc(b.label + ".pairs", {b.group.size(), 2 * s.k}, DType::int32, MemCategory::comm_buffers);
    return s;
  }

  double ratio_;
  bool error_feedback_;
  BucketStates<State> states_;
};

}  // namespace

std::unique_ptr<GradientCodec> make_top_k_codec(const CompressionConfig& config) {
  return std::make_unique<TopKCodec>(config);
}

}  // namespace tandem
