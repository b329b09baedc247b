#include "exec/cuda/bootstrap.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef TANDEM_HAVE_MPI
#include <mpi.h>
#endif

namespace tandem::exec::cuda {
namespace {

class SingleProcess final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  int local_rank() const override { return 0; }
  void share(void*, int, const std::vector<int>& members, int) override {
    if (members.size() > 1) throw std::logic_error("single-process bootstrap: a group of several processes");
  }
  void sum(std::vector<double>&) override {}
  void max(std::vector<double>&) override {}
};

#ifdef TANDEM_HAVE_MPI
class MpiProcess final : public Bootstrap {
 public:
  MpiProcess() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(nullptr, nullptr);
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  int local_rank() const override { return local_rank_; }
  void share(void* bytes, int n, const std::vector<int>& members, int tag) override {
    if (members.empty()) return;
    if (members[0] == rank_) {
      for (std::size_t i = 1; i < members.size(); ++i) MPI_Send(bytes, n, MPI_BYTE, members[i], tag, MPI_COMM_WORLD);
    } else {
      MPI_Recv(bytes, n, MPI_BYTE, members[0], tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  void sum(std::vector<double>& v) override {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  void max(std::vector<double>& v) override {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }

 private:
  int rank_ = 0, world_ = 1, local_rank_ = 0;
};

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}
#endif

}  // namespace

std::unique_ptr<Bootstrap> make_bootstrap() {
#ifdef TANDEM_HAVE_MPI
  if (launched_by_mpi()) return std::make_unique<MpiProcess>();
#endif
  return std::make_unique<SingleProcess>();
}

}  // namespace tandem::exec::cuda
