#include "strategies/parameter_server.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "strategies/null_runtime.hpp"
#include "strategies/ops.hpp"
#include "strategies/parameter_server_order.hpp"

namespace tandem {

namespace {

// The order of a bucket's transfers, the same on both sides so that no worker or server waits
// for a partner busy elsewhere: in step k worker w talks to server (w + k) mod S, which in that
// step serves every worker w' with (w' + k) mod S equal to its index, in rank order; a pair
// moves the bucket's partitions the server sums in bucket order. With as many workers as servers
// each step pairs them one to one (a server's link busy all along); with more workers a server
// serves W/S of them per step, its link the bottleneck as it is in a real incast.
// Asynchronous servers serve one worker at a time in the same order, so every worker visits the
// servers in the same order too (server k in step k): the first worker's partitions flow through
// the servers one after the other and the next follows one server behind, a pipeline in which no
// worker waits for a server still busy with a worker it is itself behind (the rotation would make
// worker w wait at server w for every worker before it).
int server_at_step(int worker, int step, int servers, bool asynchronous) {
  return asynchronous ? step : (worker + step) % servers;
}

// ---- the worker's side ----

// Part of a bucket's gradient tensor that one server sums.
struct Piece {
  std::size_t tensor = 0;
  std::int64_t offset = 0, numel = 0;
  int server = 0;
};

class PushPullExchange final : public GradientCodec {
 public:
  PushPullExchange(std::vector<int> servers, std::int64_t partition_bytes, int staleness, bool servers_step,
                   bool asynchronous)
      : servers_(std::move(servers)), partition_bytes_(partition_bytes), staleness_(staleness),
        servers_step_(servers_step), asynchronous_(asynchronous), load_(servers_.size(), 0) {}

  bool updates_parameters() const override { return servers_step_; }
  void set_parameters(std::map<int, Tensor> parameter_of) override { parameter_of_ = std::move(parameter_of); }

  // Round 0 pushes (during backward); synchronous: round 1 pulls (once backward is issued).
  int rounds() const override { return staleness_ > 0 ? 1 : 2; }
  int update_delay() const override { return staleness_; }

  Handle round(Runtime& rt, int round, const CodecBucket& b, Handle previous) override {
    Bucket& bucket = bucket_of(b);
    if (round == 0) {
      // A bucket first seen in a stale step (the first step of a resumed run) pulls here.
      if (stale_step() && bucket.pulled_at != iteration_) pull_stale(rt, bucket);
      return transfer(rt, true, bucket, b.gradients, on_dp_stream(rt));
    }
    // Servers that step the optimizer send the parameters back: pulled into them.
    if (servers_step_) {
      std::vector<Tensor> parameters;
      for (const Tensor& g : b.gradients) parameters.push_back(parameter_of_.at(g.id));
      return transfer(rt, false, bucket, parameters, Issue{Stream::dp_comm, {previous}});
    }
    return transfer(rt, false, bucket, b.gradients, Issue{Stream::dp_comm, {previous}});
  }

  // Stale: the sums of step iteration - s, pulled into each bucket's own buffer while this step
  // computes (on a stream of their own: neither waits for the other's transfers).
  void begin_step(Runtime& rt, int iteration) override {
    iteration_ = iteration;
    if (!stale_step()) return;
    for (Bucket& bucket : order_) pull_stale(rt, bucket);
  }

  // Synchronous: the pulls wrote the sums into the gradients, which the optimizer may read once
  // they are in. Stale: the pulled sums replace the gradients once this step's pushes have read them.
  void finish(Runtime& rt, const CodecBucket& b, Handle last) override {
    if (staleness_ == 0) return rt.wait(last);
    if (!stale_step()) return;
    const Bucket& bucket = bucket_of(b);
    for (std::size_t t = 0; t < b.gradients.size(); ++t)
      ops::memcpy(rt, Phase::backward, b.label + ".stale" + std::to_string(t), bucket.pulled[t], b.gradients[t],
                  Issue{Stream::compute, {bucket.pull, last}});
  }

 private:
  // A bucket's partitions and, when stale, its pull buffer and the last pull into it.
  struct Bucket {
    std::string label;
    std::vector<Tensor> gradients;
    std::vector<Piece> pieces;
    std::vector<Tensor> pulled;
    Handle pull;
    int pulled_at = -1;  // the step that pulled into it last
  };

  // A step with an earlier step's sums to apply.
  bool stale_step() const { return staleness_ > 0 && iteration_ >= staleness_; }

  void pull_stale(Runtime& rt, Bucket& bucket) {
    if (bucket.pulled.empty())
      for (std::size_t t = 0; t < bucket.gradients.size(); ++t)
        bucket.pulled.push_back(rt.alloc(bucket.label + ".pulled" + std::to_string(t), bucket.gradients[t].shape,
                                         bucket.gradients[t].dtype, MemCategory::comm_buffers));
    bucket.pull = transfer(rt, false, bucket, bucket.pulled, Issue{Stream::pp_recv, {}});
    bucket.pulled_at = iteration_;
  }

  // The bucket's state, made (partitioned) at its first reduction; buckets kept in that order, the
  // order the server sends their sums in.
  Bucket& bucket_of(const CodecBucket& b) {
    for (Bucket& bucket : order_)
      if (bucket.label == b.label) return bucket;
    order_.push_back({b.label, b.gradients, partition(b.gradients), {}, {}, -1});
    return order_.back();
  }

  // Pushes (from `tensors`) or pulls (into them) the bucket's partitions in S steps, one per server:
  // worker w with server (w + k) mod S in step k; the pushes after `issue`'s dependencies, the
  // pulls one after the other from there.
  Handle transfer(Runtime& rt, bool push, const Bucket& bucket, const std::vector<Tensor>& tensors, Issue issue) {
    const int count = static_cast<int>(servers_.size());
    Handle last;
    for (int step = 0; step < count; ++step) {
      const int server = servers_[static_cast<std::size_t>(server_at_step(rt.rank(), step, count, asynchronous_))];
      for (std::size_t i = 0; i < bucket.pieces.size(); ++i) {
        const Piece& p = bucket.pieces[i];
        if (p.server != server) continue;
        const std::string label = bucket.label + (push ? ".push" : ".pull") + std::to_string(i);
        const Tensor& g = tensors[p.tensor];
        if (push) {
          last = ops::send_part(rt, Phase::backward, label, g, p.offset, p.numel, server, issue, kPushTag);
        } else {
          last = ops::recv_part(rt, Phase::backward, label, g, p.offset, p.numel, server, issue, kPullTag);
          issue = Issue{issue.stream, {last}};
        }
      }
    }
    return last;
  }

  // Each tensor cut into partitions of at most partition_bytes_ (BytePS's BYTEPS_PARTITION_BYTES:
  // a large tensor spread over the servers rather than on one), each to the server holding the
  // fewest elements so far (the lowest rank on a tie): the same on every worker, since every
  // worker sees the same buckets in the same order.
  std::vector<Piece> partition(const std::vector<Tensor>& gradients) {
    std::vector<Piece> pieces;
    for (std::size_t t = 0; t < gradients.size(); ++t) {
      const std::int64_t n = gradients[t].numel();
      const std::int64_t step = std::max<std::int64_t>(1, partition_bytes_ / dtype_bytes(gradients[t].dtype));
      for (std::int64_t offset = 0; offset < n; offset += step) {
        const auto least = std::min_element(load_.begin(), load_.end()) - load_.begin();
        const std::int64_t numel = std::min(step, n - offset);
        load_[static_cast<std::size_t>(least)] += numel;
        pieces.push_back({t, offset, numel, servers_[static_cast<std::size_t>(least)]});
      }
    }
    return pieces;
  }

  std::vector<int> servers_;
  std::int64_t partition_bytes_;
  int staleness_;
  bool servers_step_;
  bool asynchronous_;
  std::map<int, Tensor> parameter_of_;  // servers_step_: gradient id -> its parameter
  int iteration_ = 0;
  std::vector<std::int64_t> load_;  // elements given to each server so far
  std::deque<Bucket> order_;        // per bucket, in first-reduction order (stable references)
};

// ---- the server's side ----

// The partitions of one bucket this server sums, in bucket order (as worker 0 pushed them here).
struct OwnedBucket {
  std::string label;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::int64_t> pieces;  // each partition's index in the bucket (the push label's)
  std::int64_t numel = 0;            // the whole bucket's elements, every server's partitions
  std::vector<std::int64_t> offsets; // where each partition sits in the bucket's elements
  std::vector<std::vector<Tensor>> sums;  // per slot (one per step in flight), per partition
  std::vector<Tensor> scratch;
  // Servers that step the optimizer: per partition, the worker's gradient it is part of, where
  // in it, and the partition's optimizer (the parameter's values it sends back, and AdamW's state).
  std::vector<int> gradient_ids;
  std::vector<std::int64_t> gradient_offsets;
  struct Step {
    Tensor values;                     // the partition's parameters as the workers hold them
    std::vector<Tensor> states;        // {master (16-bit parameters only), exp_avg, exp_avg_sq}
  };
  std::vector<Step> steps;
  // Asynchronous: per partition, a reply buffer per slot of an iteration (the values as that
  // worker's update left them) and the last update.
  std::vector<std::vector<Tensor>> replies;
  std::vector<Handle> applied;
};

class ServerProgram final : public RankProgram {
 public:
  ServerProgram(std::function<std::unique_ptr<RankProgram>()> make_worker, int rank, int workers, int world,
                int staleness, std::optional<ServerOptimizer> optimizer)
      : make_worker_(std::move(make_worker)), rank_(rank), workers_(workers), world_(world), staleness_(staleness),
        optimizer_(std::move(optimizer)) {}

  void setup(Runtime& rt) override {
    // 1. What worker 0 pushes here in one step, bucket by bucket (every worker pushes the same),
    //    and where each partition sits in its bucket: partitions are numbered in the bucket's
    //    element order (PushPullExchange::partition), whichever server they go to.
    NullRuntime null(world_);
    std::map<std::string, std::map<std::int64_t, std::int64_t>> sizes;  // bucket -> partition -> elements
    // What the worker allocates and places: each gradient's parameter, by name ("<p>.grad" is p's).
    std::map<int, std::string> names;
    std::map<std::string, Tensor> by_name;
    std::map<int, TensorPlacement> placements;
    null.on_alloc = [&](std::string_view name, const Tensor& t) {
      names[t.id] = std::string(name);
      by_name[std::string(name)] = t;
    };
    null.on_place = [&](const Tensor& t, const TensorPlacement& p) { placements[t.id] = p; };
    null.on_communicate = [&](const CommOp& op) {
      if (op.kind != OpKind::send || op.tag != kPushTag) return;
      const std::size_t at = op.label.rfind(".push");
      const std::string bucket = op.label.substr(0, at);
      const std::int64_t piece = std::stoll(op.label.substr(at + 5));
      sizes[bucket][piece] = op.buffer_range().second;
      if (op.peer != rank_) return;
      if (buckets_.empty() || buckets_.back().label != bucket) {
        buckets_.emplace_back();
        buckets_.back().label = bucket;
      }
      buckets_.back().shapes.push_back({op.buffer_range().second});  // the part this server sums
      buckets_.back().dtypes.push_back(op.buffer.dtype);
      buckets_.back().pieces.push_back(piece);
      buckets_.back().gradient_ids.push_back(op.buffer.id);
      buckets_.back().gradient_offsets.push_back(op.buffer_range().first);
    };
    const std::unique_ptr<RankProgram> worker = make_worker_();
    worker->setup(null);
    worker->train_step(null, 0);
    for (OwnedBucket& b : buckets_) {
      std::map<std::int64_t, std::int64_t> start;  // partition -> its first element in the bucket
      for (const auto& [piece, numel] : sizes.at(b.label)) {
        start[piece] = b.numel;
        b.numel += numel;
      }
      for (std::int64_t piece : b.pieces) b.offsets.push_back(start.at(piece));
    }
    // 2. Per partition a sum per step in flight and a scratch buffer. Stale sums not yet pulled
    //    are training state: placed as their part of a logical tensor per bucket and slot (the
    //    bucket's elements in order), so that a checkpoint holds them whatever the number of servers.
    // Asynchronous servers keep no sums: each push is applied alone from the scratch buffer.
    const bool sums = !asynchronous();
    for (OwnedBucket& b : buckets_) {
      if (sums) b.sums.resize(static_cast<std::size_t>(staleness_ + 1));
      for (std::size_t t = 0; t < b.shapes.size(); ++t) {
        const std::string name = b.label + ".served" + std::to_string(t);
        for (int slot = 0; sums && slot <= staleness_; ++slot) {
          const Tensor sum = rt.alloc(name + ".sum" + std::to_string(slot), b.shapes[t], b.dtypes[t],
                                      staleness_ > 0 ? MemCategory::optimizer_state : MemCategory::comm_buffers);
          if (staleness_ > 0) {
            TensorPlacement placement = whole_tensor("ps.pending" + std::to_string(slot) + "." + b.label, {b.numel});
            placement.flat_offset = b.offsets[t];
            rt.place(sum, placement);
          }
          b.sums[static_cast<std::size_t>(slot)].push_back(sum);
        }
        b.scratch.push_back(rt.alloc(name + ".scratch", b.shapes[t], b.dtypes[t], MemCategory::comm_buffers));
      }
      if (optimizer_) allocate_optimizer(rt, b, names, by_name, placements);
      if (!sums)
        for (std::size_t t = 0; t < b.shapes.size(); ++t) {
          const std::string name = b.label + ".served" + std::to_string(t) + ".reply";
          b.replies.emplace_back();
          for (int k = 0; k < workers_; ++k)
            b.replies.back().push_back(
                rt.alloc(name + std::to_string(k), b.shapes[t], b.steps[t].values.dtype, MemCategory::comm_buffers));
        }
    }
  }

  void plan_iterations(int first, int count) override {
    if (asynchronous()) plan_order(first + count);
  }

  void train_step(Runtime& rt, int iteration) override {
    if (asynchronous()) return apply_pushes_as_they_come(rt, iteration);
    const int slots = staleness_ + 1;
    // Stale: the sums of step iteration - s leave first, while this step's pushes come in (the
    // previous step's end saw them complete).
    if (staleness_ > 0 && iteration >= staleness_)
      for (OwnedBucket& b : buckets_) send_sums(rt, b, b.sums[static_cast<std::size_t>((iteration - staleness_) % slots)], {});
    for (OwnedBucket& b : buckets_) {
      std::vector<Tensor>& sums = b.sums[static_cast<std::size_t>(iteration % slots)];
      // Pushes: the first worker's starts each sum, the others land in the scratch buffer,
      // which the previous addition must have read first.
      std::vector<Handle> summed(sums.size());
      std::vector<bool> started(sums.size(), false);
      for_each_worker([&](int w) {
        for (std::size_t t = 0; t < sums.size(); ++t) {
          const std::string label = b.label + ".served" + std::to_string(t);
          const Tensor& into = started[t] ? b.scratch[t] : sums[t];
          const Handle got = ops::recv(rt, Phase::backward, label + ".from" + std::to_string(w), into, w,
                                       Issue{Stream::pp_recv, {summed[t]}}, kPushTag);
          if (!started[t]) {
            started[t] = true;
            summed[t] = got;
            continue;
          }
          ElementwiseArgs add;
          add.fn = ElementwiseFn::add;
          add.numel = into.numel();
          summed[t] = ops::elementwise(rt, Phase::backward, label + ".add" + std::to_string(w), {sums[t], into},
                                       {sums[t]}, add, Issue{Stream::compute, {got}});
        }
      });
      // Servers that step the optimizer: AdamW on each partition once its sum is complete, then
      // its parameters to every worker. Synchronous: the pulls, in the same order, each sum once it
      // is complete.
      if (optimizer_) {
        std::vector<Tensor> values;
        for (std::size_t t = 0; t < sums.size(); ++t) {
          const OwnedBucket::Step& step = b.steps[t];
          OptimizerArgs args;
          args.numel = sums[t].numel();
          args.lr = optimizer_->training.lr;
          args.weight_decay = optimizer_->training.weight_decay;
          args.grad_scale = optimizer_->grad_scale;
          args.step = static_cast<std::int64_t>(iteration) + 1;
          summed[t] = ops::adamw(rt, b.label + ".served" + std::to_string(t) + ".adamw", step.values, sums[t],
                                 step.states, args, Issue{Stream::compute, {summed[t]}});
          values.push_back(step.values);
        }
        send_sums(rt, b, values, summed);
      } else if (staleness_ == 0) {
        send_sums(rt, b, sums, summed);
      }
    }
    // The sums are next step's receive buffers: every pull must have left.
    rt.synchronize();
  }

 private:
  // Each partition's optimizer, placed as its part of the parameter's logical tensors (so that a
  // checkpoint holds the same tensors as a data-parallel run's): an fp32 parameter's values are
  // the parameter itself, a 16-bit one's are stepped from an fp32 "<p>.master".
  void allocate_optimizer(Runtime& rt, OwnedBucket& b, const std::map<int, std::string>& names,
                          const std::map<std::string, Tensor>& by_name, const std::map<int, TensorPlacement>& placements) {
    for (std::size_t t = 0; t < b.shapes.size(); ++t) {
      const std::string& gradient = names.at(b.gradient_ids[t]);
      constexpr std::string_view kGrad = ".grad";
      if (gradient.size() <= kGrad.size() || gradient.compare(gradient.size() - kGrad.size(), kGrad.size(), kGrad) != 0)
        throw std::logic_error("parameter server: pushed tensor '" + gradient + "' is no parameter's gradient");
      const Tensor& parameter = by_name.at(gradient.substr(0, gradient.size() - kGrad.size()));
      TensorPlacement part = placements.at(parameter.id);
      part.flat_offset += b.gradient_offsets[t];
      const std::string name = b.label + ".served" + std::to_string(t);
      auto placed = [&](const std::string& what, DType dtype, MemCategory category) {
        const Tensor tensor = rt.alloc(name + "." + what, b.shapes[t], dtype, category);
        TensorPlacement where = part;
        if (!what.empty() && what != "values") where.name += "." + what;
        rt.place(tensor, where);
        return tensor;
      };
      OwnedBucket::Step step;
      if (parameter.dtype == DType::fp32) {
        step.values = placed("values", DType::fp32, MemCategory::parameters);
      } else {
        step.values = rt.alloc(name + ".values", b.shapes[t], parameter.dtype, MemCategory::comm_buffers);
        step.states.push_back(placed("master", DType::fp32, MemCategory::optimizer_state));
      }
      step.states.push_back(placed("exp_avg", DType::fp32, MemCategory::optimizer_state));
      step.states.push_back(placed("exp_avg_sq", DType::fp32, MemCategory::optimizer_state));
      b.steps.push_back(std::move(step));
    }
  }

  bool asynchronous() const { return optimizer_ && optimizer_->asynchronous; }

  // The order of pushes for `steps` steps of every worker (a backend that does not plan its
  // iterations gets the order of the steps made so far).
  void plan_order(int steps) {
    const AsynchronousPushes& a = *optimizer_->asynchronous;
    order_ = asynchronous_push_order(a.step_s, steps, a.jitter, a.seed);
    planned_steps_ = steps;
  }

  // Asynchronous: the pushes of this iteration's slots, each applied alone as it comes (the
  // worker's partition into the scratch buffer, AdamW on it, a copy of the values back to that
  // worker). A server takes its partitions key by key as ps-lite's do: the slots are cut into runs
  // in which no worker appears twice, and a run goes bucket by bucket, each bucket's partitions
  // from the run's workers in slot order. So the next worker's first bucket comes in while this
  // one's last is still being computed (a worker pushes its buckets one after the other during
  // backward), and a worker's second slot waits for its first one's every bucket (it pushes again
  // only once it has pulled them all).
  void apply_pushes_as_they_come(Runtime& rt, int iteration) {
    if (iteration >= planned_steps_) plan_order(iteration + 1);
    const std::size_t first = static_cast<std::size_t>(iteration) * static_cast<std::size_t>(workers_);
    const std::size_t end = first + static_cast<std::size_t>(workers_);
    for (std::size_t run = first; run < end;) {
      std::size_t run_end = run;
      std::vector<bool> in_run(static_cast<std::size_t>(workers_), false);
      for (; run_end < end && !in_run[static_cast<std::size_t>(order_.at(run_end))]; ++run_end)
        in_run[static_cast<std::size_t>(order_.at(run_end))] = true;
      for (OwnedBucket& b : buckets_)
        for (std::size_t slot = run; slot < run_end; ++slot) apply_push(rt, b, slot, slot - first);
      run = run_end;
    }
    rt.synchronize();
    for (OwnedBucket& b : buckets_) b.applied.assign(b.applied.size(), Handle{});
  }

  // One worker's push of bucket `b` (slot `slot` of the run's order, the `k`-th of this iteration):
  // received, applied and answered partition by partition.
  void apply_push(Runtime& rt, OwnedBucket& b, std::size_t slot, std::size_t k) {
    const int w = order_.at(slot);
    b.applied.resize(b.shapes.size());
    for (std::size_t t = 0; t < b.shapes.size(); ++t) {
      const std::string label = b.label + ".served" + std::to_string(t);
      // The scratch buffer is free once the previous update has read it.
      const Handle got = ops::recv(rt, Phase::backward, label + ".from" + std::to_string(w), b.scratch[t], w,
                                   Issue{Stream::pp_recv, {b.applied[t]}}, kPushTag);
      OptimizerArgs args;
      args.numel = b.scratch[t].numel();
      args.lr = optimizer_->training.lr;
      args.weight_decay = optimizer_->training.weight_decay;
      args.grad_scale = optimizer_->asynchronous->grad_scale.at(static_cast<std::size_t>(w));
      args.step = static_cast<std::int64_t>(slot) + 1;  // the partition's updates so far, this one included
      b.applied[t] = ops::adamw(rt, label + ".adamw", b.steps[t].values, b.scratch[t], b.steps[t].states, args,
                                Issue{Stream::compute, {got}});
      // The reply is a copy of the values, one buffer per slot of the iteration: the next update
      // must not wait for this worker's pull (which comes only after its whole backward).
      const Tensor& reply = b.replies[t].at(k);
      const Handle copied = ops::memcpy(rt, Phase::backward, label + ".reply", b.steps[t].values, reply,
                                        Issue{Stream::compute, {b.applied[t]}});
      ops::send(rt, Phase::backward, label + ".to" + std::to_string(w), reply, w, Issue{Stream::pp_send, {copied}},
                kPullTag);
    }
  }

  // Every worker's pull of the bucket's sums, in the exchange's order, each after `ready` (its
  // sum's last addition; none: complete already).
  void send_sums(Runtime& rt, const OwnedBucket& b, const std::vector<Tensor>& sums, const std::vector<Handle>& ready) {
    for_each_worker([&](int w) {
      for (std::size_t t = 0; t < sums.size(); ++t)
        ops::send(rt, Phase::backward, b.label + ".served" + std::to_string(t) + ".to" + std::to_string(w), sums[t],
                  w, Issue{Stream::pp_send, ready.empty() ? std::vector<Handle>{} : std::vector<Handle>{ready[t]}},
                  kPullTag);
    });
  }

  // The workers this server serves, in the exchange's order (server_at_step).
  template <class Visit>
  void for_each_worker(Visit&& visit) const {
    const int servers = world_ - workers_, index = rank_ - workers_;
    for (int step = 0; step < servers; ++step)
      for (int w = 0; w < workers_; ++w)
        if (server_at_step(w, step, servers, false) == index) visit(w);
  }

  std::function<std::unique_ptr<RankProgram>()> make_worker_;
  int rank_, workers_, world_, staleness_;
  std::optional<ServerOptimizer> optimizer_;
  std::vector<OwnedBucket> buckets_;
  std::vector<int> order_;  // asynchronous: the workers in the order their pushes are applied
  int planned_steps_ = 0;
};

}  // namespace

std::unique_ptr<GradientCodec> make_push_pull_exchange(std::vector<int> servers, std::int64_t partition_bytes,
                                                       int staleness, bool servers_step, bool asynchronous) {
  return std::make_unique<PushPullExchange>(std::move(servers), partition_bytes, staleness, servers_step,
                                            asynchronous);
}

std::unique_ptr<RankProgram> make_server_program(std::function<std::unique_ptr<RankProgram>()> make_worker,
                                                 int rank, int workers, int world, int staleness,
                                                 std::optional<ServerOptimizer> optimizer) {
  return std::make_unique<ServerProgram>(std::move(make_worker), rank, workers, world, staleness, std::move(optimizer));
}

namespace {

// Servers that step the optimizer (asked for at `field`, `who` in the messages): they need servers,
// take no staleness (`why_no_staleness`) and leave the workers no optimizer to offload.
void check_servers_step(const ParallelConfig& parallel, const std::string& field, const std::string& who,
                        const std::string& why_no_staleness) {
  if (parallel.parameter_servers == 0) throw StrategyError(field, who + " need parameter_servers");
  if (parallel.parameter_server_staleness != 0) throw StrategyError(field, who + " " + why_no_staleness);
  if (parallel.offload_optimizer) throw StrategyError(field, "the workers keep no optimizer to offload");
}

}  // namespace

void check_parameter_servers(const ParallelConfig& parallel) {
  if (parallel.parameter_server_asynchronous) {
    check_servers_step(parallel, "strategy.parameter_server_asynchronous", "asynchronous servers",
                       "bound no staleness: parameter_server_staleness must be 0");
  } else if (parallel.parameter_server_jitter != 0 || parallel.parameter_server_seed != 0) {
    throw StrategyError(parallel.parameter_server_jitter != 0 ? "strategy.parameter_server_jitter"
                                                              : "strategy.parameter_server_seed",
                        "the order of pushes is drawn for asynchronous servers only (parameter_server_asynchronous)");
  }
  if (!(parallel.parameter_server_jitter >= 0) || !std::isfinite(parallel.parameter_server_jitter))
    throw StrategyError("strategy.parameter_server_jitter", "must be 0 or more");
  if (parallel.parameter_server_optimizer)
    check_servers_step(parallel, "strategy.parameter_server_optimizer", "servers that step the optimizer",
                       "are built synchronous (parameter_server_staleness 0)");
  if (parallel.parameter_servers == 0) {
    if (parallel.parameter_server_staleness != 0)
      throw StrategyError("strategy.parameter_server_staleness", "bounded staleness needs parameter_servers");
    return;
  }
  if (parallel.parameter_server_staleness < 0)
    throw StrategyError("strategy.parameter_server_staleness", "must be 0 (synchronous) or more");
  if (parallel.parameter_servers < 0)
    throw StrategyError("strategy.parameter_servers", "must be 0 (none) or more");
  if (parallel.parameter_server_partition_bytes < 1)
    throw StrategyError("strategy.parameter_server_partition_bytes", "must be at least 1 byte");
  if (parallel.gradient_compression.enabled())
    throw StrategyError("strategy.parameter_servers",
                        "parameter servers replace the gradient all-reduce that gradient_compression encodes: use one");
  if (parallel.local_sgd_steps > 1)
    throw StrategyError("strategy.parameter_servers", "parameter servers sum every step: local SGD (local_sgd_steps) "
                                                      "does not combine with them");
}

}  // namespace tandem
