#include "cli/search_progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tandem::cli {

namespace {
// Above this much time left, an exhaustive search suggests the guided one.
constexpr double kSuggestGuidedAboveS = 600;

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 120) std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 7200) std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}
}  // namespace

std::optional<double> seconds_for(const search::SearchProgress& p, double size, int workers) {
  if (size <= 0) return 0.0;
  if (p.evaluated == 0 || p.done_size <= 0 || p.done_simulation_wall_s <= 0) return std::nullopt;
  const double seconds_per_size = p.done_simulation_wall_s / p.done_size;
  return size * seconds_per_size / std::max(1, workers);
}

SearchProgressPrinter::SearchProgressPrinter(search::Objective objective, int workers)
    : objective_(objective),
      workers_(workers),
      terminal_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      updated_(start_) {}

void SearchProgressPrinter::update(const search::SearchProgress& p) {
  last_ = p;
  in_batch_ = 0;
  updated_ = std::chrono::steady_clock::now();
  eta_s_ = seconds_for(p, p.expected_size, workers_);
  at_most_s_ = seconds_for(p, p.remaining_size, workers_);
  if (p.best != nullptr) {
    best_ = p.best->value;
    has_best_ = true;
  }
  draw();
  if (eta_s_ && p.algorithm == search::Algorithm::exhaustive) suggest_guided(*eta_s_);
}

void SearchProgressPrinter::bounding(std::size_t candidates) {
  // Large spaces take a while before the first simulation: say what happens meanwhile.
  std::fprintf(stderr, "search: bounding %zu candidates (strategies built and traced, no simulation)\n", candidates);
  std::fflush(stderr);
}

void SearchProgressPrinter::simulated_one() {
  ++in_batch_;
  if (terminal_) draw();  // plain logs get one line per batch
}

void SearchProgressPrinter::suggest_guided(double seconds_left) {
  if (suggested_ || seconds_left < kSuggestGuidedAboveS) return;
  suggested_ = true;
  if (terminal_ && drawn_) std::fprintf(stderr, "\n");
  std::fprintf(stderr,
               "search: the exhaustive search has about %s to go; `--algorithm guided` (at most "
               "`--max-evaluations` simulations, 64 by default) answers sooner\n",
               duration_text(seconds_left).c_str());
}

void SearchProgressPrinter::draw() {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  const std::int64_t done = last_.evaluated + in_batch_;
  const std::int64_t remaining = std::max<std::int64_t>(0, last_.remaining - in_batch_);
  std::string eta = "ETA after the first simulation";
  if (eta_s_) {
    const double since_update_s = std::chrono::duration<double>(now - updated_).count();
    eta = "ETA ~" + duration_text(std::max(0.0, *eta_s_ - since_update_s));
    if (at_most_s_ && *at_most_s_ > 1.5 * *eta_s_) eta += " (at most " + duration_text(*at_most_s_ - since_update_s) + ")";
  }
  char best[64] = "-";
  if (has_best_) std::snprintf(best, sizeof best, "%.4g %s", best_, search::unit_of(objective_));
  char line[320];
  const double total = static_cast<double>(done + remaining);
  const int width = 24;
  const int filled = total > 0 ? static_cast<int>(width * static_cast<double>(done) / total) : width;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  std::snprintf(line, sizeof line, "[%s] %lld simulated, %lld pruned, <=%lld to go | best %s | %s, %s", bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(last_.pruned), static_cast<long long>(remaining),
                best, duration_text(elapsed_s).c_str(), eta.c_str());
  if (terminal_) std::fprintf(stderr, "\r%s\033[K", line);
  else std::fprintf(stderr, "search: %s\n", line);
  std::fflush(stderr);
  drawn_ = true;
}

void SearchProgressPrinter::finish() {
  if (terminal_ && drawn_) std::fprintf(stderr, "\n");
}

}  // namespace tandem::cli
