// The report's plot types, each rendered as one inline SVG (svg.hpp): grouped and stacked
// horizontal bars, and a scatter plot with a highlighted front (timelines: timeline.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tandem::report {

using ValueFormat = std::function<std::string(double)>;

struct BarRow {
  std::string label;
  std::vector<double> values;  // one per series (grouped) or per category (stacked)
  std::string note;            // written right of the bars (e.g. an error)
};

// One bar per series in each row, side by side.
std::string grouped_bar_chart(const std::string& title, const std::vector<std::string>& series,
                              const std::vector<BarRow>& rows, const ValueFormat& format);

// One bar per row, its categories stacked.
std::string stacked_bar_chart(const std::string& title, const std::vector<std::string>& categories,
                              const std::vector<BarRow>& rows, const ValueFormat& format);

struct ScatterPoint {
  double x = 0, y = 0;
  bool highlighted = false;  // drawn filled and joined by the front line
  std::string label;         // written next to the point
  std::string tooltip;
};

std::string scatter_chart(const std::string& title, const std::string& x_title, const std::string& y_title,
                          const std::vector<ScatterPoint>& points, const ValueFormat& x_format,
                          const ValueFormat& y_format);

// Lines over [0, x] x [0, y], one per series in its palette colour (legend_html names them), the
// last point of each marked (its tooltip the series' name); `y_mark`: a dashed horizontal line
// (a target).
struct LineSeries {
  std::string name;
  int colour = 0;
  std::vector<std::pair<double, double>> points;
};
// `x_marks`: dashed vertical lines at events (failures, a formula's optimum), each with a marker at
// the top whose tooltip says what it is, and its label written beside it when it has one.
struct XMark {
  double x = 0;
  std::string tooltip;
  std::string label;
};
std::string line_chart(const std::string& title, const std::string& x_title, const std::string& y_title,
                       const std::vector<LineSeries>& series, std::optional<double> y_mark,
                       const ValueFormat& x_format, const ValueFormat& y_format,
                       const std::vector<XMark>& x_marks = {});

// An HTML legend (not a plot): coloured swatches and names.
std::string legend_html(const std::vector<std::pair<std::string, int>>& entries);

}  // namespace tandem::report
