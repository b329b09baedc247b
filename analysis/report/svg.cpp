#include "analysis/report/svg.hpp"

#include <array>
#include <cmath>

#include "analysis/format.hpp"
#include "analysis/report/html.hpp"

namespace tandem::report {

namespace {
std::string num(double v) { return printf_string("%.2f", v); }
std::string title_element(const std::string& tooltip) {
  return tooltip.empty() ? std::string() : "<title>" + escape_html(tooltip) + "</title>";
}
}  // namespace

Svg::Svg(double width_px, double height_px, const std::string& label)
    : width_px_(width_px), height_px_(height_px), label_(label) {}

void Svg::rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 0.0)) + "\" height=\"" +
           num(std::max(h, 0.0)) + "\" fill=\"" + escape_html(fill) + "\">" + title_element(tooltip) + "</rect>";
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width, bool dashed) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\" stroke=\"" + escape_html(stroke) + "\" stroke-width=\"" + num(width) + "\"" +
           (dashed ? " stroke-dasharray=\"4 3\"" : "") + "/>";
}

void Svg::circle(double cx, double cy, double r, const std::string& fill, const std::string& tooltip) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\" fill=\"" +
           escape_html(fill) + "\" stroke=\"#333\" stroke-width=\"0.5\">" + title_element(tooltip) + "</circle>";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke) {
  std::string coords;
  for (const auto& [x, y] : points) coords += num(x) + "," + num(y) + " ";
  body_ += "<polyline points=\"" + coords + "\" fill=\"none\" stroke=\"" + escape_html(stroke) +
           "\" stroke-width=\"1.5\"/>";
}

void Svg::text(double x, double y, const std::string& content, const std::string& anchor, double size_px,
               const std::string& fill) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + escape_html(anchor) +
           "\" font-size=\"" + num(size_px) + "\" fill=\"" + escape_html(fill) + "\">" + escape_html(content) +
           "</text>";
}

std::string Svg::str() const {
  return "<svg class=\"plot\" role=\"img\" width=\"" + num(width_px_) +
         "\" height=\"" + num(height_px_) + "\" viewBox=\"0 0 " + num(width_px_) + " " + num(height_px_) +
         "\" aria-label=\"" + escape_html(label_) + "\">" + body_ + "</svg>";
}

std::vector<double> nice_ticks(double max_value, int target_count) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return {0};
  const double raw_step = max_value / std::max(1, target_count);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw_step) break;
  }
  std::vector<double> ticks;
  for (int i = 0; i * step <= max_value * (1 + 1e-9); ++i) ticks.push_back(i * step);
  if (ticks.back() < max_value) ticks.push_back(ticks.back() + step);
  return ticks;
}

const std::string& palette_colour(int index) {
  static const std::array<std::string, 12> colours = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                      "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"};
  return colours[static_cast<std::size_t>(std::abs(index)) % colours.size()];
}

}  // namespace tandem::report
