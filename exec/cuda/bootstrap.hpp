// How the processes of a CUDA run find each other: one process per GPU, launched by MPI
// (`mpirun -np N tandem run ...`), or a single process without MPI. The bootstrap gives the
// process its rank, the world size and the node-local rank (which GPU it drives), hands NCCL
// unique ids from a group's first member to the others, and joins small statistics.
#pragma once

#include <memory>
#include <vector>

#include "exec/common/process_run.hpp"

namespace tandem::exec::cuda {

class Bootstrap : public ProcessGroup {
 public:
  virtual int local_rank() const = 0;
  // `bytes` (size n) on members[0] is copied to every other member of `members` (global ranks,
  // the caller among them). `tag` distinguishes concurrent exchanges (the group id).
  virtual void share(void* bytes, int n, const std::vector<int>& members, int tag) = 0;
};

// MPI when this build has it and the process was launched by mpirun (MPI initialised here and
// finalised at exit); a single process otherwise.
std::unique_ptr<Bootstrap> make_bootstrap();

}  // namespace tandem::exec::cuda
