#include "analysis/report/timeline.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/format.hpp"
#include "analysis/report/html.hpp"
#include "analysis/report/op_colours.hpp"
#include "analysis/report/svg.hpp"

namespace tandem::report {

namespace {

constexpr int kMoreRanks = 3;          // ranks behind a group's "more ranks" toggle
constexpr double kComputeRowPx = 10;   // the compute stream's row
constexpr double kCommRowPx = 5;       // each communication stream's row
constexpr double kBarsPerLane = 2000;  // bars narrower than span / this merge with their neighbour

std::string number(double v) { return printf_string("%.4f", v); }

std::string rank_range(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  const bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (ranks.size() == 1) return "rank " + std::to_string(ranks.front());
  return std::to_string(ranks.size()) + " ranks (" + std::to_string(ranks.front()) + (contiguous ? "-" : "..") +
         std::to_string(ranks.back()) + ")";
}

// What a group's title says: "H100-SXM · h100 · stage 0 · 32 ranks (0-31) · 16 layers · 5 sequences/replica".
std::string group_title(const LaneGroup& g, const std::vector<TraceRank>& ranks) {
  std::string title = g.device.empty() ? std::string("ranks") : g.device;
  if (!g.group.empty() && g.group != g.device) title += " · " + g.group;
  if (g.stage >= 0) title += " · stage " + std::to_string(g.stage);
  title += " · " + rank_range(g.ranks);
  const int first = g.ranks.front();
  if (first < static_cast<int>(ranks.size())) {
    const TraceRank& r = ranks[static_cast<std::size_t>(first)];
    if (r.layers >= 0) title += " · " + std::to_string(r.layers) + " layers";
    long long low = -1, high = -1;
    for (int rank : g.ranks)
      if (rank < static_cast<int>(ranks.size()) && ranks[static_cast<std::size_t>(rank)].sequences >= 0) {
        const long long s = ranks[static_cast<std::size_t>(rank)].sequences;
        low = low < 0 ? s : std::min(low, s), high = std::max(high, s);
      }
    if (low >= 0)
      title += " · " + (low == high ? std::to_string(low) : std::to_string(low) + "-" + std::to_string(high)) +
               " sequences/replica";
  }
  return title;
}

struct Bar {
  double x0_us, x1_us;
  OpKind kind;
  std::string tooltip;
  int merged = 1;
};

// One rank's lane of one side: compute on top, one thin row per communication stream used.
std::string lane_svg(const std::vector<const TraceRecord*>& records, double span_us, const std::string& label) {
  std::map<Stream, std::vector<const TraceRecord*>> by_stream;
  for (const TraceRecord* r : records) by_stream[r->stream].push_back(r);
  std::vector<Stream> rows;
  rows.push_back(Stream::compute);
  for (const auto& [stream, list] : by_stream)
    if (stream != Stream::compute) rows.push_back(stream);
  const double height = kComputeRowPx + kCommRowPx * static_cast<double>(rows.size() - 1) + 2;
  std::string body;
  double top = 1;
  for (Stream stream : rows) {
    const double row_px = stream == Stream::compute ? kComputeRowPx : kCommRowPx;
    auto found = by_stream.find(stream);
    if (found != by_stream.end()) {
      std::vector<const TraceRecord*> list = found->second;
      std::stable_sort(list.begin(), list.end(),
                       [](const TraceRecord* a, const TraceRecord* b) { return a->start_s < b->start_s; });
      // Slivers merge into the previous bar of their kind when they touch it, counting them.
      const double sliver_us = span_us / kBarsPerLane;
      std::vector<Bar> bars;
      for (const TraceRecord* r : list) {
        const double x0 = r->start_s * 1e6, x1 = std::max(r->end_s * 1e6, x0 + sliver_us / 4);
        if (!bars.empty() && x1 - x0 < sliver_us && bars.back().kind == r->kind && x0 - bars.back().x1_us < sliver_us) {
          bars.back().x1_us = std::max(bars.back().x1_us, x1);
          ++bars.back().merged;
          continue;
        }
        bars.push_back({x0, x1, r->kind,
                        r->op_id + " · " + to_string(r->kind) + " · " + human_seconds(r->end_s - r->start_s)});
      }
      for (const Bar& b : bars) {
        const std::string tooltip =
            b.merged > 1 ? b.tooltip + " (+" + std::to_string(b.merged - 1) + " more ops)" : b.tooltip;
        body += "<rect x=\"" + number(b.x0_us) + "\" y=\"" + number(top) + "\" width=\"" + number(b.x1_us - b.x0_us) +
                "\" height=\"" + number(row_px - 1) + "\" fill=\"" + op_kind_colour(b.kind) + "\"><title>" +
                escape_html(tooltip) + "</title></rect>";
      }
    }
    top += row_px;
  }
  return "<svg class=\"plot tl-lanes\" role=\"img\" aria-label=\"" + escape_html(label) +
         "\" preserveAspectRatio=\"none\" height=\"" + number(height) + "\" viewBox=\"0 0 " + number(span_us) + " " +
         number(height) + "\" data-height=\"" + number(height) + "\">" + body + "</svg>";
}

// A tick's label is centred on it, but starts at the axis's left end and ends at its right end
// (the axis clips what passes its ends). The script does the same.
const char* tick_shift(double percent) {
  return percent < 3 ? "none" : percent > 94 ? "translateX(-100%)" : "translateX(-50%)";
}

// The axis under the toolbar: ticks as HTML (the script redraws them on zoom).
std::string axis_html(double span_us) {
  std::string ticks;
  for (double t : nice_ticks(span_us, 8)) {
    if (t > span_us) break;
    const double at = 100 * t / span_us;
    ticks += "<span class=\"tl-tick\" style=\"left:" + printf_string("%.3f", at) + "%;transform:" + tick_shift(at) + "\">" +
             escape_html(human_seconds(t * 1e-6)) + "</span>";
  }
  return "<div class=\"tl-row tl-axis-row\"><div class=\"tl-label\">time in the iteration</div><div class=\"tl-axis\">" +
         ticks + "</div></div>";
}

std::string legend(const std::vector<TimelineSide>& sides) {
  std::set<OpKind> kinds;
  for (const auto& side : sides)
    for (const auto& r : side.iteration.records) kinds.insert(r.kind);
  std::string out = "<div class=\"legend tl-legend\">";
  for (OpKind k : kinds)
    out += "<span class=\"legend-kind\" data-kind=\"" + std::string(to_string(k)) + "\"><i style=\"background:" +
           op_kind_colour(k) + "\"></i>" + to_string(k) + "</span>";
  return out + "</div>";
}

}  // namespace

std::vector<LaneGroup> lane_groups(const std::vector<TraceRank>& ranks, const std::vector<int>& ranks_seen) {
  std::vector<LaneGroup> groups;
  std::map<std::pair<std::string, int>, std::size_t> index;
  for (int rank : ranks_seen) {
    TraceRank where;
    if (rank >= 0 && rank < static_cast<int>(ranks.size())) where = ranks[static_cast<std::size_t>(rank)];
    const auto key = std::pair{where.group, where.stage};
    auto [it, added] = index.try_emplace(key, groups.size());
    if (added) groups.push_back({where.group, where.device, where.stage, {}});
    groups[it->second].ranks.push_back(rank);
  }
  return groups;
}

std::string timelines_html(const std::vector<TimelineSide>& sides, const std::vector<TraceRank>& ranks) {
  // Records per (side, rank), and the shared span: the longer iteration.
  std::vector<std::map<int, std::vector<const TraceRecord*>>> by_rank(sides.size());
  std::set<int> seen;
  Seconds span_s = 0;
  for (std::size_t s = 0; s < sides.size(); ++s)
    for (const auto& r : sides[s].iteration.records) {
      by_rank[s][r.rank].push_back(&r);
      seen.insert(r.rank);
      span_s = std::max(span_s, r.end_s);
    }
  const double span_us = std::max(span_s * 1e6, 1e-3);
  const std::vector<LaneGroup> groups = lane_groups(ranks, std::vector<int>(seen.begin(), seen.end()));

  auto rank_rows = [&](int rank) {
    std::string rows;
    for (std::size_t s = 0; s < sides.size(); ++s) {
      auto found = by_rank[s].find(rank);
      if (found == by_rank[s].end()) continue;
      const std::string label = "rank " + std::to_string(rank) + " · " + sides[s].name;
      rows += "<div class=\"tl-row\" data-rank=\"" + std::to_string(rank) + "\"><div class=\"tl-label\" title=\"" +
              escape_html(label) + "\">" + escape_html(label) + "</div>" + lane_svg(found->second, span_us, label) +
              "</div>";
    }
    return rows;
  };

  std::string html = "<div class=\"timeline\" data-span-us=\"" + number(span_us) + "\">";
  html += "<div class=\"tl-toolbar\"><button type=\"button\" data-zoom=\"in\">zoom in</button>"
          "<button type=\"button\" data-zoom=\"out\">zoom out</button>"
          "<button type=\"button\" data-zoom=\"reset\">whole iteration</button>"
          "<span class=\"tl-hint\">wheel over a lane: zoom · drag: pan · all timelines move together</span></div>";
  html += legend(sides) + axis_html(span_us);
  for (const LaneGroup& g : groups) {
    html += "<div class=\"tl-group\" data-group=\"" + escape_html(g.group) + "\" data-device=\"" +
            escape_html(g.device) + "\" data-stage=\"" + std::to_string(g.stage) + "\"><div class=\"tl-group-title\">" +
            escape_html(group_title(g, ranks)) + "</div>";
    html += rank_rows(g.ranks.front());
    const std::size_t more = std::min<std::size_t>(kMoreRanks, g.ranks.size() - 1);
    if (more > 0) {
      html += "<details><summary>" + std::to_string(more) + " more rank" + (more > 1 ? "s" : "") + " of this group";
      if (g.ranks.size() - 1 > more)
        html += " (of " + std::to_string(g.ranks.size() - 1) + "; every rank is in the Perfetto export)";
      html += "</summary>";
      for (std::size_t i = 1; i <= more; ++i) html += rank_rows(g.ranks[i]);
      html += "</details>";
    }
    html += "</div>";
  }
  return html + "</div>";
}

const char* const kTimelineScript = R"JS(
(function () {
  var timeline = document.querySelector('.timeline');
  if (!timeline) return;
  var full = parseFloat(timeline.getAttribute('data-span-us'));
  var t0 = 0, t1 = full;
  function label(us) {
    var a = Math.abs(us);
    if (a === 0) return '0 s';
    if (a < 1e3) return +us.toPrecision(4) + ' us';
    if (a < 1e6) return +(us / 1e3).toPrecision(4) + ' ms';
    return +(us / 1e6).toPrecision(4) + ' s';
  }
  function step(span) {
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var factors = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < factors.length; i++) if (factors[i] * mag >= raw) return factors[i] * mag;
    return 10 * mag;
  }
  function draw() {
    document.querySelectorAll('svg.tl-lanes').forEach(function (svg) {
      svg.setAttribute('viewBox', t0 + ' 0 ' + (t1 - t0) + ' ' + svg.getAttribute('data-height'));
    });
    var dt = step(t1 - t0);
    document.querySelectorAll('.tl-axis').forEach(function (axis) {
      axis.textContent = '';
      for (var t = Math.ceil(t0 / dt) * dt; t <= t1 + 1e-9 * full; t += dt) {
        var tick = document.createElement('span');
        tick.className = 'tl-tick';
        var at = 100 * (t - t0) / (t1 - t0);
        tick.style.left = at + '%';
        tick.style.transform = at < 3 ? 'none' : at > 94 ? 'translateX(-100%)' : 'translateX(-50%)';
        tick.textContent = label(t);
        axis.appendChild(tick);
      }
    });
  }
  function zoom(factor, centre) {
    var span = Math.min(full, Math.max(full * 1e-6, (t1 - t0) * factor));
    var start = centre - (centre - t0) * span / (t1 - t0);
    t0 = Math.max(0, Math.min(full - span, start));
    t1 = t0 + span;
    draw();
  }
  function timeAt(svg, clientX) {
    var box = svg.getBoundingClientRect();
    return t0 + (clientX - box.left) / box.width * (t1 - t0);
  }
  document.querySelectorAll('svg.tl-lanes').forEach(function (svg) {
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      zoom(e.deltaY < 0 ? 0.8 : 1.25, timeAt(svg, e.clientX));
    }, {passive: false});
    svg.addEventListener('mousedown', function (e) {
      var x = e.clientX, start = t0, width = svg.getBoundingClientRect().width;
      function move(m) {
        var span = t1 - t0;
        t0 = Math.max(0, Math.min(full - span, start - (m.clientX - x) / width * span));
        t1 = t0 + span;
        draw();
      }
      function up() { window.removeEventListener('mousemove', move); window.removeEventListener('mouseup', up); }
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
      e.preventDefault();
    });
  });
  document.querySelectorAll('.tl-toolbar button').forEach(function (button) {
    button.addEventListener('click', function () {
      var what = button.getAttribute('data-zoom');
      if (what === 'reset') { t0 = 0; t1 = full; draw(); }
      else zoom(what === 'in' ? 0.5 : 2, (t0 + t1) / 2);
    });
  });
  draw();
})();
)JS";

}  // namespace tandem::report
