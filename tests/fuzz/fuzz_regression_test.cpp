// Every input that once broke a reader under fuzzing (fuzz/regressions/<reader>/<name>) is now
// refused cleanly: an InputError naming the file (exit 2 at the command line), or a
// StrategyError, and nothing else: no crash, no other exception (a raw message with exit 1).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "common/input_error.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "fuzz/readers.hpp"
#include "platforms/cluster.hpp"
#include "strategies/strategy.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

struct Reader {
  const char* name;
  std::function<void(const std::string&)> read;
};

// The fuzzing build skips the checkpoint's checksum (fuzz/README.md), so its findings lie behind
// it: replayed here with the checksum made right, they reach the same code.
void read_resealed_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() >= 8) {
    const std::uint64_t sum = exec::cpu::checkpoint_checksum(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  const std::string resealed = (fs::temp_directory_path() / ("tandem-fuzz-regression-" + std::to_string(::getpid()) +
                                                             "-" + fs::path(path).filename().string()))
                                   .string();
  std::ofstream(resealed, std::ios::binary) << bytes;
  try {
    fuzz::read_checkpoint(resealed);
  } catch (const InputError& e) {
    fs::remove(resealed);
    throw InputError(path, e.line(), e.field(), e.what());  // named as the regression input
  } catch (...) {
    fs::remove(resealed);
    throw;
  }
  fs::remove(resealed);
}

const Reader kReaders[] = {{"scenario", fuzz::read_scenario}, {"search", fuzz::read_search},
                           {"cluster", fuzz::read_cluster},   {"device", fuzz::read_device},
                           {"trace", fuzz::read_trace},       {"checkpoint", read_resealed_checkpoint},
                           {"convergence", fuzz::read_convergence}};

TEST(FuzzRegression, EveryInputOnceFoundIsRefusedCleanly) {
  int replayed = 0;
  for (const Reader& reader : kReaders) {
    const fs::path dir = fs::path(bundled_dir("fuzz/regressions")) / reader.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string path = entry.path().string();
      SCOPED_TRACE(std::string(reader.name) + " reader, " + path);
      ++replayed;
      try {
        reader.read(path);
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "the error names the file: " << e.what();
      } catch (const StrategyError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not an input error: " << e.what();
      }
    }
  }
  EXPECT_GE(replayed, 3) << "the regression inputs were not found under " << bundled_dir("fuzz/regressions");
  RecordProperty("replayed", replayed);
}

}  // namespace
}  // namespace tandem
