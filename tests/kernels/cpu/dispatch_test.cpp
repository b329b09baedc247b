#include "kernels/cpu/dispatch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "kernels/cpu/adamw.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/norm.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

// What the CPU backend provides: fp32 storage of numel() floats per tensor, int32 tensors
// holding raw int32 bits.
class Store {
 public:
  Tensor alloc(std::vector<I64> shape, DType dtype = DType::fp32) {
    Tensor t;
    t.id = next_++;
    t.shape = std::move(shape);
    t.dtype = dtype;
    mem_[t.id].assign(static_cast<std::size_t>(t.numel()), 0.0f);
    return t;
  }
  Tensor random(std::vector<I64> shape, std::uint32_t seed) {
    Tensor t = alloc(std::move(shape));
    mem_[t.id] = random_vector(static_cast<std::size_t>(t.numel()), seed);
    return t;
  }
  Tensor ids(std::vector<I64> shape, const std::vector<std::int32_t>& values) {
    Tensor t = alloc(std::move(shape), DType::int32);
    std::memcpy(mem_[t.id].data(), values.data(), values.size() * sizeof(std::int32_t));
    return t;
  }
  std::vector<float>& at(const Tensor& t) { return mem_.at(t.id); }
  TensorData data() {
    return [this](const Tensor& t) { return mem_.at(t.id).data(); };
  }

 private:
  std::int32_t next_ = 0;
  std::map<std::int32_t, std::vector<float>> mem_;
};

ComputeOp make_op(OpKind kind, std::string label, KernelArgs args, std::vector<Tensor> inputs,
                  std::vector<Tensor> outputs) {
  ComputeOp op;
  op.kind = kind;
  op.label = std::move(label);
  op.args = args;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

// A byte mask as the models declare it: numel/2 bf16 elements.
Tensor byte_mask(Store& s, I64 numel) { return s.alloc({(numel + 1) / 2}, DType::bf16); }

TEST(DispatchTest, Gemm) {
  Store s;
  const Tensor x = s.random({6, 4}, 1), w = s.random({5, 4}, 2), y = s.alloc({6, 5});
  GemmArgs a{6, 5, 4};
  a.trans_b = true;
  run(make_op(OpKind::gemm, "output.fwd", a, {x, w}, {y}), s.data());
  std::vector<float> want(30);
  gemm_forward(want.data(), s.at(x).data(), s.at(w).data(), 6, 5, 4, false, true, false);
  EXPECT_EQ(s.at(y), want);
}

// Attention as the transformer issues it: flash {out, lse} and unfused with dropout
// {out, probs, mask, dropped}; backward {qkv, out, saved…, d_out} -> {d_qkv}. Both agree.
TEST(DispatchTest, AttentionFlashAndUnfusedWithDropout) {
  Store s;
  const I64 b = 2, h = 4, g = 2, S = 6, d = 4, W = (h + 2 * g) * d;
  AttentionArgs a{b, h, g, S, d, true, false, false};
  const Tensor qkv = s.random({b, S, W}, 3), dout = s.random({b, S, h * d}, 4);
  const Tensor out_u = s.alloc({b, S, h * d}), probs = s.alloc({b, h, S, S}),
               mask = byte_mask(s, b * h * S * S), dropped = s.alloc({b, h, S, S});
  const Tensor out_f = s.alloc({b, S, h * d}), lse = s.alloc({b, h, S});
  RunOptions opt;
  opt.seed = 99;
  opt.iteration = 4;
  opt.attention_dropout = 0.2f;
  run(make_op(OpKind::attention, "mb0.layer1.attn.core.fwd", a, {qkv},
              {out_u, probs, mask, dropped}),
      s.data(), opt);
  a.flash = true;
  run(make_op(OpKind::attention, "mb0.layer1.attn.core.fwd", a, {qkv}, {out_f, lse}), s.data(),
      opt);
  EXPECT_LT(rel_error(s.at(out_f), s.at(out_u)), 1e-6);
  // The same as the kernel called with the documented key.
  std::vector<float> want(b * S * h * d);
  attention_forward(want.data(), nullptr, nullptr, nullptr, nullptr, s.at(qkv).data(),
                    AttentionShape{b, h, g, S, d, true},
                    AttentionDropout{0.2f, dropout_key(99, "mb0.layer1.attn.core", 4)});
  EXPECT_EQ(s.at(out_f), want);

  const Tensor dq_u = s.alloc({b, S, W}), dq_f = s.alloc({b, S, W});
  a.backward = true;
  run(make_op(OpKind::attention, "mb0.layer1.attn.core.bwd", a, {qkv, out_f, lse, dout}, {dq_f}),
      s.data(), opt);
  a.flash = false;
  run(make_op(OpKind::attention, "mb0.layer1.attn.core.bwd", a,
              {qkv, out_u, probs, mask, dropped, dout}, {dq_u}),
      s.data(), opt);
  EXPECT_LT(rel_error(s.at(dq_f), s.at(dq_u)), 1e-5);
  double norm = 0;
  for (float v : s.at(dq_u)) norm += std::abs(v);
  EXPECT_GT(norm, 0.1);
}

TEST(DispatchTest, NormForwardAndBackward) {
  Store s;
  const I64 rows = 3, cols = 8;
  const Tensor x = s.random({rows, cols}, 5), w = s.random({cols}, 6), bias = s.random({cols}, 7);
  const Tensor y = s.alloc({rows, cols}), dy = s.random({rows, cols}, 8);
  const Tensor dx = s.alloc({rows, cols}), dw = s.alloc({cols}), db = s.alloc({cols});
  NormArgs a{NormKind::layer_norm, rows, cols, false};
  run(make_op(OpKind::norm, "n.fwd", a, {x, w, bias}, {y}), s.data());
  std::vector<float> want(rows * cols);
  layernorm_forward(want.data(), nullptr, nullptr, s.at(x).data(), s.at(w).data(),
                    s.at(bias).data(), rows, cols);
  EXPECT_EQ(s.at(y), want);
  a.backward = true;
  run(make_op(OpKind::norm, "n.bwd", a, {x, dy, w}, {dx, dw, db}), s.data());
  std::vector<float> wdx(rows * cols), wdw(cols, 0.0f), wdb(cols, 0.0f);
  layernorm_backward(wdx.data(), wdw.data(), wdb.data(), s.at(dy).data(), s.at(x).data(),
                     s.at(w).data(), rows, cols);
  EXPECT_EQ(s.at(dx), wdx);
  EXPECT_EQ(s.at(dw), wdw);
  EXPECT_EQ(s.at(db), wdb);
  // RMSNorm without parameter gradients.
  NormArgs r{NormKind::rms_norm, rows, cols, false};
  run(make_op(OpKind::norm, "r.fwd", r, {x, w}, {y}), s.data());
  r.backward = true;
  run(make_op(OpKind::norm, "r.bwd", r, {x, dy, w}, {dx}), s.data());
  rmsnorm_backward(wdx.data(), nullptr, nullptr, s.at(dy).data(), s.at(x).data(), s.at(w).data(),
                   rows, cols);
  EXPECT_EQ(s.at(dx), wdx);
}

TEST(DispatchTest, ElementwiseFunctions) {
  Store s;
  const I64 tokens = 4, f = 6, n = tokens * f;
  // gelu
  const Tensor x = s.random({tokens, f}, 9), y = s.alloc({tokens, f}), dy = s.random({tokens, f}, 10);
  const Tensor dx = s.alloc({tokens, f});
  run(make_op(OpKind::elementwise, "act.fwd", ElementwiseArgs{ElementwiseFn::gelu, n, false}, {x},
              {y}),
      s.data());
  run(make_op(OpKind::elementwise, "act.bwd", ElementwiseArgs{ElementwiseFn::gelu, n, true},
              {x, dy}, {dx}),
      s.data());
  std::vector<float> want(n);
  gelu_backward(want.data(), s.at(x).data(), s.at(dy).data(), n);
  EXPECT_EQ(s.at(dx), want);
  // swiglu: fc1 [tokens, 2f] -> act [tokens, f]
  const Tensor fc1 = s.random({tokens, 2 * f}, 11), act = s.alloc({tokens, f});
  const Tensor d_fc1 = s.alloc({tokens, 2 * f});
  run(make_op(OpKind::elementwise, "sw.fwd", ElementwiseArgs{ElementwiseFn::swiglu, n, false},
              {fc1}, {act}),
      s.data());
  run(make_op(OpKind::elementwise, "sw.bwd", ElementwiseArgs{ElementwiseFn::swiglu, n, true},
              {fc1, dy}, {d_fc1}),
      s.data());
  swiglu_forward(want.data(), s.at(fc1).data(), tokens, f);
  EXPECT_EQ(s.at(act), want);
  std::vector<float> want2(2 * n);
  swiglu_backward(want2.data(), s.at(fc1).data(), s.at(dy).data(), tokens, f);
  EXPECT_EQ(s.at(d_fc1), want2);
  // add (in place into the first input)
  std::vector<float> before = s.at(x);
  run(make_op(OpKind::elementwise, "res.fwd", ElementwiseArgs{ElementwiseFn::add, n, false},
              {x, dy}, {x}),
      s.data());
  EXPECT_FLOAT_EQ(s.at(x)[5], before[5] + s.at(dy)[5]);
  // dropout with a byte mask, then its backward from the mask
  const Tensor mask = byte_mask(s, n), dropped = s.alloc({tokens, f}), d_in = s.alloc({tokens, f});
  RunOptions opt;
  opt.hidden_dropout = 0.5f;
  run(make_op(OpKind::elementwise, "mb0.layer0.mlp.dropout.fwd",
              ElementwiseArgs{ElementwiseFn::dropout, n, false}, {x}, {dropped, mask}),
      s.data(), opt);
  run(make_op(OpKind::elementwise, "mb0.layer0.mlp.dropout.bwd",
              ElementwiseArgs{ElementwiseFn::dropout, n, true}, {dy, mask}, {d_in}),
      s.data(), opt);
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(s.at(mask).data());
  const std::uint64_t key = dropout_key(0, "mb0.layer0.mlp.dropout", 0);
  for (I64 i = 0; i < n; ++i) {
    ASSERT_EQ(bytes[i], dropout_keep(key, i, 0.5f) ? 1 : 0);
    EXPECT_FLOAT_EQ(s.at(dropped)[i], bytes[i] ? 2 * s.at(x)[i] : 0.0f);
    EXPECT_FLOAT_EQ(s.at(d_in)[i], bytes[i] ? 2 * s.at(dy)[i] : 0.0f);
  }
  // bias_add forward (in place) and backward (accumulated column sums)
  const Tensor bias = s.random({f}, 12), dbias = s.alloc({f});
  before = s.at(y);
  run(make_op(OpKind::elementwise, "b.fwd", ElementwiseArgs{ElementwiseFn::bias_add, n, false},
              {y, bias}, {y}),
      s.data());
  EXPECT_FLOAT_EQ(s.at(y)[f + 2], before[f + 2] + s.at(bias)[2]);
  s.at(dbias).assign(f, 1.0f);
  run(make_op(OpKind::elementwise, "b.bwd_w", ElementwiseArgs{ElementwiseFn::bias_add, n, true},
              {dy}, {dbias}),
      s.data());
  double col = 1.0;
  for (I64 t = 0; t < tokens; ++t) col += s.at(dy)[t * f + 3];
  EXPECT_NEAR(s.at(dbias)[3], col, 1e-6);
  // scale as gradient zeroing, cast as copy
  run(make_op(OpKind::elementwise, "layer0.g0.zero", ElementwiseArgs{ElementwiseFn::scale, f, false},
              {dbias}, {dbias}),
      s.data());
  EXPECT_EQ(s.at(dbias), std::vector<float>(f, 0.0f));
  run(make_op(OpKind::elementwise, "c", ElementwiseArgs{ElementwiseFn::cast, n, false}, {x}, {y}),
      s.data());
  EXPECT_EQ(s.at(y), s.at(x));
}

TEST(DispatchTest, EmbeddingWithInt32IdsAndPositions) {
  Store s;
  const I64 b = 2, S = 3, vocab = 5, hidden = 4, offset = 5;  // this rank holds rows 5..9
  const Tensor table = s.random({vocab, hidden}, 13);
  const Tensor ids = s.ids({b, S}, {5, 9, 2, 7, 7, 100});
  const Tensor rows = s.alloc({b, S, hidden});
  run(make_op(OpKind::embedding, "mb0.embedding.word.fwd",
              EmbeddingArgs{b * S, vocab, hidden, offset, false}, {table, ids}, {rows}),
      s.data());
  EXPECT_EQ(s.at(rows)[1 * hidden + 2], s.at(table)[4 * hidden + 2]);  // id 9 -> local row 4
  EXPECT_EQ(s.at(rows)[2 * hidden + 2], 0.0f);                          // id 2: another shard
  const Tensor d_table = s.alloc({vocab, hidden});
  const Tensor d_rows = s.random({b, S, hidden}, 14);
  run(make_op(OpKind::embedding, "mb0.embedding.word.bwd_w",
              EmbeddingArgs{b * S, vocab, hidden, offset, true}, {d_rows, ids}, {d_table}),
      s.data());
  EXPECT_FLOAT_EQ(s.at(d_table)[2 * hidden + 1],
                  s.at(d_rows)[3 * hidden + 1] + s.at(d_rows)[4 * hidden + 1]);  // id 7 twice
  // Ids declared with a float dtype are read as values.
  Tensor fids = s.alloc({b, S});
  s.at(fids) = {5, 6, 7, 8, 9, 5};
  run(make_op(OpKind::embedding, "e2", EmbeddingArgs{b * S, vocab, hidden, offset, false},
              {table, fids}, {rows}),
      s.data());
  EXPECT_EQ(s.at(rows)[4 * hidden], s.at(table)[4 * hidden]);
  // Positions: no ids tensor.
  const I64 max_pos = 8;
  const Tensor pos = s.random({max_pos, hidden}, 15), pos_out = s.alloc({b, S, hidden});
  run(make_op(OpKind::embedding, "mb0.embedding.position.fwd",
              EmbeddingArgs{b * S, max_pos, hidden, 0, false}, {pos}, {pos_out}),
      s.data());
  EXPECT_EQ(s.at(pos_out)[4 * hidden + 3], s.at(pos)[1 * hidden + 3]);  // token 4 = position 1
  const Tensor d_pos = s.alloc({max_pos, hidden});
  run(make_op(OpKind::embedding, "mb0.embedding.position.bwd_w",
              EmbeddingArgs{b * S, max_pos, hidden, 0, true}, {d_rows}, {d_pos}),
      s.data());
  EXPECT_FLOAT_EQ(s.at(d_pos)[hidden], s.at(d_rows)[hidden] + s.at(d_rows)[4 * hidden]);
}

TEST(DispatchTest, LossForwardMeanAndBackward) {
  Store s;
  const I64 tokens = 4, vocab = 16;
  const Tensor logits = s.alloc({2, 2, vocab});  // all zeros: uniform
  const Tensor labels = s.ids({2, 2}, {0, 3, 15, 7});
  const Tensor softmax = s.alloc({tokens, vocab}), stats = s.alloc({tokens, 2});
  const Tensor loss = s.alloc({1}), d_logits = s.alloc({2, 2, vocab});
  run(make_op(OpKind::loss, "mb0.lm_head.loss.fwd", LossArgs{tokens, vocab, false},
              {logits, labels}, {softmax, stats}),
      s.data());
  run(make_op(OpKind::elementwise, "mb0.lm_head.loss.mean.fwd",
              ElementwiseArgs{ElementwiseFn::scale, tokens, false}, {stats}, {loss}),
      s.data());
  EXPECT_NEAR(s.at(loss)[0], std::log(16.0), 1e-6);
  run(make_op(OpKind::loss, "mb0.lm_head.loss.bwd", LossArgs{tokens, vocab, true},
              {softmax, labels}, {d_logits}),
      s.data());
  EXPECT_NEAR(s.at(d_logits)[1 * vocab + 3], (1.0 / 16 - 1.0) / tokens, 1e-7);
  EXPECT_NEAR(s.at(d_logits)[1 * vocab + 4], (1.0 / 16) / tokens, 1e-7);
}

TEST(DispatchTest, OptimizerWithAndWithoutMasterAndMemcpy) {
  Store s;
  const I64 n = 5;
  OptimizerArgs a;
  a.numel = n;
  a.step = 2;
  a.grad_scale = 0.25f;
  const Tensor p = s.random({n}, 16), g = s.random({n}, 17), m = s.random({n}, 18);
  Tensor v = s.alloc({n});
  s.at(v).assign(n, 0.5f);
  std::vector<float> wp = s.at(p), wm = s.at(m), wv = s.at(v);
  run(make_op(OpKind::optimizer, "layer0.p0.adamw", a, {p, g, m, v}, {p, m, v}), s.data());
  AdamWConfig cfg{a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.grad_scale, a.step};
  adamw_update(wp.data(), nullptr, wm.data(), wv.data(), s.at(g).data(), n, cfg);
  EXPECT_EQ(s.at(p), wp);
  EXPECT_EQ(s.at(v), wv);
  const Tensor master = s.random({n}, 19), p16 = s.alloc({n}, DType::bf16);
  run(make_op(OpKind::optimizer, "layer0.p1.adamw", a, {p16, g, master, m, v}, {p16, master, m, v}),
      s.data());
  EXPECT_EQ(s.at(p16), s.at(master));
  const Tensor dst = s.alloc({n});
  run(make_op(OpKind::memcpy, "copy", MemcpyArgs{n}, {p}, {dst}), s.data());
  EXPECT_EQ(s.at(dst), s.at(p));
}

// ZeRO: the update covers [offset, offset + numel) of param and grad; states hold numel.
// A template so that it still compiles should OptimizerArgs lose its offset.
template <typename Args>
void check_optimizer_offset() {
  Args a;
  if constexpr (requires(Args x) { x.offset; }) {
    Store s;
    const I64 full = 8, n = 3, offset = 4;
    a.numel = n;
    a.offset = offset;
    const Tensor p = s.random({full}, 20), g = s.random({full}, 21);
    const Tensor m = s.alloc({n}), v = s.alloc({n});
    std::vector<float> want = s.at(p), wm(n, 0.0f), wv(n, 0.0f);
    run(make_op(OpKind::optimizer, "zero.adamw", a, {p, g, m, v}, {p, m, v}), s.data());
    AdamWConfig cfg{a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.grad_scale, a.step};
    adamw_update(want.data() + offset, nullptr, wm.data(), wv.data(), s.at(g).data() + offset, n,
                 cfg);
    EXPECT_EQ(s.at(p), want);  // elements outside the shard untouched
    EXPECT_EQ(s.at(m), wm);
  } else {
    GTEST_SKIP() << "OptimizerArgs has no offset";
  }
}

TEST(DispatchTest, OptimizerShardWithOffset) { check_optimizer_offset<OptimizerArgs>(); }

TEST(DispatchTest, UnsupportedCombinationsThrowWithTheLabel) {
  Store s;
  const Tensor a = s.alloc({4}), b = s.alloc({3});
  auto expect_logic_error = [&](const ComputeOp& op) {
    try {
      run(op, s.data());
      ADD_FAILURE() << "no exception for " << op.label;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(op.label), std::string::npos) << e.what();
    }
  };
  // Arguments of another kind.
  expect_logic_error(make_op(OpKind::gemm, "wrong.kind", MemcpyArgs{4}, {a}, {a}));
  // A tensor smaller than the arguments say.
  expect_logic_error(make_op(OpKind::memcpy, "too.small", MemcpyArgs{4}, {a}, {b}));
  // A missing input.
  expect_logic_error(make_op(OpKind::gemm, "missing.input", GemmArgs{2, 2, 1}, {a}, {a}));
  // A same-size scale has no factor.
  expect_logic_error(make_op(OpKind::elementwise, "layer0.scale.fwd",
                             ElementwiseArgs{ElementwiseFn::scale, 4, false}, {a}, {a}));
  // A communication kind is not a compute op.
  expect_logic_error(make_op(OpKind::all_reduce, "comm", MemcpyArgs{4}, {a}, {a}));
  // A mask tensor too small for its bytes.
  expect_logic_error(make_op(OpKind::elementwise, "small.mask.fwd",
                             ElementwiseArgs{ElementwiseFn::dropout, 20, false},
                             {s.alloc({20}), s.alloc({20})}, {s.alloc({20}), s.alloc({4})}));
}

}  // namespace
}  // namespace tandem::kernels::cpu
