#include "sim/core_turns.hpp"

#include <algorithm>
#include <stdexcept>

namespace tandem::sim {

namespace s4u = simgrid::s4u;

CoreTurns::CoreTurns(int cores, int ranks)
    : free_(std::max(1, cores)), state_(static_cast<std::size_t>(ranks), State::idle), awaited_(state_.size()) {}

bool CoreTurns::gang_spinning(int rank) const {
  if (state_[rank] != State::waiting || !awaited_[rank]) return false;
  bool any = false;
  for (int r = 0; r < static_cast<int>(state_.size()); ++r) {
    if (r == rank || !awaited_[rank](r)) continue;
    if (!running(r)) return false;
    any = true;
  }
  return any;
}

void CoreTurns::grant(int rank) {
  state_[rank] = State::running;
  queue_.erase(std::find(queue_.begin(), queue_.end(), rank));
}

// Queued ranks get free cores first; then the cores of waiting ranks that may yield. A yielding
// rank's core goes to a queued rank it waits for, when there is one (the gang rule).
void CoreTurns::reschedule() {
  bool changed = false;
  while (!queue_.empty()) {
    if (free_ > 0) {
      --free_;
      grant(queue_.front());
      changed = true;
      continue;
    }
    int yielder = -1;
    for (int r = 0; r < static_cast<int>(state_.size()) && yielder < 0; ++r)
      if (state_[r] == State::waiting && !gang_spinning(r)) yielder = r;
    if (yielder < 0) break;
    state_[yielder] = State::idle;
    int next = queue_.front();
    if (awaited_[yielder]) {
      const auto it = std::find_if(queue_.begin(), queue_.end(), [&](int q) { return awaited_[yielder](q); });
      if (it != queue_.end()) next = *it;
    }
    grant(next);
    changed = true;
  }
  if (changed) granted_->notify_all();
}

bool CoreTurns::acquire(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  if (state_[rank] == State::running) return false;
  if (state_[rank] == State::waiting) throw std::logic_error("core turns: acquire while waiting");
  state_[rank] = State::queued;
  queue_.push_back(rank);
  reschedule();
  // Free at once: this rank's own core came back to it (nobody else ran on it in between).
  const bool immediate = state_[rank] == State::running;
  while (state_[rank] != State::running) granted_->wait(lock);
  return !immediate;
}

void CoreTurns::start_waiting(int rank, Awaited awaited) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  if (state_[rank] != State::running) return;
  state_[rank] = State::waiting;
  awaited_[rank] = std::move(awaited);
  reschedule();  // somebody queued may take this core now; others' gang spins may end
}

bool CoreTurns::stop_waiting(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  awaited_[rank] = nullptr;
  if (state_[rank] != State::waiting) return false;
  state_[rank] = State::running;
  return true;
}

void CoreTurns::leave(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  if (state_[rank] == State::running || state_[rank] == State::waiting) ++free_;
  state_[rank] = State::idle;
  awaited_[rank] = nullptr;
  reschedule();
}

}  // namespace tandem::sim
