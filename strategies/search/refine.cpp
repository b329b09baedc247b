// Partition refinement (search.hpp, step 3): greedy descent over explicit layer partitions, one
// layer moved between adjacent stages at a time. Moves are built and memory-checked by the
// evaluator's estimate before they join the search state, and simulated in batches formed before
// evaluation, so the answer does not depend on the number of workers either.
#include <algorithm>

#include "strategies/search/search_state.hpp"

namespace tandem::search {

namespace {

// Every knob but the partition: what a move keeps.
Candidate without_partition(Candidate c) {
  c.partition = HybridConfig::Partition::uniform;
  c.layers_per_stage.clear();
  return c;
}

class Refinement {
 public:
  Refinement(SearchState& state, Evaluator& evaluator, const SearchSettings& settings)
      : state_(state), evaluator_(evaluator), settings_(settings), first_evaluation_(state.evaluations()) {}

  void run() {
    if (settings_.refine_evaluations <= 0) return;
    for (int start : starts()) descend(start);
  }

 private:
  int budget_left() const {
    return std::max(0, settings_.refine_evaluations - (state_.evaluations() - first_evaluation_));
  }
  Ranked rank_of(int i) const { return {state_.value(i), state_.candidate(i)}; }
  Ranked rank_of_bound(int i) const { return {state_.bound(i), state_.candidate(i)}; }

  std::vector<int> layers_of(int i) const {
    const Candidate& c = state_.candidate(i);
    return c.layers_per_stage.empty() ? state_.estimate(i).layers_per_stage : c.layers_per_stage;
  }

  bool refinable(int i) const {
    const Candidate& c = state_.candidate(i);
    return state_.evaluated(i) && state_.value(i) < INFINITY && c.pp > 1 && c.virtual_stages == 1 &&
           static_cast<int>(layers_of(i).size()) == c.pp;
  }

  // The best simulated pipeline of each partition kind (uniform, speed-proportional), best
  // first: the descents start from them.
  std::vector<int> starts() const {
    int best[2] = {-1, -1};
    for (int i = 0; i < state_.size(); ++i) {
      if (!refinable(i)) continue;
      int& b = best[state_.candidate(i).partition == HybridConfig::Partition::proportional ? 1 : 0];
      if (b < 0 || rank_of(i) < rank_of(b)) b = i;
    }
    std::vector<int> out;
    for (int b : best)
      if (b >= 0) out.push_back(b);
    std::sort(out.begin(), out.end(), [&](int a, int b) { return rank_of(a) < rank_of(b); });
    return out;
  }

  // The state's index of the strategy `c` with these layers per stage: one already there (the
  // enumerated candidate whose partition came out so, or an earlier move), else a new one that
  // can be built and may fit; -1 when it cannot.
  std::vector<int> find_or_add(const std::vector<Candidate>& moves) {
    std::vector<int> out(moves.size(), -1);
    std::vector<std::size_t> unknown;
    for (std::size_t m = 0; m < moves.size(); ++m) {
      const Candidate base = without_partition(moves[m]);
      for (int i = 0; i < state_.size() && out[m] < 0; ++i)
        if (without_partition(state_.candidate(i)) == base && layers_of(i) == moves[m].layers_per_stage) out[m] = i;
      if (out[m] < 0 && !rejected_.count(moves[m])) unknown.push_back(m);
    }
    std::vector<Candidate> todo;
    for (std::size_t m : unknown) todo.push_back(moves[m]);
    const std::vector<Estimate> estimates = todo.empty() ? std::vector<Estimate>{} : evaluator_.estimate(todo);
    for (std::size_t k = 0; k < unknown.size(); ++k) {
      if (estimates[k].valid && settings_.constraints.fits(estimates[k].memory_fraction))
        out[unknown[k]] = state_.add(todo[k], estimates[k]);
      else
        rejected_.insert(todo[k]);
    }
    return out;
  }

  // Moves to the best neighbouring partition while one improves; a move whose bound cannot beat
  // the current partition is never simulated.
  void descend(int current) {
    while (budget_left() > 0) {
      const std::vector<int> layers = layers_of(current);
      std::vector<Candidate> moves;
      for (std::size_t s = 0; s + 1 < layers.size(); ++s)
        for (auto [from, to] : {std::pair{s, s + 1}, std::pair{s + 1, s}}) {
          if (layers[from] <= 1) continue;  // every stage keeps a layer
          Candidate move = without_partition(state_.candidate(current));
          move.layers_per_stage = layers;
          --move.layers_per_stage[from];
          ++move.layers_per_stage[to];
          moves.push_back(move);
        }
      std::vector<int> neighbours;
      for (int j : find_or_add(moves))
        if (j >= 0) neighbours.push_back(j);
      std::sort(neighbours.begin(), neighbours.end(), [&](int a, int b) { return rank_of_bound(a) < rank_of_bound(b); });
      std::vector<int> batch;
      for (int j : neighbours)
        if (static_cast<int>(batch.size()) < std::min(settings_.batch_size, budget_left()) && !state_.evaluated(j) &&
            state_.may_matter(j) && rank_of_bound(j) < rank_of(current))
          batch.push_back(j);
      state_.set_remaining(budget_left());
      state_.evaluate(batch);
      int next = current;
      for (int j : neighbours)
        if (state_.evaluated(j) && rank_of(j) < rank_of(next)) next = j;
      if (next == current) return;  // a local optimum of the partition
      current = next;
    }
  }

  SearchState& state_;
  Evaluator& evaluator_;
  const SearchSettings& settings_;
  const int first_evaluation_;
  std::set<Candidate> rejected_;  // moves that cannot be built or cannot fit
};

}  // namespace

void refine_partitions(SearchState& state, Evaluator& evaluator, const SearchSettings& settings) {
  Refinement(state, evaluator, settings).run();
}

}  // namespace tandem::search
