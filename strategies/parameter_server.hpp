// Parameter servers, synchronous: the workers' gradient all-reduce replaced by push and pull
// through server ranks (Li et al. 2014, "Scaling Distributed Machine Learning with the Parameter
// Server", OSDI; BytePS's summation service, Jiang et al. 2020, OSDI), written once against the
// per-rank interface.
//
// Worker side (PushPullExchange, a GradientCodec that data parallelism drives as it drives a
// compression codec): each gradient tensor of a bucket is cut into partitions of at most
// parameter_server_partition_bytes (BytePS's default 4 MB), each summed by one server, given in
// push order to the server holding the fewest elements so far. As soon as the bucket is full
// (during backward) the worker pushes each partition to its server (point-to-point sends of part
// of the gradient, on the data-parallel stream); once backward is issued it pulls each back
// (receives into the same part), so the gradient then holds the sum over the workers, as an
// all-reduce would leave it. Both sides move a bucket in S steps, worker w talking to server
// (w + k) mod S in step k: a fixed order on each side (a stream runs its transfers one after the
// other) that never has a worker wait for a server busy with another while its own server idles
// (measured: pushing in tensor order, one server after the other, made a step of GPT-2 1.5B on
// 8 + 8 H100 6.6x slower). Every worker then steps its own optimizer on the same sums, as in
// synchronous data parallelism: servers sum, they hold no optimizer state (BytePS's design: the
// optimizer stays on the GPUs).
//
// Server side (ServerProgram): the server learns what it will receive by playing one worker's
// step on a NullRuntime and keeping the pushes addressed to it, so its buckets are the workers'
// by construction. Per bucket: receive each worker's partitions in the exchange's order, the first
// into the sum, the others into a scratch buffer added to it (the receives on one stream: a
// server's ingress is its NIC), then send the sums to every worker on another stream (so a worker
// still pushing never waits for a pull). Each server holds twice its share of the gradients.
//
// Bounded staleness s >= 1 (stale-synchronous parallel, Ho et al. 2013, "More Effective
// Distributed ML via a Stale Synchronous Parallel Parameter Server", NIPS, taken at its bound so
// that it is deterministic): a worker pushes step t's gradients as above, but at the start of step t
// it pulls the sums of step t - s into a buffer of its own, while its forward and backward run, and
// its optimizer then steps on them (the first s steps make no update). The pull no longer sits
// between backward and the optimizer; the price is an update s steps old (measured on the CPU
// backend: tests/exec/cpu/parameter_server_training_test.cpp). A server keeps s + 1 sums per
// partition (step t's in slot t mod (s + 1)); those of the s steps not yet pulled are training
// state, saved in checkpoints as "ps.pending<slot>.<bucket>" (the bucket's elements in order).
// Servers that step the optimizer (ParallelConfig::parameter_server_optimizer, synchronous only):
// each server runs AdamW on its partitions of the sums once complete (it holds their fp32 values,
// and for 16-bit parameters an fp32 master, and the moments, placed as the parameters' parts) and
// sends the partitions' parameters back; the workers pull them into their parameters and make no
// optimizer step (GradientCodec::updates_parameters). It learns each pushed gradient's parameter
// from the names the worker allocates on its NullRuntime ("<p>.grad" is p's) and their placements.
// Asynchronous servers (ParallelConfig::parameter_server_asynchronous; Downpour SGD, Dean et al.
// 2012): the workers are those of servers that step the optimizer, unchanged (push during
// backward, pull the parameters after it); each server instead takes one worker's push at a time
// in the order of strategies/parameter_server_order.hpp (each worker once per step of the run, a
// faster one earlier), steps AdamW on it alone and sends that worker its partitions' parameters as
// they are then. So a worker's next step starts from parameters that other workers' updates,
// applied meanwhile, made newer or that its own made stale: staleness as it comes, unbounded. A
// server's iteration t takes the pushes of order[tW, (t+1)W). Its partitions' values are sent
// before the next update overwrites them (the next AdamW waits for the send).
// Not modeled for synchronous and stale servers: a worker running ahead of a slower one (the
// server takes each step's pushes in a fixed order).
//
// In the simulator the pushes of every worker meet at the server's links (incast) and its pulls
// leave through them; the servers are ranks after the workers, on the cluster's next devices.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "strategies/compression/gradient_codec.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// Point-to-point tags of the exchange (distinct from pipeline transfers' between the same pair).
inline constexpr int kPushTag = 0x5053;  // "PS"
inline constexpr int kPullTag = 0x5054;

// The worker's side: `servers` are the server ranks; gradients go in partitions of at most
// `partition_bytes`; updates `staleness` steps old (0: synchronous); `servers_step`: the servers
// step the optimizer and the pulls bring parameters (GradientCodec::updates_parameters);
// `asynchronous`: the servers serve one worker at a time (every worker visits them in rank order).
std::unique_ptr<GradientCodec> make_push_pull_exchange(std::vector<int> servers, std::int64_t partition_bytes,
                                                       int staleness, bool servers_step = false,
                                                       bool asynchronous = false);

// Servers that step the optimizer (ParallelConfig::parameter_server_optimizer): AdamW's settings
// and the gradients' scale (1 / micro-batches in the global batch, as a worker's step has it).
// Asynchronous servers (ParallelConfig::parameter_server_asynchronous) apply each worker's push
// alone, in the order asynchronous_push_order draws from these, each scaled by 1 / its worker's
// micro-batches (the mean gradient of its share of the batch, as a one-replica step has it).
struct AsynchronousPushes {
  std::vector<double> step_s;       // per worker: its step's relative duration (micro-batches / speed)
  double jitter = 0;
  std::uint64_t seed = 0;
  std::vector<float> grad_scale;    // per worker
};
struct ServerOptimizer {
  TrainingConfig training;
  float grad_scale = 1.0f;
  std::optional<AsynchronousPushes> asynchronous;
};

// The server's program. `make_worker` makes worker 0's program (played once on a NullRuntime to
// learn the pushes and, with an optimizer, each pushed gradient's parameter); `workers` are ranks
// 0..workers-1; `world` every rank.
std::unique_ptr<RankProgram> make_server_program(std::function<std::unique_ptr<RankProgram>()> make_worker,
                                                 int rank, int workers, int world, int staleness,
                                                 std::optional<ServerOptimizer> optimizer = std::nullopt);

// Throws StrategyError("strategy.parameter_servers") for what synchronous parameter servers do not
// combine with: gradient compression and local SGD (they replace the same all-reduce). ZeRO is
// data_parallel's own refusal (it keeps whole optimizer state).
void check_parameter_servers(const ParallelConfig& parallel);

}  // namespace tandem
