// Which algorithm wins where, in simulation and in the tuner (choose_algorithm), and contention
// between concurrent collectives coming from the network model.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/sim/collectives/collective_harness.hpp"

namespace tandem::sim_test::collectives {
namespace {

Job make_job(OpKind kind, Bytes bytes, std::vector<int> ranks, CollectiveAlgorithm algorithm,
             CollectiveFidelity fidelity, const std::string& channel) {
  Job job;
  job.kind = kind;
  job.bytes = bytes;
  job.ranks = std::move(ranks);
  job.algorithm = algorithm;
  job.fidelity = fidelity;
  job.channel = channel;
  return job;
}

// Simulates each algorithm on its own replica of the platform; returns their times in order.
std::vector<Seconds> race(PlatformSpec spec, OpKind kind, Bytes bytes, const std::vector<CollectiveAlgorithm>& algorithms,
                          CollectiveFidelity fidelity) {
  spec.replicas = static_cast<int>(algorithms.size());
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < algorithms.size(); ++i)
    jobs.push_back(make_job(kind, bytes, iota_ranks(spec.hosts(), static_cast<int>(i) * spec.hosts()), algorithms[i],
                            fidelity, "race" + std::to_string(i)));
  const Outcome out = simulate(spec, jobs);
  EXPECT_TRUE(out.ok) << out.error;
  return out.ok ? out.end_s : std::vector<Seconds>(algorithms.size(), 0.0);
}

TEST(CollectiveChoice, HierarchicalBeatsFlatRingOnSlowNics) {
  // 4 nodes x 8 devices, NVLink-class 150 GB/s inside, 12.5 GB/s NICs (one per device).
  const PlatformSpec spec = PlatformSpec::two_level(4, 8, 150e9, 12.5e9);
  for (Bytes bytes : {64e6, 512e6}) {
    const auto t = race(spec, OpKind::all_reduce, bytes, {CollectiveAlgorithm::ring, CollectiveAlgorithm::hierarchical},
                        CollectiveFidelity::exact);
    std::printf("  all-reduce %.0f MB on 4x8: ring %.3f ms, hierarchical %.3f ms (%.1fx)\n", bytes / 1e6, t[0] * 1e3,
                t[1] * 1e3, t[0] / t[1]);
    EXPECT_LT(t[1], 0.5 * t[0]);
  }
}

TEST(CollectiveChoice, TreeBeatsRingForSmallMessagesOverManyRanks) {
  const PlatformSpec star = PlatformSpec::star(64, 25e9, 2.5e-6);
  const PlatformSpec nodes = PlatformSpec::two_level(16, 4, 150e9, 25e9);
  for (const PlatformSpec& spec : {star, nodes}) {
    for (Bytes bytes : {1024.0, 64e3}) {
      const auto t = race(spec, OpKind::all_reduce, bytes, {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree},
                          CollectiveFidelity::exact);
      std::printf("  all-reduce %.0f B over 64 ranks (%d nodes): ring %.1f us, tree %.1f us\n", bytes, spec.nodes,
                  t[0] * 1e6, t[1] * 1e6);
      EXPECT_LT(t[1], 0.5 * t[0]);
    }
  }
  // ...while for a large message the ring's bandwidth term wins on a star.
  const auto t = race(PlatformSpec::star(16, 25e9, 2.5e-6), OpKind::all_reduce, 256e6,
                      {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree}, CollectiveFidelity::aggregated);
  std::printf("  all-reduce 256 MB over 16 ranks: ring %.3f ms, tree %.3f ms\n", t[0] * 1e3, t[1] * 1e3);
  EXPECT_LT(t[0], t[1]);
}

TEST(CollectiveChoice, TunerPicksTreeForTinyAndRingOrHierarchicalForLarge) {
  // DGX-like: 8 devices per node, 150 GB/s NVLink ports (2 us), 25 GB/s NICs (5 us).
  auto view = [](int per_node) {
    PlatformSpec spec = PlatformSpec::two_level(1, per_node, 150e9, 25e9);
    spec.intra_link_latency_s = 1e-6;
    spec.nic_link_latency_s = 2.5e-6;
    return topology_of(spec);
  };
  const sim::TopologyView dgx = view(8);
  const auto r128 = iota_ranks(128);  // 16 nodes x 8
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 4096, r128, dgx), CollectiveAlgorithm::tree);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 1e9, r128, dgx), CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(sim::choose_algorithm(OpKind::reduce_scatter, 1e9, r128, dgx), CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(sim::choose_algorithm(OpKind::broadcast, 1024, r128, dgx), CollectiveAlgorithm::tree);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_to_all, 1e6, r128, dgx), CollectiveAlgorithm::direct);

  // One device per node: nothing hierarchical; tiny goes to the tree, large to the ring.
  const sim::TopologyView flat = view(1);
  const auto r64 = iota_ranks(64);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 1024, r64, flat), CollectiveAlgorithm::tree);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 1e9, r64, flat), CollectiveAlgorithm::ring);

  // Inside one node: ring for large messages, the one-shot direct form for tiny ones.
  const auto r8 = iota_ranks(8);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 1e9, r8, dgx), CollectiveAlgorithm::ring);
  EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 256, r8, dgx), CollectiveAlgorithm::direct);

  // Deterministic: the same question, the same answer; an irregular group never gets hierarchical.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(sim::choose_algorithm(OpKind::all_reduce, 1e9, r128, dgx), CollectiveAlgorithm::hierarchical);
  std::vector<int> irregular = iota_ranks(12);  // 8 on node 0, 4 on node 1
  EXPECT_NE(sim::choose_algorithm(OpKind::all_reduce, 1e9, irregular, dgx), CollectiveAlgorithm::hierarchical);
}

TEST(CollectiveChoice, TunerChoiceIsNearTheFastestInSimulation) {
  PlatformSpec spec = PlatformSpec::two_level(4, 4, 150e9, 25e9);
  const auto view = topology_of(spec);
  const std::vector<CollectiveAlgorithm> all = {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                                CollectiveAlgorithm::hierarchical};
  for (Bytes bytes : {2048.0, 1e6, 256e6}) {
    const auto t = race(spec, OpKind::all_reduce, bytes, all, CollectiveFidelity::aggregated);
    const CollectiveAlgorithm chosen = sim::choose_algorithm(OpKind::all_reduce, bytes, iota_ranks(16), view);
    const Seconds best = *std::min_element(t.begin(), t.end());
    Seconds picked = 0;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i] == chosen) picked = t[i];
    std::printf("  %.0f B on 4x4: ring %.1f us, tree %.1f us, hierarchical %.1f us; tuner: %s\n", bytes, t[0] * 1e6,
                t[1] * 1e6, t[2] * 1e6, sim::to_string(chosen));
    EXPECT_LE(picked, 1.25 * best) << sim::to_string(chosen);
  }
}

TEST(CollectiveChoice, ConcurrentCollectivesSharingANicSlowEachOtherDown) {
  // 2 nodes x 4 devices. Groups {0,4} and {1,5} are disjoint, but each crosses the same two NICs
  // when the NIC is shared by the node's devices; with one NIC per device they do not meet.
  for (bool shared : {true, false}) {
    for (CollectiveFidelity fidelity : {CollectiveFidelity::exact, CollectiveFidelity::aggregated}) {
      const PlatformSpec spec = PlatformSpec::two_level(2, 4, 150e9, 25e9, shared);
      const Bytes bytes = 256e6;
      const Job a = make_job(OpKind::all_reduce, bytes, {0, 4}, CollectiveAlgorithm::ring, fidelity, "a");
      const Job b = make_job(OpKind::all_reduce, bytes, {1, 5}, CollectiveAlgorithm::ring, fidelity, "b");
      const Outcome alone = simulate_one(spec, a);
      const Outcome both = simulate(spec, {a, b});
      ASSERT_TRUE(alone.ok) << alone.error;
      ASSERT_TRUE(both.ok) << both.error;
      const double slowdown = both.end_s[0] / alone.end_s[0];
      std::printf("  %s NIC, %s: alone %.3f ms, concurrently %.3f / %.3f ms (x%.2f)\n", shared ? "shared" : "per-device",
                  sim::to_string(fidelity), alone.end_s[0] * 1e3, both.end_s[0] * 1e3, both.end_s[1] * 1e3, slowdown);
      if (shared) {
        EXPECT_GT(slowdown, 1.9);
        EXPECT_LT(slowdown, 2.1);
      } else {
        EXPECT_NEAR(slowdown, 1.0, 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace tandem::sim_test::collectives
