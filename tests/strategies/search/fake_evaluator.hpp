// An analytic stand-in for the simulator, so that search algorithms are tested in-process and
// fast: each candidate's "iteration time" is a fixed function of its knobs with local optima
// (a rugged landscape), its lower bound a fraction of it, and its memory a function of the
// knobs too. It counts what it was asked.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "strategies/search/search.hpp"

namespace tandem::search::test {

class FakeEvaluator final : public Evaluator {
 public:
  // bound_fraction: lower bound = value x fraction (0: no useful bound).
  explicit FakeEvaluator(double bound_fraction = 0.6) : bound_fraction_(bound_fraction) {}

  static double time_of(const Candidate& c) {
    // A smooth bowl around tp=2, pp=2, mbs=2, plus knob penalties and a deterministic ripple
    // (from a hash of the key) that makes local optima.
    const double bowl = 1.0 + 0.3 * std::abs(std::log2(c.tp) - 1) + 0.25 * std::abs(std::log2(c.pp) - 1) +
                        0.2 * std::abs(std::log2(static_cast<double>(c.micro_batch_size)) - 1);
    const double knobs = 0.07 * c.zero_stage + (c.recompute == Recompute::full ? 0.15 : 0) +
                         (c.recompute == Recompute::selective ? 0.04 : 0) + (c.heterogeneity_aware() ? -0.05 : 0);
    std::uint64_t h = 1469598103934665603ull;
    for (char ch : c.key()) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    const double ripple = 0.12 * static_cast<double>(h % 1000) / 1000.0;
    return bowl + knobs + ripple;
  }
  static double memory_fraction_of(const Candidate& c) {
    const double recompute = c.recompute == Recompute::full ? 0.4 : c.recompute == Recompute::selective ? 0.7 : 1.0;
    return (0.35 + 0.5 * static_cast<double>(c.micro_batch_size) * recompute / c.pp) / (c.zero_stage > 0 ? 1.3 : 1.0) /
           std::sqrt(static_cast<double>(c.tp));
  }

  std::vector<Estimate> estimate(const std::vector<Candidate>& candidates) override {
    std::vector<Estimate> out;
    for (const Candidate& c : candidates) {
      Estimate e;
      e.valid = true;
      e.iteration_time_s = time_of(c) * bound_fraction_;
      e.energy_per_iteration_j = 100 * e.iteration_time_s;
      e.memory_fraction = memory_fraction_of(c) * 0.9;  // a lower bound of the "simulated" one
      e.usd_per_s = c.world_size();
      e.simulation_size = 1;  // every simulation the same size: sizes count candidates
      out.push_back(e);
    }
    return out;
  }

  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out;
    for (const Candidate& c : candidates) {
      ++simulations;
      if (!simulated.insert(c).second) ++repeated;
      Evaluation e;
      e.ok = true;
      e.iteration_time_s = time_of(c);
      e.energy_per_iteration_j = 100 * e.iteration_time_s * (1 + 0.1 * c.zero_stage);
      e.memory_fraction = memory_fraction_of(c);
      e.peak_memory_bytes = e.memory_fraction * 80e9;
      e.usd_per_s = c.world_size();
      out.push_back(e);
    }
    return out;
  }

  int simulations = 0;
  int repeated = 0;
  std::set<Candidate> simulated;

 private:
  double bound_fraction_;
};

}  // namespace tandem::search::test
