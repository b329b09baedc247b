#include "distributed/mpi_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/shared_library.hpp"

namespace tandem::distributed {

namespace {

constexpr const char* kPreloaded = "TANDEM_MPI_PRELOADED";  // holds LD_PRELOAD as it was before

// libsimgrid, which `tandem` links, exports MPI_* too (SMPI), and anything opened later comes
// after it in the global scope: the module, OpenMPI's own plugins and libmpi itself would call
// SMPI's MPI_Init. So the process runs itself again, once, with libmpi preloaded (LD_PRELOAD puts
// it right after the binary, as linking it first used to). RTLD_DEEPBIND would bind the module and
// libmpi to OpenMPI too, but also to the C library's malloc while the binary may use another
// (tcmalloc): free() of a foreign pointer.
void put_mpi_first() {
  if (const char* before = std::getenv(kPreloaded)) {  // the second run: children need no preload
    if (*before) setenv("LD_PRELOAD", before, 1);
    else unsetenv("LD_PRELOAD");
    return;
  }
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<char*> argv;
  for (std::size_t at = 0; at < cmdline.size(); at += std::strlen(cmdline.c_str() + at) + 1)
    argv.push_back(const_cast<char*>(cmdline.c_str() + at));
  argv.push_back(nullptr);
  const char* preload = std::getenv("LD_PRELOAD");
  setenv(kPreloaded, preload ? preload : "", 1);
  setenv("LD_PRELOAD", (std::string(TANDEM_LIBMPI) + (preload && *preload ? std::string(":") + preload : "")).c_str(), 1);
  execv("/proc/self/exe", argv.data());
  throw LibraryError(std::string("cannot run tandem again with ") + TANDEM_LIBMPI + " preloaded: " + std::strerror(errno));
}

}  // namespace

const TandemMpiModule& mpi_module() {
  static const TandemMpiModule* module = [] {
    put_mpi_first();
    const SharedLibrary lib = SharedLibrary::open({executable_dir() + "/libtandem_mpi.so"});
    return lib.function<const TandemMpiModule* (*)()>("tandem_mpi_module")();
  }();
  return *module;
}

void check_mpi(int error, const char* call) {
  if (error != 0) throw std::runtime_error(std::string(call) + " failed (MPI error " + std::to_string(error) + ")");
}

}  // namespace tandem::distributed
