#include "exec/cuda/cuda_run.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "exec/common/process_run.hpp"
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

}  // namespace

cpu::RunResult run_cuda(const Strategy& strategy, const cpu::RunOptions& o, CudaRunExtras& extras) {
  const auto wall_start = std::chrono::steady_clock::now();
  check_options(o);
  refuse_ranks_running_ahead(strategy, "the CUDA backend");
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
          resume_process(device, *boot, resume);
        } catch (const std::runtime_error& e) {
          throw std::runtime_error("cannot resume from " + o.resume_path + ": " + e.what());
        }
      }
      for (int n = 0; n < total_iterations; ++n) {
        const int i = first_iteration + n;
        device.begin_iteration(i);
        program->train_step(device, i);
        device.end_iteration();
        const cpu::IterationStats s = exec::join_iteration(*boot, i, n < o.warmup_iterations, device.iteration_windows().back(),
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
          save_process_checkpoint(device, *boot, strategy, o, i + 1);
        }
      }
      program->settle(device);  // parameters gathered late (--overlap-param-gather) are complete
      if (!o.checkpoint_path.empty()) save_process_checkpoint(device, *boot, strategy, o, first_iteration + total_iterations);
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
    result.router_load = device.router_load();  // this process's rank's routings, as `ranks`
    extras.peak_allocated_bytes = device.allocator().peak_in_use_bytes();
    extras.peak_reserved_bytes = device.allocator().peak_reserved_bytes();
    result.trace.source = "cuda";
    if (o.record_trace) result.trace.records = device.trace_records();
    if (o.capture_parameters) result.parameters.push_back(device.snapshot({MemCategory::parameters}));
    // The logical tensors need every rank's parts: this process holds them all only when alone.
    if (o.capture_parameters && world == 1)
      result.global_parameters = cpu::assemble_global({device.placed_snapshot({MemCategory::parameters})});
  }
  cpu::set_measured_rates(result);
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
