// The CPU reference of mixture-of-experts routing and token movement (kernels/cpu/moe.hpp):
// top-k picks and gates, GShard's capacity priority, dispatch and combine as each other's
// transposes, every backward against central finite differences, and regroup's layouts.
#include "kernels/cpu/moe.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using testing::expect_fd;
using testing::fd_gradient;
using testing::random_vector;
using testing::weighted_sum;

struct Routing {
  std::vector<float> gates, probs;
  std::vector<std::int32_t> experts, slots;
};

Routing route(const std::vector<float>& logits, const MoeShape& s) {
  Routing r;
  r.gates.resize(static_cast<std::size_t>(s.tokens * s.topk));
  r.experts.resize(r.gates.size());
  r.slots.resize(r.gates.size());
  r.probs.resize(static_cast<std::size_t>(s.tokens * s.experts));
  moe_route_forward(r.gates.data(), r.experts.data(), r.slots.data(), r.probs.data(), logits.data(), s);
  return r;
}

TEST(MoeKernels, EachTokenPicksItsLargestLogitsWithGatesSummingToOne) {
  const MoeShape s{2, 1, 4, 2, 2};
  const std::vector<float> logits{0.1f, 2.0f, -1.0f, 1.0f,   // picks 1 then 3
                                  0.5f, 0.5f, 0.2f, 0.0f};   // a tie: the lower expert first
  const Routing r = route(logits, s);
  EXPECT_EQ(r.experts, (std::vector<std::int32_t>{1, 3, 0, 1}));
  EXPECT_NEAR(r.gates[0] + r.gates[1], 1.0, 1e-6);
  EXPECT_NEAR(r.gates[0] / r.gates[1], std::exp(1.0), 1e-5);  // softmax over the picks
  EXPECT_NEAR(r.gates[2], 0.5, 1e-6);
  double sum = 0;
  for (int e = 0; e < 4; ++e) sum += r.probs[static_cast<std::size_t>(e)];
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(MoeKernels, FirstPicksFillTheCapacityBeforeSecondPicksAndTheRestAreDropped) {
  // Four tokens all preferring expert 0, then expert 1; two places per expert.
  const MoeShape s{4, 1, 3, 2, 2};
  const std::vector<float> logits{3, 2, 0, 3, 2, 0, 3, 2, 0, 3, 2, 0};
  const Routing r = route(logits, s);
  // Expert 0: tokens 0 and 1 (first picks in token order); tokens 2 and 3 dropped there. Expert 1:
  // second picks of tokens 0 and 1; 2 and 3 dropped.
  EXPECT_EQ(r.slots, (std::vector<std::int32_t>{0, 0, 1, 1, -1, -1, -1, -1}));
}

TEST(MoeKernels, DispatchThenCombineWithIdentityExpertsGivesBackTheTokens) {
  const MoeShape s{6, 5, 4, 2, 6};  // dropless: every expert can take every token
  const Routing r = route(random_vector(24, 1), s);
  const std::vector<float> x = random_vector(30, 2);
  std::vector<float> buffer(4 * 6 * 5), y(30);
  moe_dispatch_forward(buffer.data(), x.data(), r.experts.data(), r.slots.data(), s);
  moe_combine_forward(y.data(), buffer.data(), r.experts.data(), r.slots.data(), r.gates.data(), s);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-6) << i;
}

TEST(MoeKernels, DispatchAndCombineBackwardsMatchFiniteDifferences) {
  const MoeShape s{5, 3, 4, 2, 2};  // capacity 2: some picks dropped
  const Routing r = route(random_vector(20, 3), s);
  const std::size_t buffer_n = 4 * 2 * 3;
  // Dispatch: L = Σ w · buffer(x).
  std::vector<float> x = random_vector(15, 4), w = random_vector(buffer_n, 5), buffer(buffer_n), dx(15);
  auto dispatch_loss = [&] {
    moe_dispatch_forward(buffer.data(), x.data(), r.experts.data(), r.slots.data(), s);
    return weighted_sum(w, buffer.data());
  };
  moe_dispatch_backward(dx.data(), w.data(), r.experts.data(), r.slots.data(), s);
  expect_fd("moe_dispatch_dx", dx, fd_gradient(x, dispatch_loss));
  // Combine: L = Σ v · y(out, gates), both inputs.
  std::vector<float> out = random_vector(buffer_n, 6), gates = r.gates, v = random_vector(15, 7), y(15);
  auto combine_loss = [&] {
    moe_combine_forward(y.data(), out.data(), r.experts.data(), r.slots.data(), gates.data(), s);
    return weighted_sum(v, y.data());
  };
  std::vector<float> d_out(buffer_n), d_gates(gates.size());
  moe_combine_backward(d_out.data(), d_gates.data(), v.data(), out.data(), r.experts.data(), r.slots.data(),
                       gates.data(), s);
  expect_fd("moe_combine_dout", d_out, fd_gradient(out, combine_loss));
  expect_fd("moe_combine_dgates", d_gates, fd_gradient(gates, combine_loss));
}

TEST(MoeKernels, RouteBackwardMatchesFiniteDifferencesWithTheLoadBalancingLoss) {
  const MoeShape s{6, 1, 5, 2, 6};
  // Logits far enough apart that a step of 1e-2 changes no pick.
  std::vector<float> logits(30);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = 0.37f * static_cast<float>((i * 7) % 11);
  const std::vector<float> c = random_vector(12, 8);
  const float coeff = 0.1f;
  // L = Σ c · gates + the load-balancing loss (its f_e counts picks: constant under the step).
  auto loss = [&] {
    const Routing r = route(logits, s);
    return weighted_sum(c, r.gates.data()) + moe_load_balancing_loss(r.experts.data(), r.probs.data(), s, coeff);
  };
  const Routing r = route(logits, s);
  std::vector<float> d_logits(30);
  moe_route_backward(d_logits.data(), r.gates.data(), r.experts.data(), r.probs.data(), c.data(), s, coeff);
  expect_fd("moe_route_dlogits", d_logits, fd_gradient(logits, loss));
}

TEST(MoeKernels, RegroupPutsEachExpertsRowsTogetherAndItsInverseUndoesIt) {
  const std::int64_t ep = 2, local = 3, capacity = 2, hidden = 2;
  std::vector<float> by_member(static_cast<std::size_t>(ep * local * capacity * hidden));
  std::iota(by_member.begin(), by_member.end(), 0.0f);
  std::vector<float> by_expert(by_member.size()), back(by_member.size());
  moe_regroup(by_expert.data(), by_member.data(), ep, local, capacity, hidden, false);
  // Expert 1's rows: member 0's block (1) then member 1's block (3 + 1 = 4).
  const std::int64_t block = capacity * hidden;
  EXPECT_EQ(by_expert[static_cast<std::size_t>((1 * ep + 0) * block)], static_cast<float>(1 * block));
  EXPECT_EQ(by_expert[static_cast<std::size_t>((1 * ep + 1) * block)], static_cast<float>(4 * block));
  moe_regroup(back.data(), by_expert.data(), ep, local, capacity, hidden, true);
  EXPECT_EQ(back, by_member);
}

}  // namespace
}  // namespace tandem::kernels::cpu
