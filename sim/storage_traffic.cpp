#include "sim/storage_traffic.hpp"

#include <limits>
#include <stdexcept>

namespace tandem::sim {

namespace s4u = simgrid::s4u;

StorageWriters::StorageWriters(const std::vector<s4u::Host*>& hosts, s4u::Host* storage, const StorageWrites& writes,
                               bool start_now)
    : writes_(writes), gate_(s4u::Semaphore::create(0)), total_bytes_(static_cast<double>(hosts.size()) * writes.bytes_per_rank) {
  if (storage == nullptr) throw std::logic_error("storage writes need the platform's storage host");
  comms_.resize(hosts.size());
  received_.resize(hosts.size());
  // 1. Every rank's writer sends its shard at once, from its host (a rate cap needs a mailbox
  //    communication: SimGrid 3.32 does not cap host-to-host ones).
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    s4u::Actor::create("checkpoint-writer", hosts[i], [this, i] {
      gate_->acquire();
      s4u::CommPtr comm = s4u::Mailbox::by_name("checkpoint" + std::to_string(i))
                              ->put_init(&total_bytes_, static_cast<std::uint64_t>(writes_.bytes_per_rank));
      if (writes_.rank_rate_cap_bytes_per_s > 0) comm->set_rate(writes_.rank_rate_cap_bytes_per_s);
      comms_[i] = comm;
      comm->start();
      comm->wait();
    });
  }
  // 2. The storage receives every shard; the checkpoint is durable when the last one is.
  s4u::Actor::create("checkpoint", storage, [this] {
    std::vector<s4u::CommPtr> gets;
    for (std::size_t i = 0; i < received_.size(); ++i)
      gets.push_back(s4u::Mailbox::by_name("checkpoint" + std::to_string(i))->get_async<double>(&received_[i]));
    for (const s4u::CommPtr& get : gets) get->wait();
    done_s_ = s4u::Engine::get_clock();
  });
  if (start_now) start();
}

void StorageWriters::start() {
  if (start_s_ >= 0) return;
  start_s_ = s4u::Engine::get_clock();
  for (std::size_t i = 0; i < comms_.size(); ++i) gate_->release();
}

void StorageWriters::training_ended() {
  training_end_s_ = s4u::Engine::get_clock();
  remaining_at_training_end_ = 0;
  for (const s4u::CommPtr& comm : comms_)
    if (comm) remaining_at_training_end_ += comm->get_remaining();
}

Seconds StorageWriters::write_s() const {
  if (done_s_ < 0) throw std::logic_error("storage writes never finished");
  // Outlasting training: at the rate the writes had while it ran (they sped up once it stopped).
  const double written = total_bytes_ - remaining_at_training_end_;
  if (training_end_s_ > start_s_ && remaining_at_training_end_ > 0 && written > 0)
    return (training_end_s_ - start_s_) * total_bytes_ / written + writes_.latency_s;
  return done_s_ - start_s_ + writes_.latency_s;
}

}  // namespace tandem::sim
