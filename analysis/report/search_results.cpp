#include "analysis/report/search_results.hpp"

#include <algorithm>

#include "analysis/json_file.hpp"
#include "common/input_error.hpp"

namespace tandem::report {

namespace {
constexpr const char* kSchema = "tandem-search/1";
}

SearchResults read_search_json(const std::string& path) {
  const JsonInput input = read_json_input(path);
  const JsonFields doc(input);
  if (doc.optional_string("schema") != kSchema) doc.fail("schema", std::string("expected \"") + kSchema + "\"");
  SearchResults s;
  s.file = path;
  s.scenario = doc.optional_string("scenario");
  s.objective = doc.optional_string("objective", "time");
  s.objective_basis = doc.optional_string("objective_basis");
  s.target_loss = doc.optional_number("target_loss");
  bool any_pareto = false;
  for (std::size_t i = 0; i < doc.array("candidates").size(); ++i) {
    const JsonFields c = doc.element("candidates", i);
    SearchCandidate candidate;
    candidate.rank = c.has("rank") ? static_cast<int>(c.whole("rank", 1, 1LL << 30)) : static_cast<int>(i) + 1;
    candidate.strategy = c.string("strategy");
    candidate.iteration_time_s = c.number("iteration_time_s");
    if (candidate.iteration_time_s < 0) c.fail("iteration_time_s", "must not be negative");
    candidate.tokens_per_s = c.optional_number("tokens_per_s");
    candidate.mfu = c.optional_number("mfu");
    candidate.peak_memory_bytes = c.optional_number("peak_memory_bytes");
    candidate.memory_capacity_bytes = c.optional_number("memory_capacity_bytes");
    candidate.fits_in_memory = c.optional_boolean("fits_in_memory");
    if (c.has("breakdown")) {
      const JsonFields b = c.object("breakdown");
      candidate.compute_s = b.optional_number("compute_s");
      candidate.exposed_comm_s = b.optional_number("exposed_comm_s");
      candidate.idle_s = b.optional_number("idle_s");
    }
    candidate.goodput = c.optional_number("goodput");
    if (candidate.goodput && !(*candidate.goodput > 0 && *candidate.goodput <= 1)) c.fail("goodput", "must be in (0, 1]");
    candidate.time_to_train_s = c.optional_number("time_to_train_s");
    if (candidate.time_to_train_s && *candidate.time_to_train_s < 0) c.fail("time_to_train_s", "must not be negative");
    if (c.has("loss_per_step")) candidate.loss_per_step = c.numbers("loss_per_step", "step", /*non_negative=*/true);
    const std::optional<bool> pareto = c.optional_boolean("pareto");
    any_pareto = any_pareto || pareto.has_value();
    candidate.pareto = pareto.value_or(false);
    s.candidates.push_back(std::move(candidate));
  }
  std::stable_sort(s.candidates.begin(), s.candidates.end(),
                   [](const SearchCandidate& a, const SearchCandidate& b) { return a.rank < b.rank; });
  if (doc.has("heterogeneity")) {
    const JsonFields h = doc.object("heterogeneity");
    HeterogeneityComparison comparison;
    comparison.gain_percent = h.number("gain_percent");
    const JsonFields aware = h.object("aware_best"), uniform = h.object("uniform_best");
    comparison.aware = aware.string("candidate");
    comparison.uniform = uniform.string("candidate");
    comparison.aware_objective = aware.optional_number("objective");
    comparison.uniform_objective = uniform.optional_number("objective");
    s.heterogeneity = comparison;
  }
  s.pareto_given = any_pareto;
  if (!any_pareto) mark_pareto_front(s.candidates);
  return s;
}

void mark_pareto_front(std::vector<SearchCandidate>& candidates) {
  auto memory = [](const SearchCandidate& c) { return c.peak_memory_bytes.value_or(0); };
  for (auto& c : candidates) {
    c.pareto = std::none_of(candidates.begin(), candidates.end(), [&](const SearchCandidate& other) {
      const bool no_worse = other.iteration_time_s <= c.iteration_time_s && memory(other) <= memory(c);
      const bool better = other.iteration_time_s < c.iteration_time_s || memory(other) < memory(c);
      return &other != &c && no_worse && better;
    });
  }
}

}  // namespace tandem::report
