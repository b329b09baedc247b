#include "analysis/report/charts.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/report/html.hpp"
#include "analysis/report/svg.hpp"

namespace tandem::report {

namespace {

constexpr double kWidthPx = 880;
constexpr double kTitlePx = 24;  // title band at the top
constexpr double kAxisPx = 26;   // axis band at the bottom
constexpr double kLabelPx = 190;  // row labels on the left (at least)
constexpr double kNotePx = 130;   // notes on the right
constexpr double kCharPx = 6.2;   // about one character of the 11 px labels

// Room for the longest row label, so that none is cut at the left edge.
double label_px(const std::vector<BarRow>& rows) {
  std::size_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, row.label.size());
  return std::clamp(static_cast<double>(longest) * kCharPx + 12, kLabelPx, kWidthPx / 2);
}

// A horizontal value axis with ticks and grid lines over the plot area.
void value_axis(Svg& svg, const LinearScale& x, const std::vector<double>& ticks, double top, double bottom,
                const ValueFormat& format) {
  for (double t : ticks) {
    svg.line(x(t), top, x(t), bottom, "#ddd");
    svg.text(x(t), bottom + 14, format(t), "middle", 10, "#555");
  }
  svg.line(x.range_start, bottom, x.range_end, bottom, "#888");
}

double max_of(const std::vector<BarRow>& rows, bool stacked) {
  double m = 0;
  for (const auto& row : rows) {
    double sum = 0;
    for (double v : row.values) sum += std::max(v, 0.0), m = std::max(m, v);
    if (stacked) m = std::max(m, sum);
  }
  return m;
}

std::string bar_chart(const std::string& title, const std::vector<std::string>& names,
                      const std::vector<BarRow>& rows, const ValueFormat& format, bool stacked) {
  const double bar_px = stacked ? 16 : 9;
  const double row_px = stacked ? 24 : bar_px * static_cast<double>(names.size()) + 8;
  const double plot_bottom = kTitlePx + row_px * static_cast<double>(rows.size()) + 4;
  Svg svg(kWidthPx, plot_bottom + kAxisPx, title);
  svg.text(4, 16, title, "start", 13);
  const std::vector<double> ticks = nice_ticks(max_of(rows, stacked));
  const double labels_px = label_px(rows);
  const LinearScale x{ticks.back(), labels_px, kWidthPx - kNotePx};
  value_axis(svg, x, ticks, kTitlePx, plot_bottom, format);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const BarRow& row = rows[r];
    const double top = kTitlePx + row_px * static_cast<double>(r) + 4;
    svg.text(labels_px - 6, top + row_px / 2, row.label, "end");
    double offset = 0;
    for (std::size_t s = 0; s < row.values.size() && s < names.size(); ++s) {
      const double v = std::max(row.values[s], 0.0);
      const std::string tooltip = row.label + " · " + names[s] + ": " + format(row.values[s]);
      if (stacked) {
        svg.rect(x(offset), top + 2, x(offset + v) - x(offset), bar_px, palette_colour(static_cast<int>(s)), tooltip);
        offset += v;
      } else {
        svg.rect(x(0), top + bar_px * static_cast<double>(s), x(v) - x(0), bar_px - 1,
                 palette_colour(static_cast<int>(s)), tooltip);
      }
    }
    svg.text(kWidthPx - kNotePx + 6, top + row_px / 2, row.note);
  }
  return svg.str();
}

}  // namespace

std::string grouped_bar_chart(const std::string& title, const std::vector<std::string>& series,
                              const std::vector<BarRow>& rows, const ValueFormat& format) {
  return bar_chart(title, series, rows, format, false);
}

std::string stacked_bar_chart(const std::string& title, const std::vector<std::string>& categories,
                              const std::vector<BarRow>& rows, const ValueFormat& format) {
  return bar_chart(title, categories, rows, format, true);
}

namespace {

// The frame of an x-y plot over [0, x_max] x [0, y_max]: title, both axes with ticks, grid lines
// and titles; the scales map values into it.
struct XyFrame {
  LinearScale x, y;
};

constexpr double kXyHeight = 380, kXyLeft = 90, kXyRight = 40;

XyFrame xy_frame(Svg& svg, const std::string& title, const std::string& x_title, const std::string& y_title,
                 double x_max, double y_max, const ValueFormat& x_format, const ValueFormat& y_format) {
  const double plot_bottom = kXyHeight - kAxisPx - 18;
  svg.text(4, 16, title, "start", 13);
  const std::vector<double> x_ticks = nice_ticks(x_max), y_ticks = nice_ticks(y_max);
  const XyFrame f{{x_ticks.back(), kXyLeft, kWidthPx - kXyRight}, {y_ticks.back(), plot_bottom, kTitlePx + 20}};
  value_axis(svg, f.x, x_ticks, kTitlePx + 20, plot_bottom, x_format);
  for (double t : y_ticks) {
    svg.line(kXyLeft, f.y(t), kWidthPx - kXyRight, f.y(t), "#eee");
    svg.text(kXyLeft - 6, f.y(t) + 3, y_format(t), "end", 10, "#555");
  }
  svg.line(kXyLeft, kTitlePx + 20, kXyLeft, plot_bottom, "#888");
  svg.text((kXyLeft + kWidthPx - kXyRight) / 2, kXyHeight - 6, x_title, "middle", 11);
  svg.text(kXyLeft, kTitlePx + 8, y_title, "start", 11);
  return f;
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_title, const std::string& y_title,
                       const std::vector<LineSeries>& series, std::optional<double> y_mark,
                       const ValueFormat& x_format, const ValueFormat& y_format, const std::vector<XMark>& x_marks) {
  Svg svg(kWidthPx, kXyHeight, title);
  double x_max = 0, y_max = y_mark.value_or(0);
  for (const auto& s : series)
    for (const auto& [px, py] : s.points) x_max = std::max(x_max, px), y_max = std::max(y_max, py);
  for (const XMark& m : x_marks) x_max = std::max(x_max, m.x);
  const XyFrame f = xy_frame(svg, title, x_title, y_title, x_max, y_max, x_format, y_format);
  const double top = f.y(f.y.domain_max), bottom = f.y(0);
  std::vector<double> labelled_px;  // marks already labelled: a close one's label goes a line lower
  for (const XMark& m : x_marks) {
    svg.line(f.x(m.x), top, f.x(m.x), bottom, "#c33", 1, /*dashed=*/true);
    svg.circle(f.x(m.x), top, 3, "#c33", m.tooltip);
    if (m.label.empty()) continue;
    const auto close = std::count_if(labelled_px.begin(), labelled_px.end(),
                                     [&](double px) { return std::abs(px - f.x(m.x)) < 60; });
    svg.text(f.x(m.x) + 4, top + 12 + 12 * static_cast<double>(close), m.label, "start", 10, "#c33");
    labelled_px.push_back(f.x(m.x));
  }
  if (y_mark) {
    svg.line(f.x(0), f.y(*y_mark), f.x(f.x.domain_max), f.y(*y_mark), "#c33", 1, /*dashed=*/true);
    svg.text(f.x(f.x.domain_max) - 4, f.y(*y_mark) - 4, y_format(*y_mark), "end", 10, "#c33");
  }
  for (const auto& s : series) {
    std::vector<std::pair<double, double>> pixels;
    for (const auto& [px, py] : s.points) pixels.push_back({f.x(px), f.y(py)});
    if (pixels.size() > 1) svg.polyline(pixels, palette_colour(s.colour));
    if (!pixels.empty()) svg.circle(pixels.back().first, pixels.back().second, 3.5, palette_colour(s.colour), s.name);
  }
  return svg.str();
}

std::string scatter_chart(const std::string& title, const std::string& x_title, const std::string& y_title,
                          const std::vector<ScatterPoint>& points, const ValueFormat& x_format,
                          const ValueFormat& y_format) {
  Svg svg(kWidthPx, kXyHeight, title);
  double x_max = 0, y_max = 0;
  for (const auto& p : points) x_max = std::max(x_max, p.x), y_max = std::max(y_max, p.y);
  const XyFrame frame = xy_frame(svg, title, x_title, y_title, x_max, y_max, x_format, y_format);
  const LinearScale& x = frame.x;
  const LinearScale& y = frame.y;
  std::vector<std::pair<double, double>> front;
  for (const auto& p : points)
    if (p.highlighted) front.push_back({x(p.x), y(p.y)});
  std::sort(front.begin(), front.end());
  if (front.size() > 1) svg.polyline(front, palette_colour(2));
  for (const auto& p : points)
    svg.circle(x(p.x), y(p.y), p.highlighted ? 5 : 3.5, p.highlighted ? palette_colour(2) : "#bbb", p.tooltip);
  // Labels, the front's first, each only where it overlaps no label already placed (close points
  // keep their tooltips).
  struct Box { double x0, y0, x1, y1; };
  std::vector<Box> placed;
  for (bool front_pass : {true, false})
    for (const auto& p : points) {
      if (p.label.empty() || p.highlighted != front_pass) continue;
      const Box box{x(p.x) + 7, y(p.y) - 14, x(p.x) + 7 + kCharPx * static_cast<double>(p.label.size()), y(p.y) - 2};
      // A label must also stay a few pixels clear of the others: "#1" touching "#3" reads "#1#3".
      constexpr double kGapPx = 5;
      const bool clear = std::none_of(placed.begin(), placed.end(), [&](const Box& b) {
        return box.x0 < b.x1 + kGapPx && b.x0 < box.x1 + kGapPx && box.y0 < b.y1 + kGapPx && b.y0 < box.y1 + kGapPx;
      });
      if (!clear) continue;
      placed.push_back(box);
      svg.text(box.x0, y(p.y) - 5, p.label, "start", 10, "#333");
    }
  return svg.str();
}

std::string legend_html(const std::vector<std::pair<std::string, int>>& entries) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [name, colour] : entries)
    out += "<span><i style=\"background:" + escape_html(palette_colour(colour)) + "\"></i>" + escape_html(name) +
           "</span>";
  return out + "</div>";
}

}  // namespace tandem::report
