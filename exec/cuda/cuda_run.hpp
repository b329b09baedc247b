// Training a strategy for real on GPUs: the driver of the CUDA backend. One process per GPU
// (mpirun -np N, or one process for a one-rank strategy); this process runs its rank's
// RankProgram on a CudaDevice (cuda_device.hpp) as the CPU driver does (setup, then for each
// iteration begin_iteration / train_step / end_iteration) and returns the CPU backend's
// RunResult (exec/cpu/cpu_run.hpp), so `tandem run --backend cuda` prints and writes the same
// output: per-iteration loss, time and throughput, peak memory, the measured trace (source
// "cuda", the simulator's op ids).
//
// Options are the CPU driver's RunOptions (data, dropout, seed, iterations, trace); checkpoints,
// failure injection and BLAS threads are CPU-only and refused here. Across processes the
// iteration time is the slowest rank's, the loss the mean over all micro-batch losses seen (a
// tensor-parallel group's identical copies leave it unchanged); `ranks` holds this process's
// rank only, and so do `router_load` (a mixture of experts' measured routings) and `parameters`
// (captured) — `global_parameters` (the logical tensors) is filled for a one-process run only,
// since assembling it would need every rank's parts here.
// Checkpoints are refused (CLI: exit 2) for the same reason: the CPU backend's checkpoints
// hold the logical tensors, which no single process of a multi-GPU run holds.
#pragma once

#include <nlohmann/json.hpp>

#include "exec/cpu/cpu_run.hpp"
#include "kernels/cuda/gemm.cuh"
#include "strategies/strategy.hpp"

namespace tandem::exec::cuda {

struct CudaRunExtras {
  kernels::cuda::MathMode math = kernels::cuda::MathMode::bf16;
  std::size_t peak_allocated_bytes = 0;  // out: the caching allocator's peak in use
  std::size_t peak_reserved_bytes = 0;   // out: its peak reserved from the device
  std::string device_name;               // out
};

// How many CUDA devices this process sees (0 when none, or no driver).
int cuda_device_count();
// How many processes this run was launched with (mpirun -np N; 1 without MPI).
int launched_processes();

// Throws cpu::RunError when a rank fails or the launch does not fit the strategy,
// std::invalid_argument for bad options.
cpu::RunResult run_cuda(const Strategy& strategy, const cpu::RunOptions& options, CudaRunExtras& extras);

// cpu::to_json with backend "cuda" and the GPU's numbers.
nlohmann::json to_json(const cpu::RunResult& result, const CudaRunExtras& extras);

}  // namespace tandem::exec::cuda
