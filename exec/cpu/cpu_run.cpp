#include "exec/cpu/cpu_run.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <set>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "common/checked_math.hpp"
#include "common/input_error.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/diverged.hpp"
#include "kernels/cpu/gemm.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem::exec::cpu {

namespace {

// Joins the ranks' iterations: the last rank to finish an iteration closes its statistics.
class IterationBoard {
 public:
  IterationBoard(int world, int first, int iterations, int warmup, std::int64_t tokens_per_iteration,
                 const std::function<void(const IterationStats&)>& callback)
      : world_(world), first_(first), warmup_(warmup), tokens_(tokens_per_iteration), callback_(callback),
        slots_(static_cast<std::size_t>(iterations)) {}

  void arrive(int rank, int iteration, std::pair<double, double> window, Seconds kernels_s,
              const std::vector<LossRecord>& losses) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slots_.at(static_cast<std::size_t>(iteration - first_));
    slot.kernels_s += kernels_s;
    slot.rank_kernels_s.resize(static_cast<std::size_t>(world_), 0.0);
    slot.rank_kernels_s.at(static_cast<std::size_t>(rank)) = kernels_s;
    slot.start = slot.arrived == 0 ? window.first : std::min(slot.start, window.first);
    slot.end = slot.arrived == 0 ? window.second : std::max(slot.end, window.second);
    for (const LossRecord& l : losses) {
      if (l.iteration != iteration) continue;
      auto& [sum, count] = slot.losses[l.micro_batch];
      sum += l.value;
      ++count;
    }
    if (++slot.arrived < world_) return;
    IterationStats stats;
    stats.iteration = iteration;
    stats.warmup = iteration - first_ < warmup_;
    // The period between iteration ends (iteration_time in cpu_run.hpp); slots close in order.
    const std::size_t index = static_cast<std::size_t>(iteration - first_);
    stats.time_s = slot.end - (index > 0 ? slots_[index - 1].end : slot.start);
    stats.tokens_per_s = stats.time_s > 0 ? static_cast<double>(tokens_) / stats.time_s : 0;
    stats.kernels_s = slot.kernels_s;
    stats.rank_kernels_s = slot.rank_kernels_s;
    stats.micro_batches = static_cast<std::int64_t>(slot.losses.size());
    if (slot.losses.empty()) {
      stats.loss = std::numeric_limits<double>::quiet_NaN();
    } else {
      double total = 0;
      for (const auto& [mb, entry] : slot.losses) total += entry.first / entry.second;
      stats.loss = total / static_cast<double>(slot.losses.size());
    }
    slot.stats = stats;
    slot.closed = true;
    if (callback_) callback_(stats);
  }

  std::vector<IterationStats> results() const {
    std::vector<IterationStats> out;
    for (const Slot& s : slots_)
      if (s.closed) out.push_back(s.stats);
    return out;
  }

 private:
  struct Slot {
    int arrived = 0;
    double start = 0, end = 0;
    Seconds kernels_s = 0;
    std::vector<Seconds> rank_kernels_s;
    std::map<std::int64_t, std::pair<double, int>> losses;  // global micro-batch -> sum, count
    IterationStats stats;
    bool closed = false;
  };
  int world_, first_, warmup_;
  std::int64_t tokens_;
  const std::function<void(const IterationStats&)>& callback_;
  std::mutex mutex_;
  std::vector<Slot> slots_;
};

// Mid-run checkpoints: every rank stops after the iteration; the last to arrive saves the state
// of all ranks (all of them are idle: their streams were drained by end_iteration) and releases
// the others. Waits poll the run's abort flag.
class CheckpointBarrier {
 public:
  CheckpointBarrier(int world, CpuRunContext& context) : world_(world), context_(context) {}

  // Returns once the checkpoint is saved; `save` runs on the last rank to arrive.
  void arrive(const std::function<void()>& save) {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == world_) {
      arrived_ = 0;
      save();  // under the lock: nobody proceeds before the state is on disk
      ++generation_;
      cv_.notify_all();
      return;
    }
    off_core_wait(lock, [&] {
      while (generation_ == generation && !context_.aborted()) cv_.wait_for(lock, std::chrono::milliseconds(20));
      return 0;
    });
    if (generation_ == generation) throw AbortedError("aborted: another rank failed");
  }

 private:
  int world_;
  CpuRunContext& context_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  long generation_ = 0;
};


// `last_ranks_win`: replicas may disagree and the highest rank holding an element gives it
// (asynchronous servers, the last ranks, hold the model; each worker its own older copy).
std::map<std::string, std::vector<float>> global_state(const std::vector<std::unique_ptr<CpuDevice>>& devices,
                                                       const std::set<MemCategory>& categories,
                                                       bool last_ranks_win = false) {
  std::vector<std::vector<PlacedTensor>> ranks;
  for (const auto& d : devices) ranks.push_back(d->placed_snapshot(categories));
  if (last_ranks_win) std::reverse(ranks.begin(), ranks.end());
  return assemble_global(ranks, /*first_wins=*/last_ranks_win);
}

Checkpoint snapshot_run(const Strategy& strategy, const RunOptions& o, int next_iteration,
                        const std::vector<std::unique_ptr<CpuDevice>>& devices) {
  return checkpoint_of(strategy, o, next_iteration, global_state(devices, kTrainingState));
}

}  // namespace

Checkpoint checkpoint_of(const Strategy& strategy, const RunOptions& o, int next_iteration,
                         std::map<std::string, std::vector<float>> tensors) {
  Checkpoint ck;
  ck.strategy = strategy.name();
  ck.world_size = strategy.world_size();
  ck.next_iteration = next_iteration;
  ck.seed = o.seed;
  ck.sequences_per_iteration = strategy.sequences_per_iteration();
  ck.tensors = std::move(tensors);
  return ck;
}

Checkpoint load_resume_checkpoint(const Strategy& strategy, const RunOptions& o) {
  Checkpoint resume = load_checkpoint(o.resume_path);
  if (resume.sequences_per_iteration != strategy.sequences_per_iteration())
    throw InputError(o.resume_path, 0, "",
                     "checkpoint of a run with " + std::to_string(resume.sequences_per_iteration) +
                         " sequences per iteration cannot resume one with " +
                         std::to_string(strategy.sequences_per_iteration()) + " (the data would differ)");
  if (resume.seed != o.seed)
    throw InputError(o.resume_path, 0, "",
                     "checkpoint written with seed " + std::to_string(resume.seed) + ", this run has seed " +
                         std::to_string(o.seed) + " (dropout masks would differ)");
  return resume;
}

TrainingSettings training_settings(const Strategy& strategy, const RunOptions& o) {
  TrainingSettings settings;
  settings.seed = o.seed;
  settings.init_std = o.init_std;
  settings.hidden_dropout = o.hidden_dropout;
  settings.attention_dropout = o.attention_dropout;
  settings.data = o.data;
  settings.sequences_per_iteration = strategy.sequences_per_iteration();
  settings.record_trace = o.record_trace;
  return settings;
}

std::vector<std::int64_t> micro_batch_offsets(const Strategy& strategy, const RunOptions& o) {
  const int world = strategy.world_size();
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(world), 0);
  if (o.micro_batch_offset) {
    for (int r = 0; r < world; ++r) offsets[r] = o.micro_batch_offset(r);
  } else if (const auto* dp = dynamic_cast<const DataParallel*>(&strategy)) {
    const auto& counts = dp->micro_batches_per_replica();
    std::int64_t sum = 0;
    for (int r = 0; r < static_cast<int>(counts.size()); ++r) {  // parameter servers after them read no data
      offsets[r] = sum;
      sum += counts.at(static_cast<std::size_t>(r));
    }
  } else if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy)) {
    // Every rank of data-parallel replica d (its tensor and pipeline groups) runs the same
    // micro-batches: those after the replicas before d.
    const auto& counts = hybrid->micro_batches_per_replica();
    for (int r = 0; r < world; ++r) {
      const int d = hybrid->layout().coord_of(r).dp;
      for (int j = 0; j < d; ++j) offsets[r] += counts.at(static_cast<std::size_t>(j));
    }
  }
  return offsets;
}

void configure_for_model(RunOptions& options, const Model& model, std::int64_t seq_length) {
  options.data = make_data_source(model, options.seed);
  options.seq_length = seq_length;
  if (const auto* t = dynamic_cast<const TransformerModel*>(&model)) {
    options.hidden_dropout = static_cast<float>(t->config().hidden_dropout);
    options.attention_dropout = static_cast<float>(t->config().attention_dropout);
  } else {
    options.hidden_dropout = 0;
    options.attention_dropout = 0;
  }
}

RunResult run_cpu(const Strategy& strategy, const RunOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (o.iterations < 1) throw std::invalid_argument("run_cpu: at least one iteration");
  if (o.warmup_iterations < 0) throw std::invalid_argument("run_cpu: negative warm-up");
  if (!o.data) throw std::invalid_argument("run_cpu: RunOptions::data is required (configure_for_model)");
  if (!(o.timeout_s > 0)) throw std::invalid_argument("run_cpu: timeout_s must be positive");
  const int world = strategy.world_size();
  if (world < 1) throw std::invalid_argument("run_cpu: empty strategy");
  if (o.checkpoint_every < 0) throw std::invalid_argument("run_cpu: negative checkpoint interval");
  const int total_iterations = checked_add(o.warmup_iterations, o.iterations, "run_cpu: warm-up + measured iterations");
  if (strategy.ranks_run_ahead() && (!o.checkpoint_path.empty() || !o.resume_path.empty()))
    throw StrategyError("strategy.parameter_server_asynchronous",
                        "asynchronous servers leave every worker with its own version of the parameters: no "
                        "checkpoint can be saved or resumed");
  Checkpoint resume;
  int first_iteration = 0;
  if (!o.resume_path.empty()) {
    resume = load_resume_checkpoint(strategy, o);
    first_iteration = resume.next_iteration;
  }
  const std::int64_t tokens_per_iteration = strategy.sequences_per_iteration() * o.seq_length;

  DeviceSettings settings;
  static_cast<TrainingSettings&>(settings) = training_settings(strategy, o);
  settings.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000.0));
  settings.fail_rank = o.fail_rank;
  settings.fail_op = o.fail_op;
  settings.fail_iteration = o.fail_iteration;
  for (double f : o.compute_slowdown)
    if (!(f >= 1 && f <= 1000)) throw std::invalid_argument("compute slowdown must be in [1, 1000]");
  if (static_cast<int>(o.compute_slowdown.size()) > world)
    throw std::invalid_argument("compute slowdown for more ranks than the strategy has");
  settings.compute_slowdown = o.compute_slowdown;
  CpuRunContext context(world, settings);

  const std::vector<std::int64_t> offsets = micro_batch_offsets(strategy, o);
  std::vector<std::unique_ptr<CpuDevice>> devices;
  for (int r = 0; r < world; ++r)
    devices.push_back(std::make_unique<CpuDevice>(r, context, offsets[r]));
  kernels::cpu::set_blas_threads(o.blas_threads);

  IterationBoard board(world, first_iteration, total_iterations, o.warmup_iterations,
                       tokens_per_iteration, o.on_iteration);
  CheckpointBarrier barrier(world, context);
  std::mutex resume_mutex;
  std::string resume_mismatch;  // the checkpoint does not fit this run's tensors
  std::set<std::string> restored;  // logical tensors some rank took from the checkpoint
  std::optional<DivergedError> diverged;  // the run's failure, when it was a non-finite loss
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      const CoreGate::Hold hold(context.gate(), r);  // run only while holding a core (core_gate.hpp)
      CpuDevice& device = *devices[r];
      try {
        auto program = strategy.program_for(r);
        program->plan_iterations(first_iteration, total_iterations);
        program->setup(device);
        if (!o.resume_path.empty()) {
          try {
            const std::set<std::string> mine = device.restore_global(resume.tensors, kTrainingState);
            {
              std::lock_guard<std::mutex> lock(resume_mutex);
              restored.insert(mine.begin(), mine.end());
            }
            // Every tensor of the checkpoint must have found a place in this run.
            barrier.arrive([&] {
              for (const auto& [name, values] : resume.tensors)
                if (!restored.count(name))
                  throw std::runtime_error("the checkpoint's tensor '" + name + "' has no counterpart in this run");
            });
          } catch (const std::runtime_error& e) {
            {
              std::lock_guard<std::mutex> lock(resume_mutex);
              if (resume_mismatch.empty()) resume_mismatch = e.what();
            }
            throw std::runtime_error("cannot resume from " + o.resume_path + ": " + e.what());
          }
        }
        for (int i = 0; i < total_iterations; ++i) {
          const int it = first_iteration + i;
          const Seconds kernels_before_s = device.compute_s();
          device.begin_iteration(it);
          program->train_step(device, it);
          device.end_iteration();
          require_finite_losses(r, it, device.losses());
          board.arrive(r, it, device.iteration_windows().back(), device.compute_s() - kernels_before_s, device.losses());
          if (!o.checkpoint_path.empty() && o.checkpoint_every > 0 && (i + 1) % o.checkpoint_every == 0 &&
              i + 1 < total_iterations) {
            program->settle(device);  // the tensors hold the whole state (parameters gathered late)
            barrier.arrive([&] { save_checkpoint(snapshot_run(strategy, o, it + 1, devices), o.checkpoint_path); });
          }
        }
        program->settle(device);
      } catch (const AbortedError&) {
        // Another rank failed first; its error is the run's.
      } catch (const DivergedError& e) {
        // Only the first failure's thread writes it; the joins below order it before the read.
        if (context.fail(r, "", e.what())) diverged = e;
      } catch (const OpError& e) {
        context.fail(r, e.label(), e.what());
      } catch (const std::exception& e) {
        context.fail(r, "", e.what());
      } catch (...) {
        context.fail(r, "", "unknown exception");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& d : devices) d->shutdown();
  if (!resume_mismatch.empty())
    throw InputError(o.resume_path, 0, "", "checkpoint does not match this run: " + resume_mismatch);
  if (diverged) throw *diverged;  // its own type: the command line gives it its own status
  if (context.failed()) throw RunError(context.failure());
  if (!o.checkpoint_path.empty())
    save_checkpoint(snapshot_run(strategy, o, first_iteration + total_iterations, devices), o.checkpoint_path);

  RunResult result;
  result.strategy = strategy.name();
  result.world_size = world;
  result.iterations = board.results();
  result.first_iteration = first_iteration;
  result.tokens_per_iteration = tokens_per_iteration;
  set_measured_rates(result);
  result.trace.source = "cpu";
  for (int r = 0; r < world; ++r) {
    const CpuDevice& d = *devices[r];
    RankStats rs;
    rs.peak_memory_bytes = d.memory().peak();
    rs.memory_at_peak = d.memory().at_peak();
    rs.compute_s = d.compute_s();
    rs.comm_busy_s = d.comm_busy_s();
    rs.compute_ops = d.compute_ops();
    rs.comm_ops = d.comm_ops();
    result.ranks.push_back(rs);
    result.router_load.merge(d.router_load());
    if (o.record_trace)
      result.trace.records.insert(result.trace.records.end(), d.trace_records().begin(),
                                  d.trace_records().end());
    if (o.capture_parameters) result.parameters.push_back(d.snapshot({MemCategory::parameters}));
  }
  if (o.capture_parameters)
    result.global_parameters = global_state(devices, {MemCategory::parameters}, strategy.ranks_run_ahead());
  std::stable_sort(result.trace.records.begin(), result.trace.records.end(),
                   [](const TraceRecord& a, const TraceRecord& b) {
                     return a.rank != b.rank ? a.rank < b.rank : a.start_s < b.start_s;
                   });
  result.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

void set_measured_rates(RunResult& result) {
  double measured_time = 0;
  int measured = 0;
  for (const IterationStats& s : result.iterations) {
    if (s.warmup) continue;
    measured_time += s.time_s;
    ++measured;
  }
  if (measured == 0) return;
  result.iteration_time_s = measured_time / measured;
  result.tokens_per_s =
      measured_time > 0 ? static_cast<double>(result.tokens_per_iteration) * measured / measured_time : 0;
}

nlohmann::json to_json(const RunResult& r) {
  using nlohmann::json;
  json iterations = json::array();
  for (const IterationStats& s : r.iterations) {
    json it = {{"iteration", s.iteration},
               {"warmup", s.warmup},
               {"time_s", s.time_s},
               {"tokens_per_s", s.tokens_per_s},
               {"micro_batches", s.micro_batches}};
    it["loss"] = std::isnan(s.loss) ? json(nullptr) : json(s.loss);
    iterations.push_back(it);
  }
  json ranks = json::array();
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankStats& rs = r.ranks[i];
    json by_category = json::object();
    for (int c = 0; c < kMemCategoryCount; ++c)
      by_category[to_string(static_cast<MemCategory>(c))] = rs.memory_at_peak.by_category[c];
    ranks.push_back({{"rank", i},
                     {"peak_memory_bytes", rs.peak_memory_bytes},
                     {"memory_at_peak", by_category},
                     {"compute_s", rs.compute_s},
                     {"comm_busy_s", rs.comm_busy_s},
                     {"compute_ops", rs.compute_ops},
                     {"comm_ops", rs.comm_ops}});
  }
  json out{{"backend", "cpu"},
              {"strategy", r.strategy},
              {"world_size", r.world_size},
              {"tokens_per_iteration", r.tokens_per_iteration},
              {"first_iteration", r.first_iteration},
              {"iteration_time_s", r.iteration_time_s},
              {"tokens_per_s", r.tokens_per_s},
              {"wall_time_s", r.wall_time_s},
              {"iterations", iterations},
              {"ranks", ranks}};
  if (r.router_load.routings > 0)
    out["moe_router_load"] = {{"routings", r.router_load.routings},
                              {"mean_busiest_over_mean", r.router_load.mean_ratio()},
                              {"largest_busiest_over_mean", r.router_load.ratio_max}};
  return out;
}

}  // namespace tandem::exec::cpu
