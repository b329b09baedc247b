#include "sim/reliability/goodput_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <stdexcept>

#include "sim/reliability/random_stream.hpp"

namespace tandem::sim::reliability {

const char* to_string(RecoveryPolicy policy) {
  switch (policy) {
    case RecoveryPolicy::restart_on_spares: return "restart_on_spares";
    case RecoveryPolicy::wait_for_repair: return "wait_for_repair";
    case RecoveryPolicy::shrink: return "shrink";
  }
  return "?";
}

RecoveryPolicy parse_recovery_policy(const std::string& text) {
  if (text == "restart_on_spares") return RecoveryPolicy::restart_on_spares;
  if (text == "wait_for_repair") return RecoveryPolicy::wait_for_repair;
  if (text == "shrink") return RecoveryPolicy::shrink;
  throw std::invalid_argument("unknown recovery policy '" + text +
                              "' (expected restart_on_spares, wait_for_repair or shrink)");
}

Seconds GoodputModel::effective_interval_s() const {
  return checkpoint.asynchronous ? std::max(interval_s, checkpoint.write_s) : interval_s;
}

double GoodputModel::episode_throughput() const {
  double lost = 0;  // share of the time's work lost to episodes
  for (const Slowdown& s : slowdowns) {
    if (!(s.episodes_per_s > 0) || !(s.mean_s > 0)) continue;
    const double m = s.mean_s, r = rebalance_after_s;
    double per_episode = (1 - s.throughput) * m;
    if (r > 0) {
      const double past = std::exp(-r / m);  // P(L > R); E[min(L, R)] = m (1 - past), E[(L - R)+] = m past
      per_episode = (1 - s.throughput) * m * (1 - past) + (1 - s.rebalanced) * m * past + (1 - s.after) * r * past;
    }
    lost += per_episode / (1 / s.episodes_per_s + m);
  }
  return std::max(0.0, 1 - lost);
}

double GoodputModel::total_failure_rate_per_s() const {
  double total = 0;
  for (const FailureStream& f : failures) total += f.rate_per_s;
  return total;
}

Seconds GoodputTally::accounted_s() const {
  Seconds sum = useful_s + degraded_s + slowed_s + checkpoint_s + regrow_s;
  for (Seconds s : lost_by_cause) sum += s;
  for (Seconds s : restart_by_cause) sum += s;
  for (Seconds s : waiting_by_cause) sum += s;
  return sum;
}

void validate(const GoodputModel& m) {
  auto require = [](bool ok, const char* field, const char* what) {
    if (!ok) throw std::invalid_argument(std::string(field) + ": " + what);
  };
  require(m.iteration_s > 0 && std::isfinite(m.iteration_s), "iteration_s", "must be positive");
  require(m.interval_s > 0 && std::isfinite(m.interval_s), "interval_s", "must be positive");
  require(m.checkpoint.blocking_s >= 0 && m.checkpoint.write_s >= 0, "checkpoint", "costs must be >= 0");
  require(m.checkpoint.asynchronous || m.checkpoint.write_s == 0, "checkpoint.write_s", "only async writes run in the background");
  require(m.restart_s >= 0 && std::isfinite(m.restart_s), "restart_s", "must be >= 0");
  require(m.replicas >= 1 && m.replicas_per_node >= 1, "replicas", "must be >= 1");
  require(m.shrunk_throughput.empty() || m.shrunk_throughput.size() == static_cast<std::size_t>(m.replicas) + 1,
          "shrunk_throughput", "needs one entry per number of replicas alive (0..replicas)");
  for (double f : m.shrunk_throughput)
    require(f >= 0 && f <= 1 + 1e-9, "shrunk_throughput", "must be in [0, 1] (the full width's throughput is 1)");
  require(m.spare_nodes >= 0, "spare_nodes", "must be >= 0");
  for (const FailureStream& f : m.failures) {
    require(f.rate_per_s >= 0 && std::isfinite(f.rate_per_s), "failures.rate_per_s", "must be >= 0");
    require(f.nodes_taken >= 0 && f.repair_s >= 0, "failures", "nodes and repair time must be >= 0");
  }
  for (const Slowdown& s : m.slowdowns) {
    require(s.episodes_per_s > 0 && std::isfinite(s.episodes_per_s), "slowdowns.episodes_per_s", "must be positive");
    require(s.mean_s > 0 && std::isfinite(s.mean_s), "slowdowns.mean_s", "must be positive");
    require(s.throughput > 0 && s.throughput <= 1, "slowdowns.throughput", "must be in (0, 1]");
    require(s.rebalanced > 0 && s.rebalanced <= 1 && s.after > 0 && s.after <= 1, "slowdowns.rebalanced",
            "re-balanced throughputs must be in (0, 1]");
  }
  require(m.rebalance_after_s >= 0 && std::isfinite(m.rebalance_after_s), "rebalance_after_s", "must be >= 0");
}

namespace {

// The job's state machine over one trial. Time only moves forward, from event to event; between
// two events the job is in one state, and whole checkpoint periods are crossed arithmetically, so
// a trial costs O(events), not O(checkpoints).
class Trial {
 public:
  Trial(const GoodputModel& m, std::uint64_t seed, Seconds target_s)
      : m_(m), rng_(seed), episode_rng_(RandomStream::derive(seed, 0x51d0)), target_s_(target_s), period_s_(m.effective_interval_s() + m.checkpoint.blocking_s),
        alive_replicas_(m.replicas), spares_(m.spare_nodes) {
    tally_.lost_by_cause.assign(m.failures.size(), 0);
    tally_.restart_by_cause.assign(m.failures.size(), 0);
    tally_.waiting_by_cause.assign(m.failures.size(), 0);
    rate_ = m.total_failure_rate_per_s();
    next_failure_ = rate_ > 0 ? rng_.exponential(rate_) : kNever;
    for (const Slowdown& s : m.slowdowns) episodes_.push_back({false, false, episode_rng_.exponential(s.episodes_per_s), kNever});
  }

  void record(std::vector<TimelinePoint>* timeline, std::size_t max_points) {
    timeline_ = timeline;
    max_points_ = max_points;
  }

  GoodputTally play(Seconds horizon_s) {
    while (now_ < horizon_s && !tally_.reached_target) {
      note();
      const Seconds regrow = regrows_.empty() ? kNever : regrows_.top().first;
      const Seconds episode = next_episode_change();
      if (state_ == State::running) {
        const Seconds finish = now_ + time_until_work(target_s_ - done_work());
        const Seconds stop = std::min({next_failure_, horizon_s, regrow, finish, episode});
        advance_running(stop - now_);
        now_ = stop;
        if (stop == finish && finish <= std::min({next_failure_, horizon_s, regrow, episode})) {
          tally_.reached_target = true;
        } else if (stop == next_failure_) {
          fail();
        } else if (stop == regrow) {
          regrow_now();
        } else if (stop == episode) {
          change_episodes();
        }
      } else {
        // Episodes come and go while the job is down too (a slowed device is slow when it returns).
        const Seconds stop = std::min({next_failure_, horizon_s, regrow, state_end_, episode});
        charge_downtime(stop - now_);
        now_ = stop;
        if (stop == next_failure_) {
          fail();
        } else if (stop == regrow) {
          pop_regrow();
        } else if (stop == state_end_) {
          end_downtime();
        } else if (stop == episode) {
          change_episodes();
        }
      }
    }
    // At the end, work in progress counts: the job carries on past the horizon.
    confirm_write();
    commit_pending();
    commit_unconfirmed();
    tally_.duration_s = now_;
    return tally_;
  }

 private:
  enum class State { running, waiting, restarting, regrowing };

  // A step of the timeline when the state or the throughput changed.
  void note() {
    if (timeline_ == nullptr || timeline_->size() >= max_points_) return;
    static constexpr const char* kNames[] = {"running", "waiting", "restarting", "regrowing"};
    const std::string state = kNames[static_cast<int>(state_)];
    const double throughput = state_ == State::running ? factor() : 0.0;
    if (!timeline_->empty() && timeline_->back().state == state && timeline_->back().throughput == throughput) return;
    timeline_->push_back({now_, state, throughput, tally_.failures});
  }
  std::vector<TimelinePoint>* timeline_ = nullptr;
  std::size_t max_points_ = 0;
  static constexpr Seconds kNever = std::numeric_limits<double>::infinity();

  // The running job's throughput over the full-width, unslowed one: the survivors' share (shrink)
  // times the slowest episode's (slowdowns).
  double factor() const { return shrunk_factor() * slowed_factor(); }
  double shrunk_factor() const {
    if (!m_.shrunk_throughput.empty()) return m_.shrunk_throughput[static_cast<std::size_t>(alive_replicas_)];
    return static_cast<double>(alive_replicas_) / m_.replicas;
  }
  double slowed_factor() const {
    double f = 1;
    for (std::size_t i = 0; i < episodes_.size(); ++i) {
      const Episode& e = episodes_[i];
      const Slowdown& s = m_.slowdowns[i];
      f = std::min(f, e.active ? (e.split_for_it ? s.rebalanced : s.throughput) : (e.split_for_it ? s.after : 1.0));
    }
    return f;
  }
  // Of `wall` seconds running now, the time the slowdown took (the rest is work, or shrunk).
  Seconds slowed_part(Seconds wall) const { return wall * shrunk_factor() * (1 - slowed_factor()); }

  Seconds next_episode_change() const {
    Seconds next = kNever;
    for (const Episode& e : episodes_) next = std::min({next, e.change_at, e.split_at});
    return next;
  }
  // Every episode due now starts or ends, and draws when it changes next (the re-splits draw
  // nothing); with re-balancing, the split follows it rebalance_after_s later, unless it already
  // fits (an episode starting before the split went back).
  void change_episodes() {
    for (std::size_t i = 0; i < episodes_.size(); ++i) {
      Episode& e = episodes_[i];
      if (e.split_at <= now_) {
        e.split_for_it = !e.split_for_it;
        e.split_at = kNever;
      }
      if (e.change_at > now_) continue;
      e.active = !e.active;
      const Slowdown& s = m_.slowdowns[i];
      e.change_at = now_ + episode_rng_.exponential(e.active ? 1 / s.mean_s : s.episodes_per_s);
      const bool fits = e.active == e.split_for_it;
      e.split_at = m_.rebalance_after_s > 0 && !fits ? now_ + m_.rebalance_after_s : kNever;
    }
  }
  Seconds interval() const { return m_.effective_interval_s(); }
  Seconds done_work() const { return tally_.useful_s + pending_work_ + unconfirmed_work_; }

  // Wall time the running job needs for `work` more seconds of full-width training.
  Seconds time_until_work(Seconds work) const {
    if (!(work > 0)) return 0;
    if (!std::isfinite(work)) return kNever;
    const double f = factor();
    Seconds t = 0;
    Seconds pos = pos_;
    if (pos >= interval()) {  // in a snapshot: it finishes first
      t += period_s_ - pos;
      pos = 0;
    }
    const Seconds here = (interval() - pos) * f;
    if (work <= here) return t + work / f;
    work -= here;
    t += period_s_ - pos;
    const double per_period = interval() * f;
    const double full = std::ceil(work / per_period) - 1;
    return t + full * period_s_ + (work - full * per_period) / f;
  }

  // Running for `dt` with no event on the way.
  void advance_running(Seconds dt) {
    while (dt > 0) {
      confirm_write_by(now_);
      if (pos_ < interval()) {
        const Seconds a = std::min(dt, interval() - pos_);
        pending_work_ += a * factor();
        pending_slow_ += slowed_part(a);
        pending_wall_ += a;
        pos_ += a, dt -= a, now_ += a;
        continue;
      }
      const Seconds b = std::min(dt, period_s_ - pos_);
      tally_.checkpoint_s += b;
      pos_ += b, dt -= b, now_ += b;
      if (pos_ < period_s_) continue;
      snapshot_done();
      // Whole periods at once: each ends with a checkpoint; an async one is durable once its
      // write ends, inside the next period, so only the last of them may still be pending.
      const double n = std::floor(dt / period_s_);
      if (n >= 1) {
        confirm_write();
        const double durable = m_.checkpoint.asynchronous ? n - 1 : n;
        tally_.useful_s += durable * interval() * factor();
        tally_.slowed_s += durable * slowed_part(interval());
        tally_.degraded_s += durable * (interval() * (1 - factor()) - slowed_part(interval()));
        tally_.checkpoint_s += n * m_.checkpoint.blocking_s;
        dt -= n * period_s_;
        now_ += n * period_s_;
        if (m_.checkpoint.asynchronous) {
          unconfirmed_work_ = interval() * factor();
          unconfirmed_slow_ = slowed_part(interval());
          unconfirmed_wall_ = interval();
          write_done_at_ = now_ + m_.checkpoint.write_s;
        }
      }
    }
  }

  // The snapshot (sync: the write) ends: the segment's work becomes durable now (sync) or when
  // the background write ends (async).
  void snapshot_done() {
    pos_ = 0;
    if (!m_.checkpoint.asynchronous) {
      commit_pending();
      return;
    }
    confirm_write();
    unconfirmed_work_ = pending_work_;
    unconfirmed_slow_ = pending_slow_;
    unconfirmed_wall_ = pending_wall_;
    pending_work_ = pending_slow_ = pending_wall_ = 0;
    write_done_at_ = now_ + m_.checkpoint.write_s;
  }
  void confirm_write_by(Seconds t) {
    if (unconfirmed_wall_ > 0 && t >= write_done_at_) commit_unconfirmed();
  }
  void confirm_write() { confirm_write_by(write_done_at_); }
  void commit_pending() { commit(pending_work_, pending_slow_, pending_wall_); }
  void commit_unconfirmed() { commit(unconfirmed_work_, unconfirmed_slow_, unconfirmed_wall_); }
  // A segment becomes durable: its work is useful, the rest of its wall time went to slowdowns
  // or to the missing replicas.
  void commit(Seconds& work, Seconds& slow, Seconds& wall) {
    tally_.useful_s += work;
    tally_.slowed_s += slow;
    tally_.degraded_s += wall - work - slow;
    work = slow = wall = 0;
  }

  void charge_downtime(Seconds dt) {
    if (state_ == State::regrowing) tally_.regrow_s += dt;
    else if (state_ == State::waiting) tally_.waiting_by_cause[blame_] += dt;
    else tally_.restart_by_cause[blame_] += dt;
  }

  void end_downtime() {
    if (state_ == State::waiting) {
      state_ = State::restarting;
      state_end_ = now_ + m_.restart_s;
      return;
    }
    state_ = State::running;
    pos_ = 0;
  }

  // A failure now: draw its cause, lose what is not durable, recover as the policy says.
  void fail() {
    const double pick = rng_.uniform_open() * rate_;
    next_failure_ = now_ + rng_.exponential(rate_);
    std::size_t c = 0;
    for (double sum = m_.failures[0].rate_per_s; c + 1 < m_.failures.size() && pick > sum;)
      sum += m_.failures[++c].rate_per_s;
    ++tally_.failures;
    const bool was_waiting = state_ == State::waiting;
    const Seconds waiting_until = state_end_;
    if (state_ == State::running) {
      confirm_write_by(now_);
      tally_.lost_by_cause[c] += pending_wall_ + unconfirmed_wall_;
      pending_work_ = pending_slow_ = pending_wall_ = unconfirmed_work_ = unconfirmed_slow_ = unconfirmed_wall_ = 0;
    }
    const FailureStream& f = m_.failures[c];
    Seconds resume = now_;  // when the restart may begin
    if (state_ == State::waiting) resume = std::max(resume, state_end_);
    if (f.nodes_taken > 0) resume = std::max(resume, recover_nodes(f));
    // Time is charged to the failure that caused it: a wait that this one does not prolong stays
    // its first cause's.
    if (!(was_waiting && resume <= waiting_until)) blame_ = c;
    state_ = resume > now_ ? State::waiting : State::restarting;
    state_end_ = resume > now_ ? resume : now_ + m_.restart_s;
  }

  // Takes `f.nodes_taken` nodes out; returns when the job can restart without them.
  Seconds recover_nodes(const FailureStream& f) {
    const Seconds back = now_ + f.repair_s;
    switch (m_.policy) {
      case RecoveryPolicy::wait_for_repair:
        return back;
      case RecoveryPolicy::restart_on_spares: {
        while (!repairs_.empty() && repairs_.top() <= now_) repairs_.pop(), ++spares_;
        // The lost nodes go to repair and rejoin the pool when fixed; with the pool empty the job
        // waits for the first node back (its own, at worst).
        for (int i = 0; i < f.nodes_taken; ++i) repairs_.push(back);
        Seconds ready = now_;
        for (int i = 0; i < f.nodes_taken; ++i) {
          if (spares_ == 0) {
            ready = std::max(ready, repairs_.top());
            repairs_.pop();
            ++spares_;
          }
          --spares_;
        }
        return ready;
      }
      case RecoveryPolicy::shrink: {
        const int lost = std::min(alive_replicas_, f.nodes_taken * m_.replicas_per_node);
        regrows_.push({back, lost});
        alive_replicas_ -= lost;
        if (alive_replicas_ > 0) return now_;
        // Nothing left to run on: wait for the first repair.
        const Seconds first = regrows_.top().first;
        pop_regrow_counts();
        return first;
      }
    }
    return back;
  }

  void pop_regrow_counts() {
    alive_replicas_ += regrows_.top().second;
    regrows_.pop();
  }
  void pop_regrow() { pop_regrow_counts(); }

  // Shrink: repaired nodes rejoin at the next opportunity; a running job checkpoints (counted
  // durable at once) and restarts at the larger width.
  void regrow_now() {
    pop_regrow_counts();
    commit_pending();
    confirm_write();
    commit_unconfirmed();
    state_ = State::regrowing;
    state_end_ = now_ + m_.checkpoint.blocking_s + m_.checkpoint.write_s + m_.restart_s;
  }

  // A transient slowdown's state: in an episode or not, the work split for it (re-balanced) or
  // not, and when each changes next.
  struct Episode {
    bool active = false;
    bool split_for_it = false;
    Seconds change_at = kNever;
    Seconds split_at = kNever;
  };

  const GoodputModel& m_;
  RandomStream rng_;
  // Episodes draw from their own stream, so that failures fall at the same times with or without
  // slowdowns (common random numbers across what-ifs).
  RandomStream episode_rng_;
  std::vector<Episode> episodes_;
  Seconds target_s_;
  Seconds period_s_;
  double rate_ = 0;
  GoodputTally tally_;
  Seconds now_ = 0;
  Seconds next_failure_ = kNever;
  State state_ = State::running;
  Seconds state_end_ = 0;
  std::size_t blame_ = 0;
  Seconds pos_ = 0;  // place in the checkpoint period: [0, interval) training, then the snapshot
  // Work, time taken by slowdowns, and wall time of the training not yet durable.
  Seconds pending_work_ = 0, pending_slow_ = 0, pending_wall_ = 0;              // since the last snapshot
  Seconds unconfirmed_work_ = 0, unconfirmed_slow_ = 0, unconfirmed_wall_ = 0;  // snapshotted, write not yet durable
  Seconds write_done_at_ = 0;
  int alive_replicas_ = 1;
  int spares_ = 0;
  std::priority_queue<Seconds, std::vector<Seconds>, std::greater<>> repairs_;  // spares coming back
  using Regrow = std::pair<Seconds, int>;
  std::priority_queue<Regrow, std::vector<Regrow>, std::greater<>> regrows_;  // shrink: replicas coming back
};

}  // namespace

GoodputTally run_trial(const GoodputModel& model, Seconds horizon_s, std::uint64_t seed, Seconds target_s,
                       std::vector<TimelinePoint>* timeline, std::size_t max_points) {
  validate(model);
  if (model.failures.empty() && model.total_failure_rate_per_s() > 0) throw std::logic_error("rates without causes");
  Trial trial(model, seed, target_s);
  trial.record(timeline, max_points);
  return trial.play(horizon_s);
}

}  // namespace tandem::sim::reliability
