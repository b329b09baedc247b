// The report's plot types drawn as SVG text: the scatter plot labels a point only where its label
// keeps clear of the labels already placed (the Pareto front's first), so that close points do
// not read as one label ("#1#3").
#include <gtest/gtest.h>

#include "analysis/format.hpp"
#include "analysis/report/charts.hpp"

namespace tandem::report {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ScatterChart, LabelsOnlyWhereTheyKeepClearOfEachOther) {
  const std::vector<ScatterPoint> points = {{2.00, 70, true, "#1", ""},
                                            {2.01, 70.5, false, "#3", ""},  // beside #1: no room
                                            {2.50, 40, true, "#2", ""},
                                            {3.90, 60, false, "#9", ""}};
  const std::string svg = scatter_chart("t", "x", "y", points, human_seconds, human_seconds);
  EXPECT_EQ(count(svg, ">#1</text>"), 1);
  EXPECT_EQ(count(svg, ">#3</text>"), 0) << "its label would touch #1's";
  EXPECT_EQ(count(svg, ">#2</text>"), 1);
  EXPECT_EQ(count(svg, ">#9</text>"), 1);
  EXPECT_EQ(count(svg, "<circle"), 4) << "every point is drawn, labelled or not";
}

}  // namespace
}  // namespace tandem::report
