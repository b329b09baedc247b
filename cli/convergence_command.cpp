#include "cli/convergence_command.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <numeric>

#include "cli/option_ranges.hpp"
#include "cli/run_command.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "scenarios/convergence_table.hpp"
#include "scenarios/scenario.hpp"

namespace tandem::cli {

namespace {

constexpr limits::CountRange kSteps{5, 100000};  // the target needs 5 steps averaged

struct Variant {
  std::string name;
  std::string fields;  // as the convergence file writes them
};

// The default variants of a data-parallel scenario: what changes the maths of a step.
std::vector<Variant> default_variants(const Scenario& scenario) {
  if (scenario.strategy_type != "data_parallel")
    throw InputError("command line", 0, "--variant",
                     "default variants are built for data-parallel scenarios; name them (--variant NAME=FIELDS)");
  return {{"synchronous", ""},
          {"int8", "gradient_compression: int8"},
          {"onebit", "gradient_compression: onebit"},
          {"local_sgd_4", "local_sgd_steps: 4"},
          {"ps_stale_0", "parameter_servers: 1"},
          {"ps_stale_1", "parameter_servers: 1, parameter_server_staleness: 1"},
          {"ps_async", "parameter_servers: 1, parameter_server_asynchronous: true"}};
}

std::vector<Variant> parse_variants(const std::vector<std::string>& texts) {
  std::vector<Variant> out;
  for (const std::string& text : texts) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("command line", 0, "--variant", "'" + text + "': expected NAME=FIELDS (FIELDS may be empty)");
    out.push_back({text.substr(0, eq), text.substr(eq + 1)});
    for (std::size_t i = 0; i + 1 < out.size(); ++i)
      if (out[i].name == out.back().name)
        throw InputError("command line", 0, "--variant", "'" + out.back().name + "' is named twice");
  }
  return out;
}

// The scenario with a variant's fields applied, and its strategy built (a combination the
// strategies refuse is refused at --variant, naming the variant).
Scenario variant_scenario(const Scenario& base, const Variant& v) {
  Scenario s = base;
  try {
    apply_convergence_fields(v.fields, "--variant " + v.name, s.parallel);
    make_strategy(s);
  } catch (const InputError& e) {
    throw InputError("command line", 0, "--variant", v.name + ": " + (e.field().empty() ? "" : e.field() + ": ") + e.message());
  } catch (const std::exception& e) {
    throw InputError("command line", 0, "--variant", v.name + ": " + e.what());
  }
  return s;
}

// The strategy fields the file records: the data-parallel size, then the variant's own.
std::string recorded_fields(const Scenario& s, const Variant& v) {
  return "data_parallel_size: " + std::to_string(s.parallel.data_parallel_size) + (v.fields.empty() ? "" : ", " + v.fields);
}

}  // namespace

CLI::App* add_convergence_command(CLI::App& app, ConvergenceOptions& o) {
  CLI::App* cmd = app.add_subcommand("convergence", "loss per step of each strategy variant, trained for real on a text");
  cmd->add_option("scenario", o.scenario, "a small scenario the cpu backend runs (file or bundled name)")->required();
  cmd->add_option("--corpus", o.corpus_path, "the text to train on (bytes as tokens); default: the GPL-3 licence");
  cmd->add_option("--steps", o.steps, "training steps per variant")->check(in_range(kSteps));
  cmd->add_option("--target-loss", o.target_loss, "the loss the file's steps are counted to");
  cmd->add_option("--variant", o.variants, "NAME=FIELDS, e.g. int8=gradient_compression: int8 (repeatable)");
  cmd->add_option("--json", o.json_path, "write the convergence file to FILE ('-' for stdout)");
  return cmd;
}

int run_convergence(const ConvergenceOptions& o) {
  // 1. Inputs, all checked before anything trains.
  OutputSet::check_writable(o.json_path, "--json");
  const Scenario base = load_scenario(o.scenario);
  if (!is_this_machine(base.cluster))
    base.fail("cluster", "convergence trains on the cpu backend: one node of cpu devices (this machine's cores, as "
                         "'localhost' or a calibrated cluster), not '" + base.cluster.name + "'");
  if (o.target_loss && !(*o.target_loss > 0 && *o.target_loss < 1e6))
    throw InputError("command line", 0, "--target-loss", "must be in (0, 1e6)");
  // Named variants must all build; a default one the cluster cannot hold (a server needs a device
  // of its own) is left out, saying so.
  std::vector<Variant> variants;
  std::vector<Scenario> scenarios;
  std::vector<std::string> left_out;
  for (const Variant& v : o.variants.empty() ? default_variants(base) : parse_variants(o.variants)) {
    try {
      scenarios.push_back(variant_scenario(base, v));
      variants.push_back(v);
    } catch (const InputError& e) {
      if (!o.variants.empty()) throw;
      left_out.push_back(v.name + " (" + e.message() + ")");
    }
  }
  if (variants.empty()) throw InputError("command line", 0, "--variant", "no variant builds on this scenario");
  const auto data = corpus_source(o.corpus_path, base);

  // 2. Each variant trains for real, the same data and seed.
  const bool quiet = o.json_path == "-";
  std::vector<std::vector<double>> losses;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto strategy = make_strategy(scenarios[i]);
    exec::cpu::RunOptions options;
    exec::cpu::configure_for_model(options, *make_model(scenarios[i].model), scenarios[i].training.seq_length);
    options.data = data;
    options.iterations = o.steps;
    if (!quiet) std::cerr << "training " << variants[i].name << " (" << strategy->name() << ", " << o.steps << " steps)\n";
    const exec::cpu::RunResult run = exec::cpu::run_cpu(*strategy, options);
    std::vector<double> curve;
    for (const exec::cpu::IterationStats& s : run.iterations) curve.push_back(s.loss);
    losses.push_back(std::move(curve));
  }

  // 3. The target: given, or what the synchronous variant reaches over its last 5 steps.
  std::size_t reference = 0;
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (convergence_key(scenarios[i].parallel) == ConvergenceKey{}) reference = i;
  const std::vector<double>& ref = losses[reference];
  const double target = o.target_loss ? *o.target_loss : std::accumulate(ref.end() - 5, ref.end(), 0.0) / 5;

  // 4. The file, as a search's `convergence:` reads it, and a table.
  const TrainingConfig& t = base.training;
  char model[256];
  std::snprintf(model, sizeof model, "%s, global batch %lld, micro-batch %lld, seq %lld, %s, lr %g", base.model.name().c_str(),
                static_cast<long long>(t.global_batch_size), static_cast<long long>(t.micro_batch_size),
                static_cast<long long>(t.seq_length), to_string(t.precision), static_cast<double>(t.lr));
  nlohmann::json j{{"corpus", o.corpus_path}, {"model", model}, {"target_loss", target},
                   {"target_from", o.target_loss ? "--target-loss" : variants[reference].name + "'s last 5 steps"}};
  j["variants"] = nlohmann::json::array();
  if (!left_out.empty()) j["left_out"] = left_out;
  std::string table;
  char line[200];
  std::snprintf(line, sizeof line, "%-14s %10s %12s\n", "variant", ("loss@" + std::to_string(o.steps)).c_str(), "steps->target");
  table += line;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::optional<int> reach = steps_to_loss(losses[i], target);
    j["variants"].push_back({{"name", variants[i].name}, {"strategy", recorded_fields(scenarios[i], variants[i])},
                             {"losses", losses[i]}, {"steps_to_target", reach ? *reach : -1}});
    std::snprintf(line, sizeof line, "%-14s %10.4f %12s\n", variants[i].name.c_str(), losses[i].back(),
                  reach ? std::to_string(*reach).c_str() : "not reached");
    table += line;
  }
  OutputSet outputs;
  if (!o.json_path.empty() && o.json_path != "-") outputs.stage(o.json_path, j.dump(2) + "\n");
  outputs.commit();
  if (quiet) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "scenario    " << base.name << " (" << model << ") on " << o.corpus_path << "\n"
            << "target      loss " << target << " (" << j["target_from"].get<std::string>() << ")\n"
            << table;
  for (const std::string& why : left_out) std::cout << "left out    " << why << "\n";
  if (!o.json_path.empty()) std::cout << "wrote       " << o.json_path << " (a search's `convergence:` file)\n";
  return 0;
}

}  // namespace tandem::cli
