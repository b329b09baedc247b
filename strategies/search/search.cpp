#include "strategies/search/search.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

#include "strategies/search/search_state.hpp"

namespace tandem::search {

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return "auto";
    case Algorithm::exhaustive: return "exhaustive";
    case Algorithm::guided: return "guided";
  }
  return "?";
}

Algorithm parse_algorithm(const std::string& text) {
  if (text == "auto") return Algorithm::automatic;
  if (text == "exhaustive") return Algorithm::exhaustive;
  if (text == "guided") return Algorithm::guided;
  throw std::invalid_argument("unknown search algorithm '" + text + "' (expected auto, exhaustive or guided)");
}

double SearchResult::coverage() const {
  return valid == 0 ? 1.0 : static_cast<double>(evaluated + pruned_by_bound) / static_cast<double>(valid);
}

const Scored* best_of_kind(const SearchResult& result, bool heterogeneity_aware) {
  const Scored* best = nullptr;
  for (const Scored& s : result.all)
    if (s.feasible() && s.candidate.heterogeneity_aware() == heterogeneity_aware &&
        (best == nullptr || Ranked{s.value, s.candidate} < Ranked{best->value, best->candidate}))
      best = &s;
  return best;
}

bool run_exhaustive(SearchState& state, const SearchSettings& settings, int max_simulations) {
  const auto budget_left = [&] {
    return max_simulations < 0 ? settings.batch_size : max_simulations - state.evaluations();
  };
  // Lowest bound first: good candidates early make the threshold bite sooner.
  std::vector<int> order(state.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return Ranked{state.bound(a), state.candidate(a)} < Ranked{state.bound(b), state.candidate(b)};
  });
  std::size_t next = 0;
  auto open = [&](int i) { return !state.dropped(i) && (!settings.prune || state.may_matter(i)); };
  while (next < order.size() && budget_left() > 0) {
    std::vector<int> batch;
    const int batch_size = std::min(settings.batch_size, budget_left());
    while (next < order.size() && static_cast<int>(batch.size()) < batch_size) {
      // The next candidates in line, estimated in full if they were only sketched: some drop out.
      std::vector<int> chunk;
      for (; next < order.size() && chunk.size() + batch.size() < static_cast<std::size_t>(batch_size); ++next)
        if (open(order[next])) chunk.push_back(order[next]);
      state.refine(chunk);
      for (int i : chunk)
        if (open(i)) batch.push_back(i);
    }
    std::int64_t remaining = 0;
    for (std::size_t j = next; j < order.size(); ++j) remaining += open(order[j]) ? 1 : 0;
    remaining += static_cast<std::int64_t>(batch.size());
    // Capped (the automatic search): no more than the budget follows, or the guided half after it.
    if (max_simulations >= 0)
      remaining = std::min<std::int64_t>(remaining, max_simulations + settings.max_evaluations / 2 - state.evaluations());
    state.set_remaining(remaining);
    state.evaluate(batch);
  }
  for (; next < order.size(); ++next)
    if (open(order[next])) return false;
  return true;
}

SearchResult run_search(const Enumeration& space, Evaluator& evaluator, const SearchSettings& settings,
                        const ProgressFn& progress) {
  if (settings.top_k < 1) throw std::invalid_argument("top_k must be at least 1");
  if (settings.batch_size < 1) throw std::invalid_argument("batch_size must be at least 1");
  // 1. Estimate everything; keep what can be built and may fit.
  const bool sketch = static_cast<int>(space.candidates.size()) > settings.estimate_limit;
  const std::vector<Estimate> estimates =
      sketch ? evaluator.sketch(space.candidates) : evaluator.estimate(space.candidates);
  std::map<std::string, std::int64_t> dropped = space.dropped;
  std::vector<Candidate> valid;
  std::vector<Estimate> valid_estimates;
  std::set<Candidate> buildable;
  for (std::size_t i = 0; i < estimates.size(); ++i)
    if (estimates[i].valid) buildable.insert(space.candidates[i]);
  for (std::size_t i = 0; i < estimates.size(); ++i) {
    Candidate twin = space.candidates[i];
    if (estimates[i].even_layers) twin.partition = HybridConfig::Partition::uniform;
    if (estimates[i].even_batches) twin.batch_split = BatchSplit::even;
    if (estimates[i].valid && twin != space.candidates[i] && buildable.count(twin)) {
      ++dropped["same strategy as its uniform twin (splits came out even)"];
    } else if (!estimates[i].valid) {
      ++dropped[estimates[i].invalid_reason];
    } else if (!settings.constraints.fits(estimates[i].memory_fraction)) {
      ++dropped["exceeds memory (analytic lower bound, with headroom)"];
    } else {
      valid.push_back(space.candidates[i]);
      valid_estimates.push_back(estimates[i]);
    }
  }
  // 2. Search.
  SearchState state(std::move(valid), std::move(valid_estimates), evaluator, settings, progress);
  Algorithm algorithm = settings.algorithm;
  if (algorithm == Algorithm::automatic && state.size() <= settings.exhaustive_limit) algorithm = Algorithm::exhaustive;
  state.set_algorithm(algorithm);
  if (algorithm == Algorithm::exhaustive) {
    run_exhaustive(state, settings);
  } else if (algorithm == Algorithm::guided) {
    run_guided(state, settings);
  } else {
    // A large space: branch and bound first, on the guided search's budget. When the bounds are
    // tight it closes the space within it, and the answer is exact (a 175B plan over 1,024 mixed
    // GPUs: 55 simulations, 149 s, where the guided search took 64 and 213 s for the same
    // winner); when not, the guided search goes on from what was simulated, with half the budget
    // again (at most 1.5 x max_evaluations in all).
    algorithm = run_exhaustive(state, settings, settings.max_evaluations) ? Algorithm::exhaustive : Algorithm::guided;
    state.set_algorithm(algorithm);
    if (algorithm == Algorithm::guided) {
      SearchSettings more = settings;
      more.max_evaluations = state.evaluations() + settings.max_evaluations / 2;
      run_guided(state, more);
    }
  }
  refine_partitions(state, evaluator, settings);
  SearchResult result = state.result(algorithm);
  result.combinations = space.combinations;
  for (const auto& [reason, count] : dropped) result.dropped[reason] += count;
  return result;
}

}  // namespace tandem::search
