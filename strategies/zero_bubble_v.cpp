#include "strategies/zero_bubble_v.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tandem {
namespace {

using Kind = PipelineAction::Kind;

// A message between stages: the activation into virtual stage k, or the gradient into it.
struct Message {
  bool gradient;
  int k, mb;
  bool operator==(const Message&) const = default;
};

struct Stage {
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};  // next micro-batch per chunk (each chunk keeps mb order)
  int held[2] = {0, 0};                        // per chunk, activation sets between an F and its W
  int reserved[2] = {0, 0};                    // per chunk, activations sent here, not yet taken
  std::deque<PipelineAction> w_queue;          // W passes owed, oldest first
  // What this stage sent and was not yet taken, per send stream ([0] to a later stage, [1] to an
  // earlier one, as Stream::pp_send / pp_send_prev): a send completes when its receiver takes it,
  // so only the oldest of a stream can be taken.
  std::deque<Message> sent[2];
};

ZeroBubbleV schedule(int p, int m) {
  if (p < 1 || m < 1)
    throw std::invalid_argument("zb_v pipeline: stages and micro-batches must be >= 1, got " + std::to_string(p) +
                                " and " + std::to_string(m));
  const int V = 2 * p;
  // Per chunk at most p activation sets of half a stage: 1F1B's first stage in all, and room
  // for chunk 1's traffic however many chunk 0 forwards the stage could start.
  const int limit = p;
  constexpr int kNever = -1;
  // End time of each pass, per virtual stage and micro-batch (kNever until it has run).
  std::vector<std::vector<int>> f_end(V, std::vector<int>(m, kNever)), b_end = f_end;
  const auto done_by = [&](const std::vector<std::vector<int>>& end, int k, int mb, int t) {
    return end[k][mb] != kNever && end[k][mb] <= t;
  };
  const auto stage_of = [&](int k) { return stage_of_virtual_stage(PipelineSchedule::zb_v, k, p); };
  std::vector<Stage> st(p);
  // The queue holding what stage `from` sends to stage `to`.
  const auto queue = [&](int from, int to) -> std::deque<Message>& { return st[from].sent[to > from ? 0 : 1]; };
  // Whether stage s can take `msg` from virtual stage from_k now: its own output, or the oldest
  // message of its sender's stream towards s.
  const auto arrived = [&](int s, int from_k, const Message& msg) {
    const int from = stage_of(from_k);
    return from == s || (!queue(from, s).empty() && queue(from, s).front() == msg);
  };
  const auto take = [&](int s, int from_k) {
    if (const int from = stage_of(from_k); from != s) queue(from, s).pop_front();
  };
  const auto send = [&](int s, int to_k, const Message& msg) {
    if (const int to = stage_of(to_k); to != s) queue(s, to).push_back(msg);
  };

  ZeroBubbleV out;
  out.stages.resize(p);
  const long total = 6L * p * m;
  long ran = 0;
  int t = 0;
  while (ran < total) {
    bool started = false;
    for (int s = 0; s < p; ++s) {
      Stage& x = st[s];
      const int k_of[2] = {s, V - 1 - s};
      // 1. A ready B: the earliest micro-batch, then the later virtual stage (chunk 1).
      const auto b_ready = [&](int c) {
        const int mb = x.next_b[c], k = k_of[c];
        if (mb >= m || !done_by(f_end, k, mb, t)) return false;
        return k == V - 1 || (done_by(b_end, k + 1, mb, t) && arrived(s, k + 1, {true, k, mb}));
      };
      int b_chunk = -1;
      for (int c : {1, 0})
        if (b_ready(c) && (b_chunk < 0 || x.next_b[c] < x.next_b[b_chunk])) b_chunk = c;
      PipelineAction a{Kind::weight, -1, -1};
      if (b_chunk >= 0) {
        const int k = k_of[b_chunk];
        a = {Kind::backward, x.next_b[b_chunk]++, b_chunk};
        if (k < V - 1) take(s, k + 1);
        if (k > 0) send(s, k - 1, {true, k - 1, a.micro_batch});
        b_end[k][a.micro_batch] = t + 1;
        x.w_queue.push_back({Kind::weight, a.micro_batch, b_chunk});
      } else {
        // 2. A ready F within the memory limit, chunk 1 first. An activation sent to another
        //    stage holds its place in that stage's memory from the send on (a credit), so a
        //    stage always has the room to take the oldest message of its sender's stream, behind
        //    which a gradient its B needs may wait.
        for (int c : {1, 0}) {
          const int mb = x.next_f[c], k = k_of[c];
          if (mb >= m || (k > 0 && !(done_by(f_end, k - 1, mb, t) && arrived(s, k - 1, {false, k, mb})))) continue;
          const bool received = k > 0 && stage_of(k - 1) != s;  // its room was reserved at the send
          if (!received && x.held[c] + x.reserved[c] >= limit) continue;
          const int to = k < V - 1 ? stage_of(k + 1) : s, to_chunk = k + 1 < p ? 0 : 1;
          if (to != s && st[to].held[to_chunk] + st[to].reserved[to_chunk] >= limit) continue;
          a = {Kind::forward, x.next_f[c]++, c};
          if (received) --x.reserved[c];
          if (to != s) ++st[to].reserved[to_chunk];
          if (k > 0) take(s, k - 1);
          if (k < V - 1) send(s, k + 1, {false, k + 1, mb});
          f_end[k][mb] = t + 1;
          ++x.held[c];
          break;
        }
        // 3. Else the oldest W owed (it releases its chunk's activations).
        if (a.micro_batch < 0 && !x.w_queue.empty()) {
          a = x.w_queue.front();
          x.w_queue.pop_front();
          --x.held[a.chunk];
        }
      }
      if (a.micro_batch < 0) continue;  // idle this step
      out.stages[s].push_back(a);
      ++ran;
      started = true;
    }
    ++t;
    // Nothing started and nothing running (every pass ends one step after it starts): stalled.
    if (!started && ran < total)
      throw std::logic_error("zb_v pipeline: the list scheduler stalled at step " + std::to_string(t) + " (p=" +
                             std::to_string(p) + ", m=" + std::to_string(m) + ")");
  }
  out.makespan_units = t;
  return out;
}

}  // namespace

std::shared_ptr<const ZeroBubbleV> zero_bubble_v(int p, int m) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::shared_ptr<const ZeroBubbleV>> made;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = made.find({p, m}); it != made.end()) return it->second;
  }
  auto fresh = std::make_shared<const ZeroBubbleV>(schedule(p, m));  // outside the lock: may throw
  const std::lock_guard<std::mutex> lock(mutex);
  return made.emplace(std::pair{p, m}, std::move(fresh)).first->second;
}

}  // namespace tandem
