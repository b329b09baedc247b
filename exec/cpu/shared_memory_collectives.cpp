#include "exec/cpu/shared_memory_collectives.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

#include "exec/cpu/core_gate.hpp"

namespace tandem::exec::cpu {

namespace {

using I64 = std::int64_t;

std::string seconds_text(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  std::string text = std::to_string(s);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Walks several flat buffers over the same flat range in runs that are contiguous in all of
// them, calling f(pointers, length) for each run.
class Runs {
 public:
  explicit Runs(std::vector<const FlatBuffer*> buffers) : buffers_(std::move(buffers)) {}

  template <class F>
  void over(I64 lo, I64 hi, F&& f) const {
    const std::size_t n = buffers_.size();
    std::vector<std::size_t> seg(n, 0);
    std::vector<I64> off(n, 0);
    for (std::size_t b = 0; b < n; ++b) {  // position every cursor at `lo`
      I64 skip = lo;
      const FlatBuffer& buf = *buffers_[b];
      while (seg[b] < buf.size() && skip >= buf[seg[b]].size) {
        skip -= buf[seg[b]].size;
        ++seg[b];
      }
      off[b] = skip;
    }
    std::vector<float*> ptrs(n);
    I64 pos = lo;
    while (pos < hi) {
      I64 len = hi - pos;
      for (std::size_t b = 0; b < n; ++b) {
        const FlatBuffer& buf = *buffers_[b];
        while (seg[b] < buf.size() && off[b] >= buf[seg[b]].size) {  // skip empty segments
          ++seg[b];
          off[b] = 0;
        }
        if (seg[b] >= buf.size()) throw std::logic_error("shared-memory collective: buffer overrun");
        len = std::min(len, buf[seg[b]].size - off[b]);
        ptrs[b] = buf[seg[b]].data + off[b];
      }
      f(ptrs, len);
      for (std::size_t b = 0; b < n; ++b) off[b] += len;
      pos += len;
    }
  }

 private:
  std::vector<const FlatBuffer*> buffers_;
};

// Reduces in[0..k) element-wise in the given order into `out` (fp32, left to right).
void reduce_block(float* out, const std::vector<float*>& in, I64 len, ReduceOp reduce, int members) {
  std::memcpy(out, in[0], sizeof(float) * static_cast<std::size_t>(len));
  for (std::size_t j = 1; j < in.size(); ++j) {
    const float* x = in[j];
    if (reduce == ReduceOp::max) {
      for (I64 k = 0; k < len; ++k) out[k] = std::max(out[k], x[k]);
    } else {
      for (I64 k = 0; k < len; ++k) out[k] += x[k];
    }
  }
  if (reduce == ReduceOp::avg) {
    const float n = static_cast<float>(members);
    for (I64 k = 0; k < len; ++k) out[k] /= n;
  }
}

// Reduces flat range [lo, hi) of `bufs` (in reduction order) and writes the result into the
// buffers at positions `targets` of bufs.
void reduce_range(const std::vector<const FlatBuffer*>& bufs, I64 lo, I64 hi, ReduceOp reduce,
                  int members, const std::vector<std::size_t>& targets) {
  constexpr I64 kBlock = 4096;
  std::array<float, kBlock> tmp;
  Runs(bufs).over(lo, hi, [&](const std::vector<float*>& p, I64 len) {
    for (I64 at = 0; at < len; at += kBlock) {
      const I64 k = std::min(kBlock, len - at);
      std::vector<float*> in(p.size());
      for (std::size_t j = 0; j < p.size(); ++j) in[j] = p[j] + at;
      reduce_block(tmp.data(), in, k, reduce, members);
      for (std::size_t t : targets)
        std::memcpy(in[t], tmp.data(), sizeof(float) * static_cast<std::size_t>(k));
    }
  });
}

// Calls f(lo, hi) for the flat range of member `index`'s part of every span (tensor) of the
// buffer: the per-tensor sharding convention of CommShards (strategies/op.hpp).
template <class F>
void for_each_part(const FlatBuffer& buffer, int members, int index, F&& f) {
  I64 start = 0;
  for (const Span& span : buffer) {
    const auto [lo, hi] = shard_range(span.size, members, index);
    if (hi > lo) f(start + lo, start + hi);
    start += span.size;
  }
}

}  // namespace

std::int64_t flat_size(const FlatBuffer& buffer) {
  I64 total = 0;
  for (const Span& s : buffer) total += s.size;
  return total;
}

std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t size, int members, int index) {
  if (members < 1 || index < 0 || index >= members)
    throw std::logic_error("shard_range: bad member index");
  const I64 chunk = (size + members - 1) / members;
  const I64 begin = std::min(size, chunk * index);
  return {begin, std::min(size, begin + chunk)};
}

struct SharedMemoryComm::Instance {
  OpKind kind = OpKind::all_reduce;
  std::string label;  // of the first member to arrive
  int group_id = -1;
  std::vector<int> ranks;  // the group, in group order
  int root = -1;
  std::vector<FlatBuffer> buffers;  // by group index
  // Written under the communicator's lock; also read without it, as a hint, by the core gate's
  // hand-off (which members have not arrived, so that a waiting one gives its core to them):
  // atomics, not std::vector<bool>'s shared words (ThreadSanitizer found that race).
  std::unique_ptr<std::atomic<bool>[]> posted;
  int arrived = 0;
  bool done = false;
  std::string error;  // set by the last arrival when the members' buffers do not match
};

struct SharedMemoryComm::Message {
  FlatBuffer buffer;
  std::string label;
  bool taken = false, done = false;
  std::string error;  // set by the receiver when the message is refused
  SharedMemoryComm::SendDone on_done;  // a posted send (post_send): nobody waits on `done`
};

SharedMemoryComm::SharedMemoryComm(std::chrono::milliseconds timeout) : timeout_(timeout) {}

void SharedMemoryComm::abort() {
  aborted_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex_);
  notify_locked();
}

void SharedMemoryComm::notify_locked() {
  for (Sleeper* s : sleepers_) {
    if (!aborted() && !s->ready()) continue;
    if (s->off_core) {
      s->core.queue();  // woken by the gate, on a core (no wake-up to queue itself)
    } else {
      s->cv.notify_one();
    }
  }
}

bool SharedMemoryComm::sleep_off_core(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
                                      Deadline deadline, const std::function<bool(int)>& awaited) {
  Sleeper me;
  me.ready = ready;
  me.off_core = true;
  prepare_sleep(me.core.waiter);
  sleepers_.push_back(&me);  // from here a notifier may queue it, even before it left its core
  return !sleep_off_core_until(lock, me.core, deadline, awaited, [&] { std::erase(sleepers_, &me); });
}

bool SharedMemoryComm::sleep_until(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
                                   Deadline deadline) {
  Sleeper me;
  me.ready = ready;
  sleepers_.push_back(&me);
  bool timed_out = false;
  while (!ready() && !aborted())
    if (me.cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      timed_out = true;
      break;
    }
  sleepers_.erase(std::find(sleepers_.begin(), sleepers_.end(), &me));
  return timed_out;
}

std::size_t SharedMemoryComm::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = instances_.size();
  for (const Mailboxes* boxes : {&sends_, &receives_})
    for (const auto& [key, queue] : *boxes) n += queue.size();
  return n;
}

// Spinning first pays off where the other member runs on another core: it arrives within tens
// of microseconds here (tensor-parallel all-reduces: 20 us median, 60 us at p90).
constexpr std::chrono::microseconds kSpinBudget{100};

template <class Pred, class Describe>
void SharedMemoryComm::wait(std::unique_lock<std::mutex>& lock, Deadline deadline, Pred ready,
                            Describe describe_timeout, const std::function<bool(int)>& awaited) {
  if (spin_while_cores_idle(lock, [&] { return ready() || aborted(); }, kSpinBudget) && ready()) return;
  while (!ready()) {
    if (aborted()) throw AbortedError("aborted: another rank failed");
    // Off the core until the wait is over (core_gate.hpp).
    const bool timed_out = holds_core() ? sleep_off_core(lock, ready, deadline, awaited)
                                        : sleep_until(lock, ready, deadline);
    if (timed_out && !ready()) {
      if (aborted()) throw AbortedError("aborted: another rank failed");
      throw std::runtime_error("timed out after " + seconds_text(timeout_) + " " + describe_timeout());
    }
  }
}

void SharedMemoryComm::collective(const std::string& key, const std::string& label, OpKind kind,
                                  const Group& group, int rank, const FlatBuffer& buffer, int root,
                                  const std::function<void(Instance&)>& work) {
  const int index = group.index_of(rank);
  if (index < 0)
    throw std::logic_error("rank " + std::to_string(rank) + " is not a member of group " +
                           std::to_string(group.id));
  if (aborted()) throw AbortedError("aborted: another rank failed");
  const Deadline deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock<std::mutex> lock(mutex_);
  auto& slot = instances_[key];
  if (!slot) {
    slot = std::make_shared<Instance>();
    slot->kind = kind;
    slot->label = label;
    slot->group_id = group.id;
    slot->ranks = group.ranks;
    slot->root = root;
    slot->buffers.resize(group.ranks.size());
    slot->posted = std::make_unique<std::atomic<bool>[]>(group.ranks.size());
    for (std::size_t i = 0; i < group.ranks.size(); ++i) slot->posted[i].store(false, std::memory_order_relaxed);
  }
  std::shared_ptr<Instance> inst = slot;
  if (inst->kind != kind || inst->ranks != group.ranks || inst->root != root)
    throw std::runtime_error(
        "mismatched collectives on group " + std::to_string(group.id) + ": rank " +
        std::to_string(rank) + " issued " + to_string(kind) + " '" + label +
        "' where another member issued " + to_string(inst->kind) + " '" + inst->label + "'");
  if (inst->posted[index])
    throw std::logic_error("rank " + std::to_string(rank) + " joined collective " + key + " twice");
  inst->buffers[index] = buffer;
  inst->posted[index] = true;
  const int members = group.size();
  if (++inst->arrived < members) {
    try {
      wait(lock, deadline, [&] { return inst->done; }, [&] {
        std::vector<int> missing;
        for (int i = 0; i < members; ++i)
          if (!inst->posted[i]) missing.push_back(inst->ranks[i]);
        return std::string("in ") + to_string(kind) + " '" + label + "' (group " +
               std::to_string(group.id) + "): rank(s) " + rank_list(missing) + " never joined";
      }, [&](int r) {  // the members that have not arrived
        for (int i = 0; i < members; ++i)
          if (inst->ranks[i] == r) return !inst->posted[i].load(std::memory_order_relaxed);
        return false;
      });
    } catch (...) {  // withdraw the buffer: nobody may touch it once this member has left
      if (!inst->done) {
        inst->posted[index] = false;
        inst->buffers[index].clear();
        --inst->arrived;
      }
      throw;
    }
    if (!inst->error.empty()) throw std::runtime_error(inst->error);
    return;
  }
  // The last member to arrive does every member's work, in one go: the others only wait for it
  // to finish, and none of them needs a core for the collective to complete (one hand-off per
  // waiting member instead of a barrier, a share of the work and a second barrier each).
  instances_.erase(key);
  lock.unlock();
  // Every member's sizes must match. Reduce-scatter and all-gather shard tensor by tensor: the
  // tensors must match too, not only their total.
  const I64 size = flat_size(inst->buffers[0]);
  auto span_sizes = [](const FlatBuffer& b) {
    std::vector<I64> sizes;
    for (const Span& span : b) sizes.push_back(span.size);
    return sizes;
  };
  const bool per_tensor = kind == OpKind::reduce_scatter || kind == OpKind::all_gather;
  std::string error;
  for (int i = 1; i < members && error.empty(); ++i)
    if (flat_size(inst->buffers[i]) != size ||
        (per_tensor && span_sizes(inst->buffers[i]) != span_sizes(inst->buffers[0])))
      error = std::string(to_string(kind)) + " '" + label + "' (group " + std::to_string(group.id) +
              "): rank " + std::to_string(inst->ranks[0]) + " has " + std::to_string(size) +
              " elements, rank " + std::to_string(inst->ranks[i]) + " has " +
              std::to_string(flat_size(inst->buffers[i]));
  if (error.empty()) {
    try {
      work(*inst);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  lock.lock();
  inst->error = error;
  inst->done = true;
  notify_locked();
  lock.unlock();
  if (!error.empty()) throw std::runtime_error(error);
}

namespace {
// Group indices ordered by ascending global rank: the reduction order.
std::vector<int> rank_order(const std::vector<int>& ranks) {
  std::vector<int> order(ranks.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ranks[a] < ranks[b]; });
  return order;
}

// Copies flat range [lo, hi) of `from` into the same range of `to`.
void copy_range(const FlatBuffer& to, const FlatBuffer& from, I64 lo, I64 hi) {
  Runs({&to, &from}).over(lo, hi, [&](const std::vector<float*>& p, I64 len) {
    std::memcpy(p[0], p[1], sizeof(float) * static_cast<std::size_t>(len));
  });
}
}  // namespace

void SharedMemoryComm::all_reduce(const std::string& key, const std::string& label,
                                  const Group& group, int rank, const FlatBuffer& buffer,
                                  ReduceOp reduce) {
  collective(key, label, OpKind::all_reduce, group, rank, buffer, -1, [&](Instance& inst) {
    std::vector<const FlatBuffer*> bufs;
    for (int i : rank_order(inst.ranks)) bufs.push_back(&inst.buffers[i]);
    std::vector<std::size_t> everyone(bufs.size());
    std::iota(everyone.begin(), everyone.end(), std::size_t{0});
    reduce_range(bufs, 0, flat_size(buffer), reduce, group.size(), everyone);
  });
}

void SharedMemoryComm::reduce_scatter(const std::string& key, const std::string& label,
                                      const Group& group, int rank, const FlatBuffer& buffer,
                                      ReduceOp reduce) {
  collective(key, label, OpKind::reduce_scatter, group, rank, buffer, -1, [&](Instance& inst) {
    const int n = group.size();
    const std::vector<int> order = rank_order(inst.ranks);
    std::vector<const FlatBuffer*> bufs;
    for (int i : order) bufs.push_back(&inst.buffers[i]);
    for (std::size_t at = 0; at < order.size(); ++at) {  // member order[at]'s part, into its buffer
      for_each_part(inst.buffers[order[at]], n, order[at],
                    [&](I64 lo, I64 hi) { reduce_range(bufs, lo, hi, reduce, n, {at}); });
    }
  });
}

void SharedMemoryComm::all_gather(const std::string& key, const std::string& label,
                                  const Group& group, int rank, const FlatBuffer& buffer) {
  collective(key, label, OpKind::all_gather, group, rank, buffer, -1, [&](Instance& inst) {
    const int n = group.size();
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        for_each_part(inst.buffers[i], n, j,
                      [&](I64 lo, I64 hi) { copy_range(inst.buffers[i], inst.buffers[j], lo, hi); });
      }
    }
  });
}

void SharedMemoryComm::broadcast(const std::string& key, const std::string& label,
                                 const Group& group, int rank, const FlatBuffer& buffer, int root) {
  const int root_index = group.index_of(root);
  if (root_index < 0)
    throw std::logic_error("broadcast '" + label + "': root " + std::to_string(root) +
                           " is not in group " + std::to_string(group.id));
  collective(key, label, OpKind::broadcast, group, rank, buffer, root, [&](Instance& inst) {
    for (int i = 0; i < group.size(); ++i) {
      if (i != root_index) copy_range(inst.buffers[i], inst.buffers[root_index], 0, flat_size(buffer));
    }
  });
}

void SharedMemoryComm::all_to_all(const std::string& key, const std::string& label,
                                  const Group& group, int rank, const FlatBuffer& buffer) {
  const int n = group.size();
  const I64 size = flat_size(buffer);
  if (size % n != 0)
    throw std::logic_error("all_to_all '" + label + "': " + std::to_string(size) +
                           " elements do not split into " + std::to_string(n) + " equal chunks");
  // In place: every member posts its buffer and a private copy of it, which the others' chunks
  // are read from (the buffer itself is overwritten).
  std::vector<float> staged(static_cast<std::size_t>(size));
  FlatBuffer posted{Span{staged.data(), size}};
  copy_range(posted, buffer, 0, size);
  posted.insert(posted.end(), buffer.begin(), buffer.end());
  collective(key, label, OpKind::all_to_all, group, rank, posted, -1, [&](Instance& inst) {
    const I64 chunk = size / n;
    for (int i = 0; i < n; ++i) {
      const FlatBuffer target(inst.buffers[i].begin() + 1, inst.buffers[i].end());
      for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        // Member i's chunk j <- member j's (staged) chunk i.
        const float* src = inst.buffers[j][0].data + chunk * i;
        Runs({&target}).over(chunk * j, chunk * (j + 1), [&](const std::vector<float*>& p, I64 len) {
          std::memcpy(p[0], src, sizeof(float) * static_cast<std::size_t>(len));
          src += len;
        });
      }
    }
  });
}

void SharedMemoryComm::send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) {
  p2p(true, src, dst, tag, label, buffer);
}

void SharedMemoryComm::recv(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer) {
  p2p(false, src, dst, tag, label, buffer);
}

void SharedMemoryComm::post_send(int src, int dst, int tag, const std::string& label, const FlatBuffer& buffer,
                                 SendDone done) {
  p2p(true, src, dst, tag, label, buffer, std::move(done));
}

void SharedMemoryComm::p2p(bool sending, int src, int dst, int tag, const std::string& label,
                           const FlatBuffer& buffer, SendDone posted) {
  if (aborted()) throw AbortedError("aborted: another rank failed");
  const auto key = std::make_tuple(src, dst, tag);
  const Deadline deadline = std::chrono::steady_clock::now() + timeout_;
  Mailboxes& theirs = sending ? receives_ : sends_;
  Mailboxes& mine = sending ? sends_ : receives_;
  std::unique_lock<std::mutex> lock(mutex_);
  if (auto it = theirs.find(key); it != theirs.end()) {  // the other side is waiting: copy, release it
    std::shared_ptr<Message> msg = it->second.front();
    it->second.erase(it->second.begin());
    if (it->second.empty()) theirs.erase(it);
    msg->taken = true;
    lock.unlock();
    const FlatBuffer& from = sending ? buffer : msg->buffer;
    const FlatBuffer& to = sending ? msg->buffer : buffer;
    const I64 size = flat_size(to), sent = flat_size(from);
    std::string error;
    if (size != sent) {
      error = "recv '" + (sending ? msg->label : label) + "' on rank " + std::to_string(dst) + " expects " +
              std::to_string(size) + " elements, send '" + (sending ? label : msg->label) + "' from rank " +
              std::to_string(src) + " has " + std::to_string(sent);
    } else {
      Runs({&to, &from}).over(0, size, [&](const std::vector<float*>& p, I64 len) {
        std::memcpy(p[0], p[1], sizeof(float) * static_cast<std::size_t>(len));
      });
    }
    lock.lock();
    msg->error = error;
    msg->done = true;
    notify_locked();
    lock.unlock();
    if (msg->on_done) msg->on_done(error);  // a posted send completes on the receiver's thread
    if (posted) posted(error);              // this posted send found its receive
    if (!error.empty() && !posted) throw std::runtime_error(error);
    return;
  }
  auto msg = std::make_shared<Message>();
  msg->buffer = buffer;
  msg->label = label;
  msg->on_done = std::move(posted);
  mine[key].push_back(msg);
  if (msg->on_done) return;  // posted: the receiver copies it and calls on_done
  const int peer = sending ? dst : src;
  try {
    wait(lock, deadline, [&] { return msg->done; }, [&] {
      return sending ? "in send '" + label + "' to rank " + std::to_string(dst) + " (tag " + std::to_string(tag) +
                           "): rank " + std::to_string(dst) + " never received it"
                     : "in recv '" + label + "' from rank " + std::to_string(src) + " (tag " +
                           std::to_string(tag) + "): rank " + std::to_string(src) + " never sent";
    }, [peer](int r) { return r == peer; });
  } catch (...) {
    if (msg->taken) {
      // The other side is copying from or to our buffer right now: let it finish (a copy: bounded)
      // first, even once the run is aborted (then sleep_until returns at once: this spins).
      while (!msg->done) sleep_until(lock, [&] { return msg->done; }, Deadline::max());
    } else {
      auto& queue = mine[key];
      queue.erase(std::remove(queue.begin(), queue.end(), msg), queue.end());
      if (queue.empty()) mine.erase(key);
    }
    throw;
  }
  if (!msg->error.empty()) throw std::runtime_error(msg->error);
}

}  // namespace tandem::exec::cpu
