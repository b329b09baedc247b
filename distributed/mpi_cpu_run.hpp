// `mpirun -np N tandem run --backend cpu SCENARIO`: the CPU backend with its ranks as processes,
// one rank per process (the same CpuDevice, kernels and strategies as ranks as threads; the
// collectives through MPI, mpi_rank_comm.hpp). What the run elastic supervisor launches
// (elastic_run.hpp), so that a rank can die alone.
#pragma once

#include "exec/cpu/cpu_run.hpp"

namespace tandem::distributed {

// How many processes mpirun launched around this one (0 when not under mpirun); read from the
// launcher's environment, without starting MPI.
int launched_cpu_processes();
// This process's rank among them (0 when not under mpirun).
int launched_process_rank();

// Starts MPI in this process (with threads). The module's first use runs the process again with
// OpenMPI preloaded (mpi_module.cpp): this is called before anything is printed or written.
void start_processes();

// Runs this process's rank; every process returns the same iterations, and the per-rank figures
// of every rank; the first process, every rank's trace records (on its clock). Checkpoints as the threads' run writes them (one file, process_run.hpp). When
// the run fails in this process, it prints "tandem: rank R: <cause>" and ends the whole job with
// MPI_Abort (status: 2 bad input, 3 diverged, 1 otherwise), since its peers wait in collectives.
// With TANDEM_HEARTBEAT_DIR set, the rank writes DIR/rank<R> ("<pid> <next iteration>") after
// setup and after every iteration (the supervisor's heartbeats).
// A process may run several (a re-balanced run's two parts), then ends MPI with finish_processes.
exec::cpu::RunResult run_cpu_processes(const Strategy& strategy, const exec::cpu::RunOptions& options);

// Ends MPI in this process (MPI_Finalize), after its last run: mpirun counts a process that exits
// without it as failed.
void finish_processes();

}  // namespace tandem::distributed
