#include "exec/cuda/cuda_run.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "exec/cpu/checkpoint.hpp"
#include "exec/cpu/diverged.hpp"
#include "exec/cpu/global_state.hpp"
#include "exec/cuda/bootstrap.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "kernels/cuda/check.hpp"

namespace tandem::exec::cuda {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int launched_processes() { return make_bootstrap()->world_size(); }

namespace {

void check_options(const cpu::RunOptions& o) {
  if (o.iterations < 1) throw std::invalid_argument("run_cuda: at least one iteration");
  if (o.warmup_iterations < 0) throw std::invalid_argument("run_cuda: negative warm-up");
  if (!o.data) throw std::invalid_argument("run_cuda: RunOptions::data is required (configure_for_model)");
  if (o.fail_rank >= 0) throw std::invalid_argument("run_cuda: failure injection is a CPU-backend feature");
}

// The iteration statistics of this process, joined over processes.
cpu::IterationStats join_iteration(Bootstrap& boot, int iteration, bool warmup, std::pair<double, double> window,
                                   const std::vector<cpu::LossRecord>& losses, std::int64_t tokens) {
  std::map<std::int64_t, float> by_mb;  // distinct micro-batches of this rank
  for (const cpu::LossRecord& l : losses)
    if (l.iteration == iteration) by_mb[l.micro_batch] = l.value;
  std::vector<double> sums{0.0, static_cast<double>(by_mb.size())};
  for (const auto& [mb, v] : by_mb) sums[0] += v;
  boot.sum(sums);
  std::vector<double> time{window.second - window.first};
  boot.max(time);
  cpu::IterationStats s;
  s.iteration = iteration;
  s.warmup = warmup;
  s.time_s = time[0];
  s.tokens_per_s = s.time_s > 0 ? static_cast<double>(tokens) / s.time_s : 0;
  s.micro_batches = static_cast<std::int64_t>(by_mb.size());
  s.loss = sums[1] > 0 ? sums[0] / sums[1] : std::numeric_limits<double>::quiet_NaN();
  return s;
}

// Every process's part of the training state into one checkpoint (the CPU backend's format): alone,
// directly; otherwise each process saves its part in global form (NaN where it holds nothing) beside
// the target, and the first merges them, saves the checkpoint atomically and removes the parts.
void save_cuda_checkpoint(CudaDevice& device, Bootstrap& boot, const Strategy& strategy, const cpu::RunOptions& o,
                          int next_iteration) {
  const std::vector<cpu::PlacedTensor> mine = device.placed_snapshot(cpu::kTrainingState);
  if (boot.world_size() == 1) {
    cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::assemble_global({mine})), o.checkpoint_path);
    return;
  }
  const auto part_path = [&](int rank) { return o.checkpoint_path + ".part" + std::to_string(rank); };
  cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::partial_global(mine)), part_path(boot.rank()));
  std::vector<double> barrier{0};
  boot.sum(barrier);  // every part is on disk
  if (boot.rank() == 0) {
    std::vector<std::map<std::string, std::vector<float>>> parts;
    for (int r = 0; r < boot.world_size(); ++r) parts.push_back(cpu::load_checkpoint(part_path(r)).tensors);
    cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::merge_partials(parts)), o.checkpoint_path);
    for (int r = 0; r < boot.world_size(); ++r) std::remove(part_path(r).c_str());
  }
  boot.sum(barrier);  // the checkpoint is whole before anyone goes on
}

// Every process restores its part of the checkpoint; each of its tensors must have found a place
// in some process.
void resume_cuda(CudaDevice& device, Bootstrap& boot, const cpu::Checkpoint& resume) {
  const std::set<std::string> used = device.restore_global(resume.tensors, cpu::kTrainingState);
  std::vector<double> found;  // per checkpoint tensor (the same order everywhere: the same file)
  for (const auto& [name, values] : resume.tensors) found.push_back(used.count(name) ? 1.0 : 0.0);
  boot.sum(found);
  std::size_t i = 0;
  for (const auto& [name, values] : resume.tensors)
    if (found[i++] == 0) throw std::runtime_error("the checkpoint's tensor '" + name + "' has no counterpart in this run");
}

}  // namespace

cpu::RunResult run_cuda(const Strategy& strategy, const cpu::RunOptions& o, CudaRunExtras& extras) {
  const auto wall_start = std::chrono::steady_clock::now();
  check_options(o);
  // The checkpoint is read before any device is probed: a file that cannot resume this run is
  // refused the same way on a machine with or without a GPU.
  cpu::Checkpoint resume;
  int first_iteration = 0;
  if (!o.resume_path.empty()) {
    resume = cpu::load_resume_checkpoint(strategy, o);
    first_iteration = resume.next_iteration;
  }
  const int devices = cuda_device_count();
  if (devices < 1) throw cpu::RunError("no CUDA device is visible to this process");
  auto boot = make_bootstrap();
  const int world = strategy.world_size();
  if (boot->world_size() != world)
    throw cpu::RunError("the strategy has " + std::to_string(world) + " rank(s) and " +
                        std::to_string(boot->world_size()) + " process(es) were launched: run it with mpirun -np " +
                        std::to_string(world) + " (one process per GPU)");
  const int rank = boot->rank();
  CUDA_CHECK(cudaSetDevice(boot->local_rank() % devices));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, boot->local_rank() % devices));
  extras.device_name = prop.name;

  CudaSettings settings;
  static_cast<cpu::TrainingSettings&>(settings) = cpu::training_settings(strategy, o);
  settings.math = extras.math;
  const std::int64_t tokens_per_iteration = strategy.sequences_per_iteration() * o.seq_length;
  const std::vector<std::int64_t> offsets = cpu::micro_batch_offsets(strategy, o);

  const int total_iterations = o.warmup_iterations + o.iterations;

  cpu::RunResult result;
  result.first_iteration = first_iteration;
  result.strategy = strategy.name();
  result.world_size = world;
  result.tokens_per_iteration = tokens_per_iteration;
  {
    CudaDevice device(rank, world, settings, world > 1 ? boot.get() : nullptr, offsets.at(static_cast<std::size_t>(rank)));
    try {
      auto program = strategy.program_for(rank);
      program->setup(device);
      if (!o.resume_path.empty()) {
        try {
          resume_cuda(device, *boot, resume);
        } catch (const std::runtime_error& e) {
          throw std::runtime_error("cannot resume from " + o.resume_path + ": " + e.what());
        }
      }
      for (int n = 0; n < total_iterations; ++n) {
        const int i = first_iteration + n;
        device.begin_iteration(i);
        program->train_step(device, i);
        device.end_iteration();
        const cpu::IterationStats s = join_iteration(*boot, i, n < o.warmup_iterations, device.iteration_windows().back(),
                                                     device.losses(), tokens_per_iteration);
        result.iterations.push_back(s);
        if (o.on_iteration && rank == 0) o.on_iteration(s);
        // Every process holds the joined loss, so all stop together on a divergence (no rank is
        // left waiting in a collective); a rank that computed the bad loss names its own.
        cpu::require_finite_losses(rank, i, device.losses());
        if (s.micro_batches > 0 && !std::isfinite(s.loss)) throw cpu::DivergedError(rank, i, -1, s.loss);
        if (!o.checkpoint_path.empty() && o.checkpoint_every > 0 && (n + 1) % o.checkpoint_every == 0 &&
            n + 1 < total_iterations) {
          program->settle(device);  // the tensors hold the whole state (parameters gathered late)
          save_cuda_checkpoint(device, *boot, strategy, o, i + 1);
        }
      }
      program->settle(device);  // parameters gathered late (--overlap-param-gather) are complete
      if (!o.checkpoint_path.empty()) save_cuda_checkpoint(device, *boot, strategy, o, first_iteration + total_iterations);
    } catch (const cpu::DivergedError&) {
      throw;
    } catch (const cpu::OpError& e) {
      throw cpu::RunError("rank " + std::to_string(rank) + " failed in op " + e.label() + ": " + e.what());
    } catch (const std::exception& e) {
      throw cpu::RunError("rank " + std::to_string(rank) + " failed: " + e.what());
    }
    cpu::RankStats rs;
    rs.peak_memory_bytes = device.memory().peak();
    rs.memory_at_peak = device.memory().at_peak();
    rs.compute_s = device.compute_s();
    rs.comm_busy_s = device.comm_busy_s();
    rs.compute_ops = device.compute_ops();
    rs.comm_ops = device.comm_ops();
    result.ranks.push_back(rs);
    extras.peak_allocated_bytes = device.allocator().peak_in_use_bytes();
    extras.peak_reserved_bytes = device.allocator().peak_reserved_bytes();
    result.trace.source = "cuda";
    if (o.record_trace) result.trace.records = device.trace_records();
    if (o.capture_parameters) result.parameters.push_back(device.snapshot({MemCategory::parameters}));
    // The logical tensors need every rank's parts: this process holds them all only when alone.
    if (o.capture_parameters && world == 1)
      result.global_parameters = cpu::assemble_global({device.placed_snapshot({MemCategory::parameters})});
  }
  double measured_time = 0;
  int measured = 0;
  for (const cpu::IterationStats& s : result.iterations) {
    if (s.warmup) continue;
    measured_time += s.time_s;
    ++measured;
  }
  if (measured > 0) {
    result.iteration_time_s = measured_time / measured;
    result.tokens_per_s = measured_time > 0 ? static_cast<double>(tokens_per_iteration) * measured / measured_time : 0;
  }
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

nlohmann::json to_json(const cpu::RunResult& result, const CudaRunExtras& extras) {
  nlohmann::json j = cpu::to_json(result);
  j["backend"] = "cuda";
  j["device"] = extras.device_name;
  j["math"] = kernels::cuda::to_string(extras.math);
  j["peak_allocated_bytes"] = extras.peak_allocated_bytes;
  j["peak_reserved_bytes"] = extras.peak_reserved_bytes;
  return j;
}

}  // namespace tandem::exec::cuda
