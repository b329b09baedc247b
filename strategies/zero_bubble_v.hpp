// The ZB-V pipeline order (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241, its
// ZB-V schedule): every stage holds two model chunks placed in a V (chunk 0 of stage s is virtual
// stage s, chunk 1 is virtual stage 2p-1-s), backwards split into B (input gradients) and W
// (weight gradients). The authors' figures for it, with t_F = t_B = t_W: no bubble, 1F1B's
// activation memory, twice 1F1B's pipeline traffic.
//
// The order is found as the paper finds its automatic schedules: by a list scheduler over unit
// times (every F, B and W of one chunk takes 1), each stage doing at every step the first of
//   1. a B whose inputs are there (the earliest micro-batch, then the later virtual stage),
//   2. an F whose input is there, while the stage holds fewer than p activation sets of that
//      chunk (2p chunk sets in all: 1F1B's first stage, p micro-batches of the whole stage);
//      chunk 1's first, since it brings a micro-batch to its loss and so to its B,
//   3. the oldest W not yet run (a W releases its chunk's activations),
// and idling otherwise. It keeps to what a runtime can run without deadlock: a stage's sends
// go out in order on one stream per direction (Stream::pp_send, pp_send_prev), each done when
// its receiver takes it, so a message can be taken only after the earlier ones of its stream;
// an activation's room at its receiver is reserved when it is sent, so the oldest message can
// always be taken. With t_F = t_B = t_W its idle time is half of ZB-H1's (tests sweep p, m);
// the paper's hand-tuned ZB-V idles less. The result depends on (p, m) only, as a schedule
// must for every rank to agree on it; the per-stage lists are what PipelineSchedule::zb_v runs.
#pragma once

#include <memory>
#include <vector>

#include "strategies/pipeline_schedule.hpp"

namespace tandem {

struct ZeroBubbleV {
  std::vector<std::vector<PipelineAction>> stages;  // per stage, its 6m actions in order
  int makespan_units = 0;                           // the unit-time schedule's length (ideal: 6m)
};

// Throws std::invalid_argument for p < 1 or m < 1; std::logic_error if the list scheduler stalls
// (it does not for any p, m: tests/strategies/pipeline_schedule_test.cpp sweeps them). Each
// (p, m) is scheduled once per process and kept (every rank of every iteration asks for its
// stage's list: O(p·m) work each time would be O(p²·m) per iteration at scale); thread-safe.
std::shared_ptr<const ZeroBubbleV> zero_bubble_v(int stages, int micro_batches);

}  // namespace tandem
