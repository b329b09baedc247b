// A command loads only the libraries it uses: SimGrid when it simulates, OpenBLAS when the CPU
// backend runs kernels, MPI for `search --mpi`, the GPU libraries for `--backend cuda`. What the real binary loads is read from
// the dynamic linker's own account (LD_DEBUG=files lists every object it maps, dlopen'ed ones
// included), so nothing in `tandem` has to report on itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// The file names (e.g. "libopenblas.so.0") every process of `tandem ARGS` loaded.
std::set<std::string> loaded_libraries(const std::string& args) {
  static int calls = 0;
  const fs::path dir = fs::temp_directory_path() / ("tandem-ld-" + std::to_string(::getpid()) + "-" + std::to_string(calls++));
  fs::create_directories(dir);
  const std::string command = "LD_DEBUG=files LD_DEBUG_OUTPUT=" + (dir / "ld").string() + " " + cli_test::tandem_binary() +
                              " " + args + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::set<std::string> names;
  const std::regex file(R"(file=(\S+))");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);)
      if (std::smatch m; std::regex_search(line, m, file)) names.insert(fs::path(m[1].str()).filename().string());
  }
  fs::remove_all(dir);
  return names;
}

// The first loaded library whose name starts with one of `prefixes`, or "".
std::string any_of(const std::set<std::string>& loaded, std::initializer_list<const char*> prefixes) {
  for (const std::string& name : loaded)
    for (const char* prefix : prefixes)
      if (name.rfind(prefix, 0) == 0) return name;
  return "";
}

const std::initializer_list<const char*> kBlas = {"libopenblas", "libblas"};
const std::initializer_list<const char*> kMpiOrGpu = {"libmpi", "libopen-pal", "libopen-rte", "libhwloc", "libcuda",
                                                       "libcudart", "libcublas", "libnccl", "libnvidia"};

// A CUDA build still links the CUDA backend (and its MPI bootstrap) into `tandem`: the module that
// would load them on demand is not written yet (issue 13).
#ifdef TANDEM_HAVE_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

const char* const kCommands[] = {"--help", "simulate --help", "run --help", "simulate mlp-localhost"};

TEST(LoadedLibrariesCli, HelpAndSimulateLoadNoBlas) {
  for (const char* args : kCommands) {
    const std::set<std::string> loaded = loaded_libraries(args);
    ASSERT_FALSE(loaded.empty()) << "LD_DEBUG=files listed nothing for " << args;
    EXPECT_EQ(any_of(loaded, kBlas), "") << args;
  }
}

TEST(LoadedLibrariesCli, HelpAndSimulateLoadNoMpiOrGpuLibrary) {
  if (kCudaBuild) GTEST_SKIP() << "a CUDA build links the CUDA backend and MPI into tandem (issue 13)";
  for (const char* args : kCommands) EXPECT_EQ(any_of(loaded_libraries(args), kMpiOrGpu), "") << args;
}

// SimGrid (and the ns-3 libraries it links) only when a command simulates: libtandem_simgrid.so
// is opened on first use (sim/module/).
const std::initializer_list<const char*> kSimGrid = {"libsimgrid", "libns3", "libtandem_simgrid"};

TEST(LoadedLibrariesCli, OnlySimulatingCommandsLoadSimGrid) {
  for (const char* args : {"--help", "simulate --help", "fields device", "check mlp-localhost"})
    EXPECT_EQ(any_of(loaded_libraries(args), kSimGrid), "") << args;
  const std::set<std::string> simulating = loaded_libraries("simulate mlp-localhost");
  EXPECT_NE(any_of(simulating, {"libtandem_simgrid"}), "");
  EXPECT_NE(any_of(simulating, {"libsimgrid"}), "");
}

// tcmalloc (cli/fast_allocator.hpp): not for light commands, which start in a few ms without it;
// for a simulation, which it speeds up, when the build found it.
TEST(LoadedLibrariesCli, OnlyHeavyCommandsRunWithTcmalloc) {
  for (const char* args : {"--help", "simulate --help", "fields device", "check mlp-localhost", "explain mlp-localhost"})
    EXPECT_EQ(any_of(loaded_libraries(args), {"libtcmalloc"}), "") << args;
#ifdef TANDEM_TCMALLOC_SO
  EXPECT_NE(any_of(loaded_libraries("simulate mlp-localhost"), {"libtcmalloc"}), "");
  // Unless asked not to.
  ASSERT_EQ(setenv("TANDEM_ALLOCATOR", "system", 1), 0);
  EXPECT_EQ(any_of(loaded_libraries("simulate mlp-localhost"), {"libtcmalloc"}), "");
  unsetenv("TANDEM_ALLOCATOR");
#endif
}

// The control: the CPU backend does load OpenBLAS (so the tests above can see a library).
TEST(LoadedLibrariesCli, CpuRunLoadsOpenBlas) {
  EXPECT_NE(any_of(loaded_libraries("run mlp-localhost --iterations 1"), {"libopenblas"}), "");
}

}  // namespace
}  // namespace tandem
