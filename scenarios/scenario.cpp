#include "scenarios/scenario.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <utility>
#include <stdexcept>

#include "common/yaml_reader.hpp"
#include "common/input_file.hpp"
#include "platforms/cluster_selection.hpp"
#include "scenarios/scenario_fields.hpp"
#include "scenarios/gradient_compression_reader.hpp"
#include "scenarios/scenario_limits.hpp"
#include "sim/gpu_kernel_model.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"

namespace tandem {

namespace fs = std::filesystem;

std::string ModelSpec::name() const { return kind == Kind::mlp ? mlp.name : transformer.name; }

int Scenario::line_of(const std::string& field) const {
  // The field itself, else the closest enclosing section that was read ("strategy").
  for (std::string path = field; !path.empty();) {
    if (auto it = lines.find(path); it != lines.end()) return it->second;
    const auto dot = path.rfind('.');
    path = dot == std::string::npos ? "" : path.substr(0, dot);
  }
  return 0;
}

void Scenario::fail(const std::string& field, const std::string& message) const {
  throw InputError(file, line_of(field), field, message);
}

namespace {

NormType parse_norm(const std::string& v) {
  if (v == "layernorm") return NormType::layernorm;
  if (v == "rmsnorm") return NormType::rmsnorm;
  throw std::invalid_argument("unknown norm '" + v + "' (expected layernorm or rmsnorm)");
}
NormKernel parse_norm_kernel(const std::string& v) {
  if (v == "one_pass") return NormKernel::one_pass;
  if (v == "two_pass") return NormKernel::two_pass;
  throw std::invalid_argument("unknown norm_kernel '" + v + "' (expected one_pass or two_pass)");
}
ActivationType parse_activation(const std::string& v) {
  if (v == "gelu") return ActivationType::gelu;
  if (v == "swiglu") return ActivationType::swiglu;
  throw std::invalid_argument("unknown activation '" + v + "' (expected gelu or swiglu)");
}
PositionEmbeddingType parse_position(const std::string& v) {
  if (v == "learned") return PositionEmbeddingType::learned;
  if (v == "rope") return PositionEmbeddingType::rope;
  throw std::invalid_argument("unknown position embedding '" + v + "' (expected learned or rope)");
}

// Reads the fields of a section, remembering each one's line.
class SectionReader {
 public:
  SectionReader(const YamlNode& node, Scenario& scenario) : node_(node), scenario_(scenario) {
    scenario_.lines[node.path()] = node.line();
  }
  std::optional<YamlNode> get(const std::string& key) {
    auto n = node_.get(key);
    if (n) scenario_.lines[n->path()] = n->line();
    return n;
  }
  template <class T, class Read>
  void read(const std::string& key, T& target, Read read_value) {
    if (auto n = get(key)) target = read_value(*n);
  }
  // A whole number within `range`, read as 64-bit and checked before it is narrowed to T.
  template <class T>
  void count(const std::string& key, T& target, const limits::CountRange& range) {
    if (std::cmp_greater(range.max, std::numeric_limits<T>::max())) throw std::logic_error("the range of '" + key + "' exceeds its type");
    read(key, target, [&](const YamlNode& n) { return static_cast<T>(n.count(range)); });
  }
  void flag(const std::string& key, bool& target) {
    read(key, target, [](const YamlNode& n) { return n.as_bool(); });
  }
  template <class Parse>
  void choice(const std::string& key, Parse parse) {
    if (auto n = get(key)) {
      try {
        parse(n->as_string());
      } catch (const std::invalid_argument& e) {
        n->fail(e.what());
      }
    }
  }
  const YamlNode& node() const { return node_; }

 private:
  const YamlNode& node_;
  Scenario& scenario_;
};

TransformerConfig read_transformer(const YamlNode& node, Scenario& scenario) {
  TransformerConfig cfg;
  if (!node.is_map()) {  // `model: gpt3-1.3b`
    try {
      return transformer_preset(node.as_string());
    } catch (const std::invalid_argument& e) {
      node.fail(e.what());
    }
  }
  node.only_keys(scenario_fields::kTransformer);
  SectionReader r(node, scenario);
  if (auto preset = r.get("preset")) {
    try {
      cfg = transformer_preset(preset->as_string());
    } catch (const std::invalid_argument& e) {
      preset->fail(e.what());
    }
  } else {
    for (const char* key : {"num_layers", "hidden_size", "num_attention_heads", "vocab_size"}) node[key];
    cfg.name = "custom";
  }
  r.read("name", cfg.name, [](const YamlNode& n) { return n.as_string(); });
  r.count("num_layers", cfg.num_layers, limits::kNumLayers);
  r.count("hidden_size", cfg.hidden_size, limits::kHiddenSize);
  r.count("num_attention_heads", cfg.num_attention_heads, limits::kAttentionHeads);
  if (!node.has("num_query_groups") && node.has("num_attention_heads")) cfg.num_query_groups = cfg.num_attention_heads;
  r.count("num_query_groups", cfg.num_query_groups, limits::kAttentionHeads);
  r.count("kv_channels", cfg.kv_channels, limits::kHeadDim);  // the head dim, when not hidden / heads
  if (!node.has("ffn_hidden_size") && node.has("hidden_size") && !node.has("preset")) cfg.ffn_hidden_size = 4 * cfg.hidden_size;
  r.count("ffn_hidden_size", cfg.ffn_hidden_size, limits::kFfnHiddenSize);
  r.count("vocab_size", cfg.vocab_size, limits::kVocabSize);
  r.count("seq_length", cfg.seq_length, limits::kSeqLength);
  r.choice("norm", [&](const std::string& v) { cfg.norm = parse_norm(v); });
  r.choice("norm_kernel", [&](const std::string& v) { cfg.norm_kernel = parse_norm_kernel(v); });
  r.choice("activation", [&](const std::string& v) { cfg.activation = parse_activation(v); });
  r.choice("position", [&](const std::string& v) { cfg.position = parse_position(v); });
  r.flag("tied_embeddings", cfg.tied_embeddings);
  r.flag("bias", cfg.bias);
  r.flag("use_flash_attn", cfg.use_flash_attn);
  r.count("flash_attn_version", cfg.flash_attn_version, limits::kFlashAttentionVersion);
  if (cfg.flash_attn_version > 0 && !cfg.use_flash_attn)
    node["flash_attn_version"].fail("needs use_flash_attn: true");
  r.flag("cross_entropy_loss_fusion", cfg.cross_entropy_loss_fusion);
  // Megatron-LM's --hidden-dropout / --attention-dropout: probabilities in [0, 1).
  auto probability = [](const YamlNode& n) {
    const double p = n.as_double();
    if (!(p >= 0 && p < 1)) n.fail("must be a dropout probability in [0, 1), got " + n.as_string());
    return p;
  };
  r.read("hidden_dropout", cfg.hidden_dropout, probability);
  r.read("attention_dropout", cfg.attention_dropout, probability);
  r.count("num_moe_experts", cfg.num_moe_experts, limits::kMoeExperts);
  r.count("moe_router_topk", cfg.moe_router_topk, limits::kMoeTopk);
  r.count("moe_ffn_hidden_size", cfg.moe_ffn_hidden_size, limits::kFfnHiddenSize);
  r.read("moe_expert_capacity_factor", cfg.moe_expert_capacity_factor,
         [](const YamlNode& n) { return n.in(limits::kMoeCapacityFactor); });
  r.read("moe_aux_loss_coeff", cfg.moe_aux_loss_coeff, [](const YamlNode& n) { return n.in(limits::kMoeAuxLossCoeff); });
  r.read("moe_router_load_imbalance", cfg.moe_router_load_imbalance,
         [](const YamlNode& n) { return n.in(limits::kMoeLoadImbalance); });
  r.count("moe_shared_expert_intermediate_size", cfg.moe_shared_expert_intermediate_size, limits::kFfnHiddenSize);
  r.count("moe_first_dense_layers", cfg.moe_first_dense_layers, limits::kNumLayers);
  if (cfg.moe_first_dense_layers > cfg.num_layers)
    node["moe_first_dense_layers"].fail("exceeds num_layers " + std::to_string(cfg.num_layers));
  if (cfg.moe()) {
    if (cfg.moe_router_topk > cfg.num_moe_experts)
      node[node.has("moe_router_topk") ? "moe_router_topk" : "num_moe_experts"].fail(
          "moe_router_topk " + std::to_string(cfg.moe_router_topk) + " exceeds num_moe_experts " +
          std::to_string(cfg.num_moe_experts));
    if (cfg.bias) node[node.has("bias") ? "bias" : "num_moe_experts"].fail("experts have no biases: set bias: false");
  }
  // Heads of hidden / heads channels each, unless kv_channels says otherwise (GPT-3 13B: 5140
  // wide, 40 heads of 128, as its preset has it).
  if (cfg.kv_channels == 0 && cfg.hidden_size % cfg.num_attention_heads != 0)
    (node.has("num_attention_heads") ? node["num_attention_heads"] : node["hidden_size"])
        .fail("hidden_size " + std::to_string(cfg.hidden_size) + " is not divisible by num_attention_heads " +
              std::to_string(cfg.num_attention_heads) + " (set kv_channels, the head dim, if that is meant)");
  if (cfg.num_attention_heads % cfg.query_groups() != 0)  // a preset may leave it 0 (= heads)
    node["num_query_groups"].fail("num_attention_heads is not divisible by num_query_groups");
  return cfg;
}

MlpConfig read_mlp(const YamlNode& node, Scenario& scenario) {
  node.only_keys(scenario_fields::kMlp);
  SectionReader r(node, scenario);
  MlpConfig cfg;
  cfg.name = node.str_or("name", "mlp");
  cfg.input_size = node["input_size"].count(limits::kMlpWidth);
  cfg.output_size = node["output_size"].count(limits::kMlpWidth);
  cfg.hidden_sizes.clear();
  const YamlNode hidden = node["hidden_sizes"];
  const std::vector<YamlNode> widths = hidden.items();
  if (static_cast<long long>(widths.size()) > limits::kMlpLayers.max)
    hidden.fail("more than " + std::to_string(limits::kMlpLayers.max) + " hidden layers");
  for (const auto& item : widths) cfg.hidden_sizes.push_back(item.count(limits::kMlpWidth));
  return cfg;
}

void read_model(const YamlNode& node, Scenario& s) {
  s.lines["model"] = node.line();
  if (node.is_map() && node.str_or("type", "transformer") == "mlp") {
    s.model.kind = ModelSpec::Kind::mlp;
    s.model.mlp = read_mlp(node, s);
  } else {
    if (node.is_map() && node.str_or("type", "transformer") != "transformer")
      node["type"].fail("unknown model type (expected transformer or mlp)");
    s.model.kind = ModelSpec::Kind::transformer;
    s.model.transformer = read_transformer(node, s);
  }
}

void read_cluster(const YamlNode& node, Scenario& s) {
  std::string ref = node.as_string();
  // A relative path is relative to the scenario file; a bare name is a bundled cluster.
  if (ref.find('/') != std::string::npos || ref.ends_with(".yaml")) ref = path_beside(s.file, ref);
  try {
    s.cluster = find_cluster(ref);
  } catch (const InputError& e) {
    if (e.line() > 0) throw;  // an error inside the cluster file itself: it names its own line
    node.fail(e.what());
  }
}

// `use:` (Scenario::use): whole nodes of named groups; a group left out is not used.
void read_use(const YamlNode& node, Scenario& s) {
  if (!node.is_map()) node.fail("expected a map of node group names to device counts, e.g. {h100: 16, a100: 8}");
  s.lines["use"] = node.line();
  std::vector<int> nodes(s.cluster.groups.size(), 0);
  std::string names;
  for (const NodeGroup& g : s.cluster.groups) names += (names.empty() ? "" : ", ") + g.name;
  for (const auto& [name, count] : node.entries()) {
    const std::string& wanted = name;  // a structured binding cannot be captured before C++20 in clang 14
    const auto group = std::find_if(s.cluster.groups.begin(), s.cluster.groups.end(),
                                    [&](const NodeGroup& g) { return g.name == wanted; });
    if (group == s.cluster.groups.end())
      count.fail("cluster '" + s.cluster.name + "' has no node group '" + name + "' (its groups: " + names + ")");
    const long long devices = count.count(limits::CountRange{0, limits::kMaxClusterDevices});
    const int per_node = group->devices_per_node;
    if (devices % per_node != 0)
      count.fail(std::to_string(devices) + " devices are not whole nodes of " + std::to_string(per_node));
    if (devices / per_node > group->node_count)
      count.fail(std::to_string(devices) + " devices, but group '" + name + "' has " +
                 std::to_string(static_cast<long long>(group->node_count) * per_node));
    nodes[static_cast<std::size_t>(group - s.cluster.groups.begin())] = static_cast<int>(devices / per_node);
    s.use[name] = static_cast<int>(devices);
  }
  if (std::all_of(nodes.begin(), nodes.end(), [](int n) { return n == 0; })) node.fail("uses no device");
  s.cluster = select_nodes(s.cluster, nodes);
}

void read_training(const YamlNode& node, Scenario& s) {
  node.only_keys(scenario_fields::kTraining);
  SectionReader r(node, s);
  TrainingConfig& t = s.training;
  node["global_batch_size"];
  r.count("global_batch_size", t.global_batch_size, limits::kGlobalBatchSize);
  r.count("micro_batch_size", t.micro_batch_size, limits::kGlobalBatchSize);
  t.seq_length = s.model.kind == ModelSpec::Kind::transformer ? s.model.transformer.seq_length : 1;
  r.count("seq_length", t.seq_length, limits::kSeqLength);
  r.choice("precision", [&](const std::string& v) { t.precision = parse_dtype(v); });
  if (t.precision == DType::int32) node["precision"].fail("int32 is not a training precision");
  r.choice("fp8", [&](const std::string& v) { t.fp8 = parse_fp8_recipe(v); });
  r.choice("optimizer", [&](const std::string& v) {
    if (v != "adam" && v != "adamw") throw std::invalid_argument("unknown optimizer '" + v + "' (expected adam)");
    t.optimizer = "adam";
  });
  r.flag("accumulate_allreduce_grads_in_fp32", t.accumulate_allreduce_grads_in_fp32);
  r.flag("autocast", t.autocast);
  r.choice("grad_accumulation", [&](const std::string& v) { t.grad_accumulation = parse_grad_accumulation(v); });
  if (t.autocast && node.has("grad_accumulation") && t.grad_accumulation != GradAccumulation::cast_add)
    node["grad_accumulation"].fail("autocast accumulates its weight gradients through a cast: cast_add (or leave it out)");
  r.read("lr", t.lr, [](const YamlNode& n) { return static_cast<float>(n.in(limits::kLearningRate)); });
  r.read("weight_decay", t.weight_decay, [](const YamlNode& n) { return static_cast<float>(n.in(limits::kWeightDecay)); });
  if (s.model.kind == ModelSpec::Kind::transformer) {
    TransformerConfig& m = s.model.transformer;
    m.seq_length = t.seq_length;
    // A learned position table has max_position_embeddings rows: a longer sequence has no row to read.
    if (m.position == PositionEmbeddingType::learned && m.max_position_embeddings > 0 &&
        t.seq_length > m.max_position_embeddings)
      s.fail(node.has("seq_length") ? "training.seq_length" : "model.seq_length",
             "seq_length " + std::to_string(t.seq_length) + " exceeds the " + std::to_string(m.max_position_embeddings) +
                 " learned positions (max_position_embeddings) of model '" + m.name + "'");
  }
}

void read_strategy(const YamlNode& node, Scenario& s) {
  node.only_keys(scenario_fields::kStrategy);
  SectionReader r(node, s);
  ParallelConfig& p = s.parallel;
  HybridConfig& h = s.hybrid;
  r.choice("type", [&](const std::string& v) {
    if (v == "megatron" || v == "3d") s.strategy_type = "hybrid";
    else if (v == "data_parallel" || v == "hybrid") s.strategy_type = v;
    else throw std::invalid_argument("unknown strategy type '" + v + "' (expected data_parallel or hybrid)");
  });
  r.choice("pipeline_schedule", [&](const std::string& v) { h.schedule = parse_pipeline_schedule(v); });
  r.count("virtual_pipeline_model_parallel_size", h.virtual_stages, limits::kVirtualStages);
  if (h.virtual_stages > 1 && !node.has("pipeline_schedule")) h.schedule = PipelineSchedule::interleaved_1f1b;
  // ZB-V's V is two chunks per stage: its own, unless the scenario says otherwise (then refused).
  if (h.schedule == PipelineSchedule::zb_v && !node.has("virtual_pipeline_model_parallel_size")) h.virtual_stages = 2;
  r.choice("rank_order", [&](const std::string& v) { h.order = parse_rank_order(v); });
  r.choice("pipeline_partition", [&](const std::string& v) {
    if (v == "uniform") h.partition = HybridConfig::Partition::uniform;
    else if (v == "proportional") h.partition = HybridConfig::Partition::proportional;
    else throw std::invalid_argument("unknown pipeline partition '" + v + "' (expected uniform or proportional)");
  });
  if (auto layers = r.get("pipeline_layers"))
    for (const auto& item : layers->items())
      h.layers_per_stage.push_back(static_cast<int>(item.count(limits::kNumLayers)));
  r.count("data_parallel_size", p.data_parallel_size, limits::kParallelSize);
  r.count("tensor_model_parallel_size", p.tensor_model_parallel_size, limits::kParallelSize);
  r.count("pipeline_model_parallel_size", p.pipeline_model_parallel_size, limits::kParallelSize);
  r.count("context_parallel_size", p.context_parallel_size, limits::kParallelSize);
  r.count("expert_model_parallel_size", p.expert_model_parallel_size, limits::kParallelSize);
  r.flag("sequence_parallel", p.sequence_parallel);
  r.flag("tp_comm_overlap", p.tp_comm_overlap);
  r.read("zero_stage", p.zero_stage, [](const YamlNode& n) {
    const long long v = n.as_int();
    if (v < 0 || v > 3) n.fail("must be 0, 1, 2 or 3");
    return static_cast<int>(v);
  });
  r.flag("offload_optimizer", p.offload_optimizer);
  r.flag("master_param_remainders", p.master_param_remainders);
  r.choice("recompute_granularity", [&](const std::string& v) {
    if (v == "none") p.recompute_granularity = Recompute::none;
    else if (v == "selective") p.recompute_granularity = Recompute::selective;
    else if (v == "full") p.recompute_granularity = Recompute::full;
    else throw std::invalid_argument("unknown recompute granularity '" + v + "' (expected none, selective or full)");
  });
  r.flag("overlap_grad_reduce", p.overlap_grad_reduce);
  r.flag("overlap_param_gather", p.overlap_param_gather);
  r.flag("pipeline_scatter_gather", p.pipeline_scatter_gather);
  r.flag("pipeline_blocking_p2p", p.pipeline_blocking_p2p);
  r.flag("overlap_p2p_comm", p.overlap_p2p_comm);
  r.count("local_sgd_steps", p.local_sgd_steps, limits::kLocalSgdSteps);
  r.count("local_sgd_group_size", p.local_sgd_group_size, limits::kLocalSgdGroupSize);
  r.count("parameter_servers", p.parameter_servers, limits::kParameterServers);
  r.count("parameter_server_partition_bytes", p.parameter_server_partition_bytes, limits::kPartitionBytes);
  r.count("parameter_server_staleness", p.parameter_server_staleness, limits::kParameterServerStaleness);
  r.flag("parameter_server_optimizer", p.parameter_server_optimizer);
  r.flag("parameter_server_asynchronous", p.parameter_server_asynchronous);
  r.read("parameter_server_jitter", p.parameter_server_jitter,
         [](const YamlNode& n) { return n.in(limits::kParameterServerJitter); });
  r.count("parameter_server_seed", p.parameter_server_seed, limits::kParameterServerSeed);
  r.read("outer_lr", p.outer_lr, [](const YamlNode& n) { return static_cast<float>(n.in(limits::kOuterLearningRate)); });
  r.read("outer_momentum", p.outer_momentum,
         [](const YamlNode& n) { return static_cast<float>(n.in(limits::kOuterMomentum)); });
  r.count("ddp_bucket_size", p.ddp_bucket_size, limits::kDdpBucketSize);
  r.choice("batch_split", [&](const std::string& v) {
    if (v == "even") p.batch_split = BatchSplit::even;
    else if (v == "proportional") p.batch_split = BatchSplit::proportional;
    else throw std::invalid_argument("unknown batch split '" + v + "' (expected even or proportional)");
  });
  if (auto n = r.get("gradient_compression")) p.gradient_compression = read_gradient_compression(*n);
}

void read_simulation(const YamlNode& node, Scenario& s) {
  node.only_keys(scenario_fields::kSimulation);
  SectionReader r(node, s);
  sim::SimulationOptions& o = s.simulation;
  r.count("iterations", o.iterations, limits::kIterations);
  r.count("warmup_iterations", o.warmup_iterations, limits::kWarmupIterations);
  r.choice("collective_algorithm", [&](const std::string& v) { o.algorithm = sim::parse_collective_algorithm(v); });
  r.choice("collective_fidelity", [&](const std::string& v) { o.collective_fidelity = sim::parse_collective_fidelity(v); });
  r.choice("compute_fidelity", [&](const std::string& v) { o.compute_fidelity = sim::parse_compute_fidelity(v); });
  r.choice("replica_folding", [&](const std::string& v) { o.replica_folding = sim::parse_replica_folding(v); });
  r.choice("tensor_folding", [&](const std::string& v) { o.tensor_folding = sim::parse_folding_mode(v); });
  r.choice("pipeline_extrapolation", [&](const std::string& v) { o.pipeline_extrapolation = sim::parse_folding_mode(v); });
  r.flag("comm_contention", o.comm_contention);
}

std::string resolve_scenario(const std::string& name_or_path) {
  if (path_exists(name_or_path)) return name_or_path;
  const std::string bundled = bundled_dir("scenarios") + "/" + name_or_path + ".yaml";
  if (name_or_path.find('/') == std::string::npos && path_exists(bundled)) return bundled;
  throw InputError(name_or_path, 0, "", "no such scenario file (nor a bundled scenario of that name)");
}

}  // namespace

Scenario load_scenario(const std::string& name_or_path, SizeCheck size_check) {
  Scenario s;
  s.file = resolve_scenario(name_or_path);
  const YamlNode root = YamlNode::load_file(s.file);
  // `search:` is read by load_search_scenario (search_spec.hpp), `validation:` (a published
  // measurement of this scenario) by validation/validation_case.hpp, `reliability:` by
  // load_reliability_scenario (reliability_spec.hpp); a plain load ignores them.
  root.only_keys(scenario_fields::kRoot);
  s.name = root.str_or("name", fs::path(s.file).stem().string());
  s.description = root.str_or("description", "");
  read_model(root["model"], s);
  read_cluster(root["cluster"], s);
  if (auto use = root.get("use")) read_use(*use, s);
  read_training(root["training"], s);
  read_strategy(root["strategy"], s);
  if (auto sim = root.get("simulation")) read_simulation(*sim, s);
  check_model_size(s);  // before anything computes with the model's sizes
  const int world = make_strategy(s)->world_size();  // an impossible strategy is refused at load time, at the faulty knob
  if (auto stragglers = root.get("stragglers")) {
    s.lines["stragglers"] = stragglers->line();
    s.stragglers = read_stragglers(*stragglers);
    check_stragglers(s.stragglers, s.cluster, world);
    // One iteration: the stragglers that are always slow (episodes are the horizon's, `goodput`).
    s.simulation.stragglers = draw_stragglers(permanent_stragglers(s.stragglers), world, 1);
  }
  if (size_check == SizeCheck::refuse) check_simulation_size(s, s.simulation);
  return s;
}

std::shared_ptr<const Model> make_model(const ModelSpec& spec) {
  if (spec.kind == ModelSpec::Kind::mlp) return std::make_shared<MlpModel>(spec.mlp);
  return std::make_shared<TransformerModel>(spec.transformer);
}

namespace {
// The FlashAttention a transformer asks for must be one rank r's GPU profile has a figure for,
// with a kernel for its head dim (sim/gpu_kernel_model.hpp prices it).
void check_flash_attention(const ModelSpec& model, const DeviceProfile& d, int r) {
  if (model.kind != ModelSpec::Kind::transformer || !model.transformer.use_flash_attn) return;
  if (!d.is_gpu() || !d.gpu_kernels.present()) return;  // a roofline profile prices attention by its table
  const TransformerConfig& t = model.transformer;
  const auto& g = d.gpu_kernels;
  const std::string device = "rank " + std::to_string(r) + "'s " + d.name;
  if (g.flash_speed(t.flash_attn_version) <= 0)
    throw StrategyError("model.flash_attn_version",
                        "FlashAttention " + std::to_string(t.flash_attn_version) + " has no figure in " + device +
                            "'s profile, which measures " +
                            (g.flash_version > 0 ? "version " + std::to_string(g.flash_version) +
                                                       (g.flash_previous_version_speed > 0
                                                            ? " and " + std::to_string(g.flash_version - 1)
                                                            : std::string())
                                                 : std::string("an unnamed version")));
  const int version = g.flash_version_for(t.flash_attn_version);
  // FlashAttention-3 has no dropout: its flash_attn_func takes no dropout_p (Dao-AILab/
  // flash-attention, hopper/flash_attn_interface.py). A run with attention dropout on Hopper takes
  // FlashAttention-2 or cuDNN's kernel (Transformer Engine's), which an unset version stands for.
  if (t.flash_attn_version == 3 && t.attention_dropout > 0) {
    char dropout[32];
    std::snprintf(dropout, sizeof dropout, "%g", t.attention_dropout);
    throw StrategyError("model.flash_attn_version",
                        "FlashAttention 3 has no attention dropout (its flash_attn_func takes no dropout_p); this "
                        "model's attention_dropout is " + std::string(dropout) +
                            ": set it to 0, ask for flash_attn_version: 2, or leave the version unset (the "
                            "profile's flash kernel, cuDNN's under Transformer Engine)");
  }
  if (version > 0 && t.head_dim() > sim::gpu::flash_max_head_dim(version))
    throw StrategyError(t.flash_attn_version > 0 ? "model.flash_attn_version" : "model.use_flash_attn",
                        "FlashAttention " + std::to_string(version) + " has kernels for head dims up to " +
                            std::to_string(sim::gpu::flash_max_head_dim(version)) + "; this model's is " +
                            std::to_string(t.head_dim()));
}
}  // namespace

std::unique_ptr<Strategy> make_strategy(const Scenario& s, const std::vector<double>& speeds) {
  try {
    const int device_count = s.cluster.device_count();
    // In 64 bits: each knob may be up to 2^18, their product not.
    const long long world = static_cast<long long>(s.parallel.data_parallel_size) *
                            s.parallel.tensor_model_parallel_size * s.parallel.pipeline_model_parallel_size *
                            s.parallel.context_parallel_size +
                            s.parallel.parameter_servers;  // the servers' ranks follow the replicas'
    if (world > device_count)
      throw StrategyError(s.parallel.parameter_servers > 0 ? "strategy.parameter_servers" : "strategy.data_parallel_size",
                          "the strategy needs " + std::to_string(world) + " devices; cluster '" +
                              s.cluster.name + "' has " + std::to_string(device_count));
    // What each rank's device can do: peak speed in the training dtype (weights for the
    // heterogeneity-aware splits), memory, node and kind.
    std::vector<RankDevice> devices;
    for (int r = 0; r < world; ++r) {
      const DeviceProfile& d = s.cluster.device_of(r);
      if (s.training.fp8 != Fp8Recipe::none && d.is_gpu() && !(d.peak_fp8_flops_per_s > 0))
        throw StrategyError("training.fp8", "FP8 GEMMs need FP8 tensor cores; rank " + std::to_string(r) + "'s " +
                                                d.name + " has none (no peak_fp8_tflops in its profile)");
      check_flash_attention(s.model, d, r);
      const double speed = static_cast<std::size_t>(r) < speeds.size() ? speeds[r] : d.peak_flops_per_s(s.training.precision);
      devices.push_back({speed, d.memory_capacity_bytes,
                         s.cluster.locate(r).global_node, d.name});
    }
    if (s.parallel.offload_optimizer)
      for (int r = 0; r < world; r += s.cluster.group_of(r).devices_per_node)
        if (!s.cluster.group_of(r).host.given())
          throw StrategyError("strategy.offload_optimizer",
                              "offloading needs the node's host: cluster '" + s.cluster.name + "' does not describe node group '" +
                                  s.cluster.group_of(r).name + "''s (node_groups[].host: memory_gb, memory_bandwidth_gb_per_s, "
                                  "device_link)");
    if (s.parallel.master_param_remainders) {
      // The remainder completes a bf16 parameter to its fp32 master; the other layouts keep no
      // master on the device (fp32 or AMP weights, the host's copy) or average it (local SGD).
      if (s.training.precision != DType::bf16 || s.training.autocast)
        throw StrategyError("strategy.master_param_remainders",
                            "a master kept as a remainder completes bf16 parameters: needs training.precision bf16 "
                            "without training.autocast");
      if (s.parallel.offload_optimizer || s.parallel.local_sgd_steps > 1 || s.parallel.parameter_servers > 0)
        throw StrategyError("strategy.master_param_remainders",
                            "a master kept as a remainder is for a synchronous optimizer on the device: not with "
                            "offload_optimizer, local SGD or parameter servers");
    }
    if (s.strategy_type != "hybrid" && s.parallel.context_parallel_size > 1)
      throw StrategyError("strategy.context_parallel_size", "context parallelism needs strategy type hybrid");
    if (s.strategy_type != "hybrid" && s.parallel.expert_model_parallel_size > 1)
      throw StrategyError("strategy.expert_model_parallel_size", "expert parallelism needs strategy type hybrid");
    if (s.strategy_type == "hybrid")
      return std::make_unique<HybridParallel>(make_model(s.model), s.training, s.parallel, s.hybrid, devices);
    std::vector<double> speeds;  // the replicas' (the servers after them have no batch share)
    for (int r = 0; r < s.parallel.data_parallel_size; ++r) speeds.push_back(devices[static_cast<std::size_t>(r)].speed);
    return std::make_unique<DataParallel>(make_model(s.model), s.training, s.parallel, speeds);
  } catch (const StrategyError& e) {
    const std::string field = e.field();
    s.fail(field, e.what());
  } catch (const std::invalid_argument& e) {
    // The model refused its own configuration (TransformerConfig / MlpConfig validate()).
    s.fail("model", e.what());
  }
}

}  // namespace tandem
