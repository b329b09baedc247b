#include "sim/sim_device.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <variant>

#include "sim/comm_contention.hpp"
#include "sim/cost_model.hpp"
#include "sim/platform_builder.hpp"

namespace tandem::sim {

namespace s4u = simgrid::s4u;

namespace {
// Transfers carry no real data; every message points at the same byte, and every receive
// writes into the same sink (actors are cooperative: no data race).
int kPayload = 0;
void* g_receive_sink = nullptr;

std::string mailbox_name(const std::string& channel, int src, int dst) {
  return channel + ":" + std::to_string(src) + ">" + std::to_string(dst);
}

// Length of the overlap of [a0, a1] and [b0, b1].
Seconds overlap(Seconds a0, Seconds a1, Seconds b0, Seconds b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}
}  // namespace

SimDevice::SimDevice(int rank, SimulationContext& context)
    : rank_(rank),
      context_(context),
      device_(context.cluster->device_of(rank)),
      host_(context.hosts.at(rank)),
      mutex_(s4u::Mutex::create()),
      op_done_(s4u::ConditionVariable::create()) {
  for (auto& s : streams_) s.has_work = s4u::ConditionVariable::create();
  if (const char* slowdown = host_->get_property(reliability::kComputeSlowdownProperty))
    compute_slowdown_ = std::stod(slowdown);
  if (const char* cores = host_->get_property(kComputeHostProperty)) {
    compute_host_ = s4u::Host::by_name(cores);
    const auto turns = context.core_turns.find(cores);
    if (turns != context.core_turns.end()) turns_ = turns->second.get();
    const auto factor = context.kernel_time_factor.find(cores);
    if (factor != context.kernel_time_factor.end()) compute_slowdown_ *= factor->second;
  }
}

SimDevice::~SimDevice() = default;

bool SimDevice::measuring() const {
  // Not the unmeasured iteration after the measured ones (simulation.cpp: ranks taking turns).
  return iteration_ >= context_.options.warmup_iterations && !cooling_down();
}

bool SimDevice::cooling_down() const {
  return iteration_ >= context_.options.warmup_iterations + context_.options.iterations;
}

// ---------------------------------------------------------------- memory

Tensor SimDevice::alloc(std::string_view, std::vector<std::int64_t> shape, DType dtype,
                        MemCategory category) {
  Tensor t{next_tensor_id_++, std::move(shape), dtype};
  memory_.allocate(t.id, t.bytes(), category);
  return t;
}

void SimDevice::release(const Tensor& tensor) { memory_.release(tensor.id); }

void SimDevice::reacquire(const Tensor& tensor, MemCategory category) {
  // Its previous storage may still wait for an op in flight (release_after: a ZeRO-2 gradient's
  // reduce-scatter, reacquired by the next micro-batch's backward): as a caching allocator does,
  // the tensor gets new memory and the old is freed when that op ends, both counted meanwhile.
  if (memory_.holds(tensor.id)) {
    const int stale = next_stale_id_++;
    const MemCategory held = memory_.category_of(tensor.id);
    if (!ops_.rename_release(tensor.id, stale))
      throw std::logic_error("tensor " + std::to_string(tensor.id) + " reacquired while allocated");
    memory_.release(tensor.id);
    memory_.allocate(stale, tensor.bytes(), held);
  }
  memory_.allocate(tensor.id, tensor.bytes(), category);
}

void SimDevice::release_after(const Tensor& tensor, Handle handle) {
  if (!handle.valid() || ops_[handle.id].done) return release(tensor);
  OpState& op = ops_[handle.id];
  if (!op.priced && op.release_on_completion.empty()) ++releasing_in_flight_;
  op.release_on_completion.push_back(tensor.id);
}

// ---------------------------------------------------------------- compute

Seconds SimDevice::hidden_by_chunks(const GemmArgs& gemm, Seconds duration, Seconds ready_s, Window gather) {
  if (gemm.comm_overlap != GemmArgs::CommOverlap::consumes_gather || gemm.overlap_chunks < 2) return 0;
  // Transformer Engine's ring exchange: the GEMM starts on the chunk this rank holds and each
  // step's chunk runs while the next one arrives, so of a wait W for the gather the GEMM fills
  // all but its last chunk: it ends max(G / n, G - W) after the gather (G its duration).
  const Seconds chunk = duration / gemm.overlap_chunks;
  return std::min(duration - chunk, overlap(ready_s, gather.end_s, gather.start_s, gather.end_s));
}

Handle SimDevice::compute(ComputeOp op, const Issue& issue) {
  if (issue.stream != Stream::compute)
    throw std::logic_error("op " + op.label + ": the simulator runs compute ops on the compute stream only");
  resume_deferred();
  const Seconds ready_s = host_time();
  const Seconds exposed_before_s = totals_.exposed_comm_s;
  // Waiting on another stream's work ends the fused block: the wait is a synchronisation point.
  Window waited;  // the latest-ending op waited for
  for (const Handle& h : issue.after) {
    last_blocked_ = {};
    block_on(h.id);
    if (last_blocked_.end_s > waited.end_s) waited = last_blocked_;
  }
  if (runs_on_host(op)) return run_on_host(op);
  pay_contention();
  const ComputeCost cost = compute_cost(op, device_);
  const Seconds duration = cost.seconds * compute_slowdown_;
  ++compute_ops_;
  if (measuring()) totals_.compute_s += duration;
  // A GEMM chunked with a tensor-parallel collective (GemmArgs::comm_overlap), on a device of its
  // own: part of it ran during the gather it waited for, or part of it runs during the
  // reduce-scatter issued next.
  Seconds hidden = 0;
  const auto* gemm = std::get_if<GemmArgs>(&op.args);
  if (gemm != nullptr && compute_host_ == nullptr && gemm->overlap_chunks > 1) {
    hidden = hidden_by_chunks(*gemm, duration, ready_s, waited);
    // The wait was compute for that long, not exposed communication.
    if (measuring()) totals_.exposed_comm_s -= std::min(hidden, totals_.exposed_comm_s - exposed_before_s);
    if (gemm->comm_overlap == GemmArgs::CommOverlap::feeds_scatter)
      deferred_compute_s_ = duration - duration / gemm->overlap_chunks;
  }
  if (compute_host_ != nullptr) {
    // Shared cores: the op runs when this rank holds a core, as fast as the cores' other load
    // lets it; the trace records when it really ran.
    pending_compute_s_ += duration;
    const Seconds issued = s4u::Engine::get_clock();
    flush_compute();
    const Seconds end = s4u::Engine::get_clock();
    if (context_.options.record_trace)
      add_trace(op_trace_record(rank_, iteration_, op, Stream::compute,
                                kernel_start(std::max(issued, last_compute_start_s_), end), end));
    return Handle{};
  }
  const Seconds start = host_time() - hidden;
  pending_compute_s_ += duration - hidden - deferred_compute_s_;
  busy_s_ += duration;
  last_compute_end_s_ = host_time();  // where the host's timeline of kernels ends (a deferred part aside)
  if (context_.options.comm_contention && device_.gpu_kernels.present()) {
    if (compute_windows_.size() >= 4096) forget_old_windows();
    compute_windows_.push_back({start, start + duration, !cost.compute_bound()});
  }
  if (context_.options.record_trace)
    add_trace(op_trace_record(rank_, iteration_, op, Stream::compute, kernel_start(start, start + duration),
                              start + duration));
  if (context_.options.compute_fidelity == ComputeFidelity::per_op) run_pending_compute();
  return Handle{};  // the compute stream is the host's own timeline: complete once issued
}

Handle SimDevice::run_on_host(const ComputeOp& op) {
  if (context_.node_hosts.empty())
    throw std::logic_error("op " + op.label + " runs on the node's host, which the platform does not have");
  flush_compute();
  s4u::Host* cpu = context_.node_hosts.at(static_cast<std::size_t>(context_.cluster->global_node_of(rank_)));
  s4u::Host* device = context_.hosts[rank_];
  const Seconds start = s4u::Engine::get_clock();
  if (const auto* copy = std::get_if<MemcpyArgs>(&op.args)) {
    // Over the device's PCIe link (shared with its NIC's traffic) to or from the host.
    const bool to_host = copy->host == HostCopy::to_host;
    s4u::Comm::sendto(to_host ? device : cpu, to_host ? cpu : device, static_cast<std::uint64_t>(op.bytes));
  } else {
    // Streaming through host memory: alone, its bytes over the node's host memory bandwidth; the
    // node's ranks stepping at once share it (the host's one core).
    const BytesPerSecond bandwidth = context_.cluster->group_of(rank_).host.memory_bandwidth_bytes_per_s;
    s4u::this_actor::exec_init(op.bytes / bandwidth * kSimHostSpeedFlopsPerS)->set_host(cpu)->wait();
  }
  const Seconds end = s4u::Engine::get_clock();
  ++compute_ops_;
  if (measuring()) totals_.compute_s += end - start;
  if (context_.options.record_trace) add_trace(op_trace_record(rank_, iteration_, op, Stream::compute, start, end));
  return Handle{};
}

void SimDevice::flush_compute() {
  resume_deferred();
  pay_contention();
  run_pending_compute();
}

// ---------------------------------------------------------------- what NCCL's kernels take from overlapped ones

int SimDevice::nccl_ctas(const CommOp& op, const Issue& issue) {
  // Only kernels the compute stream can overlap: NCCL's on a stream of their own, on a GPU.
  if (!context_.options.comm_contention || !device_.gpu_kernels.present() || compute_host_ != nullptr ||
      issue.stream == Stream::compute || issue.userbuffers || op.userbuffers || !context_.topology.nccl_fabric_of)
    return 0;
  if (is_collective(op.kind)) {
    SimulationContext::Choice& chosen = choice_for(op);
    if (chosen.nccl_ctas < 0) {
      const auto estimate = nccl_estimate(op.kind, op.bytes, op.group.ranks, context_.topology, chosen.algorithm);
      chosen.nccl_ctas = estimate ? estimate->channels : 0;
    }
    return chosen.nccl_ctas;
  }
  const nccl::Fabric* fabric = context_.topology.nccl_fabric_of(rank_);
  if (fabric == nullptr) return 0;
  // NCCL gives every peer of a communicator the fewest channels any of its peers gets
  // (ncclTopoComputeP2pChannels), and a pipeline group spans nodes whenever the run does (ranks in
  // Megatron's order): NVLink's channels only for a run inside one node.
  const Cluster& cluster = *context_.cluster;
  const bool one_node = cluster.same_node(0, world_size() - 1) && cluster.same_node(rank_, op.peer);
  return nccl::send_recv_channels(*fabric, one_node);
}

Bytes SimDevice::nccl_hbm_bytes(const CommOp& op) const {
  if (!is_collective(op.kind)) return kPointToPointHbmAccessesPerByte * op.bytes;
  return kRingHbmAccessesPerBusByte * nccl::bus_factor(op.kind, op.group.size()) * op.bytes;
}

void SimDevice::charge_contention(const OpState& state) {
  // Compute-bound kernels lose the SMs its kernel holds from launch to end; memory-bound ones the
  // HBM bandwidth its data takes while it moves (comm_contention.hpp).
  const double sm_per_s = sm_contention_per_overlap_s(device_.gpu_kernels.sm_count, state.nccl_ctas);
  if (sm_per_s <= 0) return;
  const Seconds moving_s = state.end_s - state.effective_start_s;
  const double hbm_per_s =
      moving_s > 0 ? hbm_contention_per_overlap_s(device_.memory_bandwidth_bytes_per_s * device_.gpu_kernels.memory_efficiency,
                                                  state.nccl_hbm_bytes / moving_s)
                   : 0.0;
  // The windows are in time order: from the first that ends after the op started.
  auto w = std::partition_point(compute_windows_.begin(), compute_windows_.end(),
                                [&](const Window& k) { return k.end_s <= state.start_s; });
  Seconds on_sms = 0, on_hbm = 0;
  for (; w != compute_windows_.end() && w->start_s < state.end_s; ++w) {
    if (w->memory_bound) on_hbm += overlap(w->start_s, w->end_s, state.effective_start_s, state.end_s);
    else on_sms += overlap(w->start_s, w->end_s, state.start_s, state.end_s);
  }
  contention_debt_s_ += on_sms * sm_per_s + on_hbm * hbm_per_s;
}

void SimDevice::pay_contention() {
  if (contention_debt_s_ <= 0) return;
  // The slowed kernels end that much later; whatever the host has waited since the last of them
  // was issued absorbs it.
  const Seconds late = last_compute_end_s_ + contention_debt_s_ - host_time();
  contention_debt_s_ = 0;
  if (late <= 0) return;
  pending_compute_s_ += late;
  busy_s_ += late;
  if (measuring()) {
    totals_.compute_s += late;
    totals_.contention_s += late;
  }
}

void SimDevice::forget_old_windows() {
  // A running op started no later than its stream's running_since_s; a queued one starts after now.
  Seconds oldest = s4u::Engine::get_clock();
  for (const StreamQueue& q : streams_)
    if (q.running) oldest = std::min(oldest, q.running_since_s);
  for (const std::int64_t h : priced_) oldest = std::min(oldest, ops_[h].start_s);
  while (!compute_windows_.empty() && compute_windows_.front().end_s <= oldest) compute_windows_.pop_front();
}

void SimDevice::run_pending_compute() {
  if (pending_compute_s_ <= 0) return;
  const Seconds seconds = pending_compute_s_;
  pending_compute_s_ = 0;
  ++compute_executions_;
  take_core();
  last_compute_start_s_ = s4u::Engine::get_clock();
  if (compute_host_ != nullptr) {  // cores shared with the node's other ranks
    s4u::this_actor::exec_init(seconds * kSimHostSpeedFlopsPerS)->set_host(compute_host_)->wait();
    return;
  }
  // A device runs one kernel at a time and nothing else computes on its host, so an execution
  // would take exactly `seconds`: a sleep does, without the CPU model's sharing computations.
  // Its energy is counted from the busy time (energy_j).
  s4u::this_actor::sleep_for(seconds);
  // Collectives that ended meanwhile held SMs or HBM bandwidth these kernels needed: they end that
  // much later (before anything issued after them starts, as in the per-op form).
  while (contention_debt_s_ > 0) {
    pay_contention();
    if (pending_compute_s_ <= 0) break;
    s4u::this_actor::sleep_for(std::exchange(pending_compute_s_, 0.0));
  }
  retire_priced(s4u::Engine::get_clock());
}

Joules SimDevice::energy_j(Seconds end_s) const {
  // The device draws busy power while its compute stream runs, idle power otherwise (the
  // profile's two states, as the energy plugin would integrate them for this host's executions).
  return device_.idle_power_w * end_s + (device_.busy_power_w - device_.idle_power_w) * busy_s_;
}

// The kernel starts once the backend has dispatched it (launch overhead): the trace shows the
// dispatch as a gap before the op, as a measured trace does, so that op durations compare.
Seconds SimDevice::kernel_start(Seconds op_start, Seconds op_end) const {
  return std::min(op_end, op_start + device_.launch_overhead_s);
}

void SimDevice::take_core() {
  if (turns_ == nullptr) return;
  switch (turns_->acquire(rank_)) {
    case CoreTurns::Grant::kept:
      return;
    case CoreTurns::Grant::woken:  // an idle core resumes first: a delay, no work
      if (device_.core_wake_s > 0) s4u::this_actor::sleep_for(device_.core_wake_s);
      return;
    case CoreTurns::Grant::handed:  // a context switch on the core it came from: core time
      if (device_.core_handoff_s > 0)
        s4u::this_actor::exec_init(device_.core_handoff_s * kSimHostSpeedFlopsPerS)->set_host(compute_host_)->wait();
      return;
  }
}

template <class Wait>
void SimDevice::wait_off_core(const OpState& op, Wait wait) {
  if (turns_ == nullptr) return wait();
  const auto rv = context_.rendezvous.find(op.rendezvous_key);
  const int others_arrived = rv == context_.rendezvous.end() ? 0 : rv->second.arrived - (op.arrived ? 1 : 0);
  if (others_arrived >= op.expected - 1) return wait();
  turns_->give_up(rank_, [&op](int r) { return std::find(op.members.begin(), op.members.end(), r) != op.members.end(); });
  wait();
  take_core();  // runnable again: it queues for a core at once, as the backend's woken thread does
}

void SimDevice::leave_cores() {
  flush_compute();
  if (turns_ != nullptr) turns_->leave(rank_);
}

// ---------------------------------------------------------------- communication

Handle SimDevice::communicate(CommOp op, const Issue& issue) {
  ++comm_ops_;
  // A chunked GEMM's later chunks overlap this op: they run once it is issued.
  const Seconds deferred = std::exchange(deferred_compute_s_, 0.0);
  if (issue.stream == Stream::compute) run_deferred(deferred);
  const int ctas = nccl_ctas(op, issue);
  const Bytes hbm_bytes = ctas > 0 ? nccl_hbm_bytes(op) : 0;
  // A folded tensor group's collective of known duration: no actor, no channel (price_on_issue).
  if (price_on_issue(op, issue)) {
    ops_.back().nccl_ctas = ctas;
    ops_.back().nccl_hbm_bytes = hbm_bytes;
    run_deferred(deferred);
    return Handle{ops_.next_handle() - 1};
  }
  flush_compute();  // the op may only start after the compute issued before it
  PendingComm pending;
  pending.after = issue.after;
  pending.stream = issue.stream;
  pending.handle = ops_.next_handle();
  ops_.push();
  ops_.back().nccl_ctas = ctas;
  ops_.back().nccl_hbm_bytes = hbm_bytes;
  if (is_collective(op.kind)) ops_.back().members = op.group.ranks;
  else ops_.back().members = {op.peer};

  // Channels: a collective is keyed by its group and stream (members issue a group's
  // collectives on a stream in the same order); a point-to-point message by its tag and pair.
  if (is_collective(op.kind)) {
    if (op.group.index_of(rank_) < 0)
      throw std::logic_error("op " + op.label + ": rank " + std::to_string(rank_) + " is not in its group");
    pending.channel = "g" + std::to_string(op.group.id) + "s" + std::to_string(static_cast<int>(issue.stream));
    // Ghosts (folded replicas) never arrive: their rendezvous is their mirror's.
    pending.members = 0;
    for (int member : op.group.ranks) pending.members += is_ghost(member) ? 0 : 1;
    const int instance = channel_instances_[pending.channel]++;
    pending.rendezvous_key = pending.channel + "#" + std::to_string(instance);
  } else {
    if (op.peer < 0 || op.peer >= world_size() || op.peer == rank_)
      throw std::logic_error("op " + op.label + ": bad peer " + std::to_string(op.peer));
    pending.channel = "p" + std::to_string(op.tag);
    const int src = op.kind == OpKind::send ? rank_ : op.peer;
    const int dst = op.kind == OpKind::send ? op.peer : rank_;
    const std::string pair = mailbox_name(pending.channel, src, dst);
    pending.members = is_ghost(op.peer) ? 1 : 2;
    pending.rendezvous_key = pair + "#" + std::to_string(channel_instances_[pair]++);
  }
  ops_.back().rendezvous_key = pending.rendezvous_key;
  ops_.back().expected = pending.members;
  pending.op = std::move(op);
  const std::int64_t handle = pending.handle;

  if (issue.stream == Stream::compute) {
    // Communication on the compute stream (NCCL on the main stream) blocks it.
    for (const Handle& h : pending.after) block_on(h.id);
    OpState& state = ops_[handle];
    const Seconds t0 = s4u::Engine::get_clock();
    wait_off_core(state, [&] { run_comm(pending, state); });
    // Blocked while data moved: exposed; the rest (peers not there yet) is idle, counted as the
    // remainder of the window at the end.
    if (measuring()) totals_.exposed_comm_s += overlap(t0, state.end_s, state.effective_start_s, state.end_s);
    retire_priced(s4u::Engine::get_clock());  // last: completed ops (this one too) may go
    return Handle{handle};
  }

  StreamQueue& queue = streams_[static_cast<int>(issue.stream)];
  queue.last_handle = handle;
  queue.queue.push_back(std::move(pending));
  if (!queue.started) {
    queue.started = true;
    const Stream stream = issue.stream;
    s4u::Actor::create(host_->get_name() + "/" + to_string(stream), host_, [this, stream] {
      s4u::Actor::self()->daemonize();
      stream_loop(stream);
    });
  }
  queue.has_work->notify_all();
  run_deferred(deferred);
  return Handle{handle};
}

void SimDevice::stream_loop(Stream stream) {
  StreamQueue& queue = streams_[static_cast<int>(stream)];
  while (true) {
    std::unique_lock<s4u::Mutex> lock(*mutex_);
    while (queue.queue.empty()) queue.has_work->wait(lock);
    PendingComm pending = std::move(queue.queue.front());
    queue.queue.pop_front();
    queue.running = true;
    for (const Handle& h : pending.after) {
      if (h.valid() && ops_[h.id].priced) {  // ends at a known time: no one signals it
        lock.unlock();
        finish_priced(h.id);
        lock.lock();
      }
      while (h.valid() && !ops_[h.id].done) op_done_->wait(lock);
    }
    lock.unlock();

    // After the ops priced on issue on this stream (they hold it until they end).
    if (s4u::Engine::get_clock() < queue.busy_until_s) s4u::this_actor::sleep_until(queue.busy_until_s);
    OpState& state = ops_[pending.handle];
    queue.running_since_s = s4u::Engine::get_clock();
    run_comm(pending, state);
    queue.running = false;
    if (measuring()) totals_.comm_busy_s += state.end_s - state.start_s;
    op_done_->notify_all();
  }
}

const CollectiveCost* SimDevice::measured_cost(const CommOp& op) const {
  const Cluster& cluster = *context_.cluster;
  const NodeGroup& group = cluster.group_of(rank_);
  // Most clusters have none: then no per-member check (groups of thousands of GPUs).
  if (group.collective_costs.empty()) return nullptr;
  const CollectiveCost* cost = group.collective_cost(to_string(op.kind), op.group.size());
  if (cost == nullptr) return nullptr;
  for (int member : op.group.ranks)
    if (is_ghost(member) || !cluster.same_node(member, rank_)) return nullptr;
  return cost;
}

void SimDevice::run_measured_collective(const PendingComm& pending, const CollectiveCost& cost) {
  auto& rv = context_.rendezvous[pending.rendezvous_key];
  if (!rv.barrier) {
    // As for Arrivals (run_comm): creating it may yield; the first member back installs its own.
    const auto members = static_cast<unsigned>(pending.op.group.size());
    auto fresh = s4u::Barrier::create(members);
    auto done = s4u::Barrier::create(members);
    if (!rv.barrier) {
      rv.barrier = std::move(fresh);
      rv.done = std::move(done);
    }
  }
  const s4u::BarrierPtr barrier = rv.barrier, done = rv.done;  // the entry goes once every member has left
  barrier->wait();
  const Seconds seconds = cost.seconds(pending.op.bytes);
  if (compute_host_ == nullptr || turns_ != nullptr) {
    // The last member's work, on its core: its host keeps the core meanwhile (wait_off_core).
    s4u::this_actor::sleep_for(seconds);
    return;
  }
  // Ranks that each have a core: the copies and sums are one thread's core work while the other
  // members wait for it, and a collective on a comm stream (gradients reduced during the
  // backward) shares the machine's cores with the ranks that still compute, as the backend's
  // worker thread takes a core from them. One member (the first of the group) does it.
  if (rank_ == pending.op.group.ranks.front())
    s4u::this_actor::exec_init(seconds * kSimHostSpeedFlopsPerS)->set_host(compute_host_)->wait();
  done->wait();
}

SimulationContext::Choice& SimDevice::choice_for(const CommOp& op) {
  const auto key = std::make_tuple(op.group.id, static_cast<int>(op.kind), op.bytes);
  auto chosen = context_.choices.find(key);
  if (chosen == context_.choices.end()) {
    SimulationContext::Choice choice{context_.options.algorithm, context_.options.collective_fidelity};
    if (choice.algorithm == CollectiveAlgorithm::automatic)
      choice.algorithm = choose_algorithm(op.kind, op.bytes, op.group.ranks, context_.topology);
    // An automatic fidelity stays automatic: run_collective decides it from the message size.
    chosen = context_.choices.emplace(key, choice).first;
  }
  return chosen->second;
}

void SimDevice::run_comm(const PendingComm& pending, OpState& state) {
  const CommOp& op = pending.op;
  state.start_s = s4u::Engine::get_clock();
  state.arrived = true;
  auto& rv = context_.rendezvous[pending.rendezvous_key];
  rv.last_arrival_s = std::max(rv.last_arrival_s, state.start_s);
  rv.arrived++;
  if (is_collective(op.kind) && context_.fold != nullptr && context_.fold->active) {
    if (!rv.arrivals) {
      // Creating SimGrid's mutex and condition variable yields to other actors: the first member
      // back installs its object, the others' are dropped unused.
      auto fresh = std::make_shared<SimulationContext::Arrivals>();
      if (!rv.arrivals) rv.arrivals = std::move(fresh);
    }
    running_arrivals_[pending.channel] = rv.arrivals;
    rv.arrivals->arrive(rank_);
  }

  const CollectiveCost* measured = is_collective(op.kind) ? measured_cost(op) : nullptr;
  if (measured != nullptr) {
    run_measured_collective(pending, *measured);
  } else if (is_collective(op.kind)) {
    CollectiveCall call;
    call.kind = op.kind;
    call.bytes = op.bytes;
    call.ranks = op.group.ranks;
    call.me = op.group.index_of(rank_);
    call.root = op.root >= 0 ? std::max(0, op.group.index_of(op.root)) : 0;
    call.channel = pending.channel;
    call.userbuffers = op.userbuffers;
    const SimulationContext::Choice& chosen = choice_for(op);
    // With ghosts in the group only the aggregated form is sound: it times the collective from
    // every member's schedule (ghosts included), where the exact form would need ghosts to pace
    // their steps.
    CollectiveFidelity fidelity = chosen.fidelity;
    if (std::any_of(op.group.ranks.begin(), op.group.ranks.end(), [&](int r) { return is_ghost(r); }))
      fidelity = CollectiveFidelity::aggregated;
    if (in_folded_tensor_group(op)) run_folded_tensor_collective(call, chosen.algorithm, fidelity);
    else run_collective(call, chosen.algorithm, fidelity, *this, context_.topology);
  } else {
    // A pipeline transfer's flow carries its payload over NCCL's achievable share of the edge
    // (collectives scale their own transfers: nccl_flows.cpp).
    const int from = op.kind == OpKind::send ? rank_ : op.peer, to = op.kind == OpKind::send ? op.peer : rank_;
    const Bytes wire = point_to_point_wire_bytes(context_.topology, from, to, op.bytes);
    if (op.kind == OpKind::send) send_async(op.peer, wire, pending.channel)->wait();
    else recv_async(op.peer, wire, pending.channel)->wait();
  }

  running_arrivals_.erase(pending.channel);
  state.end_s = s4u::Engine::get_clock();
  // Everyone this member depended on had arrived by the time it finished.
  auto it = context_.rendezvous.find(pending.rendezvous_key);
  state.effective_start_s = std::min(state.end_s, std::max(state.start_s, it->second.last_arrival_s));
  if (++it->second.departed == pending.members) context_.rendezvous.erase(it);
  charge_contention(state);
  state.done = true;
  if (!state.release_on_completion.empty()) --releasing_in_flight_;
  for (int id : state.release_on_completion) memory_.release(id);
  state.release_on_completion.clear();

  if (context_.options.record_trace) {
    add_trace(op_trace_record(rank_, iteration_, op, pending.stream, state.start_s, state.end_s));
  }
}

bool SimDevice::in_folded_tensor_group(const CommOp& op) const {
  const FoldPlan* fold = context_.fold;
  if (fold == nullptr || fold->tensor_leader_of.empty() || op.group.size() != fold->tensor_group_size) return false;
  for (int member : op.group.ranks)
    if (fold->tensor_leader_of[member] != rank_) return false;
  return true;
}

TensorCollectiveMemo::Key SimDevice::tensor_memo_key(OpKind kind, Bytes bytes, CollectiveAlgorithm algorithm) const {
  return {context_.cluster->locate(rank_).group, static_cast<int>(kind), bytes, static_cast<int>(algorithm)};
}

void SimDevice::run_folded_tensor_collective(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                                             CollectiveFidelity fidelity) {
  const TensorCollectiveMemo::Key key = tensor_memo_key(call.kind, call.bytes, algorithm);
  const bool alone = tensor_in_flight_ == 0 && s4u::Engine::get_clock() >= tensor_busy_until_s_;
  ++tensor_in_flight_;
  const std::int64_t started = ++tensor_started_;
  const Seconds* priced = alone ? context_.tensor_collectives.find(key) : nullptr;
  if (priced != nullptr) {
    s4u::this_actor::sleep_for(*priced);
  } else {
    const Seconds t0 = s4u::Engine::get_clock();
    run_collective(call, algorithm, fidelity, *this, context_.topology);
    // Remembered only when nothing else of the group shared its links from start to end.
    if (alone && tensor_started_ == started)
      context_.tensor_collectives.store(key, s4u::Engine::get_clock() - t0);
  }
  --tensor_in_flight_;
}

bool SimDevice::may_price_on_issue(const CommOp& op, const Issue& issue) const {
  if (issue.stream == Stream::compute || !is_collective(op.kind) || !in_folded_tensor_group(op)) return false;
  const StreamQueue& queue = streams_[static_cast<int>(issue.stream)];
  if (queue.running || !queue.queue.empty() || tensor_in_flight_ > 0) return false;
  // Only after work that is done, or that runs on the host's own timeline (the pending compute).
  for (const Handle& h : issue.after)
    if (h.valid() && !ops_[h.id].done) return false;
  return true;
}

bool SimDevice::price_on_issue(const CommOp& op, const Issue& issue) {
  if (!may_price_on_issue(op, issue)) return false;
  StreamQueue& queue = streams_[static_cast<int>(issue.stream)];
  // An op in flight will free memory when it completes, at a time only its actor knows: run the
  // pending compute first, as the stream form does, so that it frees before what is issued next.
  if (releasing_in_flight_ > 0) flush_compute();
  // It starts when the host's timeline reaches it (after the pending compute) and its stream and
  // the group's links are free.
  const Seconds start = std::max(host_time(), queue.busy_until_s);
  if (start < tensor_busy_until_s_) return false;  // alone on the group's links, or as flows
  const Seconds* seconds =
      context_.tensor_collectives.find(tensor_memo_key(op.kind, op.bytes, choice_for(op).algorithm));
  if (seconds == nullptr) return false;  // not priced yet: it runs as flows (and is remembered)
  const std::int64_t handle = ops_.next_handle();
  OpState& state = ops_.push();
  state.priced = true;
  state.arrived = true;
  state.start_s = state.effective_start_s = start;
  state.end_s = start + *seconds;
  queue.busy_until_s = tensor_busy_until_s_ = state.end_s;
  queue.last_handle = handle;
  priced_.push_back(handle);
  if (measuring()) totals_.comm_busy_s += state.end_s - state.start_s;
  // What the stream would have completed by now (the host used to run its compute first).
  retire_priced(host_time());
  return true;
}

void SimDevice::finish_priced(std::int64_t handle) {
  const OpState& state = ops_[handle];
  if (state.done) return;
  if (s4u::Engine::get_clock() < state.end_s) s4u::this_actor::sleep_until(state.end_s);
  retire_priced(s4u::Engine::get_clock());
}

void SimDevice::wait_priced(std::int64_t handle) {
  if (releasing_in_flight_ > 0) {  // as in price_on_issue: wait for real, others may free meanwhile
    flush_compute();
    finish_priced(handle);
    return;
  }
  // The host's timeline waits for the op's end (nothing runs meanwhile: the wait is idle time).
  const OpState& state = ops_[handle];
  if (!state.done && host_time() < state.end_s) pending_compute_s_ += state.end_s - host_time();
  retire_priced(host_time());
}

void SimDevice::retire_priced(Seconds now) {
  // In issue order, as their stream would complete them (their ends are in that order).
  bool retired = false;
  while (!priced_.empty() && ops_[priced_.front()].end_s <= now) {
    OpState& state = ops_[priced_.front()];
    priced_.pop_front();
    charge_contention(state);
    state.done = true;
    for (int id : state.release_on_completion) memory_.release(id);
    state.release_on_completion.clear();
    retired = true;
  }
  if (retired) op_done_->notify_all();
  ops_.drop_completed_front();
}

void SimulationContext::Arrivals::arrive(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex);
  ranks.insert(rank);
  changed->notify_all();
}

void SimulationContext::Arrivals::wait_for(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex);
  while (ranks.count(rank) == 0) changed->wait(lock);
}

bool SimulationContext::Arrivals::arrived(int rank) {
  std::unique_lock<s4u::Mutex> lock(*mutex);
  return ranks.count(rank) > 0;
}

std::shared_ptr<SimulationContext::Arrivals> SimDevice::arrivals_on(const std::string& channel) const {
  const auto running = running_arrivals_.find(channel);
  return running == running_arrivals_.end() ? nullptr : running->second;
}

void SimDevice::spawn_ghost_side(int ghost, const std::string& channel, const std::string& mailbox, Bytes bytes,
                                 bool sends) {
  std::shared_ptr<SimulationContext::Arrivals> arrivals = arrivals_on(channel);
  const int mirror = context_.fold->mirror_of[ghost];
  s4u::Actor::create("ghost" + std::to_string(ghost), context_.hosts[ghost], [arrivals, mirror, mailbox, bytes, sends] {
    if (arrivals) arrivals->wait_for(mirror);  // point-to-point messages have no arrivals: at once
    s4u::Mailbox* box = s4u::Mailbox::by_name(mailbox);
    if (sends) box->put(&kPayload, static_cast<std::uint64_t>(bytes));
    else box->get<void>();
  });
}

bool SimDevice::ghost_ready(int ghost, const std::string& channel) const {
  const std::shared_ptr<SimulationContext::Arrivals> arrivals = arrivals_on(channel);
  return arrivals == nullptr || arrivals->arrived(context_.fold->mirror_of[ghost]);
}

s4u::CommPtr SimDevice::send_async(int dst_rank, Bytes bytes, const std::string& channel) {
  const std::string mailbox = mailbox_name(channel, rank_, dst_rank);
  // A ghost has no actor to receive: the bytes cross the real links to its host, at once when the
  // rank it mirrors is there already, else from an actor made on its host that waits for it.
  if (is_ghost(dst_rank)) {
    if (ghost_ready(dst_rank, channel))
      return s4u::Comm::sendto_async(context_.hosts[rank_], context_.hosts[dst_rank], static_cast<std::uint64_t>(bytes));
    spawn_ghost_side(dst_rank, channel, mailbox, bytes, false);
  }
  return s4u::Mailbox::by_name(mailbox)->put_async(&kPayload, static_cast<std::uint64_t>(bytes));
}

s4u::CommPtr SimDevice::recv_async(int src_rank, Bytes bytes, const std::string& channel) {
  // A ghost sends, by symmetry, when the rank it mirrors reaches this collective.
  if (is_ghost(src_rank)) {
    if (ghost_ready(src_rank, channel))
      return s4u::Comm::sendto_async(context_.hosts[src_rank], context_.hosts[rank_], static_cast<std::uint64_t>(bytes));
    spawn_ghost_side(src_rank, channel, mailbox_name(channel, src_rank, rank_), bytes, true);
  }
  return s4u::Mailbox::by_name(mailbox_name(channel, src_rank, rank_))->get_async<void>(&g_receive_sink);
}

// ---------------------------------------------------------------- waiting

void SimDevice::block_on(std::int64_t handle) {
  resume_deferred();
  if (handle >= 0 && ops_[handle].priced) {
    // On the host's own timeline, ahead of the clock: no synchronisation with other actors.
    const Seconds t0 = host_time();
    const Seconds start = ops_[handle].effective_start_s, end = ops_[handle].end_s;  // (it may go once done)
    last_blocked_ = {start, end};
    wait_priced(handle);
    if (measuring()) totals_.exposed_comm_s += overlap(t0, host_time(), start, end);
    return;
  }
  flush_compute();
  if (handle < 0) return;
  const Seconds t0 = s4u::Engine::get_clock();
  if (!ops_[handle].done) {
    wait_off_core(ops_[handle], [&] {
      std::unique_lock<s4u::Mutex> lock(*mutex_);
      while (!ops_[handle].done) op_done_->wait(lock);
    });
  }
  const Seconds t1 = s4u::Engine::get_clock();
  if (measuring()) {
    const OpState& s = ops_[handle];
    // Blocked while the data moved: exposed communication; blocked before the last peer
    // arrived: idle. (Whatever is left of the window is counted as idle at the end.)
    totals_.exposed_comm_s += overlap(t0, t1, s.effective_start_s, s.end_s);
  }
  last_blocked_ = {ops_[handle].effective_start_s, ops_[handle].end_s};
  // Ops priced on issue that ended while the host was blocked are complete before it goes on
  // (their stream's actor would have completed them meanwhile). Last: completed ops may go.
  retire_priced(t1);
}

void SimDevice::wait(Handle handle) { block_on(handle.id); }

Handle SimDevice::record(Stream stream) {
  if (stream == Stream::compute) return Handle{};  // compute is the host's own timeline
  const StreamQueue& queue = streams_[static_cast<int>(stream)];
  if (queue.last_handle < 0 || ops_[queue.last_handle].done) return Handle{};
  return Handle{queue.last_handle};
}

void SimDevice::synchronize() {
  flush_compute();
  for (int s = 0; s < kStreamCount; ++s) block_on(record(static_cast<Stream>(s)).id);
  flush_compute();  // what the last collectives cost the kernels they overlapped
}

// ---------------------------------------------------------------- iterations and trace

void SimDevice::begin_iteration(int iteration) {
  flush_compute();
  forget_old_windows();
  iteration_ = iteration;
  iteration_start_s_ = s4u::Engine::get_clock();
}

void SimDevice::end_iteration() {
  synchronize();
  windows_.push_back({iteration_start_s_, s4u::Engine::get_clock()});
}

void SimDevice::add_trace(TraceRecord record) {
  if (!cooling_down()) trace_.push_back(std::move(record));
}

}  // namespace tandem::sim
