// A runtime that executes nothing and keeps nothing: it hands out tensor handles and accepts
// every op. Strategies use it to learn shapes (what a layer's forward returns) without cost;
// calibration and tests use the optional callbacks to see the ops a rank issues.
#pragma once

#include <functional>

#include "strategies/runtime.hpp"

namespace tandem {

class NullRuntime final : public Runtime {
 public:
  explicit NullRuntime(int world_size = 1) : world_size_(world_size) {}
  std::function<void(const ComputeOp&)> on_compute;     // optional: sees every compute op
  std::function<void(const CommOp&)> on_communicate;    // optional: sees every communication op
  std::function<void(std::string_view, const Tensor&)> on_alloc;             // optional: every allocation
  std::function<void(const Tensor&, const TensorPlacement&)> on_place;       // optional: every placement

  int rank() const override { return 0; }
  int world_size() const override { return world_size_; }
  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype, MemCategory) override {
    Tensor t{next_id_++, std::move(shape), dtype};
    if (on_alloc) on_alloc(name, t);
    return t;
  }
  void place(const Tensor& tensor, const TensorPlacement& placement) override {
    if (on_place) on_place(tensor, placement);
  }
  void release(const Tensor&) override {}
  void reacquire(const Tensor&, MemCategory) override {}
  Handle compute(ComputeOp op, const Issue&) override {
    if (on_compute) on_compute(op);
    return Handle{};
  }
  Handle communicate(CommOp op, const Issue&) override {
    if (on_communicate) on_communicate(op);
    return Handle{};
  }
  void wait(Handle) override {}
  Handle record(Stream) override { return Handle{}; }
  void synchronize() override {}
  void begin_iteration(int) override {}
  void end_iteration() override {}

 private:
  int world_size_;
  std::int32_t next_id_ = 0;
};

}  // namespace tandem
