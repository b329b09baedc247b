// A strategy decides what every rank does in one training iteration: which layers it holds,
// which micro-batches it runs, how gradients are reduced and how the optimizer steps. It is
// written once against the per-rank interface (runtime.hpp) and knows nothing of backends.
//
// A Strategy is immutable and shared by all ranks; each rank gets its own RankProgram (its
// layers, buffers and schedule), created on the rank's own thread/actor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies/compression/compression_config.hpp"
#include "strategies/model.hpp"
#include "strategies/runtime.hpp"

namespace tandem {

// The training configuration, with Megatron-LM's knob names.
struct TrainingConfig {
  std::int64_t global_batch_size = 1;  // sequences per iteration, all replicas together
  std::int64_t micro_batch_size = 1;   // sequences per micro-batch
  std::int64_t seq_length = 1;
  DType precision = DType::bf16;       // parameters and activations
  bool accumulate_allreduce_grads_in_fp32 = false;
  // PyTorch AMP (torch.autocast, as Lightning and plain DDP loops train) instead of Megatron's
  // mixed precision: fp32 weights cast to `precision` at each micro-batch's first use, and each
  // 16-bit weight gradient cast and accumulated into the fp32 .grad. The weights are then fp32
  // parameters with no master copy (batch_shape_of) beside the 16-bit copies the casts keep
  // (LayerBase::add_parameter); the casts are priced (GemmArgs::WeightPass).
  bool autocast = false;
  // How a micro-batch's 16-bit weight gradients reach the main (fp32) gradients
  // (GemmArgs::WeightPass): Megatron-Core's gradient-accumulation fusion (the weight-gradient
  // GEMM accumulates into them), a separate add (Megatron-LM before 2022), or a cast then an add
  // (DeepSpeed's BF16_Optimizer; PyTorch AMP, which autocast implies).
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  Fp8Recipe fp8 = Fp8Recipe::none;     // FP8 GEMMs in the transformer blocks (model.hpp)
  std::string optimizer = "adam";      // mixed-precision AdamW: fp32 master, m, v
  float lr = 3e-4f;
  float weight_decay = 0.1f;
};

// How the global batch is shared among data-parallel replicas.
enum class BatchSplit { even, proportional };

// Parallelism knobs, named as in Megatron-LM / DeepSpeed.
struct ParallelConfig {
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int data_parallel_size = 1;
  // Megatron-Core's --context-parallel-size: every sequence split over this many ranks (load-
  // balanced zigzag chunks; attention all-gathers K and V, AttentionArgs); they sum gradients
  // with the data-parallel replicas. The hybrid strategy only.
  int context_parallel_size = 1;
  bool sequence_parallel = false;
  // Megatron-Core's --tp-comm-overlap (Transformer Engine userbuffers): needs sequence_parallel.
  bool tp_comm_overlap = false;
  int zero_stage = 0;
  // ZeRO-Offload (DeepSpeed's zero_optimization.offload_optimizer.device: cpu): the optimizer's
  // state in the host's memory, stepped by the host's CPU (strategies/gradient_sync.hpp).
  bool offload_optimizer = false;
  // The fp32 master weight kept as the 16-bit remainder that completes the bf16 parameter (apex
  // DistributedFusedAdam's store_param_remainders, NeMo's default for bf16 with its distributed
  // Adam): 2 bytes of optimizer state per parameter instead of 4, the same fp32 arithmetic, and no
  // separate copy of the master into the parameter after the step. bf16 parameters only.
  bool master_param_remainders = false;
  // Local SGD (periodic model averaging, PyTorch's PostLocalSGD `period`): with H > 1 each
  // data-parallel replica steps on its own gradients, and the replicas average their parameters
  // every H steps instead of reducing gradients every step. 1: synchronous data parallelism.
  int local_sgd_steps = 1;
  // Hierarchical local SGD (Lin et al. 2020, "Don't Use Large Mini-Batches, Use Local SGD",
  // arXiv 1808.07217): with local SGD, blocks of this many consecutive replicas (a node's, say)
  // step together - their gradients reduced every step, as synchronous data parallelism - and
  // the blocks average every local_sgd_steps steps. 1: every replica steps alone.
  int local_sgd_group_size = 1;
  // DiLoCo (Douillard et al. 2023, arXiv 2311.08105): with local SGD, the replicas' average is an
  // outer gradient (the last synchronised model minus the average) stepped by SGD with Nesterov
  // momentum; the paper's 0.7 and 0.9. 1 and 0: the plain average.
  float outer_lr = 1.0f;
  float outer_momentum = 0.0f;
  // Megatron-Core's --overlap-param-gather (ZeRO-1/2, the distributed optimizer): the parameters
  // a step updated are all-gathered layer by layer during the next step's forward, each layer
  // waiting for its own, instead of all at once at the end of the step.
  bool overlap_param_gather = false;
  // Megatron-LM's --scatter-gather-tensors-in-pipeline (p2p_communication.py; on by default in
  // Megatron-LM before Megatron-Core, and DeepSpeed's PipelineEngine partitions its stage tensors
  // the same way under model parallelism): a boundary tensor that every member of a tensor group
  // holds whole goes to the next stage as 1/t from each member, and the receiving tensor group
  // all-gathers it. Without sequence parallelism only (with it the tensor is already split).
  bool pipeline_scatter_gather = true;
  // DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py, p2p.py, schedule.py at v0.5.8):
  // every send and receive between stages is a blocking torch.distributed.send/recv, which the
  // compute stream waits for, and which starts only when the stage's computation before it is
  // done; a send completes once its receiver has reached the receive. Its TrainSchedule runs
  // 1F1B's order and receives the next activation before it sends the last gradient. 1F1B only.
  bool pipeline_blocking_p2p = false;
  // Megatron-Core's --overlap-p2p-communication (NeMo's overlap_p2p_comm; schedules.py at
  // core_r0.8.0, forward_backward_pipelining_with_interleaving): a stage posts the receive of its
  // next forward's input right after a forward and of its next backward's gradient right after a
  // backward, so each transfer runs under the pass in between; without it a receive is posted
  // when the pass that needs it is reached. Megatron-Core's other schedules ignore the flag, and
  // so does Tandem's.
  bool overlap_p2p_comm = false;
  // Megatron-Core's --expert-model-parallel-size: the experts of a mixture-of-experts model split
  // over blocks of this many consecutive data-parallel replicas, which exchange tokens by
  // all-to-all (RankLayout::expert_group); the replicas holding the same experts sum their
  // gradients (expert_data_group). Divides data_parallel_size and the experts. The hybrid strategy.
  int expert_model_parallel_size = 1;
  // Synchronous parameter servers (strategies/parameter_server.hpp): this many server ranks after
  // the data-parallel workers sum the gradients the workers push and send the sums back, in place
  // of the all-reduce. 0: none. The data_parallel strategy.
  int parameter_servers = 0;
  // Gradients travel to the servers in partitions of at most this many bytes, each summed by one
  // server (BytePS's BYTEPS_PARTITION_BYTES, default 4,096,000).
  std::int64_t parameter_server_partition_bytes = 4'096'000;
  // Bounded staleness (stale-synchronous parallel, Ho et al. 2013, at its bound): the update a
  // worker applies in step t is the servers' sum of step t - s, pulled during step t (overlapped
  // with its forward and backward) instead of at its end. 0: synchronous.
  int parameter_server_staleness = 0;
  // The servers step the optimizer (the classic parameter server, Li et al. 2014: servers hold the
  // parameters' fp32 values and Adam's moments, workers pull parameters instead of sums and keep no
  // optimizer state). Synchronous only. false: BytePS's design, servers only sum.
  bool parameter_server_optimizer = false;
  // Asynchronous servers (Downpour SGD, Dean et al. 2012; strategies/parameter_server_order.hpp):
  // each worker's gradient is applied by the servers' optimizer as it arrives, and that worker
  // pulls the parameters as they are then; no worker waits for another. The order of arrivals is a
  // model's, drawn from parameter_server_seed with each step time spread by parameter_server_jitter
  // (a log-normal's log-spread; 0: the workers' speeds alone), the same in the simulator and the
  // CPU backend. The servers step the optimizer (parameter_server_optimizer is implied).
  bool parameter_server_asynchronous = false;
  double parameter_server_jitter = 0.0;
  std::uint64_t parameter_server_seed = 0;
  Recompute recompute_granularity = Recompute::none;
  bool overlap_grad_reduce = true;
  std::int64_t ddp_bucket_size = 40'000'000;  // parameters per gradient bucket (Megatron default)
  BatchSplit batch_split = BatchSplit::even;
  // How data-parallel replicas exchange gradients: plain all-reduce, or through a codec
  // (strategies/compression/). Needs zero_stage 0 (the codecs replace the all-reduce).
  CompressionConfig gradient_compression;
};

// Throws StrategyError("strategy.gradient_compression...") unless `parallel`'s compression
// settings are valid: a rank >= 1, a top-k ratio in (0, 1], zero_stage 0.
void check_gradient_compression(const ParallelConfig& parallel);

// An impossible strategy: `field` names the knob at fault (e.g. "parallel.data_parallel_size").
class StrategyError : public std::invalid_argument {
 public:
  StrategyError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

class RankProgram {
 public:
  virtual ~RankProgram() = default;
  // The run's iterations, [first, first + count), told before setup by a backend that knows them:
  // a program whose steps depend on the whole run (asynchronous parameter servers, whose order of
  // pushes is drawn for every step of every worker) plans them here.
  virtual void plan_iterations(int first, int count) {
    (void)first;
    (void)count;
  }
  // Allocates parameters, gradients and optimizer state (once, before the first step).
  virtual void setup(Runtime& rt) = 0;
  // One training iteration: all micro-batches, gradient reduction, optimizer step.
  virtual void train_step(Runtime& rt, int iteration) = 0;
  // Finishes what a step left for the next one to overlap (parameters gathered late), so that the
  // rank's tensors hold its whole state: a backend calls it before saving a checkpoint and after
  // its last step.
  virtual void settle(Runtime& rt) { (void)rt; }
};

// The data-parallel replicas of a strategy. Replicas of equal work run the same program on the
// same shapes, differing only in which data they read and which optimizer shard they own, so a
// backend may execute one and mirror the others (the simulator's replica folding): on the same
// devices, rank r does at the same moments what the rank at its position in such a replica does.
struct ReplicaStructure {
  int replicas = 1;
  std::vector<int> replica_of;          // per rank: its data-parallel replica
  std::vector<int> position_of;         // per rank: its place inside the replica (same position, same program)
  std::vector<std::int64_t> work_of;    // per replica: micro-batches per iteration
  // Consecutive replicas that exchange tokens at every layer (expert parallelism: an all-to-all
  // over `exchanging_replicas` replicas). A backend that mirrors replicas keeps each such block
  // whole: its all-to-all then never waits on a mirrored member.
  int exchanging_replicas = 1;
};

// The tensor-parallel groups of a strategy. Members of one group run the same program on shards
// of the same shapes, issue their group's collectives together, and talk to ranks outside their
// group only to ranks at their own tensor position (pipeline neighbours, data-parallel peers). So
// a backend may execute the group's first member and mirror the others (the simulator's tensor
// folding): rank r does at the same moments what leader_of[r] does, on its own device and links.
struct TensorStructure {
  std::vector<int> leader_of;  // per rank: the first rank of its tensor-parallel group
  int group_size = 1;          // ranks per tensor-parallel group
};

// The pipeline of a strategy whose schedule reaches a periodic steady state. Every replica runs
// `micro_batches` per iteration; from `periodic_from` micro-batches on, `period` more add the same
// time to every rank and nothing to its peak memory (the schedule's steady_state(),
// pipeline_schedule.hpp). So a backend may run two shorter
// iterations and extrapolate (the simulator's pipeline extrapolation).
struct PipelineStructure {
  std::int64_t micro_batches = 0;  // per replica
  std::int64_t periodic_from = 0;
  std::int64_t period = 1;
};

// A rank's part of the plan, for reports and traces: its pipeline stage and data-parallel
// replica, the transformer layers it holds (all its chunks) and the sequences its replica takes
// per iteration (its batch share). -1 where the strategy has no such notion.
struct RankRole {
  int stage = -1;
  int replica = -1;
  int layers = -1;
  std::int64_t sequences = -1;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual int world_size() const = 0;
  virtual std::unique_ptr<RankProgram> program_for(int rank) const = 0;
  // Sequences processed per iteration (all replicas).
  virtual std::int64_t sequences_per_iteration() const = 0;
  // Its data-parallel replicas; nullopt for a strategy without replicas to mirror.
  virtual std::optional<ReplicaStructure> replica_structure() const { return std::nullopt; }
  // Its tensor-parallel groups; nullopt for a strategy without them (or whose members differ).
  virtual std::optional<TensorStructure> tensor_structure() const { return std::nullopt; }
  // Its periodic pipeline; nullopt without one (no pipeline, GPipe, replicas of unequal work).
  virtual std::optional<PipelineStructure> pipeline_structure() const { return std::nullopt; }
  // The same strategy running `micro_batches` per replica (for a pipeline_structure).
  virtual std::unique_ptr<Strategy> with_micro_batches(std::int64_t micro_batches) const;
  // Its iterations repeat with this period (local SGD averages every H steps): a backend that
  // reports a mean iteration measures whole periods.
  virtual int iteration_period() const { return 1; }
  // Its first iterations are unlike the rest (a stale exchange's first s steps pull nothing and
  // make no update): a backend that predicts a steady iteration warms up over at least these.
  virtual int irregular_iterations() const { return 0; }
  // Ranks may run iterations ahead of one another (asynchronous parameter servers): a backend that
  // joins every iteration across ranks cannot run it, and ranks hold different versions of the
  // parameters, so no checkpoint can be taken.
  virtual bool ranks_run_ahead() const { return false; }
  // One role per rank; empty when the strategy does not say.
  virtual std::vector<RankRole> rank_roles() const { return {}; }
  // Its ranks keep state in their node's host memory and step it on the host's CPU
  // (ParallelConfig::offload_optimizer): a backend then models or provides the node's host.
  virtual bool uses_host() const { return false; }
};

// The micro-batch shape every strategy derives from the training configuration.
BatchShape batch_shape_of(const TrainingConfig& training);

// Micro-batches each of `replicas` data-parallel replicas runs per iteration: the global batch
// in micro-batches, evenly or in proportion to `replica_speeds`. Throws StrategyError naming the
// knob at fault.
std::vector<std::int64_t> micro_batches_per_replica(const TrainingConfig& training, int replicas,
                                                    BatchSplit split, const std::vector<double>& replica_speeds);

// Splits `total` micro-batches over replicas in proportion to `weights` (largest remainder, every
// replica gets at least one; ties go to the lower index). Equal weights give an even split.
std::vector<std::int64_t> split_proportionally(std::int64_t total, const std::vector<double>& weights);

}  // namespace tandem
