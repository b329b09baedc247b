// `tandem run SCENARIO --elastic --checkpoint FILE`: training that outlives its ranks. The run's
// ranks are processes (mpirun -np N tandem run ..., distributed/mpi_cpu_run.hpp) under this
// supervisor, which watches them:
//   - a rank that dies (SIGKILL, a crash) ends its job at once (mpirun tears the others down);
//   - a rank that hangs is found by its heartbeat (each rank rewrites a small file after setup and
//     after every iteration): one silent for --heartbeat-timeout seconds (at least 60 s before its
//     first beat: starting takes longer) is taken as failed, and the job is stopped;
// then the supervisor resumes from the last checkpoint: on a spare device while --spares lasts
// (the same plan), else on the survivors with a re-planned strategy (--replan shrink: the
// scenario's, data parallelism shrunk to what the surviving devices hold and the global batch
// splits evenly; --replan search: the strategy search's best plan for their devices, simulated;
// the checkpoint restores across strategies); with --repair-after, a shrunk job grows back to the
// scenario's plan once the lost devices return. The loss curve goes on as an uninterrupted run's
// would: the same data per iteration, the same state. It prints each failure, its detection and
// the recovery (restart time, iterations lost), and with --json the whole account.
#pragma once

#include "cli/run_command.hpp"

namespace tandem::cli {

struct ElasticOptions {
  int spares = 0;                   // --spares S: devices held in reserve for restarts
  double heartbeat_timeout_s = 30;  // --heartbeat-timeout: a rank silent this long has failed
  int max_restarts = 100;           // --max-restarts: then the run fails (exit 1)
  // --replan search: the survivors' plan is the strategy search's best for their devices
  // (simulated), instead of the scenario's with data parallelism shrunk.
  bool replan_by_search = false;
  // --repair-after N: N iterations after a shrink the lost devices are back; at the job's next
  // checkpoint it is stopped and resumed on the scenario's plan (growing back). 0: never.
  int repair_after = 0;
};

int run_elastic(const RunCommandOptions& run, const ElasticOptions& elastic);

}  // namespace tandem::cli
