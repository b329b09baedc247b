// A gradient codec reduces one data-parallel gradient bucket to its sum over the group through
// an encoded, smaller form, written once against the per-rank interface (strategies/runtime.hpp):
// its encode and decode are compute ops (codec_ops.hpp) on the compute stream, its collectives
// run on the data-parallel stream and carry the encoded bytes, so the simulator prices both and
// the real backends execute both. GradientBuckets (strategies/gradient_sync.hpp) drives it:
//
//   round(0)            as soon as the bucket is full, during backward (overlapped with the
//                       layers still to go): encode, launch the first collective;
//   round(1..rounds-1)  once backward is issued, bucket by bucket: the compute between two
//                       collectives (PowerSGD's orthogonalisation and second product), each
//                       after the previous collective, and the next collective;
//   finish              decode the last collective's result into the bucket's gradients, which
//                       then hold (an approximation of) the sum over the group, as a plain
//                       all-reduce would leave them.
//
// A codec keeps state per bucket (error-feedback residuals, encoded buffers, PowerSGD's Q),
// allocated at the bucket's first reduction and keyed by its label, which the strategies keep
// the same from one iteration to the next. One codec object per rank.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strategies/compression/compression_config.hpp"
#include "strategies/runtime.hpp"

namespace tandem {

struct CodecBucket {
  std::string label;  // e.g. "dp.bucket3"; prefixes the codec's op labels
  std::vector<Tensor> gradients;
  Group group;
};

class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  // Collective rounds per bucket (PowerSGD 2; the others 1).
  virtual int rounds() const = 0;
  // Round `round` of `bucket`: its compute ops after `previous` (round > 0: the last round's
  // collective), then its collective on the data-parallel stream; returns that collective.
  virtual Handle round(Runtime& rt, int round, const CodecBucket& bucket, Handle previous) = 0;
  // Decodes into the bucket's gradients after `last` (the last round's collective).
  virtual void finish(Runtime& rt, const CodecBucket& bucket, Handle last) = 0;
  // At the start of every step, before its first round: a stale exchange (parameter servers with
  // bounded staleness) fetches an earlier step's result here, overlapped with this step's work.
  virtual void begin_step(Runtime& /*rt*/, int /*iteration*/) {}
  // The gradients finish() leaves in step t are those of step t - update_delay(); before step
  // update_delay() there are none, and the optimizer does not step.
  virtual int update_delay() const { return 0; }
  // Whether finish() leaves the parameters updated (servers that step the optimizer send back
  // parameters, not sums): the rank then makes no optimizer step of its own. Such a codec is told
  // each gradient's parameter (`parameter_of`: gradient tensor id -> its parameter) before the
  // first round.
  virtual bool updates_parameters() const { return false; }
  virtual void set_parameters(std::map<int, Tensor> parameter_of) { (void)parameter_of; }
};

// The codec of a configuration; nullptr for Compression::none.
std::unique_ptr<GradientCodec> make_gradient_codec(const CompressionConfig& config);

// The elements of a bucket (all its gradients).
std::int64_t bucket_numel(const std::vector<Tensor>& gradients);

// Where a codec keeps a tensor that lives from one step to the next: with error feedback it is a
// residual, part of the training state like the optimizer's; without, a reused work buffer.
inline MemCategory kept_category(bool error_feedback) {
  return error_feedback ? MemCategory::optimizer_state : MemCategory::comm_buffers;
}

// A codec's state per bucket, made at the bucket's first reduction and found by its label after.
template <class State>
class BucketStates {
 public:
  template <class Make>
  State& get(const std::string& label, Make&& make) {
    auto it = states_.find(label);
    if (it == states_.end()) it = states_.emplace(label, make()).first;
    return it->second;
  }
  const State& at(const std::string& label) const { return states_.at(label); }

 private:
  std::map<std::string, State> states_;
};

// Issue on the compute stream after `h`, and on the data-parallel stream after everything
// issued on the compute stream so far (the encode that fills a collective's buffer).
Issue after_handle(Handle h);
Issue on_dp_stream(Runtime& rt);

}  // namespace tandem
