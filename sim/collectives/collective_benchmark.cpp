#include "sim/collectives/collective_benchmark.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/mailbox_p2p.hpp"
#include "sim/collectives/nccl_fabric.hpp"
#include "sim/platform_builder.hpp"

namespace tandem::sim {

CollectiveBenchmark benchmark_collective(const Cluster& cluster, OpKind kind, Bytes bytes, int ranks,
                                         CollectiveAlgorithm algorithm) {
  if (ranks < 2 || ranks > cluster.device_count())
    throw std::invalid_argument("benchmark_collective: group of " + std::to_string(ranks) + " on a cluster of " +
                                std::to_string(cluster.device_count()) + " devices");
  namespace s4u = simgrid::s4u;
  int argc = 1;
  char name[] = "tandem-collective-benchmark";
  char* argv[] = {name, nullptr};
  s4u::Engine engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  use_neutral_network_model();
  const BuiltPlatform platform = build_platform(cluster);
  TopologyView topology = topology_view(cluster);
  topology.nccl_fabric_of = nccl_fabric_lookup(cluster);

  std::vector<int> members(ranks);
  for (int r = 0; r < ranks; ++r) members[r] = r;
  const collectives::GroupShape shape = collectives::analyze_group(members, topology);
  CollectiveBenchmark result;
  result.algorithm = algorithm == CollectiveAlgorithm::automatic ? collectives::choose_for_shape(kind, bytes, shape)
                                                                 : algorithm;
  result.algorithm = collectives::effective_algorithm(result.algorithm, kind, shape);

  Seconds last = 0;
  for (int me = 0; me < ranks; ++me) {
    s4u::Actor::create("rank" + std::to_string(me), platform.hosts[me], [&, me] {
      CollectiveCall call;
      call.kind = kind;
      call.bytes = bytes;
      call.ranks = members;
      call.me = me;
      call.channel = "bench";
      MailboxPointToPoint p2p(me);
      run_collective(call, result.algorithm, CollectiveFidelity::automatic, p2p, topology);
      last = std::max(last, s4u::Engine::get_clock());
    });
  }
  engine.run();
  result.seconds = last;
  result.alg_bytes_per_s = last > 0 ? bytes / last : 0;
  result.bus_bytes_per_s = result.alg_bytes_per_s * nccl::bus_factor(kind, ranks);
  return result;
}

}  // namespace tandem::sim
