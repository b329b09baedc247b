#include "strategies/search/search_state.hpp"

#include <algorithm>
#include <limits>

namespace tandem::search {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

bool Scored::feasible() const { return value < kInfinity; }

SearchState::SearchState(std::vector<Candidate> candidates, std::vector<Estimate> estimates, Evaluator& evaluator,
                         const SearchSettings& settings, const ProgressFn& progress)
    : evaluator_(evaluator), settings_(settings), progress_(progress) {
  best_of_kind_[0] = best_of_kind_[1] = kInfinity;
  for (std::size_t i = 0; i < candidates.size(); ++i) add(candidates[i], estimates[i]);
}

int SearchState::add(const Candidate& candidate, const Estimate& estimate) {
  Scored s;
  s.candidate = candidate;
  s.estimate = estimate;
  s.bound = objective_lower_bound(settings_.objective, estimate);
  s.value = kInfinity;
  items_.push_back(std::move(s));
  done_.push_back(false);
  return size() - 1;
}

double SearchState::value(int i) const { return done_[i] ? items_[i].value : kInfinity; }

void SearchState::evaluate(const std::vector<int>& indices) {
  std::vector<int> todo;
  for (int i : indices)
    if (!done_[i] && std::find(todo.begin(), todo.end(), i) == todo.end()) todo.push_back(i);
  if (todo.empty()) return;
  std::vector<Candidate> batch;
  for (int i : todo) batch.push_back(items_[i].candidate);
  const std::vector<Evaluation> results = evaluator_.evaluate(batch);
  for (std::size_t j = 0; j < todo.size(); ++j) {
    const int i = todo[j];
    Scored& s = items_[i];
    s.evaluation = results[j];
    s.value = objective_value(settings_.objective, s.evaluation, settings_.constraints);
    done_[i] = true;
    ++evaluations_;
    if (s.feasible()) {
      top_.insert({Ranked{s.value, s.candidate}, i});
      double& kind_best = best_of_kind_[s.candidate.heterogeneity_aware() ? 1 : 0];
      kind_best = std::min(kind_best, s.value);
    }
  }
  report();
}

double SearchState::threshold(int i) const {
  double kth = kInfinity;
  if (static_cast<int>(top_.size()) >= settings_.top_k) kth = std::next(top_.begin(), settings_.top_k - 1)->first.value;
  return std::max(kth, best_of_kind_[items_[i].candidate.heterogeneity_aware() ? 1 : 0]);
}

bool SearchState::may_matter(int i) const { return items_[i].bound <= threshold(i); }

int SearchState::best() const { return top_.empty() ? -1 : top_.begin()->second; }

void SearchState::report() const {
  if (!progress_) return;
  SearchProgress p;
  p.valid = size();
  p.evaluated = evaluations_;
  for (int i = 0; i < size(); ++i)
    if (!done_[i] && !may_matter(i)) ++p.pruned;
  p.remaining = remaining_;
  const int b = best();
  p.best = b >= 0 ? &items_[b] : nullptr;
  progress_(p);
}

SearchResult SearchState::result(Algorithm algorithm) const {
  SearchResult r;
  r.algorithm = algorithm;
  r.objective = settings_.objective;
  r.valid = size();
  r.evaluated = evaluations_;
  for (int i = 0; i < size(); ++i) {
    if (done_[i]) {
      r.all.push_back(items_[i]);
      if (!items_[i].feasible())
        ++r.dropped[items_[i].evaluation.ok ? "exceeds memory (simulated, with headroom)" : "simulation failed"];
    } else if (!may_matter(i)) {
      ++r.pruned_by_bound;
    }
  }
  int rank = 0;
  for (const auto& [ranked, i] : top_) {
    if (rank++ == settings_.top_k) break;
    r.ranked.push_back(items_[i]);
  }
  return r;
}

}  // namespace tandem::search
