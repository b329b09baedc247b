// Synchronous parameter servers (strategies/parameter_server.hpp): what a worker and a server
// issue (every gradient element pushed once, in partitions of at most 4 MB, to one server and
// pulled back, the servers' loads balanced;
// a server receives each push from every worker, adds, and sends the sum to every worker), the
// ranks and roles of the strategy, and what it refuses with its field.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/null_runtime.hpp"
#include "strategies/parameter_server.hpp"

namespace tandem {
namespace {

DataParallel strategy(int workers, int servers, ParallelConfig parallel = {}, const std::string& model = "gpt-tiny") {
  TrainingConfig training;
  training.global_batch_size = 4 * workers;  // two micro-batches of 2 per worker
  training.micro_batch_size = 2;
  training.seq_length = 32;
  parallel.data_parallel_size = workers;
  parallel.parameter_servers = servers;
  return DataParallel(std::make_shared<TransformerModel>(transformer_preset(model)), training, parallel, {});
}

struct Issued {
  std::vector<CommOp> comms;
  int adds = 0;
};

Issued one_step(const Strategy& s, int rank) {
  NullRuntime rt(s.world_size());
  Issued out;
  rt.on_communicate = [&](const CommOp& op) { out.comms.push_back(op); };
  rt.on_compute = [&](const ComputeOp& op) {
    if (op.kind == OpKind::elementwise && op.label.find(".add") != std::string::npos) ++out.adds;
  };
  const auto program = s.program_for(rank);
  program->setup(rt);
  program->train_step(rt, 0);
  return out;
}

TEST(ParameterServer, TheServersFollowTheWorkers) {
  const DataParallel s = strategy(4, 2);
  EXPECT_EQ(s.world_size(), 6);
  EXPECT_FALSE(s.replica_structure().has_value());  // nothing to mirror: every replica talks to them
  const auto roles = s.rank_roles();
  ASSERT_EQ(roles.size(), 6u);
  EXPECT_EQ(roles[3].replica, 3);
  EXPECT_EQ(roles[4].replica, -1);
  EXPECT_EQ(roles[5].sequences, 0);
  EXPECT_NE(s.name().find("2 parameter server(s)"), std::string::npos) << s.name();
}

TEST(ParameterServer, AWorkerPushesEveryGradientOnceAndPullsItBack) {
  const DataParallel s = strategy(4, 2);
  const Issued worker = one_step(s, 1);
  std::map<int, std::int64_t> pushed;  // server -> elements
  int pushes = 0, pulls = 0;
  std::int64_t largest = 0;
  for (const CommOp& op : worker.comms) {
    EXPECT_NE(op.kind, OpKind::all_reduce) << op.label;  // the servers replace it
    if (op.kind == OpKind::send) {
      EXPECT_EQ(op.tag, kPushTag);
      EXPECT_TRUE(op.peer == 4 || op.peer == 5) << op.peer;
      const std::int64_t part = op.buffer_range().second;
      EXPECT_LE(part * dtype_bytes(op.buffer.dtype), 4'096'000) << op.label;  // BytePS's partition size
      EXPECT_EQ(op.bytes, part * dtype_bytes(op.buffer.dtype)) << op.label;
      pushed[op.peer] += part;
      largest = std::max(largest, part);
      ++pushes;
    } else if (op.kind == OpKind::recv) {
      EXPECT_EQ(op.tag, kPullTag);
      ++pulls;
    }
  }
  EXPECT_GT(pushes, 10);
  EXPECT_EQ(pulls, pushes);
  // Every gradient element goes out once; each server's share within one partition of the other's.
  std::int64_t params = 0;
  NullRuntime shapes;
  for (const auto& layer : TransformerModel(transformer_preset("gpt-tiny")).build_layers({2, 32}, ParallelContext{})) {
    layer->allocate(shapes, /*with_gradients=*/true);
    for (const Tensor& g : layer->gradients()) params += g.numel();
  }
  EXPECT_EQ(pushed[4] + pushed[5], params);
  EXPECT_LE(std::abs(pushed[4] - pushed[5]), largest);
}

TEST(ParameterServer, ALargeTensorIsCutIntoPartitionsSpreadOverEveryServer) {
  // GPT-2 124M's word embedding: 50257 x 768 bf16 = 77 MB, 19 partitions of 4 MB.
  const DataParallel s = strategy(2, 4, {}, "gpt2-124m");
  std::map<int, int> partitions;  // server -> partitions of the embedding's gradient
  for (const CommOp& op : one_step(s, 0).comms)
    if (op.kind == OpKind::send && op.buffer.numel() == 50257 * 768) {
      ++partitions[op.peer];
      EXPECT_EQ(op.part_offset % (4'096'000 / 2), 0) << op.label;
    }
  ASSERT_EQ(partitions.size(), 4u);
  int total = 0;
  for (const auto& [server, n] : partitions) total += n;
  EXPECT_EQ(total, 19);
}

TEST(ParameterServer, AServerSumsEveryWorkersPushAndSendsTheSumToEach) {
  const DataParallel s = strategy(3, 2);
  // What worker 0 pushes to server 3, by label.
  std::vector<std::string> to_me;
  for (const CommOp& op : one_step(s, 0).comms)
    if (op.kind == OpKind::send && op.peer == 3) to_me.push_back(op.label);
  ASSERT_FALSE(to_me.empty());
  const Issued server = one_step(s, 3);
  int receives = 0, sends = 0;
  for (const CommOp& op : server.comms) {
    if (op.kind == OpKind::recv) ++receives;
    if (op.kind == OpKind::send) ++sends;
    EXPECT_LT(op.peer, 3) << op.label;
  }
  const int n = static_cast<int>(to_me.size());
  EXPECT_EQ(receives, 3 * n);
  EXPECT_EQ(sends, 3 * n);
  EXPECT_EQ(server.adds, 2 * n);  // worker 0's push starts each sum
}

TEST(ParameterServer, WhatItDoesNotCombineWithIsRefusedAtItsField) {
  const auto refused_with = [](int servers, ParallelConfig p) {
    try {
      strategy(2, servers, p);
    } catch (const StrategyError& e) {
      return e.field();
    }
    return std::string("accepted");
  };
  const auto refused = [&](ParallelConfig p) { return refused_with(1, p); };
  ParallelConfig compressed;
  compressed.gradient_compression.type = Compression::int8;
  EXPECT_EQ(refused(compressed), "strategy.parameter_servers");
  ParallelConfig local;
  local.local_sgd_steps = 4;
  EXPECT_EQ(refused(local), "strategy.parameter_servers");
  ParallelConfig zero;
  zero.zero_stage = 1;
  EXPECT_NE(refused(zero), "accepted");
  ParallelConfig negative;
  negative.parameter_server_staleness = -1;
  EXPECT_EQ(refused(negative), "strategy.parameter_server_staleness");
  // Staleness without servers: nothing to be stale.
  ParallelConfig stale;
  stale.parameter_server_staleness = 1;
  EXPECT_EQ(refused_with(0, stale), "strategy.parameter_server_staleness");
  // Asynchronous servers bound no staleness, need servers, and draw no order without being asked for.
  ParallelConfig bounded;
  bounded.parameter_server_asynchronous = true;
  bounded.parameter_server_staleness = 1;
  EXPECT_EQ(refused(bounded), "strategy.parameter_server_asynchronous");
  ParallelConfig alone;
  alone.parameter_server_asynchronous = true;
  EXPECT_EQ(refused_with(0, alone), "strategy.parameter_server_asynchronous");
  ParallelConfig jitter;
  jitter.parameter_server_jitter = 0.2;
  EXPECT_EQ(refused(jitter), "strategy.parameter_server_jitter");
  ParallelConfig seed;
  seed.parameter_server_seed = 3;
  EXPECT_EQ(refused(seed), "strategy.parameter_server_seed");
}

// An asynchronous server takes each worker's push alone, in the order drawn for the run: one
// optimizer step and one reply per worker and partition, each worker's slot after the one before.
TEST(ParameterServer, AnAsynchronousServerAppliesEachWorkersPushAloneInTheDrawnOrder) {
  ParallelConfig p;
  p.parameter_server_asynchronous = true;
  const DataParallel s = strategy(3, 1, p);
  NullRuntime rt(s.world_size());
  std::vector<int> received_from;
  int updates = 0, replies = 0;
  rt.on_communicate = [&](const CommOp& op) {
    if (op.kind == OpKind::recv && (received_from.empty() || received_from.back() != op.peer))
      received_from.push_back(op.peer);
    if (op.kind == OpKind::send) ++replies;
  };
  rt.on_compute = [&](const ComputeOp& op) { updates += op.kind == OpKind::optimizer; };
  const auto server = s.program_for(3);
  server->plan_iterations(0, 2);
  server->setup(rt);
  server->train_step(rt, 0);
  server->train_step(rt, 1);
  // gpt-tiny's gradients fit one bucket: each slot is one run of receives from one worker.
  EXPECT_EQ(received_from, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(updates, replies);
  EXPECT_GT(updates, 0);
  EXPECT_EQ(updates % 6, 0);
  // The workers are those of servers that step the optimizer: they keep no optimizer state.
  const Issued worker = one_step(s, 0);
  for (const CommOp& op : worker.comms) EXPECT_EQ(op.peer, 3);
}

// What one rank issues in each of `steps` steps: the communication's kinds in order, and whether
// a step began with the pulls (before any compute), stepped the optimizer, and copied pulled sums.
struct StepLog {
  int sends = 0, recvs = 0, optimizer = 0, stale_copies = 0;
  bool pulled_first = false;
};

std::vector<StepLog> steps_of(const Strategy& s, int rank, int steps) {
  NullRuntime rt(s.world_size());
  std::vector<StepLog> log;
  bool any_compute = false;
  rt.on_communicate = [&](const CommOp& op) {
    if (log.empty()) return;
    if (op.kind == OpKind::send) ++log.back().sends;
    if (op.kind == OpKind::recv) {
      ++log.back().recvs;
      if (!any_compute) log.back().pulled_first = true;
    }
  };
  rt.on_compute = [&](const ComputeOp& op) {
    any_compute = true;
    if (log.empty()) return;
    if (op.kind == OpKind::optimizer) ++log.back().optimizer;
    if (op.kind == OpKind::memcpy && op.label.find(".stale") != std::string::npos) ++log.back().stale_copies;
  };
  const auto program = s.program_for(rank);
  program->setup(rt);
  for (int it = 0; it < steps; ++it) {
    log.emplace_back();
    any_compute = false;
    program->train_step(rt, it);
  }
  return log;
}

TEST(ParameterServer, AStaleWorkerPullsAnEarlierStepsSumsFirstAndStepsOnThemLate) {
  ParallelConfig p;
  p.parameter_server_staleness = 2;
  const DataParallel s = strategy(2, 1, p);
  EXPECT_NE(s.name().find("staleness 2"), std::string::npos) << s.name();
  const std::vector<StepLog> worker = steps_of(s, 0, 4);
  const std::vector<StepLog> synchronous = steps_of(strategy(2, 1), 0, 1);
  const int pushes = synchronous[0].sends;
  ASSERT_GT(pushes, 0);
  for (int it = 0; it < 4; ++it) {
    const StepLog& step = worker[static_cast<std::size_t>(it)];
    EXPECT_EQ(step.sends, pushes) << "step " << it;  // every step pushes its own gradients
    if (it < 2) {
      // No sums yet: no pull, no update.
      EXPECT_EQ(step.recvs, 0) << "step " << it;
      EXPECT_EQ(step.optimizer, 0) << "step " << it;
    } else {
      // Step t - 2's sums, pulled before this step's forward, then the update on them.
      EXPECT_EQ(step.recvs, pushes) << "step " << it;
      EXPECT_TRUE(step.pulled_first) << "step " << it;
      EXPECT_EQ(step.optimizer, synchronous[0].optimizer) << "step " << it;
      EXPECT_GT(step.stale_copies, 0) << "step " << it;
    }
  }
  // The server: every step receives the pushes; from step 2 it first sends step t - 2's sums.
  const std::vector<StepLog> server = steps_of(s, 2, 4);
  for (int it = 0; it < 4; ++it) {
    const StepLog& step = server[static_cast<std::size_t>(it)];
    EXPECT_EQ(step.recvs, 2 * pushes) << "step " << it;
    EXPECT_EQ(step.sends, it < 2 ? 0 : 2 * pushes) << "step " << it;
  }
}

}  // namespace
}  // namespace tandem
