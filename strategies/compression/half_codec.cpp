// fp16 / bf16 casting, as PyTorch DDP's fp16_compress_hook and bf16_compress_hook: the bucket is
// cast to the half format, all-reduced in it (half the bytes of fp32 gradients; nothing saved
// when the gradients are already 2-byte), and cast back. No error feedback: the rounding error
// is the format's (2^-11 relative for fp16, 2^-8 for bf16).
// The CPU backend rounds the packed values and the result to the format; its shared-memory
// all-reduce adds in fp32 between the two (a GPU ring rounds after every step), so it is the
// closer to exact of the two.

#include "strategies/compression/codec_ops.hpp"
#include "strategies/compression/codecs.hpp"

namespace tandem {
namespace {

class HalfCodec final : public GradientCodec {
 public:
  explicit HalfCodec(Compression type)
      : format_(type == Compression::bf16 ? CodecFormat::bf16 : CodecFormat::fp16),
        dtype_(type == Compression::bf16 ? DType::bf16 : DType::fp16) {}

  int rounds() const override { return 1; }

  Handle round(Runtime& rt, int, const CodecBucket& b, Handle) override {
    const std::int64_t n = bucket_numel(b.gradients);
    const Tensor& wire =
        wire_.get(b.label, [&] { return rt.alloc(b.label + ".wire", {n}, dtype_, MemCategory::comm_buffers); });
    CodecArgs pack{CodecStep::pack, format_, n};
    codec_ops::codec(rt, Phase::backward, b.label + ".pack", pack, b.gradients, {wire});
    return ops::all_reduce(rt, Phase::backward, b.label + ".all_reduce", wire, b.group, on_dp_stream(rt));
  }

  void finish(Runtime& rt, const CodecBucket& b, Handle last) override {
    CodecArgs unpack{CodecStep::unpack, format_, bucket_numel(b.gradients)};
    codec_ops::codec(rt, Phase::backward, b.label + ".unpack", unpack, {wire_.at(b.label)}, b.gradients,
                     after_handle(last));
  }

 private:
  CodecFormat format_;
  DType dtype_;
  BucketStates<Tensor> wire_;  // each bucket's half-precision buffer
};

}  // namespace

std::unique_ptr<GradientCodec> make_half_codec(const CompressionConfig& config) {
  return std::make_unique<HalfCodec>(config.type);
}

}  // namespace tandem
