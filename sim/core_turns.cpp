#include "sim/core_turns.hpp"

#include <algorithm>

namespace tandem::sim {

namespace s4u = simgrid::s4u;

CoreTurns::CoreTurns(int cores, int world)
    : free_(std::max(1, cores)),
      state_(static_cast<std::size_t>(world), State::idle),
      grant_(state_.size(), Grant::handed) {}

CoreTurns::Grant CoreTurns::acquire(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  if (state_[rank] == State::running) return Grant::kept;
  if (free_ > 0 && queue_.empty()) {  // an idle core
    --free_;
    state_[rank] = State::running;
    return Grant::woken;
  }
  state_[rank] = State::queued;
  queue_.push_back(rank);
  while (state_[rank] != State::running) granted_->wait(lock);
  return grant_[rank];
}

void CoreTurns::give_up(int rank, const Awaited& awaited) {
  std::unique_lock<s4u::Mutex> lock(*mutex_);
  if (state_[rank] != State::running) return;
  state_[rank] = State::idle;
  pass_core(awaited);
}

void CoreTurns::pass_core(const Awaited& preferred) {
  if (queue_.empty()) {
    ++free_;
    return;
  }
  auto next = std::find_if(queue_.begin(), queue_.end(), [&](int q) { return preferred && preferred(q); });
  if (next == queue_.end()) next = queue_.begin();
  const int to = *next;
  queue_.erase(next);
  state_[to] = State::running;
  grant_[to] = Grant::handed;
  granted_->notify_all();
}

void CoreTurns::leave(int rank) { give_up(rank, nullptr); }

}  // namespace tandem::sim
