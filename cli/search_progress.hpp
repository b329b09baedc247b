// The progress display of `tandem search` on stderr: a bar redrawn in place when stderr is a
// terminal, one plain line per batch otherwise (logs, CI). Candidates simulated / ruled out /
// at most remaining, the best so far and an estimate of the time left.
//
// The time left weighs each simulation to go by its size (search.hpp, SearchProgress): candidates
// of one space differ in cost by orders of magnitude (a pipeline of 64 micro-batches against one
// of 8), and the cheapest-bound ones run first, so an average over the first simulations would
// mislead. It counts the simulations the search expects to run (most open candidates end up
// ruled out by their bound), and says the most it could take too. Until a simulation has
// finished there is no rate to go by, and the line says so.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "strategies/search/search.hpp"

namespace tandem::cli {

// Seconds to simulate `size` at the rate the finished simulations showed (seconds of simulation
// per unit of size), shared by `workers`; empty without a rate yet.
std::optional<double> seconds_for(const search::SearchProgress& progress, double size, int workers);

class SearchProgressPrinter {
 public:
  SearchProgressPrinter(search::Objective objective, int workers);
  void bounding(std::size_t candidates);                 // before the bounds are computed
  void update(const search::SearchProgress& progress);  // after each batch
  void simulated_one();                                  // as each simulation finishes
  void finish();

 private:
  void draw();
  void suggest_guided(double seconds_left);

  search::Objective objective_;
  int workers_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point updated_;  // when `last_` came
  search::SearchProgress last_;
  std::optional<double> eta_s_, at_most_s_;         // at `updated_`: expected, at most
  double best_ = 0;
  bool has_best_ = false;
  std::int64_t in_batch_ = 0;  // simulations finished since the last update
  bool drawn_ = false;
  bool suggested_ = false;
};

}  // namespace tandem::cli
