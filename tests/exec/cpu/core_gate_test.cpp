#include "exec/cpu/core_gate.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::exec::cpu {
namespace {

using namespace std::chrono_literals;

void wait_until_queued(const CoreGate& gate, int threads) {
  while (gate.queued() < threads) std::this_thread::sleep_for(100us);
}

TEST(CoreGate, NoMoreThreadsRunThanPermitsAndBlockedThreadsLetOthersRun) {
  CoreGate gate(2);
  std::atomic<int> running{0}, most{0};
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  for (int r = 0; r < 6; ++r) {
    threads.emplace_back([&, r] {
      const CoreGate::Hold hold(gate, r);
      for (int round = 0; round < 20; ++round) {
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        const auto until = std::chrono::steady_clock::now() + 50us;
        while (std::chrono::steady_clock::now() < until) {
        }
        --running;
        // Blocks briefly: its core goes to a queued thread meanwhile.
        std::unique_lock<std::mutex> lock(mutex);
        off_core_wait(lock, [&] { return cv.wait_for(lock, 100us); });
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 2);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(gate.queued(), 0);
}

TEST(CoreGate, ABlockingThreadHandsItsCoreToTheRankItWaitsForFirst) {
  CoreGate gate(1);
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<bool> holding{false}, release{false};
  std::thread first([&] {
    const CoreGate::Hold hold(gate, 0);
    holding = true;
    while (!release) std::this_thread::sleep_for(100us);
    EXPECT_TRUE(leave_core([](int rank) { return rank == 2; }));  // waits for rank 2
    rejoin_core();
  });
  while (!holding) std::this_thread::sleep_for(100us);
  std::vector<std::thread> queued;
  for (int r = 1; r <= 2; ++r) {  // rank 1 queues before rank 2
    queued.emplace_back([&, r] {
      const CoreGate::Hold hold(gate, r);
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(r);
    });
    wait_until_queued(gate, r);
  }
  release = true;
  first.join();
  for (auto& t : queued) t.join();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(CoreGate, AStandbyThreadGetsACoreOnlyWhenNoOtherThreadWaitsForOne) {
  CoreGate gate(1);
  std::mutex mutex;
  std::vector<std::string> order;
  std::atomic<bool> holding{false}, release{false};
  std::thread first([&] {
    const CoreGate::Hold hold(gate, 0);
    holding = true;
    while (!release) std::this_thread::sleep_for(100us);
  });
  while (!holding) std::this_thread::sleep_for(100us);
  std::thread standby([&] {  // queues first, as a standby
    const int core = gate.acquire(/*standby=*/true);
    { std::lock_guard<std::mutex> lock(mutex); order.push_back("standby"); }
    gate.release(core);
  });
  wait_until_queued(gate, 1);
  std::thread regular([&] {
    const int core = gate.acquire();
    { std::lock_guard<std::mutex> lock(mutex); order.push_back("regular"); }
    gate.release(core);
  });
  wait_until_queued(gate, 2);
  release = true;
  first.join();
  standby.join();
  regular.join();
  EXPECT_EQ(order, (std::vector<std::string>{"regular", "standby"}));
}

TEST(CoreGate, AThreadGivesItsCoreUpForAWaitWithoutHoldingTheWaitsLock) {
  // The thread handed the core may preempt the one that gave it up at once; were the lock still
  // held then, whoever needs it waits until the kernel gives that thread a time slice back.
  CoreGate gate(1);
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
  std::atomic<bool> holding{false}, handed{false};
  bool locked_while_handing = true;
  std::thread waiter([&] {
    const CoreGate::Hold hold(gate, 0);
    lock.lock();
    holding = true;
    wait_until_queued(gate, 1);
    // The filter runs inside the hand-over, on this thread: it sees the lock's state then.
    off_core_wait(lock, [&] {
      while (!handed) cv.wait_for(lock, 1ms);
      return 0;
    }, [&](int) {
      locked_while_handing = lock.owns_lock();
      return true;
    });
    lock.unlock();
  });
  while (!holding) std::this_thread::sleep_for(100us);
  std::thread other([&] {
    const CoreGate::Hold hold(gate, 1);
    handed = true;
  });
  other.join();
  waiter.join();
  EXPECT_FALSE(locked_while_handing);
}

// A sleeper whose waker never came (sleep_off_core_until's deadline) is made unfindable before it
// queues for a core itself: a waker that found it later would queue a waiter nobody awaits, and
// the permit granted to it would be lost.
TEST(CoreGate, ASleeperWhoseTimeRunsOutLeavesItsWakersBeforeTakingACoreAgain) {
  CoreGate gate(1);
  std::mutex mutex;
  std::atomic<bool> holding{false}, findable{false}, unregistered_before_core{false}, holds_after{false};
  bool woken = true;
  std::thread sleeper([&] {
    const CoreGate::Hold hold(gate, 0);
    holding = true;
    wait_until_queued(gate, 1);  // the other thread queues for the core first
    std::unique_lock<std::mutex> lock(mutex);
    CoreSleeper me;
    prepare_sleep(me.waiter);
    findable = true;
    woken = sleep_off_core_until(lock, me, std::chrono::steady_clock::now() + 5ms, {}, [&] {
      unregistered_before_core = !holds_core();
      findable = false;
    });
    holds_after = holds_core();
  });
  while (!holding) std::this_thread::sleep_for(100us);
  std::thread other([&] {
    const CoreGate::Hold hold(gate, 1);  // runs while the sleeper sleeps, past its deadline
    std::this_thread::sleep_for(20ms);
  });
  sleeper.join();
  other.join();
  EXPECT_FALSE(woken);
  EXPECT_TRUE(unregistered_before_core);
  EXPECT_FALSE(findable);
  EXPECT_TRUE(holds_after);
  EXPECT_EQ(gate.queued(), 0);
}

TEST(CoreGate, ASleeperQueuedByItsWakerWakesHoldingACore) {
  CoreGate gate(1);
  std::mutex mutex;
  CoreSleeper me;
  std::atomic<bool> holding{false}, asleep{false};
  bool woken = false, holds_after = false;
  std::thread sleeper([&] {
    const CoreGate::Hold hold(gate, 0);
    holding = true;
    wait_until_queued(gate, 1);  // the waker queues for the core first
    std::unique_lock<std::mutex> lock(mutex);
    prepare_sleep(me.waiter);
    asleep = true;
    woken = sleep_off_core_until(lock, me, std::chrono::steady_clock::now() + 10s, {}, [] {});
    holds_after = holds_core();
  });
  while (!holding) std::this_thread::sleep_for(100us);
  std::thread waker([&] {
    const CoreGate::Hold hold(gate, 1);  // gets the core the sleeper left
    while (!asleep) std::this_thread::sleep_for(100us);
    std::lock_guard<std::mutex> lock(mutex);  // as a waker does, under the lock the sleeper waits with
    me.queue();
  });
  waker.join();
  sleeper.join();
  EXPECT_TRUE(woken);
  EXPECT_TRUE(holds_after);
  EXPECT_EQ(gate.queued(), 0);
}

TEST(CoreGate, AThreadWithoutAHoldIsNotGated) {
  EXPECT_FALSE(leave_core());
  rejoin_core();  // nothing to take back
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_EQ(off_core_wait(lock, [&] { return cv.wait_for(lock, 1ms); }), std::cv_status::timeout);
  EXPECT_TRUE(lock.owns_lock());
}

TEST(CoreGate, APermitHolderIsPinnedToOneCore) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  if (CPU_COUNT(&set) < 1) GTEST_SKIP() << "no CPU in this process's set";
  CoreGate gate(1);
  int cpus_while_holding = 0;
  std::thread t([&] {
    const CoreGate::Hold hold(gate, 0);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    sched_getaffinity(0, sizeof mine, &mine);
    cpus_while_holding = CPU_COUNT(&mine);
  });
  t.join();
  EXPECT_EQ(cpus_while_holding, 1);
}

}  // namespace
}  // namespace tandem::exec::cpu
