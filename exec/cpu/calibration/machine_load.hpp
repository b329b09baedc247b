// How busy this machine is with other programs: the load the simulator's shared-cores model
// (platforms/cluster.hpp, NodeGroup::background_load) needs to predict a CPU run on a machine
// that other programs use at the same time.
//
// `threads` threads (as many as the cores) spin for `duration_s` of wall time; each one's CPU
// time over the wall time is the share of a core it got, and what they got together is what this
// process can have: background_load = cores − Σ shares, the cores' worth other programs keep.
// Linux shares the CPU between sessions first (autogroup), then between a session's threads, so
// the other programs' share does not grow with our thread count: on a 2-core machine with one
// busy build elsewhere, 1, 2, 3 and 4 spinning threads get 1.0, 0.5, 0.34 and 0.27 of a core each,
// i.e. one core together. The simulator models exactly that (sim/simulation.cpp).
#pragma once

namespace tandem::exec::cpu {

struct CoreShare {
  int threads = 0;
  double share = 1;          // mean CPU time / wall time per thread
  double background_load = 0;  // cores' worth taken by other programs, in [0, cores]
};

CoreShare measure_core_share(int threads, int cores, double duration_s);

// The CPU other programs used over an interval, in cores: the busy time of the CPUs this process
// may run on (/proc/stat) minus this process's own CPU time and its waited-for children's
// (getrusage), over the wall time. Read around a run, it is the
// background load that run met. /proc/stat counts in clock ticks (10 ms): use intervals of a few
// tenths of a second or more.
class OtherProgramsMeter {
 public:
  OtherProgramsMeter();  // starts the interval
  void restart();
  double cores() const;  // since the start; 0 when /proc/stat cannot be read
  double own_cores() const;  // this process's CPU time since the start over the wall time

 private:
  struct Sample {
    double busy_s = -1;   // all CPUs
    double own_s = 0;     // this process
    double wall_s = 0;
  };
  static Sample sample();
  Sample start_;
};

}  // namespace tandem::exec::cpu
