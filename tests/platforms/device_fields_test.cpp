// The device field reference states the efficiencies the loader gives kinds a profile leaves
// out: the text printed by `tandem fields device` is held to default_efficiency.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "platforms/device.hpp"
#include "platforms/device_fields.hpp"

namespace tandem {
namespace {

std::string pair(const OpEfficiency& e) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f/%.2f", e.flops, e.memory);
  return text;
}

TEST(DeviceFields, EfficiencyDefaultsInTheReferenceAreTheLoaders) {
  for (const FieldDoc& f : device_fields::kEfficiency) {
    bool found = false;
    for (int i = 0; i < kOpKindCount; ++i) {
      const OpKind kind = static_cast<OpKind>(i);
      if (std::string(to_string(kind)) != f.name) continue;
      found = true;
      const std::string expected =
          "gpu " + pair(default_efficiency("gpu", kind)) + ", cpu " + pair(default_efficiency("cpu", kind));
      EXPECT_EQ(std::string(f.default_value), expected) << f.name;
    }
    EXPECT_TRUE(found) << f.name << " is no op kind";
  }
}

}  // namespace
}  // namespace tandem
