#include "scenarios/scenario_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/input_limits.hpp"

namespace tandem {

namespace {

// Ops a rank issues per layer it holds and micro-batch it runs (forward and backward kernels,
// tensor-parallel collectives, pipeline sends), and per layer once per iteration (gradient
// reduction, optimizer). Counted (SimulationResult compute + comm ops): gpt3-175b-3d, 16 simulated
// ranks x 64 micro-batches x 6 layers, 296,880 ops = 48 per layer and micro-batch including the
// embedding and head stages; this estimate counts those stages as 2 more layers, so 40 is above it.
constexpr long double kOpsPerLayerMicroBatch = 40;
constexpr long double kOpsPerLayerStep = 10;
// This process's memory (/usr/bin/time peak RSS, December 2026): SimGrid's hosts, links and routes
// per device of the cluster (gpt-1t-t8p64d32-16k, 16,384 devices: 170 MB in all; Meta's 24,576-GPU
// cluster ~6 KB each), a simulated rank's own state (its actors' stacks as far as they are touched,
// its model, tensors and ledger: ~0.2 MB), what is left of each op it issued (a communication op's
// state is dropped once it is done, sim_device.hpp: ~17 B per op on average), and a trace record
// with its JSON on the way out (~1 KB). Measured on Llama 3 405B's layout on that cluster, every
// rank simulated: 128 ranks 392 MB, 256 ranks 422 MB, 512 ranks 483 MB at 1.18M ops and 539 MB at
// 4.53M ops. Each figure is one and a half to three times the measured one (the op count above is
// itself an overestimate).
constexpr long double kBytesPerDevice = 16e3;
constexpr long double kBytesPerSimulatedRank = 512e3;
constexpr long double kBytesPerOp = 24;
constexpr long double kBytesPerTraceRecord = 1024;
// The share of this machine's memory a simulation may plan to use.
constexpr long double kMemoryShare = 0.5;
// SimGrid runs each simulated rank as an actor, and one more per communication stream the rank
// uses (data-parallel, tensor-parallel, pipeline send and receive: sim/sim_device.cpp). Each
// actor's stack is a memory mapping and its guard page another; past the kernel's
// vm.max_map_count SimGrid aborts ("Failed to protect stack"): llama3-405b-8192, 8,192 ranks
// simulated on an oversubscribed fabric, did after 5 minutes. The process's own mappings
// (libraries, heap) take a few hundred; a tenth of the limit is left for them.
constexpr long double kActorsPerRank = 5;
constexpr long double kMappingsPerActor = 2;
constexpr long double kMappingShare = 0.9;

std::string number(long double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3Lg", value);
  return text;
}

std::string whole(long double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.0Lf", value);
  return text;
}

long double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<long double>(pages) * page : 1e12L;  // unknown: 1 TB
}

long double ceil_div(long double a, long double b) { return std::ceil(a / b); }

// Replicas and tensor groups never fold on an oversubscribed fabric (their ghosts' traffic
// would share its bottleneck: sim/replica_folding.cpp, sim/tensor_folding.cpp).
bool oversubscribed(const Cluster& c) { return c.has_spine() && c.network.oversubscription > 1.0; }

// Whether replica folding (and then tensor folding) may apply: the simulator decides for sure
// (sim/replica_folding.hpp, sim/tensor_folding.hpp); this is its optimistic reading, so that a
// large folded simulation is not refused. Without folding every rank is simulated.
bool may_fold(const Scenario& s, const sim::SimulationOptions& options) {
  // Replicas exchanging tokens (expert parallelism) are simulated one by one.
  if (options.record_trace || options.replica_folding == sim::FoldingMode::off || s.cluster.is_heterogeneous() ||
      oversubscribed(s.cluster) || s.parallel.expert_model_parallel_size > 1)
    return false;
  return std::none_of(s.cluster.groups.begin(), s.cluster.groups.end(),
                      [](const NodeGroup& g) { return g.shared_cores > 0; });
}

long double model_layers(const ModelSpec& m) {
  return m.kind == ModelSpec::Kind::mlp ? static_cast<long double>(m.mlp.hidden_sizes.size()) + 1
                                        : static_cast<long double>(m.transformer.num_layers);
}

}  // namespace

// (scenario_limits.hpp)
long double max_map_count() {
  long long count = 0;
  if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%lld", &count) != 1) count = 0;
    std::fclose(f);
  }
  return count > 0 ? static_cast<long double>(count) : 65530.0L;
}

void check_model_size(const Scenario& s) {
  if (s.model.kind == ModelSpec::Kind::mlp) {
    long double params = 0, in = static_cast<long double>(s.model.mlp.input_size);
    for (auto width : s.model.mlp.hidden_sizes) {
      params += in * width;
      in = static_cast<long double>(width);
    }
    params += in * s.model.mlp.output_size;
    if (params > limits::kMaxParameters)
      s.fail("model.hidden_sizes", "the model would have " + number(params) + " parameters, more than the " +
                                       number(limits::kMaxParameters) + " Tandem computes with (common/input_limits.hpp)");
    return;
  }
  const TransformerConfig& c = s.model.transformer;
  const long double h = c.hidden_size, layers = c.num_layers, vocab = c.vocab_size;
  const long double heads = c.num_attention_heads;
  const long double head_dim = c.kv_channels > 0 ? c.kv_channels : h / heads;
  const long double kv = (c.num_query_groups > 0 ? c.num_query_groups : heads) * head_dim;
  const long double ffn = c.ffn_hidden_size > 0 ? c.ffn_hidden_size : 4 * h;
  const long double positions = c.max_position_embeddings > 0 ? c.max_position_embeddings : c.seq_length;
  const long double per_layer = 2 * h * heads * head_dim + 2 * h * kv + 3 * h * ffn + 4 * h;
  const long double embeddings = vocab * h * 2 + positions * h;
  if (layers * per_layer + embeddings > limits::kMaxParameters)
    s.fail(layers * per_layer >= embeddings ? "model.num_layers" : "model.vocab_size",
           "the model would have " + number(layers * per_layer + embeddings) + " parameters, more than the " +
               number(limits::kMaxParameters) + " Tandem computes with (common/input_limits.hpp)");
  // One micro-batch's activations through every layer (gpt_layer_activation_bytes: 34 h + 5 heads seq per
  // token and layer, scores included) and the logits.
  const long double seq = s.training.seq_length, tokens = static_cast<long double>(s.training.micro_batch_size) * seq;
  const long double activations = layers * tokens * (34 * h + 5 * heads * seq) + tokens * vocab;
  if (activations > limits::kMaxActivationElements)
    s.fail(s.training.micro_batch_size > 1        ? "training.micro_batch_size"
           : s.lines.count("training.seq_length") ? "training.seq_length"
                                                   : "model.seq_length",
           "one micro-batch's activations would be " + number(activations) + " elements, more than the " +
               number(limits::kMaxActivationElements) + " Tandem computes with (common/input_limits.hpp)");
}

SimulationSize estimate_simulation_size(const Scenario& s, const sim::SimulationOptions& options) {
  const bool record_trace = options.record_trace;
  const ParallelConfig& p = s.parallel;
  const long double dp = p.data_parallel_size, tp = p.tensor_model_parallel_size, pp = p.pipeline_model_parallel_size;
  SimulationSize size;
  // Tensor groups fold on heterogeneous clusters too (each group is of one kind): optimistic, as
  // may_fold is for replicas.
  const bool tensor_folds = options.tensor_folding != sim::FoldingMode::off && !record_trace &&
                            !oversubscribed(s.cluster) &&
                            std::none_of(s.cluster.groups.begin(), s.cluster.groups.end(),
                                         [](const NodeGroup& g) { return g.shared_cores > 0; });
  size.simulated_ranks = (may_fold(s, options) ? 1 : dp) * (tensor_folds ? 1 : tp) * pp * p.context_parallel_size;
  size.micro_batches = ceil_div(static_cast<long double>(s.training.global_batch_size),
                                static_cast<long double>(s.training.micro_batch_size) * dp);
  // A periodic pipeline is simulated as two shorter iterations (sim/pipeline_extrapolation.hpp).
  const auto steady = steady_state(s.hybrid.schedule, p.pipeline_model_parallel_size);
  if (s.strategy_type == "hybrid" && pp >= 2 && steady &&
      options.pipeline_extrapolation != sim::FoldingMode::off && !record_trace) {
    const long double both = 2.0L * steady->from + steady->period;
    size.micro_batches = std::min(size.micro_batches, both);
  }
  size.layers_per_rank = ceil_div(model_layers(s.model), pp) + 2;  // + embedding and head
  size.iterations = static_cast<long double>(options.warmup_iterations) + options.iterations;
  const long double ops_per_iteration =
      size.layers_per_rank * (size.micro_batches * kOpsPerLayerMicroBatch + kOpsPerLayerStep);
  size.ops = size.simulated_ranks * size.iterations * ops_per_iteration;
  size.memory_bytes = s.cluster.device_count() * kBytesPerDevice + size.simulated_ranks * kBytesPerSimulatedRank +
                      size.ops * (kBytesPerOp + (record_trace ? kBytesPerTraceRecord : 0));
  return size;
}

SimulationSize check_simulation_size(const Scenario& s, const sim::SimulationOptions& options) {
  const bool record_trace = options.record_trace;
  const SimulationSize size = estimate_simulation_size(s, options);
  const long double memory_limit = physical_memory_bytes() * kMemoryShare;
  const bool too_many_ops = size.ops > limits::kMaxSimulatedOps;
  const long double mappings = size.simulated_ranks * kActorsPerRank * kMappingsPerActor;
  const long double map_count = max_map_count();
  const long double mapping_limit = map_count * kMappingShare;
  if (mappings > mapping_limit) {
    const bool folds_refused = oversubscribed(s.cluster) && !record_trace;
    s.fail("strategy.data_parallel_size",
           "the simulation would run " + whole(size.simulated_ranks) + " ranks as about " +
               whole(size.simulated_ranks * kActorsPerRank) + " SimGrid actors, whose stacks need " +
               whole(mappings) + " memory mappings, more than this machine's vm.max_map_count (" +
               whole(map_count) + ") allows; raise it (sysctl -w vm.max_map_count=" +
               whole(std::ceil(mappings / kMappingShare / 65536) * 65536) + ") or simulate fewer ranks" +
               (folds_refused ? " (replicas and tensor groups do not fold on this oversubscribed fabric)" : ""));
  }
  if (!too_many_ops && size.memory_bytes <= memory_limit) return size;
  // Blame the factor that is furthest above a usual value (ranks 64, micro-batches 64, layers
  // 128, iterations 10).
  const std::pair<long double, const char*> factors[] = {
      {size.simulated_ranks / 64, "strategy.data_parallel_size"},
      {size.micro_batches / 64, "training.global_batch_size"},
      {size.layers_per_rank / 128, "model.num_layers"},
      {size.iterations / 10, "simulation.iterations"}};
  const char* field = std::max_element(std::begin(factors), std::end(factors))->second;
  const std::string shape = number(size.simulated_ranks) + " simulated ranks x " + number(size.micro_batches) +
                            " micro-batches x " + number(size.layers_per_rank) + " layers per rank x " +
                            number(size.iterations) + " iterations" + (record_trace ? ", every op traced" : "");
  if (too_many_ops)
    s.fail(field, "the simulation would issue about " + number(size.ops) + " ops (" + shape + "), more than the " +
                      number(limits::kMaxSimulatedOps) + " Tandem simulates (common/input_limits.hpp)");
  s.fail(field, "the simulation would need about " + number(size.memory_bytes / 1e9) + " GB of memory (" + shape +
                    "), more than half of this machine's " + number(physical_memory_bytes() / 1e9) + " GB");
}

}  // namespace tandem
