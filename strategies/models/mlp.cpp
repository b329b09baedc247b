#include "strategies/models/mlp.hpp"

#include <stdexcept>

#include "common/checked_math.hpp"
#include "strategies/models/layer_base.hpp"
#include "strategies/ops.hpp"

namespace tandem {
namespace {

using detail::Emitter;
using detail::LayerBase;
using I64 = std::int64_t;
constexpr MemCategory kAct = MemCategory::activations;

// Linear(in → out) [+ GELU], or, as the head, Linear + softmax cross-entropy.
class MlpLayer final : public LayerBase {
 public:
  MlpLayer(std::string name, I64 in, I64 out, bool first, bool head, bool bias, BatchShape batch,
           ParallelContext ctx)
      : LayerBase(std::move(name), batch, std::move(ctx)), in_(in), out_(out), first_(first),
        head_(head), bias_(bias) {}

  std::int64_t parameter_count() const override { return in_ * out_ + (bias_ ? out_ : 0); }
  std::int64_t local_parameter_count() const override { return parameter_count(); }

  void allocate(Runtime& rt, bool with_gradients) override {
    clear_parameters();
    w_ = add_parameter(rt, "linear.weight", {in_, out_}, with_gradients, &gw_);
    if (bias_) b_ = add_parameter(rt, "linear.bias", {out_}, with_gradients, &gb_);
  }

  Tensor forward(Runtime& rt, const Tensor& x, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const I64 b = batch_.micro_batch;
    const Phase ph = Phase::forward;
    Tensor y = rt.alloc(em.name("linear.out"), {b, out_}, dt, kAct);
    em.computed(ops::gemm(rt, ph, em.label("linear", "fwd"), x, w_, y, GemmArgs{b, out_, in_},
                          em.compute_issue()));
    if (bias_)
      em.computed(ops::elementwise(rt, ph, em.label("linear.bias", "fwd"), {y, b_}, {y},
                                   ElementwiseArgs{ElementwiseFn::bias_add, b * out_, false},
                                   em.compute_issue()));
    save(mb, "x", x);
    if (head_) {
      Tensor labels = rt.alloc("mb" + std::to_string(mb) + ".labels", {b}, DType::int32, kAct);
      Tensor softmax = rt.alloc(em.name("loss.softmax"), {b, out_}, DType::fp32, kAct);
      Tensor stats = rt.alloc(em.name("loss.stats"), {b, 2}, DType::fp32, kAct);
      em.computed(ops::cross_entropy(rt, ph, em.label("loss", "fwd"), {y, labels},
                                     {softmax, stats}, LossArgs{b, out_, false},
                                     em.compute_issue()));
      rt.release(y);
      Tensor loss = rt.alloc(em.name("loss"), {1}, DType::fp32, kAct);
      em.computed(ops::elementwise(rt, ph, em.label("loss.mean", "fwd"), {stats}, {loss},
                                   ElementwiseArgs{ElementwiseFn::scale, b, false},
                                   em.compute_issue()));
      rt.release(stats);
      save(mb, "softmax", softmax);
      save(mb, "labels", labels);
      return loss;
    }
    Tensor a = rt.alloc(em.name("act.out"), {b, out_}, dt, kAct);
    em.computed(ops::elementwise(rt, ph, em.label("act", "fwd"), {y}, {a},
                                 ElementwiseArgs{ElementwiseFn::gelu, b * out_, false},
                                 em.compute_issue()));
    save(mb, "y", y);
    return a;
  }

  Tensor backward(Runtime& rt, const Tensor& grad, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const I64 b = batch_.micro_batch;
    const Phase ph = Phase::backward;
    Tensor dy = rt.alloc(em.name("linear.doutput"), {b, out_}, dt, kAct);
    if (head_) {
      if (grad.valid()) rt.release(grad);
      Tensor softmax = take(mb, "softmax");
      Tensor labels = take(mb, "labels");
      em.computed(ops::cross_entropy(rt, ph, em.label("loss", "bwd"), {softmax, labels}, {dy},
                                     LossArgs{b, out_, true}, em.compute_issue()));
      rt.release(softmax);
      rt.release(labels);
    } else {
      Tensor y = take(mb, "y");
      em.computed(ops::elementwise(rt, ph, em.label("act", "bwd"), {y, grad}, {dy},
                                   ElementwiseArgs{ElementwiseFn::gelu, b * out_, true},
                                   em.compute_issue()));
      rt.release(y);
      rt.release(grad);
    }
    if (bias_ && gb_.valid())
      em.computed(ops::elementwise(rt, ph, em.label("linear.bias", "bwd_w"), {dy}, {gb_},
                                   ElementwiseArgs{ElementwiseFn::bias_add, b * out_, true},
                                   em.compute_issue()));
    Tensor dx;
    if (!first_) {
      dx = rt.alloc(em.name("linear.dinput"), {b, in_}, dt, kAct);
      GemmArgs dgrad{b, in_, out_};
      dgrad.trans_b = true;
      em.computed(ops::gemm(rt, ph, em.label("linear", "bwd"), dy, w_, dx, dgrad,
                            em.compute_issue()));
    }
    Tensor x = take(mb, "x");
    if (gw_.valid()) {
      GemmArgs wgrad{in_, out_, b};
      wgrad.trans_a = true;
      wgrad.accumulate = true;
      em.computed(ops::gemm(rt, ph, em.label("linear", "bwd_w"), x, dy, gw_, wgrad,
                            em.compute_issue()));
    }
    rt.release(x);
    rt.release(dy);
    finish_micro_batch(mb);
    return dx;
  }

 protected:
  std::unique_ptr<LayerBase> fresh_copy() const override {
    return std::make_unique<MlpLayer>(name_, in_, out_, first_, head_, bias_, batch_, ctx_);
  }
  Tensor make_measure_input(Runtime& rt) const override {
    return rt.alloc("x", {batch_.micro_batch, in_}, batch_.dtype, kAct);
  }

 private:
  I64 in_, out_;
  bool first_, head_, bias_;
  Tensor w_, gw_, b_, gb_;
};

}  // namespace

void validate(const MlpConfig& cfg) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument("mlp '" + cfg.name + "': " + field + " " + why);
  };
  if (cfg.input_size < 1) fail("input_size", "must be >= 1");
  if (cfg.output_size < 1) fail("output_size", "must be >= 1");
  for (auto h : cfg.hidden_sizes)
    if (h < 1) fail("hidden_sizes", "entries must be >= 1");
  if (cfg.activation != ActivationType::gelu) fail("activation", "must be gelu");
}

std::int64_t parameter_count(const MlpConfig& cfg) {
  const I64 b = cfg.bias ? 1 : 0;
  const std::string what = "mlp '" + cfg.name + "': parameters";
  I64 p = 0, in = cfg.input_size;
  for (auto h : cfg.hidden_sizes) {
    p = checked_add(p, checked_sum_of_products({{in, h}, {b, h}}, what), what);
    in = h;
  }
  return checked_add(p, checked_sum_of_products({{in, cfg.output_size}, {b, cfg.output_size}}, what), what);
}

Flops model_flops_per_sample(const MlpConfig& cfg) {
  double w = 0;
  I64 in = cfg.input_size;
  for (auto h : cfg.hidden_sizes) {
    w += static_cast<double>(in) * static_cast<double>(h);
    in = h;
  }
  w += static_cast<double>(in) * static_cast<double>(cfg.output_size);
  return 6.0 * w;
}

MlpModel::MlpModel(MlpConfig cfg) : cfg_(std::move(cfg)) { validate(cfg_); }

ModelDescription MlpModel::describe() const {
  return ModelDescription{cfg_.name, parameter_count(cfg_), model_flops_per_sample(cfg_)};
}

std::vector<std::unique_ptr<Layer>> MlpModel::build_layers(const BatchShape& batch,
                                                           const ParallelContext& ctx) const {
  if (ctx.tp_size > 1)
    throw std::invalid_argument("mlp '" + cfg_.name + "': tensor parallelism is not supported");
  if (ctx.cp_size > 1)
    throw std::invalid_argument("mlp '" + cfg_.name + "': context parallelism splits sequences; an MLP has none");
  if (batch.micro_batch < 1)
    throw std::invalid_argument("mlp '" + cfg_.name + "': micro_batch must be >= 1");
  std::vector<std::unique_ptr<Layer>> layers;
  I64 in = cfg_.input_size;
  for (std::size_t i = 0; i < cfg_.hidden_sizes.size(); ++i) {
    layers.push_back(std::make_unique<MlpLayer>("fc" + std::to_string(i), in,
                                                cfg_.hidden_sizes[i], i == 0, false, cfg_.bias,
                                                batch, ctx));
    in = cfg_.hidden_sizes[i];
  }
  layers.push_back(std::make_unique<MlpLayer>("head", in, cfg_.output_size,
                                              cfg_.hidden_sizes.empty(), true, cfg_.bias, batch,
                                              ctx));
  return layers;
}

Tensor MlpModel::make_input(Runtime& rt, const BatchShape& batch, int micro_batch, const ParallelContext&) const {
  return rt.alloc("mb" + std::to_string(micro_batch) + ".features",
                  {batch.micro_batch, cfg_.input_size}, batch.dtype, MemCategory::activations);
}

}  // namespace tandem
