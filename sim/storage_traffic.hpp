// Checkpoint writes as SimGrid flows (SimulationOptions::storage_writes): every rank's shard goes
// from its device's host to the platform's storage host at once, so the writes share the NICs,
// uplinks and the storage's link with each other (max-min, as every flow of the platform) and
// with whatever training traffic runs beside them.
#pragma once

#include <simgrid/s4u.hpp>

#include <vector>

#include "sim/simulation.hpp"

namespace tandem::sim {

class StorageWriters {
 public:
  // Creates a writer actor on each host, sending its shard (`bytes_per_rank`, capped at
  // `rank_rate_cap_bytes_per_s` when set), and an actor on `storage` receiving them all.
  // With `start_now` false the writers wait for start().
  StorageWriters(const std::vector<simgrid::s4u::Host*>& hosts, simgrid::s4u::Host* storage, const StorageWrites& writes,
                 bool start_now);

  // Releases the writers (now, in simulated time): the first measured iteration has begun.
  void start();

  // Training has ended (now, in simulated time): how much was still to write is noted, to
  // extrapolate the writes' rate under training.
  void training_ended();
  // After the engine ran: SimulationResult::storage_write_s.
  Seconds write_s() const;

 private:
  StorageWrites writes_;
  std::vector<simgrid::s4u::CommPtr> comms_;  // each rank's shard, as its writer started it
  std::vector<double*> received_;
  simgrid::s4u::SemaphorePtr gate_;
  double start_s_ = -1;
  double total_bytes_ = 0;
  double training_end_s_ = -1;
  double remaining_at_training_end_ = 0;
  double done_s_ = -1;
};

}  // namespace tandem::sim
