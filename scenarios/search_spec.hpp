// A search scenario: an ordinary scenario (its strategy is the baseline the search starts from)
// plus a `search:` section that pins, lists or bounds the knobs to explore and says what to
// optimise:
//
//   search:
//     tensor_model_parallel_size: [1, 2, 4, 8]   # a list of values
//     pipeline_model_parallel_size: {max: 8}     # bounds on the defaults (min and/or max)
//     zero_stage: 1                              # a pin
//     nodes: {h100: [0, 2, 4], a100: {max: 4}}  # nodes used of each node group: a plan may
//                                                # leave nodes idle (groups left out: 0, powers
//                                                # of two, all); `nodes: any` for every group.
//                                                # Default: all nodes, except with the cost
//                                                # objective, where any selection may win.
//     micro_batch_size, data_parallel_size, devices (ranks used), pipeline_schedule,
//     virtual_pipeline_model_parallel_size, recompute_granularity, sequence_parallel,
//     rank_order, pipeline_partition, batch_split  # likewise
//     local_sgd_steps: [1, 4, 16]                # local SGD periods (plans with ZeRO 0 only)
//     local_sgd_group_size: [1, 8]               # hierarchical local SGD blocks (plans with a period)
//     context_parallel_size: [1, 2, 4]           # sequence split (hybrid, rope models); default 1
//     expert_model_parallel_size: [1, 2, 4, 8]   # experts split over replicas (MoE models); default 1
//     parameter_servers: [0, 8]                  # server ranks taken from the devices (data
//                                                # parallelism alone, ZeRO 0); default 0
//     parameter_server_staleness: [0, 1]         # their update staleness (plans with servers)
//     parameter_server_optimizer: [false, true]  # the servers step the optimizer (synchronous plans)
//     parameter_server_asynchronous: [false, true]  # asynchronous servers (plans with servers, staleness 0)
//     offload_optimizer: [false, true]           # ZeRO-Offload (plans with ZeRO >= 1 or one replica, on clusters
//                                                # describing their nodes' host); default false
//     fp8: [none, hybrid]                        # FP8 GEMMs (training.fp8); devices without FP8
//                                                # tensor cores drop it; default: the scenario's
//     pipeline_partition: [uniform, proportional, refined]
//                                                # refined: also explicit layer counts per stage,
//                                                # one layer moved at a time (search.hpp, step 3)
//     refine_evaluations: 16                     # refined: its simulations at most
//     objective: time | cost | energy | time_to_train | time_to_target_loss
//                                                # default time; time_to_train needs the
//                                                # scenario's `reliability:` section (target_tokens);
//                                                # time_to_target_loss needs `convergence`:
//     convergence: ../validation/convergence/gpt-tiny-gpl3.json   # measured loss per strategy
//                                                # (scenarios/convergence_table.hpp; relative to
//                                                # this file); plans whose strategy it did not
//                                                # measure are ruled out, saying so
//     target_loss: 3.6                           # default: the file's
//     top_k: 10
//     memory_headroom: 0.1                       # keep 10% of every device's memory free
//     algorithm: auto | exhaustive | guided
//     exhaustive_limit: 200                      # auto: exhaustive up to this many candidates
//     max_evaluations: 64                        # guided: simulations at most (auto: 1.5x)
//     seed: 1
//
// Knobs left out get the defaults of search_space.hpp. Every error names file, line and field.
#pragma once

#include <optional>
#include <string>

#include "scenarios/convergence_table.hpp"
#include "scenarios/reliability_spec.hpp"
#include "scenarios/scenario.hpp"
#include "strategies/search/search.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem {

struct SearchScenario {
  Scenario base;
  search::SearchSpace space;  // completed: every knob has its values
  search::SearchSettings settings;
  // The scenario's `reliability:` section, when it has one: what the time_to_train objective
  // weighs each plan's failures, checkpoints and restarts with.
  std::optional<ReliabilitySpec> reliability;
  // The `convergence` file the time_to_target_loss objective weighs each plan's steps by.
  std::optional<ConvergenceTable> convergence;
};

// Whether every device the space may use has a price (the cost objective needs one).
bool all_priced(const SearchScenario& spec);

// `objective`, when given, replaces the file's (the command line's --objective): the defaults
// that depend on it (node selections for cost) follow it.
SearchScenario load_search_scenario(const std::string& name_or_path,
                                    std::optional<search::Objective> objective = std::nullopt);

}  // namespace tandem
