#include "distributed/mpi_rank_comm.hpp"

#include <climits>
#include <cstdio>
#include <functional>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "distributed/mpi_module.hpp"

namespace tandem::distributed {

using exec::cpu::FlatBuffer;
using exec::cpu::shard_range;
using exec::cpu::Span;
using I64 = std::int64_t;

MpiWorld init_mpi_threads() {
  static const MpiWorld world = [] {
    MpiWorld w;
    check_mpi(mpi_module().init_threads(&w.rank, &w.size), "MPI_Init_thread (MPI_THREAD_MULTIPLE)");
    return w;
  }();
  return world;
}

struct MpiRankComm::GroupComm {
  std::once_flag made;
  void* comm = nullptr;
};

namespace {

int as_int(I64 n, const std::string& label) {
  if (n > INT_MAX) throw std::runtime_error(label + ": " + std::to_string(n) + " values are more than one MPI message holds");
  return static_cast<int>(n);
}

// A buffer's spans one after the other (a single span is used in place).
std::vector<float> pack(const FlatBuffer& buffer) {
  std::vector<float> flat;
  flat.reserve(static_cast<std::size_t>(exec::cpu::flat_size(buffer)));
  for (const Span& s : buffer) flat.insert(flat.end(), s.data, s.data + s.size);
  return flat;
}
void unpack(const std::vector<float>& flat, const FlatBuffer& buffer) {
  I64 at = 0;
  for (const Span& s : buffer) {
    std::memcpy(s.data, flat.data() + at, sizeof(float) * static_cast<std::size_t>(s.size));
    at += s.size;
  }
}

// Member m's parts of every span (shard_range per span), concatenated: its share of a packed
// member-major buffer.
I64 member_count(const FlatBuffer& buffer, int members, int m) {
  I64 n = 0;
  for (const Span& s : buffer) {
    const auto [lo, hi] = shard_range(s.size, members, m);
    n += hi - lo;
  }
  return n;
}
void copy_parts(const FlatBuffer& buffer, int members, int m, float* to_or_from, bool out) {
  for (const Span& s : buffer) {
    const auto [lo, hi] = shard_range(s.size, members, m);
    const auto bytes = sizeof(float) * static_cast<std::size_t>(hi - lo);
    if (out) std::memcpy(to_or_from, s.data + lo, bytes);
    else std::memcpy(s.data + lo, to_or_from, bytes);
    to_or_from += hi - lo;
  }
}

void scale(float* data, I64 n, float by) {
  for (I64 i = 0; i < n; ++i) data[i] *= by;
}

}  // namespace

MpiRankComm::MpiRankComm(const TandemMpiModule& mpi) : mpi_(mpi) {}

MpiRankComm::~MpiRankComm() {
  try {
    flush();
  } catch (...) {
  }
}

void MpiRankComm::check_live(const std::string& label) const {
  if (aborted()) throw exec::cpu::AbortedError(label + ": the run was aborted");
}

void* MpiRankComm::comm_of(const std::string& key, const Group& group) {
  const std::string prefix = key.substr(0, key.find('#'));
  std::shared_ptr<GroupComm> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = comms_[prefix];
    if (!slot) slot = std::make_shared<GroupComm>();
    entry = slot;
  }
  // Made outside the lock: its members meet here, and this process's other streams must not wait.
  std::call_once(entry->made, [&] {
    // The tag tells apart creations this process's streams run at once: the group id and the
    // stream of the key ("g3s1"), the same on every member (32767: MPI's least upper bound).
    int id = 0, stream = 0;
    const int tag = std::sscanf(prefix.c_str(), "g%ds%d", &id, &stream) == 2 ? (id * 8 + stream) % 32768
                                                                              : static_cast<int>(std::hash<std::string>{}(prefix) % 32768);
    check_mpi(mpi_.group_comm(group.ranks.data(), group.size(), tag, &entry->comm), "MPI_Comm_create_group");
  });
  return entry->comm;
}

void MpiRankComm::all_reduce(const std::string& key, const std::string& label, const Group& group, int,
                             const FlatBuffer& buffer, ReduceOp reduce) {
  check_live(label);
  void* comm = comm_of(key, group);
  const int op = reduce == ReduceOp::max ? 1 : 0;
  const float by = reduce == ReduceOp::avg ? 1.0f / static_cast<float>(group.size()) : 1.0f;
  if (buffer.size() == 1) {
    check_mpi(mpi_.all_reduce_f32(comm, buffer[0].data, buffer[0].size, op), "MPI_Allreduce");
    if (by != 1.0f) scale(buffer[0].data, buffer[0].size, by);
    return;
  }
  std::vector<float> flat = pack(buffer);
  check_mpi(mpi_.all_reduce_f32(comm, flat.data(), static_cast<long long>(flat.size()), op), "MPI_Allreduce");
  if (by != 1.0f) scale(flat.data(), static_cast<I64>(flat.size()), by);
  unpack(flat, buffer);
}

void MpiRankComm::reduce_scatter(const std::string& key, const std::string& label, const Group& group, int rank,
                                 const FlatBuffer& buffer, ReduceOp reduce) {
  check_live(label);
  void* comm = comm_of(key, group);
  const int n = group.size(), me = group.index_of(rank);
  if (reduce == ReduceOp::max) {  // MPI's reduce-scatter here sums: a max goes through an all-reduce of a copy
    std::vector<float> flat = pack(buffer);
    check_mpi(mpi_.all_reduce_f32(comm, flat.data(), static_cast<long long>(flat.size()), 1), "MPI_Allreduce");
    I64 at = 0;
    for (const Span& s : buffer) {  // only this member's parts change (the in-place convention)
      const auto [lo, hi] = shard_range(s.size, n, me);
      std::memcpy(s.data + lo, flat.data() + at + lo, sizeof(float) * static_cast<std::size_t>(hi - lo));
      at += s.size;
    }
    return;
  }
  std::vector<int> counts(static_cast<std::size_t>(n));
  std::vector<float> packed;
  packed.reserve(static_cast<std::size_t>(exec::cpu::flat_size(buffer)));
  for (int m = 0; m < n; ++m) {
    counts[m] = as_int(member_count(buffer, n, m), label);
    packed.resize(packed.size() + static_cast<std::size_t>(counts[m]));
    copy_parts(buffer, n, m, packed.data() + packed.size() - counts[m], true);
  }
  std::vector<float> mine(static_cast<std::size_t>(counts[me]));
  check_mpi(mpi_.reduce_scatter_f32(comm, packed.data(), mine.data(), counts.data()), "MPI_Reduce_scatter");
  if (reduce == ReduceOp::avg) scale(mine.data(), static_cast<I64>(mine.size()), 1.0f / static_cast<float>(n));
  copy_parts(buffer, n, me, mine.data(), false);
}

void MpiRankComm::all_gather(const std::string& key, const std::string& label, const Group& group, int rank,
                             const FlatBuffer& buffer) {
  check_live(label);
  void* comm = comm_of(key, group);
  const int n = group.size(), me = group.index_of(rank);
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  I64 total = 0;
  for (int m = 0; m < n; ++m) {
    counts[m] = as_int(member_count(buffer, n, m), label);
    displs[m] = as_int(total, label);
    total += counts[m];
  }
  std::vector<float> mine(static_cast<std::size_t>(counts[me])), packed(static_cast<std::size_t>(total));
  copy_parts(buffer, n, me, mine.data(), true);
  check_mpi(mpi_.all_gather_f32(comm, mine.data(), counts[me], packed.data(), counts.data(), displs.data()),
            "MPI_Allgatherv");
  for (int m = 0; m < n; ++m)
    if (m != me) copy_parts(buffer, n, m, packed.data() + displs[m], false);
}

void MpiRankComm::broadcast(const std::string& key, const std::string& label, const Group& group, int rank,
                            const FlatBuffer& buffer, int root) {
  check_live(label);
  void* comm = comm_of(key, group);
  const int root_index = group.index_of(root);
  if (root_index < 0) throw std::logic_error(label + ": broadcast root " + std::to_string(root) + " is not a member");
  if (buffer.size() == 1) {
    check_mpi(mpi_.broadcast_f32(comm, buffer[0].data, buffer[0].size, root_index), "MPI_Bcast");
    return;
  }
  std::vector<float> flat = rank == root ? pack(buffer) : std::vector<float>(static_cast<std::size_t>(exec::cpu::flat_size(buffer)));
  check_mpi(mpi_.broadcast_f32(comm, flat.data(), static_cast<long long>(flat.size()), root_index), "MPI_Bcast");
  if (rank != root) unpack(flat, buffer);
}

void MpiRankComm::all_to_all(const std::string& key, const std::string& label, const Group& group, int,
                             const FlatBuffer& buffer) {
  check_live(label);
  void* comm = comm_of(key, group);
  const I64 size = exec::cpu::flat_size(buffer), n = group.size();
  if (size % n != 0)
    throw std::runtime_error(label + ": all-to-all of " + std::to_string(size) + " values over " + std::to_string(n) +
                             " members");
  const std::vector<float> sent = pack(buffer);
  std::vector<float> received(sent.size());
  check_mpi(mpi_.all_to_all_f32(comm, sent.data(), received.data(), as_int(size / n, label)), "MPI_Alltoall");
  unpack(received, buffer);
}

void MpiRankComm::send(int, int dst, int tag, const std::string& label, const FlatBuffer& buffer) {
  check_live(label);
  if (buffer.size() == 1) {
    check_mpi(mpi_.send_f32(buffer[0].data, as_int(buffer[0].size, label), dst, tag), "MPI_Send");
    return;
  }
  const std::vector<float> flat = pack(buffer);
  check_mpi(mpi_.send_f32(flat.data(), as_int(static_cast<I64>(flat.size()), label), dst, tag), "MPI_Send");
}

void MpiRankComm::recv(int src, int, int tag, const std::string& label, const FlatBuffer& buffer) {
  check_live(label);
  if (buffer.size() == 1) {
    check_mpi(mpi_.recv_f32(buffer[0].data, as_int(buffer[0].size, label), src, tag), "MPI_Recv");
    return;
  }
  std::vector<float> flat(static_cast<std::size_t>(exec::cpu::flat_size(buffer)));
  check_mpi(mpi_.recv_f32(flat.data(), as_int(static_cast<I64>(flat.size()), label), src, tag), "MPI_Recv");
  unpack(flat, buffer);
}

void MpiRankComm::post_send(int, int dst, int tag, const std::string& label, const FlatBuffer& buffer,
                            SendDone done) {
  check_live(label);
  auto posted = std::make_unique<PostedSend>();
  posted->copy = pack(buffer);
  check_mpi(mpi_.isend_f32(posted->copy.data(), as_int(static_cast<I64>(posted->copy.size()), label), dst, tag,
                           &posted->request),
            "MPI_Isend");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Completed sends are let go here (MPI_Test never blocks: waiting here could wait for a
    // receive that the receiver posts only after something this rank has yet to send).
    std::erase_if(posted_, [&](const std::unique_ptr<PostedSend>& p) {
      int finished = 0;
      check_mpi(mpi_.test(p->request, &finished), "MPI_Test");
      return finished != 0;
    });
    posted_.push_back(std::move(posted));
  }
  done("");  // the message is MPI's copy: the buffer is free
}

void MpiRankComm::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& p : posted_) check_mpi(mpi_.wait(p->request), "MPI_Wait");
  posted_.clear();
}

void MpiProcessGroup::sum(std::vector<double>& values) {
  check_mpi(mpi_.all_reduce_f64(values.data(), static_cast<int>(values.size()), 0), "MPI_Allreduce");
}
void MpiProcessGroup::max(std::vector<double>& values) {
  check_mpi(mpi_.all_reduce_f64(values.data(), static_cast<int>(values.size()), 1), "MPI_Allreduce");
}

}  // namespace tandem::distributed
