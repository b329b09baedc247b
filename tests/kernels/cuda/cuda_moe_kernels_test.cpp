// The CUDA mixture-of-experts kernels (kernels/cuda/moe.cuh) against the CPU reference, op by op
// through both dispatchers: the routing's experts and slots bit for bit (ties, capacity drops,
// dropless, more picks than one block's chunk); every output the CPU computes in an order the GPU
// keeps (router backward, counts, dispatch, combine, regroup) bit for bit; gates, probabilities
// and the gates' gradient (a double exp, a double dot product in another order) within fp32
// rounding; the same refusals. The index inputs are a real routing (the CPU's), since the places
// of a valid routing are unique. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/moe.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::kernels::cuda::testing {
namespace {

using I64 = std::int64_t;
using Storage = std::vector<float>;
using cpu::MoeShape;
using cpu::testing::random_vector;

std::size_t count_of(I64 n) { return static_cast<std::size_t>(n); }
std::int32_t* ids(Storage& v) { return reinterpret_cast<std::int32_t*>(v.data()); }

// Router logits; with `ties`, rounded to halves so that many experts tie.
Storage router_logits(const MoeShape& s, std::uint32_t seed, bool ties) {
  Storage v = random_vector(count_of(s.tokens * s.experts), seed, -2.0f, 2.0f);
  if (ties)
    for (float& x : v) x = std::round(x * 2.0f) / 2.0f;
  return v;
}

// The CPU's routing of `logits`, the indices raw in fp32 storage (the dispatchers' convention).
struct Routing {
  Storage gates, experts, slots, probs;
};
Routing cpu_routing(const MoeShape& s, const Storage& logits) {
  const std::size_t picks = count_of(s.tokens * s.topk);
  Routing r{Storage(picks), Storage(picks), Storage(picks), Storage(count_of(s.tokens * s.experts))};
  cpu::moe_route_forward(r.gates.data(), ids(r.experts), ids(r.slots), r.probs.data(), logits.data(), s);
  return r;
}

MoeArgs moe_args(MoeStep step, const MoeShape& s, bool backward) {
  return MoeArgs{step, s.tokens, s.hidden, s.experts, s.topk, s.capacity, /*ep=*/1, backward};
}

ComputeOp moe_op(const MoeArgs& a, std::vector<Tensor> inputs, std::vector<Tensor> outputs) {
  return make_op(OpKind::elementwise, a, std::move(inputs), std::move(outputs), "mb0.layer1.mlp.moe");
}

// Output tensor `id` equal to the CPU's bit for bit (indices, copies, sums in the CPU's order).
void expect_identical(const OpOutcome& o, int id, const std::string& what) {
  expect_bitwise_equal(o.gpu.at(id), o.cpu.at(id), what + ": output tensor " + std::to_string(id));
}

void expect_close(const OpOutcome& o, int id, const std::string& what) {
  EXPECT_LE(cpu::testing::rel_error(o.gpu.at(id), o.cpu.at(id)), kFp32Tolerance) << what << ": output tensor " << id;
}

struct RouteCase {
  MoeShape s;
  bool ties, drops;
};

TEST(CudaKernels, MoeRoutingPicksTheCpusExpertsAndSlotsWithCapacityDrops) {
  TANDEM_REQUIRE_GPU();
  const std::vector<RouteCase> cases = {
      {{37, 1, 8, 2, 6}, false, true},
      {{37, 1, 8, 2, 6}, true, true},
      {{700, 1, 6, 2, 200}, true, true},  // 1400 picks: more than one chunk of the slot scan
      {{33, 1, 5, 3, 99}, false, false},  // dropless
      {{50, 1, 4, 4, 60}, true, false},   // every expert picked
      {{64, 1, 16, 1, 3}, false, true},   // top-1
  };
  std::uint32_t seed = 11;
  for (const RouteCase& c : cases) {
    const MoeShape& s = c.s;
    const std::string what = "T" + std::to_string(s.tokens) + " E" + std::to_string(s.experts) + " k" +
                             std::to_string(s.topk) + " C" + std::to_string(s.capacity) + (c.ties ? " ties" : "");
    const I64 T = s.tokens, k = s.topk, E = s.experts;
    cpu::RouterLoad load;
    cpu::RunOptions options;
    options.router_load = &load;
    const OpOutcome o = run_on_both(
        moe_op(moe_args(MoeStep::route, s, false), {tensor(0, {T, E})},
               {tensor(1, {T, k}), tensor(2, {T, k}, DType::int32), tensor(3, {T, k}, DType::int32), tensor(4, {T, E})}),
        MathMode::fp32, 16, options, {}, {{0, router_logits(s, seed++, c.ties)}});
    expect_identical(o, 2, what + " experts");
    expect_identical(o, 3, what + " slots");
    expect_close(o, 1, what + " gates");
    expect_close(o, 4, what + " probs");
    Storage slots = o.cpu.at(3);
    const auto dropped = std::count(ids(slots), ids(slots) + T * k, -1);
    EXPECT_EQ(dropped > 0, c.drops) << what << ": " << dropped << " picks dropped";
    // Both backends measured the same load (the GPU's picks copied back to the host).
    EXPECT_EQ(load.routings, 2) << what;
    EXPECT_EQ(load.ratio_sum, 2 * load.ratio_max) << what;
  }
}

TEST(CudaKernels, MoeRouterBackwardWithLoadBalancingLossMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const MoeShape s{45, 1, 6, 2, 12};
  const I64 T = s.tokens, k = s.topk, E = s.experts;
  const Routing r = cpu_routing(s, router_logits(s, 3, false));
  // Picks per expert: this routing's, and a context-parallel group's (twice as many tokens).
  Storage own(count_of(E)), group(count_of(E));
  Storage experts = r.experts;
  cpu::moe_count(own.data(), ids(experts), s);
  for (I64 e = 0; e < E; ++e) group[count_of(e)] = 2 * own[count_of(e)] + static_cast<float>(e % 3) - 1;
  const std::map<int, Storage> given{{0, r.gates}, {1, r.experts}, {2, r.probs}, {4, group}};
  const Tensor gates = tensor(0, {T, k}), picks = tensor(1, {T, k}, DType::int32), probs = tensor(2, {T, E}),
               d_gates = tensor(3, {T, k}), counts = tensor(4, {E}), d_logits = tensor(5, {T, E});
  for (float coeff : {0.0f, 0.01f}) {
    MoeArgs a = moe_args(MoeStep::route, s, true);
    a.aux_loss_coeff = coeff;
    const std::string what = "aux " + std::to_string(coeff);
    expect_identical(run_on_both(moe_op(a, {gates, picks, probs, d_gates}, {d_logits}), MathMode::fp32, 16, {}, {},
                                 given),
                     5, what);
    // f_e from the group's counts over its tokens (context parallelism).
    a.balance_tokens = 2 * T;
    expect_identical(run_on_both(moe_op(a, {gates, picks, probs, d_gates, counts}, {d_logits}), MathMode::fp32, 16,
                                 {}, {}, given),
                     5, what + " with counts");
  }
  const OpOutcome counted = run_on_both(moe_op(moe_args(MoeStep::count, s, true), {picks}, {tensor(6, {E})}),
                                        MathMode::fp32, 16, {}, {}, given);
  expect_identical(counted, 6, "count");
  EXPECT_EQ(counted.gpu.at(6), own);
}

TEST(CudaKernels, MoeDispatchCombineAndRegroupMatchCpu) {
  TANDEM_REQUIRE_GPU();
  for (const I64 capacity : {7, 58}) {  // drops; dropless
    const MoeShape s{29, 24, 6, 2, capacity};
    const I64 T = s.tokens, k = s.topk, E = s.experts, h = s.hidden, C = s.capacity;
    const std::string what = "capacity " + std::to_string(capacity);
    const Routing r = cpu_routing(s, router_logits(s, 5, false));
    const std::map<int, Storage> given{{1, r.experts}, {2, r.slots}, {5, r.gates}};
    const Tensor x = tensor(0, {T, h}), experts = tensor(1, {T, k}, DType::int32),
                 slots = tensor(2, {T, k}, DType::int32), buffer = tensor(3, {E, C, h}), dx = tensor(4, {T, h}),
                 gates = tensor(5, {T, k}), y = tensor(6, {T, h}), d_buffer = tensor(7, {E, C, h}),
                 d_gates = tensor(8, {T, k});
    auto run = [&](MoeStep step, bool backward, std::vector<Tensor> in, std::vector<Tensor> out) {
      return run_on_both(moe_op(moe_args(step, s, backward), std::move(in), std::move(out)), MathMode::fp32, 16, {},
                         {}, given);
    };
    expect_identical(run(MoeStep::dispatch, false, {x, experts, slots}, {buffer}), 3, what + " dispatch");
    expect_identical(run(MoeStep::dispatch, true, {buffer, experts, slots}, {dx}), 4, what + " dispatch backward");
    expect_identical(run(MoeStep::combine, false, {buffer, experts, slots, gates}, {y}), 6, what + " combine");
    const OpOutcome back = run(MoeStep::combine, true, {y, buffer, experts, slots, gates}, {d_buffer, d_gates});
    expect_identical(back, 7, what + " combine backward");
    expect_close(back, 8, what + " combine backward d_gates");
    // Regroup over an expert-parallel group of 2 (3 experts each), and back.
    for (const bool inverse : {false, true}) {
      MoeArgs a = moe_args(MoeStep::regroup, s, inverse);
      a.ep = 2;
      expect_identical(run_on_both(moe_op(a, {buffer}, {d_buffer})), 7, what + (inverse ? " regroup back" : " regroup"));
    }
  }
}

TEST(CudaKernels, MoeRefusesWhatTheCpuRefuses) {
  TANDEM_REQUIRE_GPU();
  const MoeShape s{8, 4, 4, 5, 4};  // topk above the experts
  MoeArgs regroup = moe_args(MoeStep::regroup, {8, 4, 4, 2, 4}, false);
  regroup.ep = 3;  // 4 experts do not split over 3 members
  Blas blas(MathMode::fp32);
  char scratch = 0;
  const StreamContext ctx{nullptr, &blas, [&](std::size_t) { return static_cast<void*>(&scratch); }};
  const auto none = [](const Tensor&) -> float* { return nullptr; };
  for (const MoeArgs& a : {moe_args(MoeStep::route, s, false), regroup}) {
    const ComputeOp op = moe_op(a, {tensor(0, {8, 4})}, {tensor(1, {8, 4})});
    std::string on_cpu, on_gpu;
    try {
      cpu::run(op, none);
    } catch (const std::logic_error& e) {
      on_cpu = e.what();
    }
    try {
      kernels::cuda::run(op, none, {}, ctx);
    } catch (const std::logic_error& e) {
      on_gpu = e.what();
    }
    // The same message but for the backend's name ("cpu kernels: op '…' …").
    ASSERT_EQ(on_cpu.rfind("cpu kernels: ", 0), 0u) << on_cpu;
    EXPECT_EQ(on_gpu, "cuda" + on_cpu.substr(3));
  }
}

}  // namespace
}  // namespace tandem::kernels::cuda::testing
