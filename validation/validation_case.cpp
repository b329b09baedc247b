#include "validation/validation_case.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/input_error.hpp"
#include "common/yaml_reader.hpp"
#include "scenarios/scenario_limits.hpp"

namespace tandem::validation {

namespace fs = std::filesystem;

const char* to_string(FlopsFormula formula) {
  switch (formula) {
    case FlopsFormula::megatron_2021: return "megatron_2021";
    case FlopsFormula::megatron_core: return "megatron_core";
    case FlopsFormula::model: return "model";
  }
  return "?";
}

namespace {

FlopsFormula parse_formula(const YamlNode& node) {
  const std::string v = node.as_string();
  if (v == "megatron_2021") return FlopsFormula::megatron_2021;
  if (v == "megatron_core") return FlopsFormula::megatron_core;
  if (v == "model") return FlopsFormula::model;
  node.fail("unknown flops_formula '" + v + "' (expected megatron_2021, megatron_core or model)");
}

// Megatron-Core's num_floating_point_operations (megatron/training/training.py, mid-2024):
// 12·B·s·l·h²·((1 + groups/heads + s/h)·(heads·kv_channels/h) + (ffn/h)·(3/2 with SwiGLU) + V/(2·l·h)).
Flops megatron_core_flops(const TransformerConfig& c, double batch, double seq) {
  const double h = static_cast<double>(c.hidden_size), l = static_cast<double>(c.num_layers);
  const double heads = static_cast<double>(c.num_attention_heads);
  const double query_ratio = heads * static_cast<double>(c.head_dim()) / h;
  const double attention = (1 + static_cast<double>(c.query_groups()) / heads + seq / h) * query_ratio;
  const double mlp = static_cast<double>(c.ffn_size()) / h * (c.activation == ActivationType::swiglu ? 1.5 : 1.0);
  const double logits = static_cast<double>(c.vocab_size) / (2 * l * h);
  return 12 * batch * seq * l * h * h * (attention + mlp + logits);
}

}  // namespace

int ValidationCase::devices() const {
  const ParallelConfig& p = scenario.parallel;
  return p.data_parallel_size * p.tensor_model_parallel_size * p.pipeline_model_parallel_size * p.context_parallel_size;
}

Flops ValidationCase::published_flops_per_iteration() const {
  const TransformerConfig& c = scenario.model.transformer;
  const auto batch = scenario.training.global_batch_size;
  const auto seq = scenario.training.seq_length;
  switch (published.formula) {
    case FlopsFormula::megatron_2021: return megatron_flops_per_iteration(c, batch, seq, /*causal=*/false);
    case FlopsFormula::megatron_core:
      return megatron_core_flops(c, static_cast<double>(batch), static_cast<double>(seq));
    case FlopsFormula::model: break;
  }
  return model_flops_per_token(c, seq) * static_cast<double>(batch) * static_cast<double>(seq);
}

Seconds ValidationCase::published_iteration_time_s() const {
  if (published.iteration_time_s > 0) return published.iteration_time_s;
  return published_flops_per_iteration() / (published.tflops_per_gpu * kTera * devices());
}

double ValidationCase::tflops_per_gpu(Seconds iteration_time_s) const {
  return published_flops_per_iteration() / (iteration_time_s * devices()) / kTera;
}

ValidationCase load_validation_case(const std::string& path, bool include_long) {
  ValidationCase c;
  c.scenario = load_scenario(path, SizeCheck::skip);
  try {
    const long double ops = check_simulation_size(c.scenario, c.scenario.simulation).ops;
    if (!include_long && ops > kQuickValidationOps) {
      char text[160];
      std::snprintf(text, sizeof text, "a long case (about %.2g ops estimated): left out of the default run; "
                    "`tandem validate --long` runs it", static_cast<double>(ops));
      c.refused = text;
    }
  } catch (const InputError& e) {
    c.refused = e.what();
  }
  if (c.scenario.model.kind != ModelSpec::Kind::transformer)
    throw InputError(path, c.scenario.line_of("model"), "model", "a validation case is a transformer");
  const YamlNode root = YamlNode::load_file(path);
  const YamlNode v = root["validation"];
  v.only_keys({"published", "source", "hardware", "software", "note", "band_pct", "ci"});
  const YamlNode published = v["published"];
  published.only_keys({"tflops_per_gpu", "iteration_time_s", "flops_formula"});
  const bool tflops = published.has("tflops_per_gpu"), time = published.has("iteration_time_s");
  if (tflops == time) published.fail("give exactly one of tflops_per_gpu and iteration_time_s");
  if (tflops) {
    const YamlNode n = published["tflops_per_gpu"];
    c.published.tflops_per_gpu = n.positive();
    if (c.published.tflops_per_gpu > 1e5) n.fail("is not a per-GPU TFLOP/s figure: " + n.as_string());
    c.published.formula = parse_formula(published["flops_formula"]);
  } else {
    c.published.iteration_time_s = published["iteration_time_s"].positive();
    if (auto f = published.get("flops_formula")) c.published.formula = parse_formula(*f);
  }
  c.source = v.str("source");
  if (c.source.empty()) v["source"].fail("must name the publication, table or figure");
  c.hardware = v.str_or("hardware", "");
  c.software = v.str_or("software", "");
  c.note = v.str_or("note", "");
  if (auto band = v.get("band_pct")) {
    c.band_pct = band->positive();
    if (c.band_pct > 100) band->fail("must be a percentage in (0, 100], got " + band->as_string());
  }
  if (auto ci = v.get("ci")) c.ci = ci->as_bool();
  return c;
}

std::vector<std::string> validation_case_files(const std::string& dir) {
  const std::string folder = dir.empty() ? bundled_dir("validation/cases") : dir;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  if (ec) throw InputError(folder, 0, "", "cannot list validation cases: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace tandem::validation
