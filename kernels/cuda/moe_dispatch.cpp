#include "kernels/cuda/moe_dispatch.hpp"

#include <cstdint>
#include <vector>

#include "kernels/cpu/moe.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/moe.cuh"

namespace tandem::kernels::cuda {

namespace {

// The routing's picks, copied to the host (the stream waits for them), added to the run's load.
void add_router_load(kernels::cpu::RouterLoad& load, const std::int32_t* experts, const MoeShape& s,
                     cudaStream_t stream) {
  std::vector<std::int32_t> host(static_cast<std::size_t>(s.tokens * s.topk));
  if (!host.empty()) {
    CUDA_CHECK(cudaMemcpyAsync(host.data(), experts, sizeof(std::int32_t) * host.size(), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  load.add(host.data(), s);
}

}  // namespace

// The CPU dispatcher's MoE branch (kernels/cpu/dispatch.cpp, run_moe) tensor for tensor: int32
// indices raw in their tensors' storage, the same size checks and refusals.
void run_moe(const OpTensors& c, const MoeArgs& a, const RunOptions& options, const StreamContext& ctx) {
  using I64 = std::int64_t;
  const MoeShape s{a.tokens, a.hidden, a.experts, a.topk, a.capacity};
  const I64 picks = a.tokens * a.topk, buffer = a.experts * a.capacity * a.hidden, rows = a.tokens * a.hidden;
  auto in_ids = [&](std::size_t i) { return reinterpret_cast<const std::int32_t*>(c.in(i, picks)); };
  auto out_ids = [&](std::size_t i) { return reinterpret_cast<std::int32_t*>(c.out(i, picks)); };
  const cudaStream_t stream = ctx.stream;
  if (a.topk < 1 || a.topk > a.experts) c.fail("moe: topk must be in [1, experts]");
  switch (a.step) {
    case MoeStep::route:
      if (!a.backward) {
        moe_route_forward(c.out(0, picks), out_ids(1), out_ids(2), c.out(3, a.tokens * a.experts),
                          c.in(0, a.tokens * a.experts), s, stream);
        if (options.router_load) add_router_load(*options.router_load, out_ids(1), s, stream);
      } else {
        auto* shares = static_cast<double*>(ctx.workspace(sizeof(double) * static_cast<std::size_t>(a.experts)));
        moe_route_backward(c.out(0, a.tokens * a.experts), c.in(0, picks), in_ids(1), c.in(2, a.tokens * a.experts),
                           c.in(3, picks), s, a.aux_loss_coeff, c.inputs() > 4 ? c.in(4, a.experts) : nullptr,
                           a.balance_tokens, shares, stream);
      }
      return;
    case MoeStep::dispatch:
      if (!a.backward) moe_dispatch_forward(c.out(0, buffer), c.in(0, rows), in_ids(1), in_ids(2), s, stream);
      else moe_dispatch_backward(c.out(0, rows), c.in(0, buffer), in_ids(1), in_ids(2), s, stream);
      return;
    case MoeStep::combine:
      if (!a.backward)
        moe_combine_forward(c.out(0, rows), c.in(0, buffer), in_ids(1), in_ids(2), c.in(3, picks), s, stream);
      else
        moe_combine_backward(c.out(0, buffer), c.out(1, picks), c.in(0, rows), c.in(1, buffer), in_ids(2), in_ids(3),
                             c.in(4, picks), s, stream);
      return;
    case MoeStep::regroup:
      if (a.ep < 1 || a.experts % a.ep) c.fail("moe regroup: experts do not split over the expert-parallel group");
      moe_regroup(c.out(0, buffer), c.in(0, buffer), a.ep, a.experts / a.ep, a.capacity, a.hidden, a.backward, stream);
      return;
    case MoeStep::count:
      moe_count(c.out(0, a.experts), in_ids(0), s, stream);
      return;
  }
}

}  // namespace tandem::kernels::cuda
