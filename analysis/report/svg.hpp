// A small SVG writer for the report's plots: shapes, text (always escaped), tooltips, and the
// axis arithmetic the charts share. Each plot is one <svg class="plot">, so the page (and its
// test) can count the plots of a section.
#pragma once

#include <string>
#include <vector>

namespace tandem::report {

class Svg {
 public:
  Svg(double width_px, double height_px, const std::string& label);  // label: aria-label

  // `tooltip` (optional) becomes a <title> child, shown on hover.
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            bool dashed = false);
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& tooltip = "");
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke);
  // anchor: "start", "middle", "end".
  void text(double x, double y, const std::string& content, const std::string& anchor = "start",
            double size_px = 11, const std::string& fill = "#222");

  std::string str() const;  // the finished <svg> element

 private:
  double width_px_, height_px_;
  std::string label_;
  std::string body_;
};

// Round axis ticks covering [0, max] (at least one tick beyond 0 when max > 0).
std::vector<double> nice_ticks(double max_value, int target_count = 5);

// A linear map from [0, domain_max] onto [range_start, range_end] pixels.
struct LinearScale {
  double domain_max = 1;
  double range_start = 0, range_end = 1;
  double operator()(double v) const {
    return range_start + (domain_max > 0 ? v / domain_max : 0) * (range_end - range_start);
  }
};

// The colour of a series or category, stable for a given index.
const std::string& palette_colour(int index);

}  // namespace tandem::report
