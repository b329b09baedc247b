#include "scenarios/scenario_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "analysis/trace.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/search/candidate.hpp"

namespace tandem {

namespace fs = std::filesystem;

namespace {

bool is_preset(const std::string& name) {
  try {
    transformer_preset(name);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The fields a scenario can spell, to tell an untouched preset from an overridden one (the
// sequence length is the training section's, written there).
auto spelled(const TransformerConfig& t) {
  return std::tuple(t.num_layers, t.hidden_size, t.num_attention_heads, t.query_groups(), t.kv_channels, t.ffn_size(),
                    t.vocab_size, t.norm, t.norm_kernel, t.activation, t.position, t.tied_embeddings, t.bias, t.use_flash_attn,
                    t.flash_attn_version, t.cross_entropy_loss_fusion,
                    t.num_moe_experts, t.moe_router_topk, t.expert_ffn_size(), t.moe_expert_capacity_factor,
                    t.moe_aux_loss_coeff, t.moe_shared_expert_intermediate_size, t.moe_first_dense_layers,
                    t.moe_router_load_imbalance);
}

void emit_model(YAML::Emitter& y, const ModelSpec& m) {
  if (m.kind == ModelSpec::Kind::transformer && is_preset(m.transformer.name) &&
      spelled(m.transformer) == spelled(transformer_preset(m.transformer.name))) {
    y << YAML::Key << "model" << YAML::Value << m.transformer.name;  // `model: gpt3-13b`
    return;
  }
  y << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  if (m.kind == ModelSpec::Kind::mlp) {
    y << YAML::Key << "type" << YAML::Value << "mlp";
    y << YAML::Key << "name" << YAML::Value << m.mlp.name;
    y << YAML::Key << "input_size" << YAML::Value << m.mlp.input_size;
    y << YAML::Key << "hidden_sizes" << YAML::Value << YAML::Flow << m.mlp.hidden_sizes;
    y << YAML::Key << "output_size" << YAML::Value << m.mlp.output_size;
  } else {
    // A preset is written by name plus the fields that differ from it: it keeps what a scenario
    // cannot spell (dropout), and its own values are not re-validated as overrides.
    const TransformerConfig& t = m.transformer;
    const bool preset = is_preset(t.name);
    const TransformerConfig p = preset ? transformer_preset(t.name) : TransformerConfig{};
    auto field = [&](const char* key, const auto& value, const auto& preset_value) {
      if (!preset || value != preset_value) y << YAML::Key << key << YAML::Value << value;
    };
    y << YAML::Key << "type" << YAML::Value << "transformer";
    if (preset) y << YAML::Key << "preset" << YAML::Value << t.name;
    else y << YAML::Key << "name" << YAML::Value << t.name;
    field("num_layers", t.num_layers, p.num_layers);
    field("hidden_size", t.hidden_size, p.hidden_size);
    field("num_attention_heads", t.num_attention_heads, p.num_attention_heads);
    field("num_query_groups", t.query_groups(), p.query_groups());
    if (t.kv_channels > 0) field("kv_channels", t.kv_channels, p.kv_channels);
    field("ffn_hidden_size", t.ffn_size(), p.ffn_size());
    field("vocab_size", t.vocab_size, p.vocab_size);
    field("seq_length", t.seq_length, p.seq_length);
    field("norm", std::string(to_string(t.norm)), std::string(to_string(p.norm)));
    field("norm_kernel", std::string(to_string(t.norm_kernel)), std::string(to_string(p.norm_kernel)));
    field("activation", std::string(to_string(t.activation)), std::string(to_string(p.activation)));
    field("position", std::string(to_string(t.position)), std::string(to_string(p.position)));
    field("tied_embeddings", t.tied_embeddings, p.tied_embeddings);
    field("bias", t.bias, p.bias);
    field("use_flash_attn", t.use_flash_attn, p.use_flash_attn);
    if (t.flash_attn_version > 0) field("flash_attn_version", t.flash_attn_version, p.flash_attn_version);
    field("cross_entropy_loss_fusion", t.cross_entropy_loss_fusion, p.cross_entropy_loss_fusion);
    if (t.moe() || p.moe()) {
      field("num_moe_experts", t.num_moe_experts, p.num_moe_experts);
      field("moe_router_topk", t.moe_router_topk, p.moe_router_topk);
      field("moe_ffn_hidden_size", t.expert_ffn_size(), p.expert_ffn_size());
      field("moe_expert_capacity_factor", t.moe_expert_capacity_factor, p.moe_expert_capacity_factor);
      field("moe_aux_loss_coeff", t.moe_aux_loss_coeff, p.moe_aux_loss_coeff);
      field("moe_router_load_imbalance", t.moe_router_load_imbalance, p.moe_router_load_imbalance);
      field("moe_shared_expert_intermediate_size", t.moe_shared_expert_intermediate_size,
            p.moe_shared_expert_intermediate_size);
      field("moe_first_dense_layers", t.moe_first_dense_layers, p.moe_first_dense_layers);
    }
  }
  y << YAML::EndMap;
}

// A bundled cluster by its name, anything else by its absolute path.
std::string cluster_reference(const Cluster& cluster) {
  const fs::path file = fs::absolute(cluster.file).lexically_normal();
  const fs::path bundled = fs::absolute(bundled_dir("platforms/clusters")).lexically_normal();
  if (file.parent_path() == bundled) return file.stem().string();
  return file.string();
}

// A float as the shortest text that reads back to it (3e-4f is "0.0003", not yaml-cpp's
// "0.000300000014").
std::string shortest(float value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

void emit_training(YAML::Emitter& y, const TrainingConfig& t) {
  y << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "global_batch_size" << YAML::Value << t.global_batch_size;
  y << YAML::Key << "micro_batch_size" << YAML::Value << t.micro_batch_size;
  y << YAML::Key << "seq_length" << YAML::Value << t.seq_length;
  y << YAML::Key << "precision" << YAML::Value << to_string(t.precision);
  if (t.fp8 != Fp8Recipe::none) y << YAML::Key << "fp8" << YAML::Value << to_string(t.fp8);
  y << YAML::Key << "optimizer" << YAML::Value << t.optimizer;
  y << YAML::Key << "accumulate_allreduce_grads_in_fp32" << YAML::Value << t.accumulate_allreduce_grads_in_fp32;
  y << YAML::Key << "autocast" << YAML::Value << t.autocast;
  if (!t.autocast) y << YAML::Key << "grad_accumulation" << YAML::Value << to_string(t.grad_accumulation);
  y << YAML::Key << "lr" << YAML::Value << shortest(t.lr);
  y << YAML::Key << "weight_decay" << YAML::Value << shortest(t.weight_decay);
  y << YAML::EndMap;
}

// Every field, so that a codec's defaults changing later cannot change a written plan.
void emit_gradient_compression(YAML::Emitter& y, const CompressionConfig& c) {
  y << YAML::Key << "gradient_compression" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "type" << YAML::Value << to_string(c.type);
  y << YAML::Key << "matrix_approximation_rank" << YAML::Value << c.matrix_approximation_rank;
  y << YAML::Key << "min_compression_rate" << YAML::Value << c.min_compression_rate;
  y << YAML::Key << "use_error_feedback" << YAML::Value << c.use_error_feedback;
  y << YAML::Key << "topk_ratio" << YAML::Value << c.topk_ratio;
  y << YAML::Key << "random_seed" << YAML::Value << c.seed;
  y << YAML::EndMap;
}

void emit_strategy(YAML::Emitter& y, const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const HybridConfig& h = s.hybrid;
  y << YAML::Key << "strategy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "type" << YAML::Value << s.strategy_type;
  y << YAML::Key << "tensor_model_parallel_size" << YAML::Value << p.tensor_model_parallel_size;
  y << YAML::Key << "pipeline_model_parallel_size" << YAML::Value << p.pipeline_model_parallel_size;
  y << YAML::Key << "data_parallel_size" << YAML::Value << p.data_parallel_size;
  y << YAML::Key << "context_parallel_size" << YAML::Value << p.context_parallel_size;
  if (p.expert_model_parallel_size > 1)
    y << YAML::Key << "expert_model_parallel_size" << YAML::Value << p.expert_model_parallel_size;
  y << YAML::Key << "sequence_parallel" << YAML::Value << p.sequence_parallel;
  y << YAML::Key << "tp_comm_overlap" << YAML::Value << p.tp_comm_overlap;
  y << YAML::Key << "zero_stage" << YAML::Value << p.zero_stage;
  if (p.offload_optimizer) y << YAML::Key << "offload_optimizer" << YAML::Value << true;
  if (p.master_param_remainders) y << YAML::Key << "master_param_remainders" << YAML::Value << true;
  y << YAML::Key << "recompute_granularity" << YAML::Value << to_string(p.recompute_granularity);
  y << YAML::Key << "overlap_grad_reduce" << YAML::Value << p.overlap_grad_reduce;
  y << YAML::Key << "overlap_param_gather" << YAML::Value << p.overlap_param_gather;
  y << YAML::Key << "pipeline_scatter_gather" << YAML::Value << p.pipeline_scatter_gather;
  if (p.pipeline_blocking_p2p) y << YAML::Key << "pipeline_blocking_p2p" << YAML::Value << true;
  if (p.overlap_p2p_comm) y << YAML::Key << "overlap_p2p_comm" << YAML::Value << true;
  if (p.parameter_servers > 0) {
    y << YAML::Key << "parameter_servers" << YAML::Value << p.parameter_servers;
    y << YAML::Key << "parameter_server_partition_bytes" << YAML::Value << p.parameter_server_partition_bytes;
    y << YAML::Key << "parameter_server_staleness" << YAML::Value << p.parameter_server_staleness;
    if (p.parameter_server_optimizer) y << YAML::Key << "parameter_server_optimizer" << YAML::Value << true;
    if (p.parameter_server_asynchronous) {
      y << YAML::Key << "parameter_server_asynchronous" << YAML::Value << true;
      y << YAML::Key << "parameter_server_jitter" << YAML::Value << p.parameter_server_jitter;
      y << YAML::Key << "parameter_server_seed" << YAML::Value << p.parameter_server_seed;
    }
  }
  y << YAML::Key << "local_sgd_steps" << YAML::Value << p.local_sgd_steps;
  y << YAML::Key << "local_sgd_group_size" << YAML::Value << p.local_sgd_group_size;
  y << YAML::Key << "outer_lr" << YAML::Value << shortest(p.outer_lr);
  y << YAML::Key << "outer_momentum" << YAML::Value << shortest(p.outer_momentum);
  y << YAML::Key << "ddp_bucket_size" << YAML::Value << p.ddp_bucket_size;
  y << YAML::Key << "batch_split" << YAML::Value << search::to_string(p.batch_split);
  y << YAML::Key << "pipeline_schedule" << YAML::Value << to_string(h.schedule);
  y << YAML::Key << "virtual_pipeline_model_parallel_size" << YAML::Value << h.virtual_stages;
  y << YAML::Key << "rank_order" << YAML::Value << to_string(h.order);
  y << YAML::Key << "pipeline_partition" << YAML::Value << search::to_string(h.partition);
  if (!h.layers_per_stage.empty())
    y << YAML::Key << "pipeline_layers" << YAML::Value << YAML::Flow << h.layers_per_stage;
  if (p.gradient_compression.enabled()) emit_gradient_compression(y, p.gradient_compression);
  y << YAML::EndMap;
}

void emit_simulation(YAML::Emitter& y, const sim::SimulationOptions& o) {
  y << YAML::Key << "simulation" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "iterations" << YAML::Value << o.iterations;
  y << YAML::Key << "warmup_iterations" << YAML::Value << o.warmup_iterations;
  y << YAML::Key << "collective_algorithm" << YAML::Value << sim::to_string(o.algorithm);
  y << YAML::Key << "collective_fidelity" << YAML::Value << sim::to_string(o.collective_fidelity);
  y << YAML::Key << "compute_fidelity" << YAML::Value << sim::to_string(o.compute_fidelity);
  y << YAML::Key << "comm_contention" << YAML::Value << o.comm_contention;
  y << YAML::EndMap;
}

}  // namespace

std::string scenario_yaml(const Scenario& s, const std::string& header) {
  YAML::Emitter y;
  y.SetFloatPrecision(9);    // floats (lr) read back to the same float
  y.SetDoublePrecision(17);
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << s.name;
  if (!s.description.empty()) y << YAML::Key << "description" << YAML::Value << s.description;
  emit_model(y, s.model);
  y << YAML::Key << "cluster" << YAML::Value << cluster_reference(s.cluster);
  if (!s.use.empty()) {
    y << YAML::Key << "use" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [group, devices] : s.use) y << YAML::Key << group << YAML::Value << devices;
    y << YAML::EndMap;
  }
  emit_training(y, s.training);
  emit_strategy(y, s);
  emit_simulation(y, s.simulation);
  y << YAML::EndMap;
  std::ostringstream out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << y.c_str() << "\n";
  return out.str();
}

void write_scenario(const Scenario& s, const std::string& path, const std::string& header) {
  write_file_atomically(path, scenario_yaml(s, header));
}

}  // namespace tandem
