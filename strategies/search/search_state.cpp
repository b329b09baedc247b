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
  dropped_reason_.emplace_back();
  return size() - 1;
}

double SearchState::value(int i) const { return done_[i] ? items_[i].value : kInfinity; }

void SearchState::refine(const std::vector<int>& indices) {
  std::vector<int> todo;
  std::vector<Candidate> candidates;
  for (int i : indices)
    if (items_[i].estimate.sketched && !dropped(i) && std::find(todo.begin(), todo.end(), i) == todo.end()) {
      todo.push_back(i);
      candidates.push_back(items_[i].candidate);
    }
  if (todo.empty()) return;
  const std::vector<Estimate> estimates = evaluator_.estimate(candidates);
  for (std::size_t j = 0; j < todo.size(); ++j) {
    Scored& s = items_[todo[j]];
    const Estimate& e = estimates[j];
    if (!e.valid) {
      dropped_reason_[todo[j]] = e.invalid_reason;
    } else if (!settings_.constraints.fits(e.memory_fraction)) {
      dropped_reason_[todo[j]] = "exceeds memory (analytic lower bound, with headroom)";
    } else {
      // The sketch's bound is the looser one; the full estimate keeps the better of both.
      const double sketch_bound = s.bound;
      s.estimate = e;
      s.bound = std::max(sketch_bound, objective_lower_bound(settings_.objective, e));
    }
  }
}

void SearchState::evaluate(const std::vector<int>& indices) {
  refine(indices);
  std::vector<int> todo;
  for (int i : indices)
    if (!done_[i] && !dropped(i) && (!items_[i].estimate.sketched) && std::find(todo.begin(), todo.end(), i) == todo.end())
      todo.push_back(i);
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
  p.algorithm = algorithm_;
  p.valid = size();
  p.evaluated = evaluations_;
  std::int64_t open = 0;
  double open_size = 0;
  for (int i = 0; i < size(); ++i) {
    if (dropped(i)) {
      --p.valid;
    } else if (done_[i]) {
      p.done_size += items_[i].estimate.simulation_size;
      p.done_simulation_wall_s += items_[i].evaluation.simulation_wall_s;
    }
    else if (!may_matter(i)) ++p.pruned;
    else ++open, open_size += items_[i].estimate.simulation_size;
  }
  p.remaining = remaining_;
  // The simulations to go are at most `remaining_` of the open candidates: their mean size each.
  p.remaining_size = open == 0 ? 0 : open_size * std::min(1.0, static_cast<double>(remaining_) / static_cast<double>(open));
  p.expected_size = expected_size(p.remaining_size);
  const int b = best();
  p.best = b >= 0 ? &items_[b] : nullptr;
  progress_(p);
}

double SearchState::expected_size(double remaining_size) const {
  std::vector<double> ratios;
  for (int i = 0; i < size(); ++i)
    if (done_[i] && items_[i].feasible() && items_[i].bound > 0) ratios.push_back(items_[i].value / items_[i].bound);
  if (ratios.empty()) return remaining_size;  // nothing to predict from yet
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<long>(ratios.size() / 2), ratios.end());
  const double ratio = ratios[ratios.size() / 2];
  // Predicted values: simulated ones as they are, open ones from their bound.
  std::vector<double> all;
  double kind_best[2] = {kInfinity, kInfinity};
  for (int i = 0; i < size(); ++i) {
    if (dropped(i)) continue;
    const bool open = !done_[i] && may_matter(i);
    if (!open && !(done_[i] && items_[i].feasible())) continue;
    const double v = open ? items_[i].bound * ratio : items_[i].value;
    all.push_back(v);
    double& best = kind_best[items_[i].candidate.heterogeneity_aware() ? 1 : 0];
    best = std::min(best, v);
  }
  double kth = kInfinity;
  if (static_cast<int>(all.size()) >= settings_.top_k) {
    std::nth_element(all.begin(), all.begin() + (settings_.top_k - 1), all.end());
    kth = all[settings_.top_k - 1];
  }
  double expected = 0;
  for (int i = 0; i < size(); ++i)
    if (!dropped(i) && !done_[i] && may_matter(i) &&
        items_[i].bound <= std::max(kth, kind_best[items_[i].candidate.heterogeneity_aware() ? 1 : 0]))
      expected += items_[i].estimate.simulation_size;
  return std::min(expected, remaining_size);
}

SearchResult SearchState::result(Algorithm algorithm) const {
  SearchResult r;
  r.algorithm = algorithm;
  r.objective = settings_.objective;
  r.valid = size();
  r.evaluated = evaluations_;
  for (int i = 0; i < size(); ++i) {
    if (dropped(i)) {
      ++r.dropped[dropped_reason_[i]];
      --r.valid;
    } else if (done_[i]) {
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
