// Shared by the multi-GPU end-to-end tests: one scenario run by `tandem run` on the CPU backend
// (ranks as threads) and under mpirun as one process per GPU on the CUDA backend, and their
// losses compared iteration by iteration at cuda_run_test.cpp's tolerance.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace tandem::exec::cuda::testing {

inline constexpr double kLossTolerance = 1e-4;  // relative, per iteration (cuda_run_test.cpp)

inline std::vector<double> iteration_losses(const cli_test::CliRun& run) {
  std::vector<double> out;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  for (const auto& it : j["iterations"]) out.push_back(it["loss"].get<double>());
  return out;
}

inline void expect_losses_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kLossTolerance * std::abs(want[i])) << "iteration " << i;
}

struct CpuAndGpus {
  cli_test::CliRun on_cpu, on_gpus;
};

// `tandem run PATH --iterations N --json -` on the CPU, and with `--backend cuda` as `ranks`
// processes under mpirun; asserts both succeeded and their losses agree.
inline CpuAndGpus expect_gpus_train_as_the_cpu(const std::string& path, int iterations, int ranks) {
  const std::string args = "run " + path + " --iterations " + std::to_string(iterations) + " --json -";
  CpuAndGpus r{cli_test::run_tandem(args),
               cli_test::run_tandem_with_prefix("mpirun --oversubscribe --allow-run-as-root -np " + std::to_string(ranks) + " ",
                                                args + " --backend cuda")};
  EXPECT_EQ(r.on_cpu.status, 0) << r.on_cpu.err;
  EXPECT_EQ(r.on_gpus.status, 0) << r.on_gpus.err;
  if (r.on_cpu.status == 0 && r.on_gpus.status == 0) expect_losses_near(iteration_losses(r.on_gpus), iteration_losses(r.on_cpu));
  return r;
}

}  // namespace tandem::exec::cuda::testing
