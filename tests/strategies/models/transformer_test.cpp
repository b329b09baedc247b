#include "strategies/models/transformer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "strategies/models/layer_base.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/ops.hpp"
#include "tests/strategies/models/model_test_util.hpp"

namespace tandem {
namespace {

using testing::Layers;
using testing::RecordedOp;
using testing::RecordingRuntime;

ParallelContext tp_context(int tp, bool sp, Recompute rc = Recompute::none) {
  ParallelContext ctx;
  ctx.tp_size = tp;
  ctx.tp_rank = 0;
  ctx.sequence_parallel = sp;
  ctx.recompute = rc;
  ctx.tp_group.id = 3;
  for (int r = 0; r < tp; ++r) ctx.tp_group.ranks.push_back(r);
  return ctx;
}

BatchShape shape(std::int64_t b, std::int64_t s) {
  BatchShape batch;
  batch.micro_batch = b;
  batch.seq_len = s;
  return batch;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Every op of one micro-batch (forward + backward over all layers); checks no leak.
struct Recorded {
  RecordingRuntime rt;
  Layers layers;
};
void record_micro_batch(Recorded& r, const TransformerModel& model, const BatchShape& batch,
                        const ParallelContext& ctx, int micro_batches = 1) {
  r.layers = model.build_layers(batch, ctx);
  testing::allocate_all(r.rt, r.layers);
  for (int mb = 0; mb < micro_batches; ++mb)
    testing::run_micro_batch(r.rt, model, r.layers, batch, mb);
}

// ---------------------------------------------------------------- parameters

TEST(TransformerTest, LayerParameterCountsSumToTheModel) {
  for (const auto& name : preset_names()) {
    const TransformerModel model(transformer_preset(name));
    const auto layers = model.build_layers(shape(1, 32), tp_context(1, false));
    ASSERT_EQ(layers.size(), static_cast<std::size_t>(model.config().num_layers) + 2) << name;
    std::int64_t sum = 0, local = 0;
    for (const auto& l : layers) {
      sum += l->parameter_count();
      local += l->local_parameter_count();
    }
    EXPECT_EQ(sum, parameter_count(model.config())) << name;
    EXPECT_EQ(local, sum) << name;
    EXPECT_EQ(model.describe().parameter_count, sum) << name;
    EXPECT_EQ(layers.front()->name(), "embedding");
    EXPECT_EQ(layers[1]->name(), "layer0");
    EXPECT_EQ(layers.back()->name(), "lm_head");
  }
}

TEST(TransformerTest, TensorParallelShardsParameters) {
  const auto cfg = transformer_preset("llama2-7b");
  const TransformerModel model(cfg);
  const auto layers = model.build_layers(shape(1, 64), tp_context(8, true));
  std::int64_t local = 0;
  for (const auto& l : layers) local += l->local_parameter_count();
  // Everything but the replicated norms is split 8 ways.
  const double replicated = (2.0 * cfg.num_layers + 1) * cfg.hidden_size;
  EXPECT_NEAR(local, (parameter_count(cfg) - replicated) / 8 + replicated, 1.0);

  RecordingRuntime rt;
  Layers ls = model.build_layers(shape(1, 64), tp_context(8, true));
  ls[1]->allocate(rt, true);
  double bytes = 0;
  for (const auto& p : ls[1]->parameters()) bytes += p.bytes();
  EXPECT_DOUBLE_EQ(bytes, 2.0 * ls[1]->local_parameter_count());
  EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::gradients), bytes);
}

TEST(TransformerTest, TiedEmbeddingIsSharedAndReportedOnce) {
  const TransformerModel gpt(transformer_preset("gpt-tiny"));
  RecordingRuntime rt;
  Layers layers = gpt.build_layers(shape(2, 32), tp_context(1, false));
  testing::allocate_all(rt, layers);
  const auto& emb = layers.front()->parameters();
  const auto& head = layers.back()->parameters();
  ASSERT_FALSE(emb.empty());
  // The table is reported by the embedding only; the head holds just the final norm.
  EXPECT_EQ(emb.front().shape, (std::vector<std::int64_t>{256, 64}));
  for (const auto& p : head) EXPECT_NE(p.id, emb.front().id);
  double params = 0;
  for (const auto& l : layers)
    for (const auto& p : l->parameters()) params += p.numel();
  EXPECT_EQ(params, parameter_count(gpt.config()));
  EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::parameters), 2.0 * params);
  // The output GEMM reads the embedding table and accumulates into its gradient.
  testing::run_micro_batch(rt, gpt, layers, shape(2, 32), 0);
  const RecordedOp* out = rt.find_op("mb0.lm_head.output.fwd");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->inputs.at(1).id, emb.front().id);
  const RecordedOp* out_w = rt.find_op("mb0.lm_head.output.bwd_w");
  ASSERT_NE(out_w, nullptr);
  EXPECT_EQ(out_w->outputs.at(0).id, layers.front()->gradients().front().id);

  // A pipeline's last stage holding only the head allocates its own copy of the table.
  RecordingRuntime last_stage;
  Layers fresh = gpt.build_layers(shape(2, 32), tp_context(1, false));
  fresh.back()->allocate(last_stage, true);
  EXPECT_EQ(fresh.back()->parameters().size(), 3u);  // norm weight, bias, table copy

  // Untied (Llama): both own their matrix.
  auto cfg = transformer_preset("gpt-tiny");
  cfg.tied_embeddings = false;
  const TransformerModel untied(cfg);
  RecordingRuntime rt2;
  Layers ul = untied.build_layers(shape(2, 32), tp_context(1, false));
  testing::allocate_all(rt2, ul);
  double p2 = 0;
  for (const auto& l : ul)
    for (const auto& p : l->parameters()) p2 += p.numel();
  EXPECT_EQ(p2, parameter_count(cfg));
}

// ---------------------------------------------------------------- FLOPs

void expect_six_n(const std::string& name, std::int64_t b) {
  const TransformerModel model(transformer_preset(name));
  const auto& cfg = model.config();
  const std::int64_t s = cfg.seq_length;
  Recorded r;
  record_micro_batch(r, model, shape(b, s), tp_context(1, false));
  const double tokens = static_cast<double>(b * s);
  const double total = r.rt.total_flops();
  const double expected = model_flops_per_token(cfg, s) * tokens;
  EXPECT_LT(rel(total, expected), 0.02) << name << ": ops " << total << " vs 6N+6Lsh " << expected;
  // GEMMs and attention alone are exactly 6·N_gemm + 6·L·s·h per token.
  const double gemm_attn = r.rt.total_flops(OpKind::gemm) + r.rt.total_flops(OpKind::attention);
  const double exact =
      (6.0 * gemm_parameter_count(cfg) +
       6.0 * cfg.num_layers * s * cfg.num_attention_heads * cfg.head_dim()) * tokens;
  EXPECT_LT(rel(gemm_attn, exact), 1e-12) << name;
  // Backward GEMMs are exactly twice the forward ones.
  double fwd = 0, bwd = 0;
  for (const auto& op : r.rt.ops())
    if (op.kind == OpKind::gemm || op.kind == OpKind::attention)
      (op.phase == Phase::forward ? fwd : bwd) += op.flops;
  EXPECT_NEAR(bwd / fwd, 2.0, 1e-12) << name;
  // The layers' analytic figures agree with what they issued.
  double analytic = 0;
  for (const auto& l : r.layers) analytic += l->forward_flops() + l->backward_flops();
  EXPECT_LT(rel(analytic, total), 1e-12) << name;
  EXPECT_DOUBLE_EQ(model.describe().model_flops_per_token, model_flops_per_token(cfg, s));
  std::printf("[ measured ] %s: ops %.4e FLOPs vs (6N+6Lsh)·tokens %.4e (%.3f%%)\n", name.c_str(),
              total, expected, 100.0 * (total / expected - 1));
}

TEST(TransformerTest, MicroBatchFlopsMatchSixNPlusAttention) {
  expect_six_n("gpt3-1.3b", 1);
  expect_six_n("llama2-7b", 1);
  expect_six_n("llama3-8b", 1);
  expect_six_n("gpt2-124m", 4);
}

TEST(TransformerTest, FullRecomputeMatchesMegatronFormula) {
  for (const char* name : {"gpt3-1.3b", "gpt3-175b"}) {
    const TransformerModel model(transformer_preset(name));
    const auto& cfg = model.config();
    const std::int64_t s = cfg.seq_length, b = 1;
    const auto layers = model.build_layers(shape(b, s), tp_context(1, false, Recompute::full));
    double total = 0;
    for (const auto& l : layers) total += l->forward_flops() + l->backward_flops();
    // The formula counts all s² attention scores; this model counts the causal half.
    const double causal = megatron_flops_per_iteration(cfg, b, s, /*causal=*/true);
    const double as_published = megatron_flops_per_iteration(cfg, b, s, /*causal=*/false);
    EXPECT_LT(rel(total, causal), 0.02) << name;
    EXPECT_LT(total, as_published) << name;
    EXPECT_GT(total / as_published, 0.9) << name;
    std::printf("[ measured ] %s full recompute: ops %.4e vs Megatron causal %.4e (%.3f%%), "
                "as published %.4e (ratio %.4f)\n",
                name, total, causal, 100.0 * (total / causal - 1), as_published,
                total / as_published);
  }
}

TEST(TransformerTest, RecomputeAddsForwardWorkToBackward) {
  const auto cfg = transformer_preset("gpt3-1.3b");
  const TransformerModel model(cfg);
  const auto batch = shape(1, cfg.seq_length);
  auto block = [&](Recompute rc) {
    auto layers = model.build_layers(batch, tp_context(1, false, rc));
    return std::move(layers[1]);
  };
  const auto none = block(Recompute::none), sel = block(Recompute::selective),
             full = block(Recompute::full);
  EXPECT_DOUBLE_EQ(none->forward_flops(), sel->forward_flops());
  EXPECT_DOUBLE_EQ(none->forward_flops(), full->forward_flops());
  AttentionArgs a{1, cfg.num_attention_heads, cfg.num_attention_heads, cfg.seq_length,
                  cfg.head_dim(), true, false, false};
  EXPECT_DOUBLE_EQ(sel->backward_flops() - none->backward_flops(),
                   ops::attention_cost(a, DType::bf16).flops);
  EXPECT_DOUBLE_EQ(full->backward_flops() - none->backward_flops(), none->forward_flops());
}

// ---------------------------------------------------------------- activation memory

void expect_gpt_layer_activations(const std::string& name, std::int64_t b, int tp, bool sp, Recompute rc) {
  const TransformerModel model(transformer_preset(name));
  const auto& cfg = model.config();
  const std::int64_t s = cfg.seq_length;
  const auto layers = model.build_layers(shape(b, s), tp_context(tp, sp, rc));
  const double measured = layers[1]->saved_activation_bytes();
  const double formula = gpt_layer_activation_bytes(b, s, cfg.hidden_size, cfg.num_attention_heads, tp, sp, rc);
  const double breakdown = activation_bytes_per_layer(cfg, b, s, tp, sp, rc);
  EXPECT_LT(rel(measured, formula), 0.02)
      << name << " tp " << tp << " sp " << sp << " rc " << static_cast<int>(rc) << ": "
      << measured << " vs " << formula;
  EXPECT_DOUBLE_EQ(measured, breakdown) << name << " tp " << tp << " sp " << sp;
  std::printf("[ measured ] %s b=%lld tp=%d sp=%d rc=%d: saved %.4e B/layer, GPT-layer count %.4e "
              "(%.3f%%)\n",
              name.c_str(), static_cast<long long>(b), tp, sp, static_cast<int>(rc), measured,
              formula, 100.0 * (measured / formula - 1));
}

TEST(TransformerTest, SavedActivationsMatchMegatronsGptLayerCount) {
  for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
    expect_gpt_layer_activations("gpt3-1.3b", 1, 1, false, rc);
    expect_gpt_layer_activations("gpt3-1.3b", 2, 8, true, rc);
    expect_gpt_layer_activations("gpt3-1.3b", 1, 8, false, rc);
    expect_gpt_layer_activations("gpt3-175b", 1, 8, true, rc);
  }
}

TEST(TransformerTest, SavedActivationsOfOtherConfigsMatchTheBreakdown) {
  // GQA + SwiGLU + no dropout (Llama), and flash attention: no s² term, only the logsumexp.
  for (const char* name : {"llama2-70b", "llama3-8b"})
    for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
      const TransformerModel model(transformer_preset(name));
      const auto& cfg = model.config();
      const auto layers = model.build_layers(shape(1, 4096), tp_context(8, true, rc));
      EXPECT_DOUBLE_EQ(layers[1]->saved_activation_bytes(),
                       activation_bytes_per_layer(cfg, 1, 4096, 8, true, rc))
          << name;
    }
  auto cfg = transformer_preset("gpt3-1.3b");
  cfg.use_flash_attn = true;
  const TransformerModel flash(cfg);
  const std::int64_t s = 2048;
  const auto layers = flash.build_layers(shape(1, s), tp_context(1, false));
  const double sbh = 1.0 * s * cfg.hidden_size;
  EXPECT_DOUBLE_EQ(layers[1]->saved_activation_bytes(),
                   34 * sbh + 4.0 * cfg.num_attention_heads * s);
  EXPECT_DOUBLE_EQ(layers[1]->saved_activation_bytes(),
                   activation_bytes_per_layer(cfg, 1, s, 1, false, Recompute::none));
}

// Under FP8, Transformer Engine's LayerNormLinear keeps the norm output in one byte (ln_out is
// uint8): the two norm outputs of a dense block cost a byte per element instead of two.
TEST(TransformerTest, Fp8KeepsTheNormOutputsInOneByte) {
  const TransformerModel model(transformer_preset("llama3-8b"));
  const auto& cfg = model.config();
  BatchShape fp8 = shape(1, 4096);
  fp8.fp8 = Fp8Recipe::hybrid;
  const auto plain = model.build_layers(shape(1, 4096), tp_context(8, true));
  const auto quantized = model.build_layers(fp8, tp_context(8, true));
  EXPECT_DOUBLE_EQ(quantized[1]->saved_activation_bytes(),
                   activation_bytes_per_layer(cfg, 1, 4096, 8, true, Recompute::none, DType::bf16, Fp8Recipe::hybrid));
  const double local_tokens = 4096.0 / 8;  // sequence parallel: this rank's shard
  EXPECT_DOUBLE_EQ(plain[1]->saved_activation_bytes() - quantized[1]->saved_activation_bytes(),
                   2 * local_tokens * cfg.hidden_size);
}

TEST(TransformerTest, PeakForwardActivationsMatchTheFormula) {
  const TransformerModel model(transformer_preset("gpt3-1.3b"));
  const auto& cfg = model.config();
  const std::int64_t b = 1, s = cfg.seq_length;
  for (Recompute rc : {Recompute::none, Recompute::selective}) {
    RecordingRuntime rt;
    Layers layers = model.build_layers(shape(b, s), tp_context(1, false, rc));
    testing::allocate_all(rt, layers);
    Tensor t = model.make_input(rt, shape(b, s), 0);
    for (std::size_t i = 0; i + 1 < layers.size(); ++i) t = layers[i]->forward(rt, t, 0);
    const double per_layer = gpt_layer_activation_bytes(b, s, cfg.hidden_size, cfg.num_attention_heads, 1, false, rc);
    const double blocks = cfg.num_layers * per_layer;
    // Held after the forward of all blocks: L layers' saved activations, the embedding's
    // (token ids + dropout mask) and the last output.
    const double embedding = layers.front()->saved_activation_bytes();
    const double output = t.bytes();
    EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::activations), blocks + embedding + output);
    // Peak: the last block's own forward peak on top of what the others keep.
    const auto* last = dynamic_cast<const detail::LayerBase*>(layers[layers.size() - 2].get());
    ASSERT_NE(last, nullptr);
    const double peak = (cfg.num_layers - 1) * per_layer + embedding +
                        last->peak_forward_activation_bytes();
    EXPECT_DOUBLE_EQ(rt.peak_bytes(MemCategory::activations), peak);
    const double peak_measured = rt.peak_bytes(MemCategory::activations);
    if (rc == Recompute::none) {
      EXPECT_LT(rel(peak_measured, blocks), 0.01);
    } else {
      // Selective: the attention matrices of the layer being computed exist transiently.
      const double core = 5.0 * cfg.num_attention_heads * s * s * b;
      EXPECT_GT(peak_measured, blocks);
      EXPECT_LT(peak_measured, blocks + core);
    }
    std::printf("[ measured ] gpt3-1.3b rc=%d forward peak %.4e B vs L x GPT-layer count %.4e\n",
                static_cast<int>(rc), rt.peak_bytes(MemCategory::activations), blocks);
  }
}

// ---------------------------------------------------------------- tensor-parallel comm

std::vector<const RecordedOp*> comm_of_layer(const RecordingRuntime& rt, const std::string& layer,
                                             Phase phase) {
  return rt.ops_where([&](const RecordedOp& op) {
    return op.is_comm && op.phase == phase && op.label.rfind("mb0." + layer + ".", 0) == 0;
  });
}

TEST(TransformerTest, TensorParallelAllReducesPerLayer) {
  const auto cfg = transformer_preset("gpt-tiny");
  const TransformerModel model(cfg);
  const std::int64_t b = 2, s = 32;
  Recorded r;
  record_micro_batch(r, model, shape(b, s), tp_context(2, false));
  const double bsh_bytes = 2.0 * b * s * cfg.hidden_size;
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string layer = "layer" + std::to_string(i);
    for (Phase ph : {Phase::forward, Phase::backward}) {
      const auto comms = comm_of_layer(r.rt, layer, ph);
      ASSERT_EQ(comms.size(), 2u) << layer << " " << to_string(ph);
      for (const auto* op : comms) {
        EXPECT_EQ(op->kind, OpKind::all_reduce) << op->label;
        EXPECT_DOUBLE_EQ(op->bytes, bsh_bytes) << op->label;
        EXPECT_EQ(op->stream, Stream::tp_comm);
        EXPECT_EQ(op->group_id, 3);
        EXPECT_EQ(op->group_ranks, (std::vector<int>{0, 1}));
        // After the GEMM that produced its buffer; a later compute op waits for it.
        ASSERT_EQ(op->after.size(), 1u);
        EXPECT_EQ(r.rt.ops()[op->after[0].id].kind, OpKind::gemm) << op->label;
        bool consumed = false;
        for (const auto& later : r.rt.ops())
          for (const auto& h : later.after)
            if (h.id == op->id && !later.is_comm && later.stream == Stream::compute)
              consumed = true;
        EXPECT_TRUE(consumed) << op->label;
      }
    }
  }
  EXPECT_NE(r.rt.find_op("mb0.layer0.attn.proj.allreduce.fwd"), nullptr);
  EXPECT_NE(r.rt.find_op("mb0.layer0.mlp.fc2.allreduce.fwd"), nullptr);
  EXPECT_NE(r.rt.find_op("mb0.layer0.attn.qkv.allreduce.bwd"), nullptr);
  EXPECT_NE(r.rt.find_op("mb0.layer0.mlp.fc1.allreduce.bwd"), nullptr);
  // Per layer per micro-batch: 4 all-reduces of b·s·h elements (FACTS.md).
  const auto all = r.rt.ops_where([](const RecordedOp& op) {
    return op.kind == OpKind::all_reduce && op.label.find(".layer") != std::string::npos;
  });
  EXPECT_EQ(all.size(), 4u * cfg.num_layers);
  EXPECT_TRUE(r.rt.errors().empty());
}

TEST(TransformerTest, SequenceParallelUsesReduceScatterAndAllGather) {
  const auto cfg = transformer_preset("gpt-tiny");
  const TransformerModel model(cfg);
  const std::int64_t b = 2, s = 32;
  Recorded r;
  record_micro_batch(r, model, shape(b, s), tp_context(2, true));
  const double bsh_bytes = 2.0 * b * s * cfg.hidden_size;
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string layer = "layer" + std::to_string(i);
    std::map<OpKind, int> fwd, bwd;
    for (const auto* op : comm_of_layer(r.rt, layer, Phase::forward)) {
      ++fwd[op->kind];
      EXPECT_DOUBLE_EQ(op->bytes, bsh_bytes) << op->label;
    }
    for (const auto* op : comm_of_layer(r.rt, layer, Phase::backward)) {
      ++bwd[op->kind];
      EXPECT_DOUBLE_EQ(op->bytes, bsh_bytes) << op->label;
    }
    EXPECT_EQ(fwd[OpKind::all_reduce], 0);
    EXPECT_EQ(fwd[OpKind::all_gather], 2);
    EXPECT_EQ(fwd[OpKind::reduce_scatter], 2);
    EXPECT_EQ(bwd[OpKind::all_reduce], 0);
    // Conjugates (2 all-gathers, 2 reduce-scatters) plus the re-gather of the QKV and fc1
    // inputs for their weight gradients.
    EXPECT_EQ(bwd[OpKind::all_gather], 4);
    EXPECT_EQ(bwd[OpKind::reduce_scatter], 2);
  }
  // Norms and dropout work on s/t.
  const RecordedOp* norm = r.rt.find_op("mb0.layer0.attn.norm.fwd");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(std::get<NormArgs>(norm->args).rows, b * s / 2);
  EXPECT_TRUE(r.rt.errors().empty());
  EXPECT_DOUBLE_EQ(r.rt.current_bytes(MemCategory::activations), 0);
}

// norm_kernel two_pass (apex's FusedLayerNorm) prices every norm backward with its second read of
// x and dy, and nothing else: the forward norms and the FLOPs stay as they were.
TEST(TransformerTest, TwoPassNormKernelRereadsInEveryNormBackwardOnly) {
  TransformerConfig cfg = transformer_preset("gpt-tiny");
  Recorded one_pass;
  record_micro_batch(one_pass, TransformerModel(cfg), shape(2, 32), tp_context(1, false));
  cfg.norm_kernel = NormKernel::two_pass;
  Recorded two_pass;
  record_micro_batch(two_pass, TransformerModel(cfg), shape(2, 32), tp_context(1, false));
  ASSERT_EQ(one_pass.rt.ops().size(), two_pass.rt.ops().size());
  int backward_norms = 0;
  for (std::size_t i = 0; i < two_pass.rt.ops().size(); ++i) {
    const RecordedOp& a = one_pass.rt.ops()[i];
    const RecordedOp& b = two_pass.rt.ops()[i];
    const bool backward_norm = b.kind == OpKind::norm && std::get<NormArgs>(b.args).backward;
    if (b.kind == OpKind::norm) EXPECT_EQ(std::get<NormArgs>(b.args).weight_grad_rereads, backward_norm) << b.label;
    if (a.kind == OpKind::norm) EXPECT_FALSE(std::get<NormArgs>(a.args).weight_grad_rereads) << a.label;
    EXPECT_DOUBLE_EQ(b.flops, a.flops) << b.label;
    if (backward_norm) {
      ++backward_norms;
      EXPECT_GT(b.bytes, a.bytes) << b.label;
    } else {
      EXPECT_DOUBLE_EQ(b.bytes, a.bytes) << b.label;
    }
  }
  EXPECT_EQ(backward_norms, 2 * cfg.num_layers + 1);  // two per block and the final norm
}

TEST(TransformerTest, VocabAndSequenceShardOffsets) {
  const TransformerModel model(transformer_preset("gpt-tiny"));
  auto ctx = tp_context(2, true);
  ctx.tp_rank = 1;
  Recorded r;
  record_micro_batch(r, model, shape(2, 32), ctx);
  const RecordedOp* word = r.rt.find_op("mb0.embedding.word.fwd");
  const RecordedOp* pos = r.rt.find_op("mb0.embedding.position.fwd");
  ASSERT_NE(word, nullptr);
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(std::get<EmbeddingArgs>(word->args).vocab_offset, 128);  // rows [128, 256)
  EXPECT_EQ(std::get<EmbeddingArgs>(word->args).vocab, 128);
  EXPECT_EQ(std::get<EmbeddingArgs>(pos->args).vocab_offset, 16);    // positions [16, 32)
  EXPECT_EQ(std::get<EmbeddingArgs>(pos->args).tokens, 2 * 16);
  EXPECT_TRUE(r.rt.errors().empty());
}

TEST(TransformerTest, ShardingErrorsAreReported) {
  const TransformerModel model(transformer_preset("gpt-tiny"));
  EXPECT_THROW(model.build_layers(shape(1, 32), tp_context(3, false)), std::invalid_argument);
  EXPECT_THROW(model.build_layers(shape(1, 30), tp_context(4, true)), std::invalid_argument);
  EXPECT_THROW(model.build_layers(shape(1, 64), tp_context(1, false)), std::invalid_argument);
  auto bad = transformer_preset("gpt-tiny");
  bad.num_query_groups = 3;
  EXPECT_THROW(TransformerModel{bad}, std::invalid_argument);
}

// ---------------------------------------------------------------- bookkeeping

struct Variant {
  const char* preset;
  int tp;
  bool sp;
  Recompute rc;
  bool flash;
};

TEST(TransformerTest, IterationLabelsAreUniqueAndNothingLeaks) {
  auto llama_tiny = [] {
    auto c = transformer_preset("gpt-tiny");
    c.name = "llama-tiny";
    c.norm = NormType::rmsnorm;
    c.activation = ActivationType::swiglu;
    c.position = PositionEmbeddingType::rope;
    c.tied_embeddings = false;
    c.bias = false;
    c.num_query_groups = 2;
    c.ffn_hidden_size = 96;
    c.hidden_dropout = 0;
    c.attention_dropout = 0;
    return c;
  };
  const std::vector<Variant> variants = {
      {"gpt-tiny", 1, false, Recompute::none, false},
      {"gpt-tiny", 2, false, Recompute::selective, false},
      {"gpt-tiny", 2, true, Recompute::full, false},
      {"gpt-tiny", 4, true, Recompute::none, true},
      {"llama-tiny", 1, false, Recompute::full, true},
      {"llama-tiny", 2, true, Recompute::selective, false},
      {"llama-tiny", 2, false, Recompute::none, false},
  };
  for (const auto& v : variants) {
    auto cfg = std::string(v.preset) == "llama-tiny" ? llama_tiny() : transformer_preset(v.preset);
    cfg.use_flash_attn = v.flash;
    const TransformerModel model(cfg);
    const auto batch = shape(2, 32);
    Recorded r;
    r.layers = model.build_layers(batch, tp_context(v.tp, v.sp, v.rc));
    testing::allocate_all(r.rt, r.layers);
    r.rt.begin_iteration(0);
    // Two micro-batches in flight at once (as a pipeline schedule keeps them).
    Tensor l0 = testing::forward_all(r.rt, model, r.layers, batch, 0);
    Tensor l1 = testing::forward_all(r.rt, model, r.layers, batch, 1);
    testing::backward_all(r.rt, r.layers, l0, 0);
    testing::backward_all(r.rt, r.layers, l1, 1);
    r.rt.end_iteration();
    const std::string what = cfg.name + " tp " + std::to_string(v.tp) + " sp " +
                             std::to_string(v.sp) + " rc " + std::to_string(int(v.rc));
    EXPECT_TRUE(r.rt.duplicate_labels().empty())
        << what << ": duplicate " << r.rt.duplicate_labels().front();
    EXPECT_TRUE(r.rt.errors().empty()) << what << ": " << r.rt.errors().front();
    EXPECT_DOUBLE_EQ(r.rt.current_bytes(MemCategory::activations), 0)
        << what << ": leaked " << ::testing::PrintToString(r.rt.live_names(MemCategory::activations));
    for (const auto& l : r.layers) {
      auto* base = dynamic_cast<detail::LayerBase*>(l.get());
      ASSERT_NE(base, nullptr);
      EXPECT_TRUE(base->micro_batches_in_flight().empty()) << what;
    }
    // Weight-gradient GEMMs accumulate into the layers' gradient tensors; labels carry the
    // micro-batch and a known suffix.
    std::set<std::int32_t> grads;
    for (const auto& l : r.layers)
      for (const auto& g : l->gradients()) grads.insert(g.id);
    for (const auto& op : r.rt.ops()) {
      EXPECT_TRUE(op.label.rfind("mb0.", 0) == 0 || op.label.rfind("mb1.", 0) == 0) << op.label;
      const auto dot = op.label.rfind('.');
      const std::string suffix = op.label.substr(dot + 1);
      EXPECT_TRUE(suffix == "fwd" || suffix == "bwd" || suffix == "bwd_w" ||
                  suffix == "recompute")
          << op.label;
      if (op.kind == OpKind::gemm && suffix == "bwd_w") {
        EXPECT_TRUE(std::get<GemmArgs>(op.args).accumulate) << op.label;
        EXPECT_TRUE(grads.count(op.outputs.at(0).id)) << op.label;
      }
      EXPECT_EQ(op.phase == Phase::forward, suffix == "fwd") << op.label;
    }
  }
}

TEST(TransformerTest, LabelsFollowTheConvention) {
  const TransformerModel model(transformer_preset("gpt-tiny"));
  Recorded r;
  record_micro_batch(r, model, shape(1, 32), tp_context(1, false, Recompute::selective));
  for (const char* label :
       {"mb0.embedding.word.fwd", "mb0.embedding.position.fwd", "mb0.layer0.attn.norm.fwd",
        "mb0.layer0.attn.qkv.fwd", "mb0.layer0.attn.core.fwd", "mb0.layer0.attn.proj.fwd",
        "mb0.layer0.mlp.fc1.fwd", "mb0.layer0.mlp.act.fwd", "mb0.layer1.mlp.fc2.fwd",
        "mb0.lm_head.output.fwd", "mb0.lm_head.loss.fwd", "mb0.lm_head.loss.bwd",
        "mb0.layer1.attn.core.recompute", "mb0.layer1.attn.core.bwd", "mb0.layer1.attn.qkv.bwd",
        "mb0.layer1.attn.qkv.bwd_w", "mb0.embedding.word.bwd_w"})
    EXPECT_NE(r.rt.find_op(label), nullptr) << label;
}

}  // namespace
}  // namespace tandem
