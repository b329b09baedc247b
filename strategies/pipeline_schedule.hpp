// Pipeline-parallel schedules as pure logic: which forward and backward passes each pipeline
// stage runs in one iteration, and in what order. No runtime, no backend, no timing — a
// strategy (the 3D hybrid) walks the action list and issues the compute and send/recv ops.
//
// Vocabulary (Megatron-LM, Narayanan et al. 2021, arXiv 2104.04473):
//   p  pipeline stages (ranks of one pipeline), stage s in 0..p-1;
//   m  micro-batches per iteration (per pipeline), micro-batch 0..m-1;
//   v  model chunks per stage (virtual pipeline size), chunk c in 0..v-1. Chunk c of stage s
//      is the global virtual stage k = c*p + s (Megatron's interleaving: stage s holds layer
//      blocks s, s+p, s+2p, ...). v = 1 for GPipe and 1F1B.
//
// Orders (what pipeline_actions returns for stage s):
//   GPipe        all m forwards in micro-batch order 0..m-1, then all m backwards in the same
//                order 0..m-1 (FIFO, as torch.distributed.pipelining's ScheduleGPipe does; the
//                iteration time is the same for either backward order).
//   1F1B         Megatron's forward_backward_pipelining_without_interleaving: w = min(p-s-1, m)
//                warm-up forwards, then m-w steady (forward w+i, backward i) pairs, then w
//                cool-down backwards. Micro-batches in order 0..m-1 both ways.
//   interleaved  Megatron's forward_backward_pipelining_with_interleaving. The stage runs
//                M = m*v "virtual micro-batches"; the k-th forward (k = 0..M-1) is
//                  chunk (k / p) % v, micro-batch (k / (p*v))*p + k % p
//                and the k-th backward is
//                  chunk v-1 - (k / p) % v, micro-batch (k / (p*v))*p + k % p,
//                i.e. groups of p micro-batches go through chunk 0, 1, .., v-1 forward and
//                v-1, .., 0 backward. Warm-up w = min((p-s-1)*2 + (v-1)*p, M) forwards, except
//                w = M when m == p (Megatron runs all forwards first then); then M-w steady
//                (forward w+i, backward i) pairs, then w cool-down backwards.
//                Requires v >= 2 and m % p == 0 (as Megatron-LM).
//   zb_h1        ZB-H1 of Qi et al. 2023, "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241,
//                section 3.1): each backward is split into B (the input gradient the previous
//                stage waits for) and W (the weight gradients, needed by nobody downstream), and
//                the W passes are moved into what would be the pipeline's bubbles, under 1F1B's
//                peak memory: stage s runs 1F1B's order of F and B, and after B_i the W of
//                micro-batch i-s (the last s W passes after its last B). A later stage, which
//                holds fewer micro-batches in 1F1B (p-s), so holds s more W passes, at most p
//                micro-batches between F and W as 1F1B's first stage; it sends its input
//                gradients back without waiting for weight gradients, and the earlier stages'
//                cool-down shortens. v = 1; the order does not depend on the F/B/W durations.
//   zb_v         ZB-V of the same paper (section 6): v = 2 chunks per stage placed in a V, chunk 0
//                of stage s is virtual stage s and chunk 1 is virtual stage 2p-1-s, so the first
//                stage holds the embedding and the loss, and the last stage passes its chunk 0's
//                output to its own chunk 1 without communication. Backwards split into B and W as
//                zb_h1. The order is built by strategies/zero_bubble_v.hpp's unit-time list
//                scheduler under 1F1B's peak activation memory (2p chunk sets = p stages' worth),
//                so it depends on p and m only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

enum class PipelineSchedule { gpipe, one_f_one_b, interleaved_1f1b, zb_h1, zb_v };

// "gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_v".
const char* to_string(PipelineSchedule schedule);
// Inverse of to_string; std::invalid_argument for anything else.
PipelineSchedule parse_pipeline_schedule(const std::string& name);

struct PipelineAction {
  // weight: the W pass of a split backward (zb_h1, zb_v); a schedule without it runs whole backwards.
  enum class Kind { forward, backward, weight } kind;
  int micro_batch;  // 0..m-1
  int chunk;        // model chunk held by this stage, 0..v-1 (virtual_stage says which)

  bool operator==(const PipelineAction&) const = default;
};

const char* to_string(PipelineAction::Kind kind);  // "F" / "B" / "W"
// Whether the schedule splits backwards into B and W actions.
bool splits_backward(PipelineSchedule schedule);

// The global virtual stage of chunk `chunk` on stage `stage` (c*p + s; zb_v: s or 2p-1-s), and
// back: the stage that holds virtual stage k, and which of its chunks it is.
int virtual_stage(PipelineSchedule schedule, int chunk, int stage, int stages);
int stage_of_virtual_stage(PipelineSchedule schedule, int virtual_stage, int stages);
int chunk_of_virtual_stage(PipelineSchedule schedule, int virtual_stage, int stages);

// Throws std::invalid_argument (the message names the knob) unless p >= 1, m >= 1, and v == 1
// for GPipe, 1F1B and ZB-H1, v >= 2 and m % p == 0 for interleaved, v == 2 for ZB-V. The
// functions below that take a stage also require 0 <= stage < p.
void validate_pipeline(PipelineSchedule schedule, int stages, int micro_batches, int chunks);

// Forwards a stage runs before its first backward (GPipe: m; 1F1B: min(p-s-1, m); interleaved:
// see above). The first backward follows right after the forward that comes next, if any.
int warmup_forwards(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                    int chunks);

// Where a schedule's iteration becomes periodic in its micro-batch count m: from m = `from` on,
// `period` more micro-batches add the same time to every stage and nothing to its peak memory
// (1F1B: from p, period 1, once every stage has its full warm-up; interleaved: from 2p, period p,
// as stage 0's 2(p-1) + (v-1)p warm-up chunks then fit in its m*v and counts are multiples of p).
// GPipe never is (its memory grows with m): nullopt.
struct SteadyState {
  std::int64_t from = 0;
  std::int64_t period = 1;
};
std::optional<SteadyState> steady_state(PipelineSchedule schedule, int stages);

// The ordered forward/backward actions of stage `stage` in one iteration: 2*m*v actions, every
// (micro_batch, chunk) once forward and once backward, the backward after the forward (zb_h1:
// 3*m, each backward followed later by its W).
std::vector<PipelineAction> pipeline_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches, int chunks);

// Analytic bubble with all stages equally fast and free communication (Narayanan et al. 2021,
// section 2.2): with t_f, t_b the forward/backward time of one micro-batch on one whole stage,
// the ideal time is m*(t_f+t_b) and the bubble (idle time of a stage) is
//   GPipe, 1F1B:  (p-1)*(t_f+t_b)           -> bubble / ideal = (p-1)/m
//   interleaved:  (p-1)*(t_f+t_b)/v         -> bubble / ideal = (p-1)/(v*m)
//   zb_h1:        (p-1)*(t_f+t_b-t_w), t_b and t_w the two halves of the backward: with the
//                 paper's t_f = t_b = t_w, (p-1)/(3m)
//   zb_v:         what its own order leaves idle with t_f = t_b = t_w (strategies/zero_bubble_v.hpp)
// (each chunk takes t_f/v, t_b/v, so the fill and drain shrink by v).
double bubble_time_over_ideal(PipelineSchedule schedule, int stages, int micro_batches,
                              int chunks);
// Bubble as a fraction of the iteration time: bubble / (bubble + ideal) =
//   GPipe, 1F1B: (p-1)/(m+p-1);  interleaved: (p-1)/(v*m+p-1).
double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches, int chunks);

// Peak number of (micro-batch, chunk) activation sets the stage holds at once when it runs
// `actions` in order: a forward adds one, a backward (a W, when the schedule splits backwards)
// releases one; the maximum over time of the
// total over all chunks. For v = 1 this is micro-batches (GPipe: m; 1F1B: min(m, p-s)); with
// v chunks each set is one chunk's activations (1/v of the stage's layers), e.g. interleaved
// stage 0 with m > p holds (v-1)*p + 2*(p-1) + 1 chunk sets = p + (p-1)/v stages' worth.
int max_in_flight_micro_batches(const std::vector<PipelineAction>& actions);
// The same peak counted for each chunk on its own (max over time of that chunk's sets); size v.
std::vector<int> max_in_flight_per_chunk(const std::vector<PipelineAction>& actions, int chunks);

}  // namespace tandem
