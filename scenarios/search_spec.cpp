#include "scenarios/search_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "common/input_file.hpp"
#include "common/yaml_reader.hpp"
#include "platforms/cluster_selection.hpp"

namespace tandem {

namespace {

// A knob's node: a scalar pins it, a sequence lists its values, and for numeric knobs a map
// {min, max} bounds the defaults.
struct Bounds {
  std::optional<long long> min, max;
};

template <class T, class Parse>
std::vector<T> values_of(const YamlNode& node, Parse parse) {
  std::vector<T> out;
  if (node.is_sequence()) {
    for (const YamlNode& item : node.items()) out.push_back(parse(item));
    if (out.empty()) node.fail("needs at least one value");
  } else {
    out.push_back(parse(node));
  }
  return out;
}

template <class T, class Parse>
void read_list(const YamlNode& section, const char* key, std::vector<T>& target, Parse parse) {
  if (auto node = section.get(key)) target = values_of<T>(*node, parse);
}

// Numeric knobs: values, or bounds applied once the defaults are known.
template <class T>
void read_numeric(const YamlNode& section, const char* key, std::vector<T>& target, Bounds& bounds,
                  long long lowest, long long highest) {
  auto node = section.get(key);
  if (!node) return;
  auto parse = [&](const YamlNode& n) {
    const long long v = n.as_int();
    if (v < lowest || v > highest)
      n.fail("must be between " + std::to_string(lowest) + " and " + std::to_string(highest));
    return static_cast<T>(v);
  };
  if (node->is_map()) {
    node->only_keys({"min", "max"});
    if (auto lo = node->get("min")) bounds.min = parse(*lo);
    if (auto hi = node->get("max")) bounds.max = parse(*hi);
    if (!bounds.min && !bounds.max) node->fail("a bound needs min or max");
    if (bounds.min && bounds.max && *bounds.min > *bounds.max) node->fail("min is larger than max");
  } else {
    target = values_of<T>(*node, parse);
  }
}

template <class T>
void apply_bounds(std::vector<T>& values, const Bounds& b) {
  std::erase_if(values, [&](T v) { return (b.min && v < *b.min) || (b.max && v > *b.max); });
}

template <class T, class Parse>
auto choice(Parse parse) {
  return [parse](const YamlNode& n) -> T {
    try {
      return parse(n.as_string());
    } catch (const std::invalid_argument& e) {
      n.fail(e.what());
    }
  };
}

Recompute parse_recompute(const std::string& v) {
  if (v == "none") return Recompute::none;
  if (v == "selective") return Recompute::selective;
  if (v == "full") return Recompute::full;
  throw std::invalid_argument("unknown recompute granularity '" + v + "' (expected none, selective or full)");
}
HybridConfig::Partition parse_partition(const std::string& v) {
  if (v == "uniform") return HybridConfig::Partition::uniform;
  if (v == "proportional") return HybridConfig::Partition::proportional;
  throw std::invalid_argument("unknown pipeline partition '" + v + "' (expected uniform, proportional or refined)");
}

constexpr int kDefaultRefineEvaluations = 16;

// pipeline_partition: the enumerated partitions, plus `refined` (search.hpp, step 3), which is
// no partition of its own: it turns the refinement on. Returns whether it was listed.
bool read_partitions(const YamlNode& section, std::vector<HybridConfig::Partition>& target) {
  auto node = section.get("pipeline_partition");
  if (!node) return false;
  bool refined = false;
  const std::vector<YamlNode> items = node->is_sequence() ? node->items() : std::vector<YamlNode>{*node};
  if (items.empty()) node->fail("needs at least one value");
  for (const YamlNode& item : items) {
    if (item.as_string() == "refined") refined = true;
    else target.push_back(choice<HybridConfig::Partition>(parse_partition)(item));
  }
  return refined;
}
BatchSplit parse_batch_split(const std::string& v) {
  if (v == "even") return BatchSplit::even;
  if (v == "proportional") return BatchSplit::proportional;
  throw std::invalid_argument("unknown batch split '" + v + "' (expected even or proportional)");
}

// nodes: `any`, or a map from node group name to counts (a pin, a list, or {min, max} bounds on
// the defaults of search_space.hpp's node_selections).
std::vector<std::vector<int>> read_nodes(const YamlNode& node, const Cluster& cluster) {
  std::vector<std::vector<int>> counts(cluster.groups.size());
  if (!node.is_map()) {
    if (node.as_string() != "any") node.fail("expected `any` or a map from node group name to node counts");
    return search::node_selections(cluster, counts);
  }
  std::vector<std::string> names;
  for (const NodeGroup& g : cluster.groups) names.push_back(g.name);
  for (const auto& [name, value] : node.entries()) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) value.fail("no node group '" + name + "' in cluster '" + cluster.name + "'");
    const std::size_t g = static_cast<std::size_t>(it - names.begin());
    Bounds bounds;
    read_numeric(node, name.c_str(), counts[g], bounds, 0, cluster.groups[g].node_count);
    if (bounds.min || bounds.max) {
      counts[g] = search::default_node_counts(cluster.groups[g].node_count);
      apply_bounds(counts[g], bounds);
      if (counts[g].empty()) value.fail("its bounds leave no node count to try");
    }
  }
  auto selections = search::node_selections(cluster, counts);
  if (selections.empty()) node.fail("selects no node at all");
  return selections;
}

}  // namespace

bool all_priced(const SearchScenario& spec) {
  for (int world : spec.space.devices)
    if (spec.space.nodes.empty() && !search::all_priced(spec.base.cluster, world)) return false;
  for (const auto& selection : spec.space.nodes) {
    const Cluster part = select_nodes(spec.base.cluster, selection);
    if (!search::all_priced(part, part.device_count())) return false;
  }
  return true;
}

namespace {

// `convergence` and `target_loss`: read with the time_to_target_loss objective, required with it,
// refused with another objective written in the file (a file that would not be used), ignored when
// the command line's --objective replaced the file's.
void read_convergence(const std::optional<YamlNode>& section, search::Objective objective,
                      const std::optional<YamlNode>& objective_node, bool from_command_line, SearchScenario& out) {
  const std::optional<YamlNode> file = section ? section->get("convergence") : std::nullopt;
  const std::optional<YamlNode> target = section ? section->get("target_loss") : std::nullopt;
  if (objective != search::Objective::time_to_target_loss) {
    if (from_command_line) return;  // --objective replaced the file's: its convergence is not needed
    if (file) file->fail("only the time_to_target_loss objective reads a convergence file");
    if (target) target->fail("only the time_to_target_loss objective has a target loss");
    return;
  }
  if (!file) {
    const std::string why =
        "time_to_target_loss needs `convergence:` in the search section, a measured loss-per-step file "
        "(validation/convergence/measure.sh writes one)";
    if (objective_node && !from_command_line) objective_node->fail(why);
    throw InputError(out.base.file, 0, "search.convergence", why);
  }
  std::optional<double> target_loss;
  if (target) target_loss = target->positive();
  // Normalised: the path is shown in the output's basis line and in reasons.
  const std::string path = std::filesystem::path(path_beside(out.base.file, file->as_string())).lexically_normal().string();
  if (!path_exists(path)) file->fail("no such file: " + file->as_string() + " (a relative path is read from the scenario's folder)");
  out.convergence = load_convergence_table(path, target_loss);
}

}  // namespace

SearchScenario load_search_scenario(const std::string& name_or_path, std::optional<search::Objective> objective) {
  SearchScenario out;
  out.base = load_scenario(name_or_path);
  const YamlNode root = YamlNode::load_file(out.base.file);
  auto section = root.get("search");
  search::SearchSpace& s = out.space;
  search::SearchSettings& settings = out.settings;
  const int devices = out.base.cluster.device_count();
  std::map<std::string, Bounds> bounds;
  std::optional<YamlNode> objective_node;
  if (section) {
    const YamlNode& n = *section;
    n.only_keys({"devices", "tensor_model_parallel_size", "pipeline_model_parallel_size", "data_parallel_size",
                 "micro_batch_size", "pipeline_schedule", "virtual_pipeline_model_parallel_size", "zero_stage",
                 "offload_optimizer",
                 "recompute_granularity", "sequence_parallel", "rank_order", "pipeline_partition", "batch_split",
                 "objective", "top_k", "memory_headroom", "algorithm", "exhaustive_limit", "max_evaluations", "seed",
                 "refine_evaluations", "nodes", "local_sgd_steps", "context_parallel_size", "fp8",
                 "expert_model_parallel_size", "local_sgd_group_size", "parameter_servers",
                 "parameter_server_staleness", "parameter_server_optimizer", "parameter_server_asynchronous", "convergence",
                 "target_loss"});
    read_numeric(n, "devices", s.devices, bounds["devices"], 1, devices);
    if (auto v = n.get("nodes")) {
      if (n.get("devices")) v->fail("give either `devices` (ranks 0..n-1) or `nodes` (per node group), not both");
      s.nodes = read_nodes(*v, out.base.cluster);
    }
    read_numeric(n, "tensor_model_parallel_size", s.tp, bounds["tp"], 1, devices);
    read_numeric(n, "pipeline_model_parallel_size", s.pp, bounds["pp"], 1, devices);
    read_numeric(n, "data_parallel_size", s.dp, bounds["dp"], 1, devices);
    read_numeric(n, "context_parallel_size", s.cp, bounds["cp"], 1, devices);
    read_numeric(n, "expert_model_parallel_size", s.ep, bounds["ep"], 1, devices);
    read_numeric(n, "micro_batch_size", s.micro_batch_size, bounds["mbs"], 1, out.base.training.global_batch_size);
    read_numeric(n, "virtual_pipeline_model_parallel_size", s.virtual_stages, bounds["v"], 1, limits::kVirtualStages.max);
    read_numeric(n, "zero_stage", s.zero_stage, bounds["zero"], 0, 3);
    read_list(n, "local_sgd_steps", s.local_sgd_steps,
              [](const YamlNode& v) { return static_cast<int>(v.count(limits::kLocalSgdSteps)); });
    read_list(n, "local_sgd_group_size", s.local_sgd_group_size,
              [](const YamlNode& v) { return static_cast<int>(v.count(limits::kLocalSgdGroupSize)); });
    read_list(n, "parameter_servers", s.parameter_servers,
              [](const YamlNode& v) { return static_cast<int>(v.count(limits::kParameterServers)); });
    read_list(n, "parameter_server_staleness", s.parameter_server_staleness,
              [](const YamlNode& v) { return static_cast<int>(v.count(limits::kParameterServerStaleness)); });
    read_list(n, "pipeline_schedule", s.schedule, choice<PipelineSchedule>(parse_pipeline_schedule));
    read_list(n, "recompute_granularity", s.recompute, choice<Recompute>(parse_recompute));
    read_list(n, "sequence_parallel", s.sequence_parallel, [](const YamlNode& v) { return v.as_bool() ? 1 : 0; });
    read_list(n, "offload_optimizer", s.offload_optimizer, [](const YamlNode& v) { return v.as_bool() ? 1 : 0; });
    read_list(n, "parameter_server_optimizer", s.parameter_server_optimizer,
              [](const YamlNode& v) { return v.as_bool() ? 1 : 0; });
    read_list(n, "parameter_server_asynchronous", s.parameter_server_asynchronous,
              [](const YamlNode& v) { return v.as_bool() ? 1 : 0; });
    read_list(n, "rank_order", s.order, choice<RankOrder>(parse_rank_order));
    read_list(n, "fp8", s.fp8, choice<Fp8Recipe>(parse_fp8_recipe));
    const bool refined = read_partitions(n, s.partition);
    if (refined) settings.refine_evaluations = kDefaultRefineEvaluations;
    if (auto v = n.get("refine_evaluations")) {
      if (!refined) v->fail("needs `refined` among the pipeline_partition values");
      settings.refine_evaluations = static_cast<int>(v->count(limits::kEvaluations));
    }
    read_list(n, "batch_split", s.batch_split, choice<BatchSplit>(parse_batch_split));
    if (auto v = n.get("objective")) {
      settings.objective = choice<search::Objective>(search::parse_objective)(*v);
      objective_node = v;
    }
    if (auto v = n.get("algorithm")) settings.algorithm = choice<search::Algorithm>(search::parse_algorithm)(*v);
    if (auto v = n.get("top_k")) settings.top_k = static_cast<int>(v->count(limits::kTopK));
    if (auto v = n.get("exhaustive_limit")) settings.exhaustive_limit = static_cast<int>(v->count(limits::kEvaluations));
    if (auto v = n.get("max_evaluations")) settings.max_evaluations = static_cast<int>(v->count(limits::kEvaluations));
    if (auto v = n.get("seed")) settings.seed = static_cast<std::uint64_t>(v->count(limits::kSeed));
    if (auto v = n.get("memory_headroom")) {
      const double h = v->non_negative();
      if (h >= 1) v->fail("must be a fraction below 1, got " + v->as_string());
      settings.constraints.memory_headroom = h;
    }
  }
  if (objective) settings.objective = *objective;
  // Cost: a plan on fewer or cheaper devices may win, so the node selections are searched too.
  const bool devices_given = section && (section->get("devices") || section->get("nodes"));
  if (settings.objective == search::Objective::cost && !devices_given)
    s.nodes = search::node_selections(out.base.cluster, {});
  s = search::complete_space(s, out.base.cluster, out.base.training);
  apply_bounds(s.devices, bounds["devices"]);
  apply_bounds(s.tp, bounds["tp"]);
  apply_bounds(s.pp, bounds["pp"]);
  if (s.dp.empty() && (bounds["dp"].min || bounds["dp"].max))
    for (int d = 1; d <= devices; ++d) s.dp.push_back(d);  // bounds on "any"
  apply_bounds(s.dp, bounds["dp"]);
  if (bounds["cp"].min || bounds["cp"].max) {  // bounds on the default: powers of two within them
    s.cp.clear();
    for (int c = 1; c <= devices; c *= 2) s.cp.push_back(c);
  }
  apply_bounds(s.cp, bounds["cp"]);
  if (bounds["ep"].min || bounds["ep"].max) {  // bounds on the default: powers of two within them
    s.ep.clear();
    for (int e = 1; e <= devices; e *= 2) s.ep.push_back(e);
  }
  apply_bounds(s.ep, bounds["ep"]);
  apply_bounds(s.micro_batch_size, bounds["mbs"]);
  apply_bounds(s.virtual_stages, bounds["v"]);
  apply_bounds(s.zero_stage, bounds["zero"]);
  for (auto [key, empty] : {std::pair{"devices", s.devices.empty()}, {"tensor_model_parallel_size", s.tp.empty()},
                            {"pipeline_model_parallel_size", s.pp.empty()}, {"micro_batch_size", s.micro_batch_size.empty()},
                            {"data_parallel_size", s.dp.empty() && (bounds["dp"].min || bounds["dp"].max)},
                            {"zero_stage", s.zero_stage.empty()}, {"context_parallel_size", s.cp.empty()},
                            {"expert_model_parallel_size", s.ep.empty()}})
    if (empty) (*section)[key].fail("its bounds leave no value to try");
  if (settings.objective == search::Objective::cost && objective_node && !objective && !all_priced(out))
    objective_node->fail("the cost objective needs price_per_hour_usd in every device profile of cluster '" +
                         out.base.cluster.name + "'");
  out.reliability = load_reliability_section(out.base);
  read_convergence(section, settings.objective, objective_node, objective.has_value(), out);
  if (settings.objective == search::Objective::time_to_train && !(out.reliability && out.reliability->target_tokens > 0)) {
    const std::string why =
        "time_to_train needs a `reliability:` section with target_tokens (how the job fails, checkpoints and "
        "restarts, and how many tokens it trains: scenarios/reliability_spec.hpp)";
    if (objective_node && !objective) objective_node->fail(why);
    throw InputError("command line", 0, "--objective", why);
  }
  return out;
}

}  // namespace tandem
