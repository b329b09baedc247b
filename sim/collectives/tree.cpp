// Tree algorithms, after NCCL's double binary tree.
//   all-reduce: two binary trees over the group (NCCL's btree and its mirror, or its shift for an
//     odd size), each carrying half the buffer in chunks. In each tree a member reduces chunk j
//     from its children and passes it up; the root turns it around and it is broadcast down, the
//     two directions pipelined together. On the global step axis, a member of height h (leaves 0)
//     and depth D in a tree of height H sends chunk j up on step j+h, receives it from a child x
//     on step j+h(x), receives the result from its parent on step j+H+D−1 and forwards it to its
//     children on step j+H+D.
//   broadcast: one binary tree rooted at the root, pipelined the same way.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

TreeLinks btree(int n, int rank) {
  // ncclGetBtree (NCCL src/graph/trees.cc).
  TreeLinks links;
  int bit = 1;
  for (; bit < n; bit <<= 1)
    if (bit & rank) break;
  if (rank == 0) {
    links.child[1] = n > 1 ? bit >> 1 : -1;
    if (links.child[1] == 0) links.child[1] = -1;
    return links;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  links.parent = up;
  int lowbit = bit >> 1;
  links.child[0] = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= n) {
    lowbit >>= 1;
    down1 = lowbit == 0 ? -1 : rank + lowbit;
  }
  links.child[1] = down1;
  return links;
}

TreeLinks double_tree(int n, int position, int which) {
  if (which == 0) return btree(n, position);
  TreeLinks t;
  TreeLinks mapped;
  if (n % 2 == 1) {  // shift by one
    t = btree(n, (position - 1 + n) % n);
    auto f = [n](int x) { return x < 0 ? -1 : (x + 1) % n; };
    mapped.parent = f(t.parent);
    mapped.child[0] = f(t.child[0]);
    mapped.child[1] = f(t.child[1]);
  } else {  // mirror
    t = btree(n, n - 1 - position);
    auto f = [n](int x) { return x < 0 ? -1 : n - 1 - x; };
    mapped.parent = f(t.parent);
    mapped.child[0] = f(t.child[0]);
    mapped.child[1] = f(t.child[1]);
  }
  return mapped;
}

namespace {

// Closed form of the aggregated tree (above the replay budget): the pipeline's fill and drain
// steps carry about a third of a steady step's load (ports ramp from one chunk to four), which
// matches the replay within a few percent on stars and rails.
constexpr double kTreeFillShare = 0.35;

int subtree_height(int n, int position, int which) {
  const TreeLinks links = double_tree(n, position, which);
  int h = 0;
  for (int c : links.child)
    if (c >= 0) h = std::max(h, 1 + subtree_height(n, c, which));
  return h;
}

int depth_of(int n, int position, int which) {
  int d = 0;
  for (int p = double_tree(n, position, which).parent; p >= 0; p = double_tree(n, p, which).parent) ++d;
  return d;
}

int root_of(int n, int which) { return which == 0 || n % 2 == 0 ? (which == 0 ? 0 : n - 1) : 1 % n; }

// Adds one tree's all-reduce (reduce up + broadcast down, pipelined) to `phase`.
// `to_rank` maps a tree position to a global rank.
template <typename ToRank>
void add_tree_all_reduce(PhaseBuilder& phase, int n, int position, int which, int chunks, Bytes chunk,
                         ToRank to_rank) {
  const TreeLinks links = double_tree(n, position, which);
  const int height = subtree_height(n, position, which);
  const int depth = depth_of(n, position, which);
  const int tree = tree_height(n, which);
  for (int c : links.child)
    if (c >= 0) phase.recv(subtree_height(n, c, which), chunks, to_rank(c), chunk, which);
  if (links.parent >= 0) {
    phase.send(height, chunks, to_rank(links.parent), chunk, which);
    phase.recv(tree + depth - 1, chunks, to_rank(links.parent), chunk, which);
  }
  for (int c : links.child)
    if (c >= 0) phase.send(tree + depth, chunks, to_rank(c), chunk, which);
}

}  // namespace

int tree_height(int n, int which) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache.emplace(std::make_pair(n, which), 0);
  if (inserted) it->second = n <= 1 ? 0 : subtree_height(n, root_of(n, which), which);
  return it->second;
}

bool tree_supports(OpKind kind) { return kind == OpKind::all_reduce || kind == OpKind::broadcast; }

Schedule tree_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency) {
  const int n = static_cast<int>(call.ranks.size());
  const Bytes S = call.bytes;
  Schedule schedule;
  PhaseBuilder phase;
  Seconds latency = 0;
  if (call.kind == OpKind::all_reduce) {
    const int chunks = chunk_count(S / 2);
    const Bytes chunk = S / 2 / chunks;
    auto to_rank = [&](int position) { return call.ranks[position]; };
    for (int which = 0; which < 2; ++which) {
      add_tree_all_reduce(phase, n, call.me, which, chunks, chunk, to_rank);
      for (int p = 0; phase_latency && p < n; ++p) {
        const int parent = double_tree(n, p, which).parent;
        if (parent >= 0) latency = std::max({latency, edge_latency(topology, call.ranks[p], call.ranks[parent]),
                                            edge_latency(topology, call.ranks[parent], call.ranks[p])});
      }
    }
    schedule.phases.push_back(phase.build(latency, chunks, kTreeFillShare));
  } else if (call.kind == OpKind::broadcast) {
    const int chunks = chunk_count(S);
    const Bytes chunk = S / chunks;
    auto to_rank = [&](int position) { return call.ranks[(call.root + position) % n]; };
    const int position = (call.me - call.root + n) % n;
    const TreeLinks links = btree(n, position);
    const int depth = depth_of(n, position, 0);
    if (links.parent >= 0) phase.recv(depth - 1, chunks, to_rank(links.parent), chunk);
    for (int c : links.child)
      if (c >= 0) phase.send(depth, chunks, to_rank(c), chunk);
    for (int p = 0; phase_latency && p < n; ++p) {
      const int parent = btree(n, p).parent;
      if (parent >= 0) latency = std::max(latency, edge_latency(topology, to_rank(parent), to_rank(p)));
    }
    schedule.phases.push_back(phase.build(latency, chunks, kTreeFillShare));
  } else {
    throw std::invalid_argument(std::string("tree: unsupported collective ") + to_string(call.kind));
  }
  return schedule;
}

int tree_steps(OpKind kind, int n, Bytes bytes) {
  if (kind == OpKind::all_reduce) return chunk_count(bytes / 2) + 2 * std::max(tree_height(n, 0), tree_height(n, 1)) - 1;
  if (kind == OpKind::broadcast) return chunk_count(bytes) + tree_height(n, 0) - 1;
  return 0;
}

Seconds tree_estimate(OpKind kind, Bytes bytes, const GroupShape& shape) {
  const int n = shape.size;
  const Seconds a = group_latency(shape);
  const BytesPerSecond b = group_bandwidth(shape);
  if (kind == OpKind::all_reduce) {
    // Per step, an inner member's links carry four chunks each way (two children, its parent,
    // and its parent in the other tree where it is a leaf).
    const int chunks = chunk_count(bytes / 2);
    return tree_steps(kind, n, bytes) * (a + 4.0 * (bytes / 2 / chunks) / b);
  }
  if (kind == OpKind::broadcast) {
    const int chunks = chunk_count(bytes);
    return tree_steps(kind, n, bytes) * (a + 2.0 * (bytes / chunks) / b);
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace tandem::sim::collectives
