#include "analysis/calibration/workloads.hpp"

#include <stdexcept>
#include <string>

#include <algorithm>

#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/mlp.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/null_runtime.hpp"
#include "strategies/ops.hpp"
#include "platforms/kernel_class.hpp"

namespace tandem::calibration {

namespace {

TrainingConfig one_micro_batch(std::int64_t micro_batch, std::int64_t seq, DType precision, int replicas) {
  TrainingConfig t;
  t.global_batch_size = micro_batch * replicas;
  t.micro_batch_size = micro_batch;
  t.seq_length = seq;
  t.precision = precision;
  return t;
}

Workload replicated(std::string name, std::shared_ptr<const Model> model, TrainingConfig training, int replicas) {
  ParallelConfig parallel;
  parallel.data_parallel_size = replicas;
  Workload w;
  w.name = std::move(name);
  w.seq_length = training.seq_length;
  w.strategy = std::make_shared<DataParallel>(model, training, parallel,
                                              std::vector<double>(static_cast<std::size_t>(replicas), 1.0));
  w.model = std::move(model);
  return w;
}

// A tensor-parallel pair per two replicas (one when there is a single replica): the sharded
// kernels a tensor-parallel run issues, the vocab-parallel loss steps among them.
Workload tensor_parallel(std::string name, std::shared_ptr<const Model> model, TrainingConfig training, int replicas) {
  ParallelConfig parallel;
  parallel.tensor_model_parallel_size = 2;
  parallel.data_parallel_size = std::max(1, replicas / 2);
  training.global_batch_size = training.micro_batch_size * parallel.data_parallel_size;
  Workload w;
  w.name = std::move(name) + "-tp2";
  w.seq_length = training.seq_length;
  const auto world = static_cast<std::size_t>(2 * parallel.data_parallel_size);
  w.strategy = std::make_shared<HybridParallel>(model, training, parallel, HybridConfig{},
                                                std::vector<RankDevice>(world, RankDevice{}));
  w.model = std::move(model);
  return w;
}

// `vocab` 0: gpt-tiny's byte vocabulary (a small LM head); else that many tokens.
Workload gpt_workload(std::int64_t hidden, std::int64_t seq, std::int64_t micro_batch, DType precision, int replicas,
                      bool tensor_parallel_pair = false, std::int64_t head_dim = 16, std::int64_t vocab = 0) {
  TransformerConfig c = transformer_preset("gpt-tiny");  // byte vocabulary, dropout as trained
  c.name = "calib-gpt-h" + std::to_string(hidden) + (vocab > 0 ? "-v" + std::to_string(vocab) : "");
  if (vocab > 0) c.vocab_size = vocab;
  c.num_layers = 1;
  c.hidden_size = hidden;
  c.ffn_hidden_size = 4 * hidden;
  c.num_attention_heads = hidden / head_dim;
  c.seq_length = seq;
  c.max_position_embeddings = seq;
  const std::string name = c.name + "-s" + std::to_string(seq) + "-b" + std::to_string(micro_batch);
  auto model = std::make_shared<TransformerModel>(c);
  const TrainingConfig training = one_micro_batch(micro_batch, seq, precision, replicas);
  return tensor_parallel_pair ? tensor_parallel(name, std::move(model), training, replicas)
                              : replicated(name, std::move(model), training, replicas);
}

Workload mlp_workload(std::int64_t width, std::int64_t batch, DType precision, int replicas) {
  MlpConfig c;
  c.name = "calib-mlp-w" + std::to_string(width);
  c.input_size = 256;
  c.hidden_sizes = {width, width};
  c.output_size = 10;
  return replicated(c.name + "-b" + std::to_string(batch), std::make_shared<MlpModel>(c),
                    one_micro_batch(batch, 1, precision, replicas), replicas);
}

// Each rank holds one buffer per size; every op is waited for before the next is issued.
class CommProgram final : public RankProgram {
 public:
  CommProgram(OpKind kind, Group group, std::vector<Bytes> sizes)
      : kind_(kind), group_(std::move(group)), sizes_(std::move(sizes)) {}

  void setup(Runtime& rt) override {
    for (Bytes bytes : sizes_) {
      const auto floats = static_cast<std::int64_t>(bytes / 4);
      buffers_.push_back(rt.alloc("comm." + std::to_string(floats), {floats}, DType::fp32,
                                  MemCategory::comm_buffers));
    }
  }

  void train_step(Runtime& rt, int) override {
    const Issue on_comm{Stream::dp_comm, {}};
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      const Tensor& b = buffers_[i];
      const std::string label = std::string("comm.") + to_string(kind_) + "." +
                                std::to_string(static_cast<long long>(sizes_[i]));
      Handle h;
      switch (kind_) {
        case OpKind::send:
          h = rt.rank() == 0 ? ops::send(rt, Phase::other, label, b, 1, on_comm)
                             : ops::recv(rt, Phase::other, label, b, 0, on_comm);
          break;
        case OpKind::all_reduce: h = ops::all_reduce(rt, Phase::other, label, b, group_, on_comm); break;
        case OpKind::all_gather: h = ops::all_gather(rt, Phase::other, label, b, group_, on_comm); break;
        case OpKind::reduce_scatter:
          h = ops::reduce_scatter(rt, Phase::other, label, b, group_, on_comm);
          break;
        case OpKind::broadcast: h = ops::broadcast(rt, Phase::other, label, b, group_, 0, on_comm); break;
        default: throw std::invalid_argument(std::string("no calibration workload for ") + to_string(kind_));
      }
      rt.wait(h);
    }
  }

 private:
  OpKind kind_;
  Group group_;
  std::vector<Bytes> sizes_;
  std::vector<Tensor> buffers_;
};

class CommStrategy final : public Strategy {
 public:
  CommStrategy(OpKind kind, int n, std::vector<Bytes> sizes) : kind_(kind), sizes_(std::move(sizes)) {
    group_.id = 0;
    for (int r = 0; r < n; ++r) group_.ranks.push_back(r);
  }
  std::string name() const override { return std::string("calibrate-") + to_string(kind_); }
  int world_size() const override { return group_.size(); }
  std::unique_ptr<RankProgram> program_for(int) const override {
    return std::make_unique<CommProgram>(kind_, group_, sizes_);
  }
  std::int64_t sequences_per_iteration() const override { return 1; }

 private:
  OpKind kind_;
  Group group_;
  std::vector<Bytes> sizes_;
};

}  // namespace

std::map<std::string, std::string> kernel_classes(const Workload& workload) {
  std::map<std::string, std::string> classes;
  NullRuntime recorder(workload.strategy->world_size());
  recorder.on_compute = [&](const ComputeOp& op) { classes[op.label] = kernel_class(op); };
  auto program = workload.strategy->program_for(0);
  program->setup(recorder);
  recorder.begin_iteration(0);
  program->train_step(recorder, 0);
  recorder.end_iteration();
  return classes;
}

// GPU-sized steps: head dim 128 as in GPT-3 and Llama; one replica per GPU measured.
std::vector<Workload> gpu_compute_workloads(bool quick, DType precision, int replicas) {
  std::vector<Workload> w;
  const std::vector<std::int64_t> hiddens = quick ? std::vector<std::int64_t>{1024, 4096}
                                                  : std::vector<std::int64_t>{1024, 2048, 4096};
  for (std::int64_t h : hiddens) {
    w.push_back(gpt_workload(h, 1024, 1, precision, replicas, false, 128));
    w.push_back(gpt_workload(h, 2048, quick ? 2 : 4, precision, replicas, false, 128));
    if (!quick) w.push_back(gpt_workload(h, 512, 2, precision, replicas, false, 128));
  }
  // Head dim 64 (GPT-2, GPT-3 up to 13B) beside 128: attention's efficiency differs between them;
  // and a model's own vocabulary: the LM head's GEMMs (an odd N: 50257) and the loss over it, which
  // the byte vocabulary above never sizes.
  w.push_back(gpt_workload(768, 1024, quick ? 4 : 8, precision, replicas, false, 64, 50257));
  if (!quick) w.push_back(gpt_workload(4096, 2048, 1, precision, replicas, false, 128, 32000));
  for (std::int64_t width : quick ? std::vector<std::int64_t>{4096} : std::vector<std::int64_t>{4096, 8192}) {
    w.push_back(mlp_workload(width, 1024, precision, replicas));
    if (!quick) w.push_back(mlp_workload(width, 256, precision, replicas));
  }
  return w;
}

std::vector<Workload> compute_workloads(bool quick, DType precision, int replicas, WorkloadScale scale) {
  if (replicas < 1) throw std::invalid_argument("compute workloads need a replica or more");
  if (scale == WorkloadScale::gpu) return gpu_compute_workloads(quick, precision, replicas);
  std::vector<Workload> w;
  // Transformer: hidden 32..128 (head dim 16), sequences 16..64, micro-batches 1..4: GEMMs from
  // ~3e4 to ~1e8 FLOPs, attention, norms and element-wise kernels from KBs to MBs.
  const std::vector<std::int64_t> hiddens = quick ? std::vector<std::int64_t>{32, 128}
                                                  : std::vector<std::int64_t>{32, 64, 128};
  for (std::int64_t h : hiddens) {
    w.push_back(gpt_workload(h, 32, 2, precision, replicas));
    if (!quick) w.push_back(gpt_workload(h, 16, 1, precision, replicas));
    w.push_back(gpt_workload(h, 64, 4, precision, replicas));
    w.push_back(gpt_workload(h, 32, 2, precision, replicas, /*tensor_parallel_pair=*/true));
    if (!quick) w.push_back(gpt_workload(h, 64, 4, precision, replicas, /*tensor_parallel_pair=*/true));
  }
  // MLP: wide GEMMs (up to 64 x 512 x 512) and large element-wise and optimizer kernels.
  const std::vector<std::int64_t> widths = quick ? std::vector<std::int64_t>{128, 512}
                                                 : std::vector<std::int64_t>{128, 256, 512};
  for (std::int64_t width : widths) {
    w.push_back(mlp_workload(width, 32, precision, replicas));
    if (!quick) w.push_back(mlp_workload(width, 64, precision, replicas));
  }
  return w;
}

std::vector<Bytes> comm_sizes_bytes(bool quick, WorkloadScale scale) {
  if (scale == WorkloadScale::gpu) {
    if (quick) return {1 << 20, 16 << 20, 256 << 20};
    return {64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  }
  if (quick) return {4096, 65536, 1 << 20, 4 << 20};
  return {1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20};
}

std::vector<OpKind> calibrated_comm_kinds() {
  return {OpKind::send, OpKind::all_reduce, OpKind::all_gather, OpKind::reduce_scatter, OpKind::broadcast};
}

Workload comm_workload(OpKind kind, int group_size, const std::vector<Bytes>& sizes_bytes) {
  if (kind == OpKind::send && group_size != 2) throw std::invalid_argument("send/recv workloads use 2 devices");
  if (group_size < 2) throw std::invalid_argument("communication workloads need 2 devices or more");
  Workload w;
  w.name = std::string("comm-") + to_string(kind) + "-n" + std::to_string(group_size);
  w.strategy = std::make_shared<CommStrategy>(kind, group_size, sizes_bytes);
  return w;
}

}  // namespace tandem::calibration
