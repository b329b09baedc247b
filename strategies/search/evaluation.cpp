#include "strategies/search/evaluation.hpp"

namespace tandem::search {

nlohmann::json to_json(const Estimate& e) {
  return {{"valid", e.valid},
          {"sketched", e.sketched},
          {"invalid_reason", e.invalid_reason},
          {"peak_memory_bytes", e.peak_memory_bytes},
          {"memory_fraction", e.memory_fraction},
          {"iteration_time_s", e.iteration_time_s},
          {"energy_per_iteration_j", e.energy_per_iteration_j},
          {"usd_per_s", e.usd_per_s},
          {"simulation_size", e.simulation_size},
          {"even_batches", e.even_batches},
          {"even_layers", e.even_layers},
          {"layers_per_stage", e.layers_per_stage},
          {"iterations_to_train", e.iterations_to_train},
          {"steps_to_target_loss", e.steps_to_target_loss}};
}

Estimate estimate_from_json(const nlohmann::json& j) {
  Estimate e;
  e.valid = j.at("valid").get<bool>();
  e.sketched = j.at("sketched").get<bool>();
  e.invalid_reason = j.at("invalid_reason").get<std::string>();
  e.peak_memory_bytes = j.at("peak_memory_bytes").get<double>();
  e.memory_fraction = j.at("memory_fraction").get<double>();
  e.iteration_time_s = j.at("iteration_time_s").get<double>();
  e.energy_per_iteration_j = j.at("energy_per_iteration_j").get<double>();
  e.usd_per_s = j.at("usd_per_s").get<double>();
  e.simulation_size = j.at("simulation_size").get<double>();
  e.even_batches = j.at("even_batches").get<bool>();
  e.even_layers = j.at("even_layers").get<bool>();
  e.layers_per_stage = j.at("layers_per_stage").get<std::vector<int>>();
  e.iterations_to_train = j.at("iterations_to_train").get<double>();
  e.steps_to_target_loss = j.at("steps_to_target_loss").get<double>();
  return e;
}

nlohmann::json to_json(const Evaluation& e) {
  return {{"ok", e.ok},
          {"error", e.error},
          {"strategy", e.strategy},
          {"iteration_time_s", e.iteration_time_s},
          {"tokens_per_s", e.tokens_per_s},
          {"samples_per_s", e.samples_per_s},
          {"mfu", e.mfu},
          {"peak_memory_bytes", e.peak_memory_bytes},
          {"memory_fraction", e.memory_fraction},
          {"energy_per_iteration_j", e.energy_per_iteration_j},
          {"usd_per_s", e.usd_per_s},
          {"compute_s", e.compute_s},
          {"exposed_comm_s", e.exposed_comm_s},
          {"idle_s", e.idle_s},
          {"simulation_wall_s", e.simulation_wall_s},
          {"goodput", e.goodput},
          {"mtbf_s", e.mtbf_s},
          {"checkpoint_interval_s", e.checkpoint_interval_s},
          {"time_to_train_s", e.time_to_train_s},
          {"episode_throughput", e.episode_throughput},
          {"steps_to_target_loss", e.steps_to_target_loss},
          {"time_to_target_loss_s", e.time_to_target_loss_s}};
}

Evaluation evaluation_from_json(const nlohmann::json& j) {
  Evaluation e;
  e.ok = j.at("ok").get<bool>();
  e.error = j.at("error").get<std::string>();
  e.strategy = j.at("strategy").get<std::string>();
  e.iteration_time_s = j.at("iteration_time_s").get<double>();
  e.tokens_per_s = j.at("tokens_per_s").get<double>();
  e.samples_per_s = j.at("samples_per_s").get<double>();
  e.mfu = j.at("mfu").get<double>();
  e.peak_memory_bytes = j.at("peak_memory_bytes").get<double>();
  e.memory_fraction = j.at("memory_fraction").get<double>();
  e.energy_per_iteration_j = j.at("energy_per_iteration_j").get<double>();
  e.usd_per_s = j.at("usd_per_s").get<double>();
  e.compute_s = j.at("compute_s").get<double>();
  e.exposed_comm_s = j.at("exposed_comm_s").get<double>();
  e.idle_s = j.at("idle_s").get<double>();
  e.simulation_wall_s = j.at("simulation_wall_s").get<double>();
  e.goodput = j.at("goodput").get<double>();
  e.mtbf_s = j.at("mtbf_s").get<double>();
  e.checkpoint_interval_s = j.at("checkpoint_interval_s").get<double>();
  e.time_to_train_s = j.at("time_to_train_s").get<double>();
  e.episode_throughput = j.at("episode_throughput").get<double>();
  e.steps_to_target_loss = j.at("steps_to_target_loss").get<double>();
  e.time_to_target_loss_s = j.at("time_to_target_loss_s").get<double>();
  return e;
}

}  // namespace tandem::search
