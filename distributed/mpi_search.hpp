// Searches larger than one machine: the search's simulations spread over MPI ranks (OpenMPI, as
// `mpirun -np N tandem search SCENARIO --mpi`). Rank 0 runs the search and hands candidates out
// one at a time to ranks 1..N-1 as they come free; each of those simulates its candidate in a
// forked child (SimGrid holds one engine per process), exactly as the local worker pool does,
// and sends the result back. Results are keyed by candidate, so the answer is the same as with
// local workers, whatever the number of ranks.
//
// Built only when CMake finds MPI (TANDEM_HAVE_MPI); the MPI calls are in libtandem_mpi.so
// (mpi_module.hpp), opened by the first MpiSession, so `tandem` itself does not load MPI.
#pragma once

#include <functional>

#include "scenarios/search_evaluator.hpp"

namespace tandem::distributed {

// MPI_Init on construction, MPI_Finalize on destruction.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Rank 0's evaluator: estimates here, simulations on ranks 1..N-1 (needs N >= 2). Tells the
// workers to stop when destroyed.
class MpiEvaluator final : public search::Evaluator {
 public:
  MpiEvaluator(const MpiSession& session, SimulationEvaluator& local, std::function<void()> on_simulated = {});
  ~MpiEvaluator() override;

  std::vector<search::Estimate> estimate(const std::vector<search::Candidate>& candidates) override;
  std::vector<search::Evaluation> evaluate(const std::vector<search::Candidate>& candidates) override;

 private:
  const MpiSession& session_;
  SimulationEvaluator& local_;
  std::function<void()> on_simulated_;
};

// Ranks 1..N-1: simulate the candidates rank 0 sends until it says stop.
void serve_candidates(SimulationEvaluator& local);

}  // namespace tandem::distributed
