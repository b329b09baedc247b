#include "strategies/search/candidate.hpp"

namespace tandem::search {

const char* to_string(HybridConfig::Partition partition) {
  return partition == HybridConfig::Partition::proportional ? "proportional" : "uniform";
}

const char* to_string(BatchSplit split) { return split == BatchSplit::proportional ? "proportional" : "even"; }

std::string partition_text(const Candidate& c) {
  if (c.layers_per_stage.empty()) return to_string(c.partition);
  std::string text;
  for (int layers : c.layers_per_stage) text += (text.empty() ? "" : "/") + std::to_string(layers);
  return text;
}

nlohmann::json to_json(const Candidate& c) {
  nlohmann::json j = {{"tensor_model_parallel_size", c.tp},
          {"pipeline_model_parallel_size", c.pp},
          {"data_parallel_size", c.dp},
          {"micro_batch_size", c.micro_batch_size},
          {"pipeline_schedule", tandem::to_string(c.schedule)},
          {"virtual_pipeline_model_parallel_size", c.virtual_stages},
          {"zero_stage", c.zero_stage},
          {"offload_optimizer", c.offload_optimizer},
          {"recompute_granularity", tandem::to_string(c.recompute)},
          {"sequence_parallel", c.sequence_parallel},
          {"rank_order", tandem::to_string(c.order)},
          {"pipeline_partition", to_string(c.partition)},
          {"batch_split", to_string(c.batch_split)},
          {"local_sgd_steps", c.local_sgd_steps},
          {"local_sgd_group_size", c.local_sgd_group_size},
          {"context_parallel_size", c.cp},
          {"fp8", tandem::to_string(c.fp8)},
          {"expert_model_parallel_size", c.ep},
          {"parameter_servers", c.parameter_servers},
          {"parameter_server_staleness", c.parameter_server_staleness},
          {"parameter_server_optimizer", c.parameter_server_optimizer},
          {"parameter_server_asynchronous", c.parameter_server_asynchronous}};
  if (!c.layers_per_stage.empty()) j["pipeline_layers"] = c.layers_per_stage;
  if (!c.nodes.empty()) j["nodes_per_group"] = c.nodes;
  return j;
}

Candidate candidate_from_json(const nlohmann::json& j) {
  Candidate c;
  c.tp = j.at("tensor_model_parallel_size").get<int>();
  c.pp = j.at("pipeline_model_parallel_size").get<int>();
  c.dp = j.at("data_parallel_size").get<int>();
  c.micro_batch_size = j.at("micro_batch_size").get<std::int64_t>();
  c.schedule = parse_pipeline_schedule(j.at("pipeline_schedule").get<std::string>());
  c.virtual_stages = j.at("virtual_pipeline_model_parallel_size").get<int>();
  c.zero_stage = j.at("zero_stage").get<int>();
  if (j.contains("offload_optimizer")) c.offload_optimizer = j.at("offload_optimizer").get<bool>();
  const std::string recompute = j.at("recompute_granularity").get<std::string>();
  c.recompute = recompute == "full" ? Recompute::full : recompute == "selective" ? Recompute::selective : Recompute::none;
  c.sequence_parallel = j.at("sequence_parallel").get<bool>();
  c.order = parse_rank_order(j.at("rank_order").get<std::string>());
  c.partition = j.at("pipeline_partition").get<std::string>() == "proportional" ? HybridConfig::Partition::proportional
                                                                                : HybridConfig::Partition::uniform;
  if (j.contains("pipeline_layers")) c.layers_per_stage = j.at("pipeline_layers").get<std::vector<int>>();
  c.batch_split = j.at("batch_split").get<std::string>() == "proportional" ? BatchSplit::proportional : BatchSplit::even;
  if (j.contains("nodes_per_group")) c.nodes = j.at("nodes_per_group").get<std::vector<int>>();
  if (j.contains("local_sgd_steps")) c.local_sgd_steps = j.at("local_sgd_steps").get<int>();
  if (j.contains("local_sgd_group_size")) c.local_sgd_group_size = j.at("local_sgd_group_size").get<int>();
  if (j.contains("context_parallel_size")) c.cp = j.at("context_parallel_size").get<int>();
  if (j.contains("fp8")) c.fp8 = parse_fp8_recipe(j.at("fp8").get<std::string>());
  if (j.contains("expert_model_parallel_size")) c.ep = j.at("expert_model_parallel_size").get<int>();
  if (j.contains("parameter_servers")) c.parameter_servers = j.at("parameter_servers").get<int>();
  if (j.contains("parameter_server_staleness"))
    c.parameter_server_staleness = j.at("parameter_server_staleness").get<int>();
  if (j.contains("parameter_server_optimizer")) c.parameter_server_optimizer = j.at("parameter_server_optimizer").get<bool>();
  if (j.contains("parameter_server_asynchronous"))
    c.parameter_server_asynchronous = j.at("parameter_server_asynchronous").get<bool>();
  return c;
}

bool Candidate::heterogeneity_aware() const {
  return (pp > 1 && (partition == HybridConfig::Partition::proportional || !layers_per_stage.empty())) ||
         (dp > 1 && batch_split == BatchSplit::proportional);
}

std::string Candidate::key() const {
  std::string k = "tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + " dp=" + std::to_string(dp) +
                  " mbs=" + std::to_string(micro_batch_size) + " " + tandem::to_string(schedule);
  if (virtual_stages > 1) k += " v=" + std::to_string(virtual_stages);
  k += " zero=" + std::to_string(zero_stage) + (offload_optimizer ? " offload" : "") + " rc=" + tandem::to_string(recompute);
  if (sequence_parallel) k += " sp";
  k += std::string(" order=") + tandem::to_string(order) + " stages=" + partition_text(*this) +
       " batch=" + to_string(batch_split);
  if (local_sgd_steps > 1) k += " local_sgd=" + std::to_string(local_sgd_steps);
  if (local_sgd_group_size > 1) k += " blocks=" + std::to_string(local_sgd_group_size);
  if (cp > 1) k += " cp=" + std::to_string(cp);
  if (ep > 1) k += " ep=" + std::to_string(ep);
  if (parameter_servers > 0) k += " servers=" + std::to_string(parameter_servers);
  if (parameter_server_staleness > 0) k += " staleness=" + std::to_string(parameter_server_staleness);
  if (parameter_server_optimizer) k += " server_optimizer";
  if (parameter_server_asynchronous) k += " async";
  if (fp8 != Fp8Recipe::none) k += std::string(" fp8=") + tandem::to_string(fp8);
  if (!nodes.empty()) {
    k += " nodes=";
    for (std::size_t g = 0; g < nodes.size(); ++g) k += (g ? "/" : "") + std::to_string(nodes[g]);
  }
  return k;
}

}  // namespace tandem::search
