#include "strategies/parameter_server.hpp"

#include <algorithm>
#include <string>

#include "strategies/null_runtime.hpp"
#include "strategies/ops.hpp"

namespace tandem {

namespace {

// The order of a bucket's transfers, the same on both sides so that no worker or server waits
// for a partner busy elsewhere: in step k worker w talks to server (w + k) mod S, which in that
// step serves every worker w' with (w' + k) mod S equal to its index, in rank order; a pair
// moves the bucket's partitions the server sums in bucket order. With as many workers as servers
// each step pairs them one to one (a server's link busy all along); with more workers a server
// serves W/S of them per step, its link the bottleneck as it is in a real incast.
int server_at_step(int worker, int step, int servers) { return (worker + step) % servers; }

// ---- the worker's side ----

// Part of a bucket's gradient tensor that one server sums.
struct Piece {
  std::size_t tensor = 0;
  std::int64_t offset = 0, numel = 0;
  int server = 0;
};

class PushPullExchange final : public GradientCodec {
 public:
  PushPullExchange(std::vector<int> servers, std::int64_t partition_bytes)
      : servers_(std::move(servers)), partition_bytes_(partition_bytes), load_(servers_.size(), 0) {}

  // Round 0 pushes (during backward), round 1 pulls (once backward is issued).
  int rounds() const override { return 2; }

  Handle round(Runtime& rt, int round, const CodecBucket& b, Handle previous) override {
    const std::vector<Piece>& pieces = pieces_.get(b.label, [&] { return partition(b.gradients); });
    const int count = static_cast<int>(servers_.size());
    Handle last = previous;
    for (int step = 0; step < count; ++step) {
      const int server = servers_[static_cast<std::size_t>(server_at_step(rt.rank(), step, count))];
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        if (p.server != server) continue;
        const std::string label = b.label + (round == 0 ? ".push" : ".pull") + std::to_string(i);
        const Tensor& g = b.gradients[p.tensor];
        if (round == 0)
          last = ops::send_part(rt, Phase::backward, label, g, p.offset, p.numel, server, on_dp_stream(rt), kPushTag);
        else
          last = ops::recv_part(rt, Phase::backward, label, g, p.offset, p.numel, server,
                                Issue{Stream::dp_comm, {last}}, kPullTag);
      }
    }
    return last;
  }

  // The pulls wrote the sums into the gradients: the optimizer may read them once they are in.
  void finish(Runtime& rt, const CodecBucket&, Handle last) override { rt.wait(last); }

 private:
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
  std::vector<std::int64_t> load_;        // elements given to each server so far
  BucketStates<std::vector<Piece>> pieces_;  // per bucket: its partitions and their servers
};

// ---- the server's side ----

// The partitions of one bucket this server sums, in bucket order (as worker 0 pushed them here).
struct OwnedBucket {
  std::string label;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<Tensor> sums, scratch;
};

class ServerProgram final : public RankProgram {
 public:
  ServerProgram(std::function<std::unique_ptr<RankProgram>()> make_worker, int rank, int workers, int world)
      : make_worker_(std::move(make_worker)), rank_(rank), workers_(workers), world_(world) {}

  void setup(Runtime& rt) override {
    // 1. What worker 0 pushes here in one step, bucket by bucket (every worker pushes the same).
    NullRuntime null(world_);
    null.on_communicate = [&](const CommOp& op) {
      if (op.kind != OpKind::send || op.peer != rank_ || op.tag != kPushTag) return;
      const std::string bucket = op.label.substr(0, op.label.rfind(".push"));
      if (buckets_.empty() || buckets_.back().label != bucket) buckets_.push_back({bucket, {}, {}, {}, {}});
      buckets_.back().shapes.push_back({op.buffer_range().second});  // the part this server sums
      buckets_.back().dtypes.push_back(op.buffer.dtype);
    };
    const std::unique_ptr<RankProgram> worker = make_worker_();
    worker->setup(null);
    worker->train_step(null, 0);
    // 2. A sum and a scratch buffer per tensor.
    for (OwnedBucket& b : buckets_)
      for (std::size_t t = 0; t < b.shapes.size(); ++t) {
        const std::string name = b.label + ".served" + std::to_string(t);
        b.sums.push_back(rt.alloc(name + ".sum", b.shapes[t], b.dtypes[t], MemCategory::comm_buffers));
        b.scratch.push_back(rt.alloc(name + ".scratch", b.shapes[t], b.dtypes[t], MemCategory::comm_buffers));
      }
  }

  void train_step(Runtime& rt, int) override {
    for (OwnedBucket& b : buckets_) {
      // Pushes: the first worker's starts each sum, the others land in the scratch buffer,
      // which the previous addition must have read first.
      std::vector<Handle> summed(b.sums.size());
      std::vector<bool> started(b.sums.size(), false);
      for_each_worker([&](int w) {
        for (std::size_t t = 0; t < b.sums.size(); ++t) {
          const std::string label = b.label + ".served" + std::to_string(t);
          const Tensor& into = started[t] ? b.scratch[t] : b.sums[t];
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
          summed[t] = ops::elementwise(rt, Phase::backward, label + ".add" + std::to_string(w), {b.sums[t], into},
                                       {b.sums[t]}, add, Issue{Stream::compute, {got}});
        }
      });
      // Pulls, in the same order, each sum once it is complete.
      for_each_worker([&](int w) {
        for (std::size_t t = 0; t < b.sums.size(); ++t)
          ops::send(rt, Phase::backward, b.label + ".served" + std::to_string(t) + ".to" + std::to_string(w),
                    b.sums[t], w, Issue{Stream::pp_send, {summed[t]}}, kPullTag);
      });
    }
    // The sums are next step's receive buffers: every pull must have left.
    rt.synchronize();
  }

 private:
  // The workers this server serves, in the exchange's order (server_at_step).
  template <class Visit>
  void for_each_worker(Visit&& visit) const {
    const int servers = world_ - workers_, index = rank_ - workers_;
    for (int step = 0; step < servers; ++step)
      for (int w = 0; w < workers_; ++w)
        if (server_at_step(w, step, servers) == index) visit(w);
  }

  std::function<std::unique_ptr<RankProgram>()> make_worker_;
  int rank_, workers_, world_;
  std::vector<OwnedBucket> buckets_;
};

}  // namespace

std::unique_ptr<GradientCodec> make_push_pull_exchange(std::vector<int> servers, std::int64_t partition_bytes) {
  return std::make_unique<PushPullExchange>(std::move(servers), partition_bytes);
}

std::unique_ptr<RankProgram> make_server_program(std::function<std::unique_ptr<RankProgram>()> make_worker,
                                                 int rank, int workers, int world) {
  return std::make_unique<ServerProgram>(std::move(make_worker), rank, workers, world);
}

void check_parameter_servers(const ParallelConfig& parallel) {
  if (parallel.parameter_servers == 0) return;
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
