#include "scenarios/convergence_table.hpp"

#include "analysis/json_file.hpp"
#include "common/yaml_reader.hpp"
#include "scenarios/gradient_compression_reader.hpp"

namespace tandem {

bool ConvergenceKey::operator==(const ConvergenceKey& o) const {
  if (codec.type != o.codec.type) return false;
  if (codec.type == Compression::power_sgd && codec.matrix_approximation_rank != o.codec.matrix_approximation_rank)
    return false;
  if (codec.type == Compression::top_k && codec.topk_ratio != o.codec.topk_ratio) return false;
  return local_sgd_steps == o.local_sgd_steps && local_sgd_group_size == o.local_sgd_group_size &&
         parameter_servers == o.parameter_servers && parameter_server_staleness == o.parameter_server_staleness &&
         parameter_server_asynchronous == o.parameter_server_asynchronous;
}

ConvergenceKey convergence_key(const ParallelConfig& p) {
  ConvergenceKey k;
  k.codec = p.gradient_compression;
  k.local_sgd_steps = p.local_sgd_steps;
  // Blocks matter only when replicas step apart.
  k.local_sgd_group_size = p.local_sgd_steps > 1 ? p.local_sgd_group_size : 1;
  k.parameter_servers = p.parameter_servers > 0;
  k.parameter_server_staleness = k.parameter_servers ? p.parameter_server_staleness : 0;
  k.parameter_server_asynchronous = k.parameter_servers && p.parameter_server_asynchronous;
  return k;
}

std::string describe(const ConvergenceKey& k) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (k.codec.enabled()) add(describe(k.codec));
  if (k.local_sgd_steps > 1) add("local_sgd_steps=" + std::to_string(k.local_sgd_steps));
  if (k.local_sgd_group_size > 1) add("local_sgd_group_size=" + std::to_string(k.local_sgd_group_size));
  if (k.parameter_server_asynchronous) add("parameter servers, asynchronous");
  else if (k.parameter_servers) add("parameter servers, staleness " + std::to_string(k.parameter_server_staleness));
  return out.empty() ? "synchronous" : out;
}

const ConvergenceVariant* ConvergenceTable::find(const ConvergenceKey& key) const {
  for (const ConvergenceVariant& v : variants)
    if (v.key == key) return &v;
  return nullptr;
}

std::optional<int> ConvergenceTable::steps_to_target(const ParallelConfig& parallel, std::string& why) const {
  const ConvergenceKey key = convergence_key(parallel);
  const ConvergenceVariant* variant = find(key);
  if (!variant) {
    why = "no convergence measured for " + describe(key) + " in " + file;
    return std::nullopt;
  }
  const std::optional<int> steps = steps_to_loss(variant->losses, target_loss);
  if (!steps)
    why = "variant '" + variant->name + "' never reached loss " + std::to_string(target_loss) + " in its " +
          std::to_string(variant->losses.size()) + " measured steps";
  return steps;
}

std::optional<int> steps_to_loss(const std::vector<double>& losses, double target) {
  constexpr std::size_t kWindow = 5;
  double sum = 0;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    sum += losses[i];
    if (i >= kWindow) sum -= losses[i - kWindow];
    if (i + 1 >= kWindow && sum / kWindow <= target) return static_cast<int>(i + 1);
  }
  return std::nullopt;
}

void apply_convergence_fields(const std::string& text, const std::string& where, ParallelConfig& p) {
  const YamlNode n = YamlNode::load_string("{" + text + "}", where);
  if (!n.is_map()) n.fail("expected strategy fields (\"data_parallel_size: 4, local_sgd_steps: 4\")");
  n.only_keys({"type", "data_parallel_size", "gradient_compression", "local_sgd_steps", "local_sgd_group_size",
               "parameter_servers", "parameter_server_staleness", "parameter_server_asynchronous"});
  if (auto v = n.get("data_parallel_size")) p.data_parallel_size = static_cast<int>(v->count(limits::kParallelSize));
  if (auto v = n.get("gradient_compression")) p.gradient_compression = read_gradient_compression(*v);
  if (auto v = n.get("local_sgd_steps")) p.local_sgd_steps = static_cast<int>(v->count(limits::kLocalSgdSteps));
  if (auto v = n.get("local_sgd_group_size"))
    p.local_sgd_group_size = static_cast<int>(v->count(limits::kLocalSgdGroupSize));
  if (auto v = n.get("parameter_servers")) p.parameter_servers = static_cast<int>(v->count(limits::kParameterServers));
  if (auto v = n.get("parameter_server_staleness"))
    p.parameter_server_staleness = static_cast<int>(v->count(limits::kParameterServerStaleness));
  if (auto v = n.get("parameter_server_asynchronous")) p.parameter_server_asynchronous = v->as_bool();
}

namespace {

// A variant's `strategy`, written as a scenario's strategy fields ("data_parallel_size: 4,
// local_sgd_steps: 4"): its convergence key. Errors are placed at the JSON field.
ConvergenceKey read_strategy(const JsonFields& variant) {
  const std::string text = variant.string("strategy");
  try {
    ParallelConfig p;
    apply_convergence_fields(text, "strategy", p);
    return convergence_key(p);
  } catch (const InputError& e) {
    variant.fail("strategy", (e.field().empty() ? "" : e.field() + ": ") + e.message());
  }
}

}  // namespace

ConvergenceTable load_convergence_table(const std::string& path, std::optional<double> target_loss) {
  const JsonInput input = read_json_input(path);
  const JsonFields root(input);
  ConvergenceTable t;
  t.file = path;
  t.model = root.optional_string("model", "(not stated)");
  t.target_loss = target_loss ? *target_loss : root.number("target_loss");
  const std::size_t count = root.array("variants").size();
  if (count == 0) root.fail("variants", "no variant measured");
  for (std::size_t i = 0; i < count; ++i) {
    const JsonFields v = root.element("variants", i);
    ConvergenceVariant variant;
    variant.name = v.string("name");
    variant.key = read_strategy(v);
    variant.losses = v.numbers("losses", "step");
    if (t.find(variant.key)) v.fail("strategy", "a second variant for " + describe(variant.key));
    t.variants.push_back(std::move(variant));
  }
  return t;
}

}  // namespace tandem
