// The worker-process pool: results in task order whatever the finishing order, at most
// `workers` children at once, and a failing task (exception or crash) contained to itself.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "common/process_pool.hpp"

namespace tandem {
namespace {

TEST(ProcessPool, ResultsComeBackInTaskOrder) {
  // Later tasks finish first.
  const auto out = run_in_processes(
      5,
      [](std::size_t i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * (5 - static_cast<int>(i))));
        return "task" + std::to_string(i) + ":" + std::to_string(::getpid());
      },
      3);
  ASSERT_EQ(out.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(out[i].ok) << out[i].error;
    EXPECT_EQ(out[i].output.rfind("task" + std::to_string(i) + ":", 0), 0u) << out[i].output;
    EXPECT_NE(out[i].output, "task" + std::to_string(i) + ":" + std::to_string(::getpid())) << "ran in this process";
  }
}

TEST(ProcessPool, FailuresStayWithTheirTask) {
  const auto out = run_in_processes(
      3,
      [](std::size_t i) -> std::string {
        if (i == 0) throw std::runtime_error("no such strategy");
        if (i == 1) ::raise(SIGKILL);
        return "fine";
      },
      2);
  EXPECT_FALSE(out[0].ok);
  EXPECT_EQ(out[0].error, "no such strategy");
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("signal 9"), std::string::npos) << out[1].error;
  EXPECT_TRUE(out[2].ok);
  EXPECT_EQ(out[2].output, "fine");
}

TEST(ProcessPool, LargeResultsArriveWhole) {
  const auto out = run_in_processes(2, [](std::size_t i) { return std::string(1 << 20, static_cast<char>('a' + i)); }, 2);
  ASSERT_TRUE(out[1].ok);
  EXPECT_EQ(out[1].output, std::string(1 << 20, 'b'));
}

TEST(ProcessPool, ReportsEachFinishedTaskOnce) {
  std::vector<int> seen(4, 0);
  run_in_processes(4, [](std::size_t) { return std::string("x"); }, 2, [&](std::size_t i) { ++seen[i]; });
  EXPECT_EQ(seen, std::vector<int>(4, 1));
}

}  // namespace
}  // namespace tandem
