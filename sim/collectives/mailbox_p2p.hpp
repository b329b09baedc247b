// PointToPoint on SimGrid mailboxes, one per (channel, sender, receiver): what a collective needs
// to run alone, without the simulated device (the simulated nccl-tests, the collective tests).
#pragma once

#include <simgrid/s4u.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "sim/collectives/collective.hpp"

namespace tandem::sim {

class MailboxPointToPoint final : public PointToPoint {
 public:
  explicit MailboxPointToPoint(int me) : me_(me) {}
  simgrid::s4u::CommPtr send_async(int dst_rank, Bytes bytes, const std::string& channel) override {
    return box(channel, me_, dst_rank)->put_async(&token_, static_cast<std::uint64_t>(std::llround(bytes)));
  }
  simgrid::s4u::CommPtr recv_async(int src_rank, Bytes, const std::string& channel) override {
    return box(channel, src_rank, me_)->get_async<void>(&sink_);
  }

 private:
  static simgrid::s4u::Mailbox* box(const std::string& channel, int src, int dst) {
    return simgrid::s4u::Mailbox::by_name(channel + ":" + std::to_string(src) + ">" + std::to_string(dst));
  }
  int me_;
  int token_ = 0;
  void* sink_ = nullptr;
};

}  // namespace tandem::sim
