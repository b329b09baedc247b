// The progress display of `tandem search` on stderr: a bar redrawn in place when stderr is a
// terminal, one plain line per batch otherwise (logs, CI). Candidates simulated / ruled out /
// at most remaining, the best so far and an estimate of the time left.
#pragma once

#include <chrono>
#include <string>

#include "strategies/search/search.hpp"

namespace tandem::cli {

class SearchProgressPrinter {
 public:
  explicit SearchProgressPrinter(search::Objective objective);
  void update(const search::SearchProgress& progress);  // after each batch
  void simulated_one();                                  // as each simulation finishes
  void finish();

 private:
  void draw();

  search::Objective objective_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  search::SearchProgress last_;
  double best_ = 0;
  bool has_best_ = false;
  std::int64_t in_batch_ = 0;  // simulations finished since the last update
  bool drawn_ = false;
};

}  // namespace tandem::cli
