#include "distributed/mpi_cpu_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <sstream>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "common/input_error.hpp"
#include "common/usable_cores.hpp"
#include "distributed/mpi_module.hpp"
#include "distributed/mpi_rank_comm.hpp"
#include "exec/common/process_run.hpp"
#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/diverged.hpp"
#include "kernels/cpu/gemm.hpp"

namespace tandem::distributed {

namespace cpu = exec::cpu;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end && *end == '\0' && n >= 0 && n < 1'000'000 ? static_cast<int>(n) : fallback;
}

// DIR/rank<R> <- "<pid> <next iteration>", atomically (the supervisor may read it at any time).
void heartbeat(int rank, int next_iteration) {
  const char* dir = std::getenv("TANDEM_HEARTBEAT_DIR");
  if (!dir || !*dir) return;
  const std::string path = std::string(dir) + "/rank" + std::to_string(rank);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << getpid() << " " << next_iteration << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// Per-rank figures of every rank, joined over the processes (each fills its own row).
std::vector<cpu::RankStats> join_rank_stats(exec::ProcessGroup& group, const cpu::CpuDevice& device) {
  constexpr int kFields = 6 + kMemCategoryCount;
  const int world = group.world_size(), me = group.rank();
  std::vector<double> rows(static_cast<std::size_t>(world * kFields), 0.0);
  double* row = rows.data() + me * kFields;
  row[0] = static_cast<double>(device.memory().peak());
  row[1] = device.compute_s();
  row[2] = device.comm_busy_s();
  row[3] = static_cast<double>(device.compute_ops());
  row[4] = static_cast<double>(device.comm_ops());
  row[5] = 1;
  for (int c = 0; c < kMemCategoryCount; ++c) row[6 + c] = static_cast<double>(device.memory().at_peak().by_category[c]);
  group.sum(rows);
  std::vector<cpu::RankStats> stats(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const double* x = rows.data() + r * kFields;
    cpu::RankStats& s = stats[static_cast<std::size_t>(r)];
    s.peak_memory_bytes = static_cast<Bytes>(x[0]);
    s.compute_s = x[1];
    s.comm_busy_s = x[2];
    s.compute_ops = static_cast<std::size_t>(x[3]);
    s.comm_ops = static_cast<std::size_t>(x[4]);
    for (int c = 0; c < kMemCategoryCount; ++c) s.memory_at_peak.by_category[c] = static_cast<Bytes>(x[6 + c]);
  }
  return stats;
}

// Every rank's trace records at rank 0 (in `records` there; the others keep theirs), each on rank
// 0's clock: the processes' epochs differ by when each made its context, and steady_clock is the
// machine's one monotonic clock, so the difference is exact on one machine.
void gather_trace(const TandemMpiModule& mpi, MpiWorld world, std::chrono::steady_clock::time_point epoch,
                  std::vector<TraceRecord>& records) {
  constexpr int kTag = 7001;
  const long long epoch_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(epoch.time_since_epoch()).count();
  if (world.rank != 0) {
    std::ostringstream text;
    text.precision(17);
    text << epoch_ns << "\n";
    for (const TraceRecord& r : records)
      text << r.rank << ' ' << r.iteration << ' ' << static_cast<int>(r.kind) << ' ' << static_cast<int>(r.phase) << ' '
           << static_cast<int>(r.stream) << ' ' << r.start_s << ' ' << r.end_s << ' ' << r.flops << ' ' << r.bytes << ' '
           << r.peer << ' ' << r.group_id << ' ' << r.group_size << ' ' << r.op_id << "\n";
    const std::string bytes = text.str();
    if (bytes.size() > static_cast<std::size_t>(INT_MAX)) throw std::runtime_error("the trace is too large to gather");
    check_mpi(mpi.send(bytes.data(), static_cast<int>(bytes.size()), 0, kTag), "MPI_Send (trace)");
    return;
  }
  for (int from = 1; from < world.size; ++from) {
    int source = 0, tag = 0, count = 0;
    check_mpi(mpi.probe(from, kTag, &source, &tag, &count), "MPI_Probe (trace)");
    std::string bytes(static_cast<std::size_t>(count), '\0');
    check_mpi(mpi.receive(bytes.data(), count, source, tag), "MPI_Recv (trace)");
    std::istringstream in(bytes);
    long long their_epoch_ns = 0;
    in >> their_epoch_ns;
    const double shift_s = static_cast<double>(their_epoch_ns - epoch_ns) * 1e-9;
    TraceRecord r;
    int kind = 0, phase = 0, stream = 0;
    while (in >> r.rank >> r.iteration >> kind >> phase >> stream >> r.start_s >> r.end_s >> r.flops >> r.bytes >> r.peer >>
           r.group_id >> r.group_size) {
      in.get();
      std::getline(in, r.op_id);
      r.kind = static_cast<OpKind>(kind);
      r.phase = static_cast<Phase>(phase);
      r.stream = static_cast<Stream>(stream);
      r.start_s += shift_s;
      r.end_s += shift_s;
      records.push_back(r);
    }
  }
  std::stable_sort(records.begin(), records.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_s < b.start_s;
  });
}

[[noreturn]] void abort_job(int rank, const std::string& cause, int status) {
  std::cerr << "tandem: rank " << rank << ": " << cause << "\n" << std::flush;
  mpi_module().abort_all(status);
  std::_Exit(status);  // MPI_Abort does not return; should it, the job still ends
}

}  // namespace

int launched_cpu_processes() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const int n = env_int(v, 0); n > 0) return n;
  return 0;
}

void start_processes() { init_mpi_threads(); }

int launched_process_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"})
    if (const int r = env_int(v, -1); r >= 0) return r;
  return 0;
}

cpu::RunResult run_cpu_processes(const Strategy& strategy, const cpu::RunOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (o.iterations < 1 || o.warmup_iterations < 0 || !o.data || !(o.timeout_s > 0) || o.checkpoint_every < 0)
    throw std::invalid_argument("run_cpu_processes: bad options");
  exec::refuse_ranks_running_ahead(strategy, "a run with ranks as processes");
  cpu::Checkpoint resume;
  int first_iteration = 0;
  if (!o.resume_path.empty()) {
    resume = cpu::load_resume_checkpoint(strategy, o);
    first_iteration = resume.next_iteration;
  }
  const MpiWorld world = init_mpi_threads();
  const int rank = world.rank;
  if (world.size != strategy.world_size())
    abort_job(rank,
              "the strategy has " + std::to_string(strategy.world_size()) + " rank(s) and " +
                  std::to_string(world.size) + " process(es) were launched: mpirun -np " +
                  std::to_string(strategy.world_size()),
              2);
  MpiProcessGroup group(mpi_module(), world);

  cpu::DeviceSettings settings;
  static_cast<cpu::TrainingSettings&>(settings) = cpu::training_settings(strategy, o);
  settings.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000.0));
  settings.compute_slowdown = o.compute_slowdown;
  settings.fail_rank = o.fail_rank;
  settings.fail_op = o.fail_op;
  settings.fail_iteration = o.fail_iteration;
  // The processes of this node share its cores: each gets its part (ranks as threads share one
  // gate of them all).
  settings.cores = std::max(1, usable_cores() / env_int("OMPI_COMM_WORLD_LOCAL_SIZE", world.size));
  auto owned_comm = std::make_unique<MpiRankComm>(mpi_module());
  MpiRankComm& comm = *owned_comm;
  cpu::CpuRunContext context(world.size, settings, std::move(owned_comm));
  const std::vector<std::int64_t> offsets = cpu::micro_batch_offsets(strategy, o);
  kernels::cpu::set_blas_threads(o.blas_threads);
  const std::int64_t tokens_per_iteration = strategy.sequences_per_iteration() * o.seq_length;
  const int total_iterations = o.warmup_iterations + o.iterations;

  cpu::RunResult result;
  result.strategy = strategy.name();
  result.world_size = world.size;
  result.first_iteration = first_iteration;
  result.tokens_per_iteration = tokens_per_iteration;
  result.trace.source = "cpu";
  {
    cpu::CpuDevice device(rank, context, offsets.at(static_cast<std::size_t>(rank)));
    try {
      // The host thread runs while holding a core, and gives it back before shutdown (whose
      // stream workers may still need one to finish).
      const cpu::CoreGate::Hold hold(context.gate(), rank);
      auto program = strategy.program_for(rank);
      program->setup(device);
      if (!o.resume_path.empty()) {
        try {
          exec::resume_process(device, group, resume);
        } catch (const std::runtime_error& e) {
          throw InputError(o.resume_path, 0, "", std::string("checkpoint does not match this run: ") + e.what());
        }
      }
      heartbeat(rank, first_iteration);
      for (int n = 0; n < total_iterations; ++n) {
        const int i = first_iteration + n;
        const double kernels_before_s = device.compute_s();
        device.begin_iteration(i);
        program->train_step(device, i);
        device.end_iteration();
        cpu::require_finite_losses(rank, i, device.losses());
        const cpu::IterationStats s = exec::join_iteration(group, i, n < o.warmup_iterations,
                                                           device.iteration_windows().back(), device.losses(),
                                                           tokens_per_iteration, device.compute_s() - kernels_before_s);
        result.iterations.push_back(s);
        if (o.on_iteration && rank == 0) o.on_iteration(s);
        if (!o.checkpoint_path.empty() && o.checkpoint_every > 0 && (n + 1) % o.checkpoint_every == 0 &&
            n + 1 < total_iterations) {
          program->settle(device);
          exec::save_process_checkpoint(device, group, strategy, o, i + 1);
        }
        heartbeat(rank, i + 1);
      }
      program->settle(device);
      if (!o.checkpoint_path.empty())
        exec::save_process_checkpoint(device, group, strategy, o, first_iteration + total_iterations);
      comm.flush();
      result.ranks = join_rank_stats(group, device);
      if (o.record_trace) {
        result.trace.records = device.trace_records();
        gather_trace(mpi_module(), world, context.epoch(), result.trace.records);
      }
    } catch (const cpu::DivergedError& e) {
      abort_job(rank, e.what(), 3);
    } catch (const InputError& e) {
      abort_job(rank, e.what(), 2);
    } catch (const cpu::OpError& e) {
      abort_job(rank, "failed in op " + e.label() + ": " + e.what(), 1);
    } catch (const std::exception& e) {
      abort_job(rank, e.what(), 1);
    }
    device.shutdown();
  }
  cpu::set_measured_rates(result);
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

void finish_processes() { check_mpi(mpi_module().finalize(), "MPI_Finalize"); }

}  // namespace tandem::distributed
