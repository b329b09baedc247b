// The fields of a scenario file (scenarios/*.yaml), section by section: what load_scenario
// accepts (it checks keys against these tables) and what `tandem fields scenario` prints. Ranges
// are the ones the reader checks (common/input_limits.hpp); defaults are those of the structs the
// reader fills (strategies/strategy.hpp, strategies/hybrid_parallel.hpp, sim/simulation.hpp).
#pragma once

#include "common/field_doc.hpp"
#include "scenarios/gradient_compression_reader.hpp"

namespace tandem::scenario_fields {

inline constexpr FieldDoc kRoot[] = {
    {"name", "text", "the file's stem", "the scenario's name (traces carry it)"},
    {"description", "text", "\"\"", "free text"},
    {"model", "preset name or section", "required", "`model: gpt3-1.3b`, or a transformer / mlp section"},
    {"cluster", "cluster name or path", "required", "a bundled cluster, or a .yaml relative to this file"},
    {"use", "map group: devices", "every device", "part of the cluster: devices of each node group, whole nodes (`use: {h100: 16, a100: 8}`)"},
    {"training", "section", "required", "batch, precision, optimizer"},
    {"strategy", "section", "required", "how the model is split"},
    {"simulation", "section", "-", "what `simulate` runs by default"},
    {"search", "section", "-", "the knobs `tandem search` explores (scenarios/search_spec.hpp)"},
    {"validation", "section", "-", "a published measurement of this scenario (validation/)"},
    {"stragglers", "list", "-", "slowed devices or links (scenarios/straggler_reader.hpp)"},
    {"reliability", "section", "-", "failures, checkpoints, restarts for `tandem goodput` (scenarios/reliability_spec.hpp)"},
};

inline constexpr FieldDoc kTransformer[] = {
    {"type", "transformer | mlp", "transformer", "the model family"},
    {"preset", "preset name", "-", "start from a preset (gpt3-175b, llama3-8b, ...); fields below override it"},
    {"name", "text", "the preset's, or custom", "the model's name"},
    {"num_layers", "count", "required without preset", "transformer layers", nullptr, &limits::kNumLayers},
    {"hidden_size", "count", "required without preset", "model width", nullptr, &limits::kHiddenSize},
    {"num_attention_heads", "count", "required without preset", "query heads", nullptr, &limits::kAttentionHeads},
    {"num_query_groups", "count", "num_attention_heads (MHA)", "key/value heads (GQA)", nullptr,
     &limits::kAttentionHeads},
    {"kv_channels", "count", "hidden_size / num_attention_heads", "the head dim", nullptr, &limits::kHeadDim},
    {"ffn_hidden_size", "count", "4 x hidden_size", "MLP width", nullptr, &limits::kFfnHiddenSize},
    {"vocab_size", "count", "required without preset", "vocabulary", nullptr, &limits::kVocabSize},
    {"seq_length", "tokens", "the preset's", "sequence length (training.seq_length wins)", nullptr,
     &limits::kSeqLength},
    {"norm", "layernorm | rmsnorm", "layernorm", "normalisation"},
    {"norm_kernel", "one_pass | two_pass", "one_pass",
     "the norm's backward: one pass (Transformer Engine, apex FastLayerNorm) or a second read of x and dy for the weight "
     "gradients (apex FusedLayerNorm, Megatron-LM to 2022, PyTorch nn.LayerNorm; prices the kernel)"},
    {"activation", "gelu | swiglu", "gelu", "MLP activation"},
    {"position", "learned | rope", "learned", "position embedding"},
    {"tied_embeddings", "bool", "true", "the output layer shares the word embeddings"},
    {"bias", "bool", "true", "biases in linears and norms (GPT yes, Llama no)"},
    {"use_flash_attn", "bool", "false", "fused attention (no score matrix in memory)"},
    {"flash_attn_version", "1 | 2 | 3", "the profile's", "FlashAttention's major version (prices the kernel)", nullptr,
     &limits::kFlashAttentionVersion},
    {"cross_entropy_loss_fusion", "bool", "false", "the loss as one fused kernel (prices the kernel)"},
    {"hidden_dropout", "probability", "0.1", "Megatron-LM --hidden-dropout, in [0, 1)"},
    {"attention_dropout", "probability", "0.1", "Megatron-LM --attention-dropout, in [0, 1)"},
    {"num_moe_experts", "count", "0 (dense)", "mixture of experts: experts per block (Megatron-Core --num-experts)", nullptr,
     &limits::kMoeExperts},
    {"moe_router_topk", "count", "2", "experts each token goes through", nullptr, &limits::kMoeTopk},
    {"moe_ffn_hidden_size", "count", "ffn_hidden_size", "an expert's MLP width", nullptr, &limits::kFfnHiddenSize},
    {"moe_expert_capacity_factor", "factor", "0 (dropless)",
     "places per expert = ceil(factor x tokens x topk / experts), picks beyond dropped", &limits::kMoeCapacityFactor},
    {"moe_aux_loss_coeff", "coefficient", "0", "Switch's load-balancing loss", &limits::kMoeAuxLossCoeff},
    {"moe_router_load_imbalance", "ratio", "0 (balanced floor)",
     "dropless as priced: the busiest expert's load over the mean (measured; 0: a balanced router's statistical floor)",
     &limits::kMoeLoadImbalance},
    {"moe_shared_expert_intermediate_size", "count", "0 (none)", "a shared expert every token goes through (DeepSeek)",
     nullptr, &limits::kFfnHiddenSize},
    {"moe_first_dense_layers", "count", "0", "first blocks with a dense MLP instead of experts (DeepSeek-V3: 3)", nullptr,
     &limits::kNumLayers},
};

inline constexpr FieldDoc kMlp[] = {
    {"type", "mlp", "required", "a multi-layer perceptron"},
    {"name", "text", "mlp", "the model's name"},
    {"input_size", "count", "required", "input width", nullptr, &limits::kMlpWidth},
    {"hidden_sizes", "list of counts", "required", "hidden layer widths", nullptr, &limits::kMlpWidth},
    {"output_size", "count", "required", "output width", nullptr, &limits::kMlpWidth},
};

inline constexpr FieldDoc kTraining[] = {
    {"global_batch_size", "sequences", "required", "per iteration, all replicas together", nullptr,
     &limits::kGlobalBatchSize},
    {"micro_batch_size", "sequences", "1", "per micro-batch", nullptr, &limits::kGlobalBatchSize},
    {"seq_length", "tokens", "the model's", "training sequence length", nullptr, &limits::kSeqLength},
    {"precision", "fp32 | bf16 | fp16", "bf16", "parameters and activations"},
    {"fp8", "none | e4m3 | hybrid", "none", "FP8 GEMMs in the blocks (Megatron's --fp8-format)"},
    {"optimizer", "adam | adamw", "adam", "mixed-precision AdamW: fp32 master weights, m, v"},
    {"accumulate_allreduce_grads_in_fp32", "bool", "false", "Megatron-LM's flag of that name"},
    {"autocast", "bool", "false", "PyTorch AMP's fp32 weights, cast every micro-batch (prices the passes)"},
    {"grad_accumulation", "fused | add | cast_add", "fused", "how 16-bit weight gradients reach the fp32 main ones"},
    {"lr", "rate", "3e-4", "learning rate (run)", &limits::kLearningRate},
    {"weight_decay", "rate", "0.1", "AdamW weight decay (run)", &limits::kWeightDecay},
};

inline constexpr FieldDoc kStrategy[] = {
    {"type", "data_parallel | hybrid (megatron, 3d)", "data_parallel", "the strategy family"},
    {"data_parallel_size", "count", "1", "replicas", nullptr, &limits::kParallelSize},
    {"tensor_model_parallel_size", "count", "1", "tensor-parallel group size", nullptr, &limits::kParallelSize},
    {"pipeline_model_parallel_size", "count", "1", "pipeline stages", nullptr, &limits::kParallelSize},
    {"context_parallel_size", "count", "1", "ranks each sequence is split over (hybrid; rope models)", nullptr,
     &limits::kParallelSize},
    {"expert_model_parallel_size", "count", "1",
     "experts split over blocks of this many replicas, tokens exchanged by all-to-all (hybrid; MoE models)", nullptr,
     &limits::kParallelSize},
    {"sequence_parallel", "bool", "false", "Megatron sequence parallelism"},
    {"tp_comm_overlap", "bool", "false", "GEMMs pipelined with SP's collectives (Megatron-Core --tp-comm-overlap)"},
    {"zero_stage", "0 | 1 | 2 | 3", "0", "ZeRO optimizer / gradient / parameter sharding"},
    {"offload_optimizer", "bool", "false",
     "ZeRO-Offload (DeepSpeed's offload_optimizer, device cpu): optimizer state in the node's host memory, stepped "
     "by the host's CPU, gradients and parameters copied over PCIe (the cluster's node_groups[].host)"},
    {"master_param_remainders", "bool", "false",
     "the fp32 master kept as the 16-bit remainder of each bf16 parameter (apex DistributedFusedAdam's "
     "store_param_remainders, NeMo's default with its distributed Adam): 2 bytes of optimizer state per parameter "
     "instead of 4, no copy into the parameters after the step; bf16 without autocast, on the device"},
    {"recompute_granularity", "none | selective | full", "none", "activation recomputation"},
    {"overlap_grad_reduce", "bool", "true", "gradient reduction overlapped with backward"},
    {"parameter_servers", "count", "0",
     "server ranks after the replicas that sum pushed gradients instead of the all-reduce (data_parallel)", nullptr,
     &limits::kParameterServers},
    {"parameter_server_partition_bytes", "bytes", "4096000",
     "gradients go to the servers in partitions of at most this size (BytePS's BYTEPS_PARTITION_BYTES)", nullptr,
     &limits::kPartitionBytes},
    {"parameter_server_staleness", "steps", "0",
     "stale-synchronous servers: step t applies the sum of step t - s, pulled while step t computes (0: synchronous)",
     nullptr, &limits::kParameterServerStaleness},
    {"parameter_server_optimizer", "bool", "false",
     "the servers step the optimizer (Li et al. 2014: they hold fp32 parameters and Adam's moments; workers pull "
     "parameters and keep no optimizer state); synchronous only"},
    {"parameter_server_asynchronous", "bool", "false",
     "asynchronous servers (Downpour SGD): each worker's push is applied alone as it arrives and that worker pulls "
     "the parameters as they are then; nobody waits, staleness unbounded (the servers step the optimizer; threads "
     "of the CPU backend or the simulator; no checkpoints)"},
    {"parameter_server_jitter", "fraction", "0",
     "asynchronous servers: the log-spread of each worker's step time in the model that orders the pushes "
     "(0: the workers' speeds alone, equal ones give round robin); it shapes the staleness, not the simulated "
     "step (the simulator's workers take their modelled times)", &limits::kParameterServerJitter},
    {"parameter_server_seed", "count", "0", "asynchronous servers: the seed of the order of pushes", nullptr,
     &limits::kParameterServerSeed},
    {"local_sgd_steps", "steps", "1", "local SGD: replicas average parameters every H steps (data_parallel; 1: synchronous)",
     nullptr, &limits::kLocalSgdSteps},
    {"local_sgd_group_size", "replicas", "1",
     "hierarchical local SGD: blocks of this many consecutive replicas step together every step, blocks average every H steps (Lin et al. 2020)",
     nullptr, &limits::kLocalSgdGroupSize},
    {"outer_lr", "rate", "1", "DiLoCo: outer SGD learning rate on local SGD's averages (1 with momentum 0: plain average)",
     &limits::kOuterLearningRate},
    {"outer_momentum", "fraction", "0", "DiLoCo: the outer step's Nesterov momentum (the paper: 0.9)", &limits::kOuterMomentum},
    {"overlap_param_gather", "bool", "false", "ZeRO-1/2 parameter all-gather overlapped with the next forward (Megatron-Core --overlap-param-gather)"},
    {"pipeline_scatter_gather", "bool", "true",
     "without sequence parallelism, each tensor-group member sends 1/t of a stage's output and the next stage all-gathers it (Megatron-LM --scatter-gather-tensors-in-pipeline; DeepSpeed's pipe partitioning)"},
    {"overlap_p2p_comm", "bool", "false",
     "Megatron-Core --overlap-p2p-communication: each pipeline receive posted a pass ahead, its transfer under that pass (interleaved_1f1b; other schedules ignore it, as Megatron-Core's do)"},
    {"pipeline_blocking_p2p", "bool", "false",
     "DeepSpeed's pipeline engine: blocking sends and receives between stages, waited for by the compute stream (1f1b only)"},
    {"ddp_bucket_size", "parameters", "40000000", "per gradient bucket (Megatron default)", nullptr,
     &limits::kDdpBucketSize},
    {"batch_split", "even | proportional", "even", "replicas' batch shares (proportional: to device speed)"},
    {"pipeline_schedule", "gpipe | 1f1b | interleaved_1f1b | zb_h1 | zb_v", "1f1b (interleaved with virtual stages)",
     "pipeline schedule (zb_*: backward split into B and W; zb_v: two chunks per stage in a V)"},
    {"virtual_pipeline_model_parallel_size", "count", "1 (zb_v: 2)", "model chunks per stage (interleaved, zb_v)", nullptr,
     &limits::kVirtualStages},
    {"rank_order", "tp-dp-pp | tp-pp-dp", "tp-dp-pp", "how ranks map to tensor, data, pipeline groups"},
    {"pipeline_partition", "uniform | proportional", "uniform", "layers per stage (proportional: to speed)"},
    {"pipeline_layers", "list of counts", "-", "explicit layers per stage (wins over pipeline_partition)",
     nullptr, &limits::kNumLayers},
    {"gradient_compression", "codec name | section", "none", "data-parallel gradient codec (below)"},
};

// strategy.gradient_compression (scenarios/gradient_compression_reader.hpp reads it).
inline constexpr FieldDoc kGradientCompressionFields[] = {
    {"type", "none | fp16_compress | bf16_compress | int8 | onebit | topk | powerSGD", "none",
     "codec of the data-parallel gradient exchange"},
    {"matrix_approximation_rank", "count", "1", "PowerSGD rank r (PyTorch powerSGD_hook)", nullptr,
     &limits::kMatrixApproximationRank},
    {"min_compression_rate", "ratio", "2", "PowerSGD compresses a matrix only above this size ratio"},
    {"use_error_feedback", "bool", "true", "carry what the codec dropped into the next step"},
    {"topk_ratio", "fraction in (0, 1]", "0.01", "share of a bucket's entries top-k sends"},
    {"random_seed", "count", "0", "PowerSGD's initial Q (the same on every rank)"},
};

inline constexpr FieldDoc kSimulation[] = {
    {"iterations", "count", "1", "measured iterations", nullptr, &limits::kIterations},
    {"warmup_iterations", "count", "0", "iterations before measuring", nullptr, &limits::kWarmupIterations},
    {"collective_algorithm", "auto | ring | tree | hierarchical | direct", "auto", "collective algorithm"},
    {"collective_fidelity", "auto | exact | aggregated", "auto", "collectives as every flow, or aggregated"},
    {"compute_fidelity", "fused | per_op", "fused", "compute blocks fused between communications"},
    {"replica_folding", "auto | off", "auto", "identical replicas simulated once"},
    {"tensor_folding", "auto | off", "auto", "one tensor-parallel member simulated"},
    {"pipeline_extrapolation", "auto | off", "auto", "two shorter iterations extrapolated"},
    {"comm_contention", "bool", "true", "kernels overlapping an NCCL collective get the SMs and HBM it leaves"},
};

inline constexpr FieldSection kSections[] = {
    {"", kRoot},         {"model (transformer)", kTransformer}, {"model (type: mlp)", kMlp},
    {"training", kTraining}, {"strategy", kStrategy},           {"simulation", kSimulation},
    {"strategy.gradient_compression", kGradientCompressionFields},
};

}  // namespace tandem::scenario_fields
