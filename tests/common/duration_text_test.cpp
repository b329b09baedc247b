// Durations as people write them (goodput --horizon, reliability sections).
#include "common/duration_text.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tandem {
namespace {

TEST(DurationText, ReadsTheUnitsPeopleWriteAndRefusesTheRest) {
  EXPECT_DOUBLE_EQ(parse_duration_s("7d"), 7 * 86400.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("1.5h"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration_s("30min"), 1800);
  EXPECT_DOUBLE_EQ(parse_duration_s("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration_s("42"), 42);
  for (const char* bad : {"", "7x", "-1d", "0s", "nan", "infd", "d", "7 d"})
    EXPECT_THROW(parse_duration_s(bad), std::invalid_argument) << bad;
  EXPECT_EQ(format_duration(7 * 86400.0), "7.00 d");
  EXPECT_EQ(format_duration(90), "1.50 min");
}

TEST(DurationText, ARangedDurationNamesItsBounds) {
  EXPECT_DOUBLE_EQ(parse_duration_s("1h", 1, 86400), 3600);
  EXPECT_DOUBLE_EQ(parse_duration_s("1d", 1, 86400), 86400);
  try {
    parse_duration_s("1e300d", 60, 86400);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("between 1.00 min and 1.00 d"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_duration_s("1e-9", 1, 86400), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
