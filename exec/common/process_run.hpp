// What a run whose ranks are processes (one rank per process: the CUDA backend under mpirun, the
// CPU backend under mpirun) shares beyond its device: the iteration statistics joined over the
// processes, and one checkpoint (the CPU backend's format) written from every process's part.
// Templates over the device (cpu::CpuDevice, cuda::CudaDevice: the same placed_snapshot and
// restore_global).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu/checkpoint.hpp"
#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "exec/cpu/global_state.hpp"

namespace tandem::exec {

// The processes of one run: who this one is, and element-wise joins over all of them.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual void sum(std::vector<double>& values) = 0;
  virtual void max(std::vector<double>& values) = 0;
};

// Ranks that run iterations ahead of one another (asynchronous parameter servers) cannot join every
// iteration as a process run does: refused before anything starts.
inline void refuse_ranks_running_ahead(const Strategy& strategy, const char* backend) {
  if (strategy.ranks_run_ahead())
    throw StrategyError("strategy.parameter_server_asynchronous",
                        std::string("asynchronous servers' workers run ahead of one another, which ") + backend +
                            " does not allow (it joins every iteration across ranks): run them on the CPU "
                            "backend's threads, or simulate them");
}

// The iteration statistics of this process, joined over processes: the loss is the mean over the
// distinct micro-batches of all ranks, the time the slowest rank's window.
// `kernels_s`: this rank's kernel time in the iteration (each rank's is joined too).
inline cpu::IterationStats join_iteration(ProcessGroup& group, int iteration, bool warmup,
                                          std::pair<double, double> window, const std::vector<cpu::LossRecord>& losses,
                                          std::int64_t tokens, Seconds kernels_s = 0) {
  std::map<std::int64_t, float> by_mb;  // distinct micro-batches of this rank
  for (const cpu::LossRecord& l : losses)
    if (l.iteration == iteration) by_mb[l.micro_batch] = l.value;
  std::vector<double> sums{0.0, static_cast<double>(by_mb.size())};
  for (const auto& [mb, v] : by_mb) sums[0] += v;
  group.sum(sums);
  std::vector<double> time{window.second - window.first};
  group.max(time);
  std::vector<double> kernels(static_cast<std::size_t>(group.world_size()), 0.0);
  kernels.at(static_cast<std::size_t>(group.rank())) = kernels_s;
  group.sum(kernels);
  cpu::IterationStats s;
  s.iteration = iteration;
  s.warmup = warmup;
  s.time_s = time[0];
  s.tokens_per_s = s.time_s > 0 ? static_cast<double>(tokens) / s.time_s : 0;
  s.rank_kernels_s = kernels;
  for (double k : kernels) s.kernels_s += k;
  s.micro_batches = static_cast<std::int64_t>(by_mb.size());
  s.loss = sums[1] > 0 ? sums[0] / sums[1] : std::numeric_limits<double>::quiet_NaN();
  return s;
}

// Every process's part of the training state into one checkpoint: alone, directly; otherwise each
// process saves its part in global form (NaN where it holds nothing) beside the target, and the
// first merges them, saves the checkpoint atomically and removes the parts.
template <class Device>
void save_process_checkpoint(Device& device, ProcessGroup& group, const Strategy& strategy, const cpu::RunOptions& o,
                             int next_iteration) {
  const std::vector<cpu::PlacedTensor> mine = device.placed_snapshot(cpu::kTrainingState);
  if (group.world_size() == 1) {
    cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::assemble_global({mine})), o.checkpoint_path);
    return;
  }
  const auto part_path = [&](int rank) { return o.checkpoint_path + ".part" + std::to_string(rank); };
  cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::partial_global(mine)), part_path(group.rank()));
  std::vector<double> barrier{0};
  group.sum(barrier);  // every part is on disk
  if (group.rank() == 0) {
    std::vector<std::map<std::string, std::vector<float>>> parts;
    for (int r = 0; r < group.world_size(); ++r) parts.push_back(cpu::load_checkpoint(part_path(r)).tensors);
    cpu::save_checkpoint(cpu::checkpoint_of(strategy, o, next_iteration, cpu::merge_partials(parts)), o.checkpoint_path);
    for (int r = 0; r < group.world_size(); ++r) std::remove(part_path(r).c_str());
  }
  group.sum(barrier);  // the checkpoint is whole before anyone goes on
}

// Every process restores its part of the checkpoint; each of its tensors must have found a place
// in some process.
template <class Device>
void resume_process(Device& device, ProcessGroup& group, const cpu::Checkpoint& resume) {
  const std::set<std::string> used = device.restore_global(resume.tensors, cpu::kTrainingState);
  std::vector<double> found;  // per checkpoint tensor (the same order everywhere: the same file)
  for (const auto& [name, values] : resume.tensors) found.push_back(used.count(name) ? 1.0 : 0.0);
  group.sum(found);
  std::size_t i = 0;
  for (const auto& [name, values] : resume.tensors)
    if (found[i++] == 0) throw std::runtime_error("the checkpoint's tensor '" + name + "' has no counterpart in this run");
}

}  // namespace tandem::exec
