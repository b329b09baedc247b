// What the search knows about a candidate: before simulating (Estimate: is it valid, its memory
// and lower bounds) and after (Evaluation: the simulator's prediction, condensed). Both travel
// from worker processes as JSON, so both directions are here.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem::search {

struct Estimate {
  bool valid = false;
  // A sketch (Evaluator::sketch): valid, a looser time bound, memory not known yet (0). The search
  // estimates it in full before simulating it.
  bool sketched = false;
  std::string invalid_reason;       // when !valid: why the strategy cannot be built
  Bytes peak_memory_bytes = 0;      // lower bound of the largest per-rank peak
  double memory_fraction = 0;       // lower bound of the largest per-rank peak / capacity
  Seconds iteration_time_s = 0;     // lower bound
  Joules energy_per_iteration_j = 0;  // lower bound
  double usd_per_s = 0;             // price of the devices used, per second
  // Whether the batch shares / the layers per stage came out even: a speed-proportional split
  // that came out even is the same strategy as its uniform twin (search.cpp keeps only one).
  bool even_batches = false;
  bool even_layers = false;
  // How big its simulation is (analytic_estimate.hpp: replica_ops); the progress' time to go.
  double simulation_size = 0;
  // Transformer layers each pipeline stage came out with (all its chunks together): where the
  // partition refinement starts from. Empty when the evaluator does not know.
  std::vector<int> layers_per_stage;
  // Iterations to the reliability target (target tokens / tokens per iteration); 0 without one.
  double iterations_to_train = 0;
  // Steps to the target loss of the measured convergence file (time_to_target_loss); 0 without one.
  double steps_to_target_loss = 0;
};

struct Evaluation {
  bool ok = false;
  std::string error;  // when !ok: why the simulation failed
  std::string strategy;  // the strategy's name
  Seconds iteration_time_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double mfu = 0;
  Bytes peak_memory_bytes = 0;  // the largest per-rank peak
  double memory_fraction = 0;   // the largest per-rank peak / that rank's capacity
  Joules energy_per_iteration_j = 0;
  double usd_per_s = 0;  // price of the devices used, per second
  // Where the time went on the rank with the most compute.
  Seconds compute_s = 0;
  Seconds exposed_comm_s = 0;
  Seconds idle_s = 0;
  double simulation_wall_s = 0;
  // With a reliability section (scenarios/goodput_expectation.hpp), 0 without: the share of wall
  // time that trains (Daly's expected goodput at the checkpoint interval used), the job's mean
  // time between interruptions on the devices it uses, that interval, and the expected time to
  // train the target tokens.
  double goodput = 0;
  Seconds mtbf_s = 0;
  Seconds checkpoint_interval_s = 0;
  Seconds time_to_train_s = 0;
  double episode_throughput = 1;  // share of its speed kept through transient stragglers' episodes
  // With a convergence file (time_to_target_loss), 0 without: the steps its strategy measured to
  // the target loss, times the simulated step.
  double steps_to_target_loss = 0;
  Seconds time_to_target_loss_s = 0;

  double usd_per_iteration() const { return iteration_time_s * usd_per_s; }
};

nlohmann::json to_json(const Estimate& e);
Estimate estimate_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
nlohmann::json to_json(const Evaluation& e);
Evaluation evaluation_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

}  // namespace tandem::search
