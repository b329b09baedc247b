// Guided search (search.hpp): greedy descent, simulated annealing chains, greedy polish. Every
// choice depends only on results already in, and batches are formed before they are evaluated,
// so the run is the same whatever the number of workers.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "strategies/search/search_state.hpp"

namespace tandem::search {

namespace {

// Knobs in which two candidates differ; tp, pp and dp count one each, so trading a factor
// between two of them (the device count is fixed) is a distance of 2.
int distance(const Candidate& a, const Candidate& b) {
  return (a.tp != b.tp) + (a.pp != b.pp) + (a.dp != b.dp) + (a.micro_batch_size != b.micro_batch_size) +
         (a.schedule != b.schedule || a.virtual_stages != b.virtual_stages) + (a.zero_stage != b.zero_stage) +
         (a.recompute != b.recompute) + (a.sequence_parallel != b.sequence_parallel) + (a.order != b.order) +
         (a.partition != b.partition || a.layers_per_stage != b.layers_per_stage) + (a.batch_split != b.batch_split) +
         (a.nodes != b.nodes) + (a.local_sgd_steps != b.local_sgd_steps) + (a.cp != b.cp) + (a.fp8 != b.fp8) +
         (a.parameter_servers != b.parameter_servers) + (a.parameter_server_staleness != b.parameter_server_staleness) +
         (a.parameter_server_optimizer != b.parameter_server_optimizer) +
         (a.parameter_server_asynchronous != b.parameter_server_asynchronous);
}

class Guided {
 public:
  Guided(SearchState& state, const SearchSettings& settings)
      : state_(state), settings_(settings), rng_(settings.seed) {}

  void run() {
    if (state_.size() == 0) return;
    int start = 0;
    for (int i = 1; i < state_.size(); ++i)
      if (rank_of_bound(i) < rank_of_bound(start)) start = i;
    descend(start);
    anneal();
    if (state_.best() >= 0) descend(state_.best());
  }

 private:
  Ranked rank_of(int i) const { return {state_.value(i), state_.candidate(i)}; }
  Ranked rank_of_bound(int i) const { return {state_.bound(i), state_.candidate(i)}; }
  int budget_left() const { return std::max(0, settings_.max_evaluations - state_.evaluations()); }
  // Worth simulating: not dropped when estimated in full (a sketched candidate that cannot fit is
  // never simulated, so proposing it again would loop without spending the budget), and its bound
  // could still enter the top k.
  bool open(int i) const { return !state_.dropped(i) && state_.may_matter(i); }

  const std::vector<int>& neighbours(int i) {
    auto it = neighbours_.find(i);
    if (it != neighbours_.end()) return it->second;
    std::vector<int> out;
    for (int j = 0; j < state_.size(); ++j)
      if (j != i && distance(state_.candidate(i), state_.candidate(j)) <= 2) out.push_back(j);
    std::sort(out.begin(), out.end(), [&](int a, int b) { return rank_of_bound(a) < rank_of_bound(b); });
    return neighbours_.emplace(i, std::move(out)).first->second;
  }

  void evaluate(const std::vector<int>& proposed) {
    std::vector<int> batch;  // the new ones, as many as the budget allows
    for (int i : proposed)
      if (!state_.evaluated(i) && std::find(batch.begin(), batch.end(), i) == batch.end() &&
          static_cast<int>(batch.size()) < budget_left())
        batch.push_back(i);
    state_.set_remaining(budget_left());
    state_.evaluate(batch);
  }

  // Moves to the best neighbour while one improves; neighbours whose bound cannot beat the
  // current candidate are never simulated.
  void descend(int current) {
    evaluate({current});
    while (budget_left() > 0) {
      std::vector<int> batch;
      for (int j : neighbours(current)) {
        if (static_cast<int>(batch.size()) == settings_.batch_size) break;
        if (!state_.evaluated(j) && open(j) && rank_of_bound(j) < rank_of(current)) batch.push_back(j);
      }
      if (batch.empty()) return;  // a local optimum: no neighbour left that could be better
      evaluate(batch);
      for (int j : neighbours(current))
        if (state_.evaluated(j) && rank_of(j) < rank_of(current)) current = j;
    }
  }

  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

  void anneal() {
    // One chain per batch slot, started from the best candidates found so far.
    std::vector<int> chains;
    std::vector<std::pair<Ranked, int>> found;
    for (int i = 0; i < state_.size(); ++i)
      if (state_.evaluated(i) && state_.value(i) < INFINITY) found.push_back({rank_of(i), i});
    std::sort(found.begin(), found.end());
    for (int c = 0; c < settings_.batch_size && !found.empty(); ++c) chains.push_back(found[c % found.size()].second);
    if (chains.empty()) return;
    double temperature = 0.1;  // relative worsening accepted with probability 1/e at the start
    constexpr int kMaxRounds = 10'000;  // a guard; the budget or "stuck" ends it long before
    for (int stuck = 0, round = 0; budget_left() > 0 && stuck < 4 && round < kMaxRounds; temperature *= 0.8, ++round) {
      std::vector<int> proposals;
      bool fresh = false;
      for (int current : chains) {
        std::vector<int> unexplored, known;
        for (int j : neighbours(current)) {
          if (!open(j)) continue;
          (state_.evaluated(j) ? known : unexplored).push_back(j);
        }
        const std::vector<int>& pool = unexplored.empty() ? known : unexplored;
        if (pool.empty()) {
          proposals.push_back(current);
          continue;
        }
        proposals.push_back(pool[rng_() % pool.size()]);
        fresh = fresh || !unexplored.empty();
      }
      stuck = fresh ? 0 : stuck + 1;
      evaluate(proposals);
      for (std::size_t c = 0; c < chains.size(); ++c) {
        const int p = proposals[c], current = chains[c];
        if (!state_.evaluated(p)) continue;  // cut by the budget
        const double worsening = (state_.value(p) - state_.value(current)) / state_.value(current);
        if (rank_of(p) < rank_of(current) || (std::isfinite(worsening) && uniform01() < std::exp(-worsening / temperature)))
          chains[c] = p;
      }
    }
  }

  SearchState& state_;
  const SearchSettings& settings_;
  std::mt19937_64 rng_;
  std::map<int, std::vector<int>> neighbours_;
};

}  // namespace

void run_guided(SearchState& state, const SearchSettings& settings) { Guided(state, settings).run(); }

}  // namespace tandem::search
