// A runtime that executes nothing and keeps nothing: it hands out tensor handles and accepts
// every op. Strategies use it to learn shapes (what a layer's forward returns) without cost.
#pragma once

#include "strategies/runtime.hpp"

namespace tandem {

class NullRuntime final : public Runtime {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Tensor alloc(std::string_view, std::vector<std::int64_t> shape, DType dtype, MemCategory) override {
    return Tensor{next_id_++, std::move(shape), dtype};
  }
  void release(const Tensor&) override {}
  void reacquire(const Tensor&, MemCategory) override {}
  Handle compute(ComputeOp, const Issue&) override { return Handle{}; }
  Handle communicate(CommOp, const Issue&) override { return Handle{}; }
  void wait(Handle) override {}
  Handle record(Stream) override { return Handle{}; }
  void synchronize() override {}
  void begin_iteration(int) override {}
  void end_iteration() override {}

 private:
  std::int32_t next_id_ = 0;
};

}  // namespace tandem
