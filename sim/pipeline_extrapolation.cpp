#include "sim/pipeline_extrapolation.hpp"

#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <type_traits>

#include "common/interrupts.hpp"

namespace tandem::sim {

ExtrapolationPlan plan_pipeline_extrapolation(const Strategy& strategy, const Cluster& cluster,
                                              const SimulationOptions& options) {
  ExtrapolationPlan plan;
  const std::optional<PipelineStructure> pipeline = strategy.pipeline_structure();
  if (!pipeline) return plan;  // nothing periodic: nothing to say
  plan.target = pipeline->micro_batches;
  plan.shorter = pipeline->periodic_from;
  plan.longer = pipeline->periodic_from + pipeline->period;
  const auto why_not = [&](const std::string& reason) {
    plan.note = "no pipeline extrapolation: " + reason;
    return plan;
  };
  if (options.pipeline_extrapolation == FoldingMode::off) return why_not("off");
  if (options.record_trace) return why_not("a trace holds every op");
  // Ranks taking turns on shared cores have no periodic steady state of their own.
  for (int r = 0; r < strategy.world_size(); ++r)
    if (!cluster.device_of(r).is_gpu()) return why_not("ranks on CPU cores");
  // Worth it only when the two shorter iterations hold fewer micro-batches than the real one.
  if (plan.shorter + plan.longer >= plan.target)
    return why_not(std::to_string(plan.target) + " micro-batches are too few");
  plan.apply = true;
  plan.note = "pipeline extrapolation: " + std::to_string(plan.target) + " micro-batches from iterations of " +
              std::to_string(plan.shorter) + " and " + std::to_string(plan.longer);
  return plan;
}

std::optional<SimulationResult> extrapolate(const SimulationResult& shorter, const SimulationResult& longer,
                                            const ExtrapolationPlan& plan) {
  if (shorter.ranks.size() != longer.ranks.size() ||
      shorter.iteration_times_s.size() != longer.iteration_times_s.size())
    throw std::logic_error("pipeline extrapolation: the two runs differ in shape");
  // A rank's peak may differ by a transient buffer whose lifetime depends on timing (a pipeline
  // receive landing before the previous micro-batch's activations are freed): within
  // kPeakTolerance the runs agree and the larger peak stands; beyond it the pipeline had not
  // reached its steady state.
  constexpr double kPeakTolerance = 0.01;
  for (std::size_t r = 0; r < longer.ranks.size(); ++r) {
    const double a = shorter.ranks[r].peak_memory_bytes, b = longer.ranks[r].peak_memory_bytes;
    if (std::abs(a - b) > kPeakTolerance * std::max(a, b)) return std::nullopt;
  }
  const double f = static_cast<double>(plan.target - plan.longer) / static_cast<double>(plan.longer - plan.shorter);
  const auto along = [f](double x1, double x2) { return x2 + f * (x2 - x1); };

  SimulationResult out = longer;
  out.iteration_time_s = along(shorter.iteration_time_s, longer.iteration_time_s);
  for (std::size_t i = 0; i < out.iteration_times_s.size(); ++i)
    out.iteration_times_s[i] = along(shorter.iteration_times_s[i], longer.iteration_times_s[i]);
  out.energy_per_iteration_j = along(shorter.energy_per_iteration_j, longer.energy_per_iteration_j);
  for (std::size_t r = 0; r < out.ranks.size(); ++r) {
    const RankResult& a = shorter.ranks[r];
    RankResult& b = out.ranks[r];
    b.compute_s = along(a.compute_s, b.compute_s);
    b.exposed_comm_s = along(a.exposed_comm_s, b.exposed_comm_s);
    b.idle_s = along(a.idle_s, b.idle_s);
    b.comm_busy_s = along(a.comm_busy_s, b.comm_busy_s);
    b.contention_s = along(a.contention_s, b.contention_s);
    b.energy_j = along(a.energy_j, b.energy_j);
    if (a.peak_memory_bytes > b.peak_memory_bytes) {
      b.peak_memory_bytes = a.peak_memory_bytes;
      b.memory_at_peak = a.memory_at_peak;
    }
  }
  // The work done is what the two runs simulated.
  out.compute_executions += shorter.compute_executions;
  out.compute_ops += shorter.compute_ops;
  out.comm_ops += shorter.comm_ops;
  out.folding = longer.folding + "; " + plan.note;
  return out;
}

// --- bytes --------------------------------------------------------------------------------

namespace {

static_assert(std::is_trivially_copyable_v<RankResult>);

struct Writer {
  std::string bytes;
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(v.size());
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(s.size());
    bytes += s;
  }
};

struct Reader {
  std::string_view bytes;
  void take(void* to, std::size_t n) {
    if (n > bytes.size()) throw std::runtime_error("pipeline extrapolation: a child's result is truncated");
    std::memcpy(to, bytes.data(), n);
    bytes.remove_prefix(n);
  }
  template <class T>
  T pod() {
    T v;
    take(&v, sizeof v);
    return v;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = pod<std::size_t>();
    if (n > bytes.size() / sizeof(T)) throw std::runtime_error("pipeline extrapolation: a child's result is truncated");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  std::string str() {
    const auto n = pod<std::size_t>();
    if (n > bytes.size()) throw std::runtime_error("pipeline extrapolation: a child's result is truncated");
    std::string s(bytes.substr(0, n));
    bytes.remove_prefix(n);
    return s;
  }
};

}  // namespace

std::string to_bytes(const SimulationResult& r) {
  Writer w;
  w.pod(r.iteration_time_s);
  w.vec(r.iteration_times_s);
  w.vec(r.ranks);
  w.pod(r.energy_per_iteration_j);
  w.pod(r.compute_executions);
  w.pod(r.compute_ops);
  w.pod(r.comm_ops);
  w.pod(r.wall_time_s);
  w.pod(r.simulated_ranks);
  w.str(r.folding);
  return std::move(w.bytes);
}

SimulationResult result_from_bytes(std::string_view bytes) {
  Reader in{bytes};
  SimulationResult r;
  r.iteration_time_s = in.pod<Seconds>();
  r.iteration_times_s = in.vec<Seconds>();
  r.ranks = in.vec<RankResult>();
  r.energy_per_iteration_j = in.pod<Joules>();
  r.compute_executions = in.pod<std::size_t>();
  r.compute_ops = in.pod<std::size_t>();
  r.comm_ops = in.pod<std::size_t>();
  r.wall_time_s = in.pod<double>();
  r.simulated_ranks = in.pod<int>();
  r.folding = in.str();
  return r;
}

// --- the two runs -------------------------------------------------------------------------

namespace {

// A child running one shorter iteration: its pid and the pipe its result comes back on, as
// '0' + bytes, or '1' + the error.
struct Run {
  pid_t pid = -1;
  int fd = -1;
};

Run start_run(const Strategy& strategy, const std::function<SimulationResult(const Strategy&)>& simulate_one) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipeline extrapolation: pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = interrupts::fork_registered(interrupts::ChildRole::worker);
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("pipeline extrapolation: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string message;
    int status = 0;
    try {
      message = '0' + to_bytes(simulate_one(strategy));
    } catch (const std::exception& e) {
      message = std::string("1") + e.what();
      status = 3;
    }
    for (std::size_t done = 0; done < message.size();) {
      const ssize_t n = ::write(fds[1], message.data() + done, message.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(status);  // without SimGrid's exit handlers
  }
  ::close(fds[1]);
  return Run{pid, fds[0]};
}

SimulationResult finish_run(Run run) {
  std::string data;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(run.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(run.fd);
  const int status = interrupts::wait_registered(run.pid);
  if (!data.empty() && data[0] == '1') throw std::runtime_error(data.substr(1));
  if (data.empty() || data[0] != '0' || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("pipeline extrapolation: a simulating child process ended without a result (status " +
                             std::to_string(status) + ")");
  return result_from_bytes(std::string_view(data).substr(1));
}

}  // namespace

std::optional<SimulationResult> simulate_extrapolated(
    const Strategy& strategy, const ExtrapolationPlan& plan,
    const std::function<SimulationResult(const Strategy&)>& simulate_one) {
  const std::unique_ptr<Strategy> shorter = strategy.with_micro_batches(plan.shorter);
  const std::unique_ptr<Strategy> longer = strategy.with_micro_batches(plan.longer);
  if (!shorter || !longer) throw std::logic_error("pipeline extrapolation: the strategy cannot change its micro-batches");
  // Both at once: on one core they share it, on two the wall time halves.
  Run a = start_run(*shorter, simulate_one);
  Run b;
  try {
    b = start_run(*longer, simulate_one);
  } catch (...) {
    try {
      finish_run(a);
    } catch (...) {
    }
    throw;
  }
  std::optional<SimulationResult> first;
  std::exception_ptr failed;
  try {
    first = finish_run(a);
  } catch (...) {
    failed = std::current_exception();
  }
  SimulationResult second = finish_run(b);  // reaped even when the first failed
  if (failed) std::rethrow_exception(failed);
  return extrapolate(*first, second, plan);
}

}  // namespace tandem::sim
