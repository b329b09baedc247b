#include "cli/search_progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace tandem::cli {

SearchProgressPrinter::SearchProgressPrinter(search::Objective objective)
    : objective_(objective), terminal_(::isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

void SearchProgressPrinter::update(const search::SearchProgress& p) {
  last_ = p;
  in_batch_ = 0;
  if (p.best != nullptr) {
    best_ = p.best->value;
    has_best_ = true;
  }
  draw();
}

void SearchProgressPrinter::simulated_one() {
  ++in_batch_;
  if (terminal_) draw();  // plain logs get one line per batch
}

void SearchProgressPrinter::draw() {
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::int64_t done = last_.evaluated + in_batch_;
  const std::int64_t remaining = std::max<std::int64_t>(0, last_.remaining - in_batch_);
  const double eta_s = done > 0 ? elapsed_s / static_cast<double>(done) * static_cast<double>(remaining) : 0;
  char best[64] = "-";
  if (has_best_) std::snprintf(best, sizeof best, "%.4g %s", best_, search::unit_of(objective_));
  char line[256];
  const double total = static_cast<double>(done + remaining);
  const int width = 24;
  const int filled = total > 0 ? static_cast<int>(width * static_cast<double>(done) / total) : width;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  std::snprintf(line, sizeof line, "[%s] %lld simulated, %lld pruned, <=%lld to go | best %s | %.0f s, ETA %.0f s",
                bar.c_str(), static_cast<long long>(done), static_cast<long long>(last_.pruned),
                static_cast<long long>(remaining), best, elapsed_s, eta_s);
  if (terminal_) std::fprintf(stderr, "\r%s\033[K", line);
  else std::fprintf(stderr, "search: %s\n", line);
  std::fflush(stderr);
  drawn_ = true;
}

void SearchProgressPrinter::finish() {
  if (terminal_ && drawn_) std::fprintf(stderr, "\n");
}

}  // namespace tandem::cli
