// Renders reports in headless Chromium (Debian's `chromium`): every section must hold a drawn
// plot, the page must log nothing to the console (no script error), and a screenshot of the
// 64-rank heterogeneous report is left beside the test binary (report-screenshot.png, with the
// page as report-chromium.html) for people to look at. The layout is measured from the DOM as
// drawn: every device group has a visible lane, no two op kinds share a colour, no text overlaps
// other text, no debug text, the plan names the batch shares and the heterogeneity gain; at
// 4,096 ranks likewise, with lanes per group and stage, not per rank. Skipped when chromium is
// not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/report/report.hpp"
#include "tests/analysis/report_inputs_fixture.hpp"

namespace tandem::report {
namespace {

namespace fs = std::filesystem;

std::string chromium_binary() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) return candidate;
  return "";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ReportInChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = chromium_binary();
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed";
    work_ = fs::temp_directory_path() / ("tandem-chromium-" + std::to_string(::getpid()));
    fs::create_directories(work_);
  }
  void TearDown() override {
    if (!work_.empty()) fs::remove_all(work_);
  }

  // Runs chromium headless on `page` with `flags`; stdout and stderr land in files under work_.
  int chromium(const fs::path& page, const std::string& flags, const std::string& tag) {
    const std::string command = "timeout 90 " + chromium_ + " --headless --no-sandbox --disable-gpu " +
                                "--no-first-run --user-data-dir=" + (work_ / ("profile-" + tag)).string() + " " +
                                flags + " file://" + page.string() + " >" + (work_ / (tag + ".out")).string() +
                                " 2>" + (work_ / (tag + ".err")).string();
    return std::system(command.c_str());
  }

  // The report's page with a measuring script appended (the product page carries no test code):
  // it writes what the layout shows into <pre id="layout-check"> as JSON, read back from the
  // DOM that Chromium dumps after the page's own scripts ran, at a 1400 px wide window.
  nlohmann::json layout_of(const ReportInputs& inputs, const std::string& tag) {
    std::string html = render_report_html(inputs);
    html.insert(html.rfind("</body>"), std::string("<script>") + kLayoutCheck + "</script>");
    const fs::path page = work_ / (tag + ".html");
    std::ofstream(page) << html;
    EXPECT_EQ(chromium(page, "--window-size=1400,3000 --dump-dom", tag), 0) << read_file(work_ / (tag + ".err"));
    const std::string dom = read_file(work_ / (tag + ".out"));
    const std::size_t start = dom.find("<pre id=\"layout-check\">");
    if (start == std::string::npos) {
      ADD_FAILURE() << "the measuring script did not run: " << read_file(work_ / (tag + ".err"));
      return {};
    }
    const std::size_t from = start + std::string("<pre id=\"layout-check\">").size();
    std::string text = dom.substr(from, dom.find("</pre>", from) - from);
    for (const auto& [entity, c] : {std::pair{"&lt;", "<"}, std::pair{"&gt;", ">"}, std::pair{"&amp;", "&"}})
      for (std::size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1))
        text.replace(at, std::string(entity).size(), c);
    return nlohmann::json::parse(text);
  }

  static constexpr const char* kLayoutCheck = R"JS(
(function () {
  var out = {groups: {}, lanes: 0, kinds: {}, duplicate_colours: [], unlisted_fills: [], overlaps: [], texts: 0};
  // Content of a closed <details> keeps boxes in the layout but is not drawn.
  function hidden(e) {
    var d = e.closest('details');
    return (d && !d.open && !e.closest('summary')) || (e.checkVisibility && !e.checkVisibility());
  }
  // Lanes a person sees (not behind a closed toggle), per device group.
  document.querySelectorAll('.tl-group').forEach(function (g) {
    var name = g.getAttribute('data-group');
    out.groups[name] = out.groups[name] || 0;
    g.querySelectorAll('svg.tl-lanes').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      if (!hidden(svg) && box.width > 200 && box.height > 5 && svg.querySelectorAll('rect').length > 0) { out.groups[name]++; out.lanes++; }
    });
  });
  // Op kind -> colour in the legend; no colour twice; every bar's colour is a legend colour.
  var colourOf = {};
  document.querySelectorAll('.tl-legend .legend-kind').forEach(function (k) {
    var colour = getComputedStyle(k.querySelector('i')).backgroundColor, kind = k.getAttribute('data-kind');
    if (colourOf[colour]) out.duplicate_colours.push(kind + ' and ' + colourOf[colour]);
    colourOf[colour] = kind;
    out.kinds[kind] = colour;
  });
  document.querySelectorAll('svg.tl-lanes rect').forEach(function (r) {
    var fill = getComputedStyle(r).fill;
    if (!colourOf[fill] && out.unlisted_fills.indexOf(fill) < 0) out.unlisted_fills.push(fill);
  });
  // Every visible piece of text, as drawn (clipped by a parent that clips).
  var boxes = [];
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    var node = walker.currentNode, parent = node.parentElement;
    if (!node.textContent.trim() || parent.closest('title,script,style,#layout-check') || hidden(parent)) continue;
    var rects;
    if (parent.namespaceURI === 'http://www.w3.org/2000/svg') rects = [parent.getBoundingClientRect()];
    else { var range = document.createRange(); range.selectNodeContents(node); rects = Array.from(range.getClientRects()); }
    var clip = null;
    for (var e = parent; e && e !== document.body; e = e.parentElement)
      if (getComputedStyle(e).overflow !== 'visible' && e.namespaceURI !== 'http://www.w3.org/2000/svg') { clip = e.getBoundingClientRect(); break; }
    rects.forEach(function (r) {
      var b = {l: r.left, t: r.top, r: r.right, b: r.bottom};
      if (clip) b = {l: Math.max(b.l, clip.left), t: Math.max(b.t, clip.top), r: Math.min(b.r, clip.right), b: Math.min(b.b, clip.bottom)};
      if (b.r - b.l > 1 && b.b - b.t > 1) boxes.push({box: b, text: node.textContent.trim().slice(0, 40)});
    });
  }
  out.texts = boxes.length;
  for (var i = 0; i < boxes.length; i++)
    for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i].box, c = boxes[j].box;
      var w = Math.min(a.r, c.r) - Math.max(a.l, c.l), h = Math.min(a.b, c.b) - Math.max(a.t, c.t);
      if (w > 1.5 && h > 1.5 && out.overlaps.length < 20) out.overlaps.push(boxes[i].text + ' / ' + boxes[j].text);
    }
  out.debug_text = /plots:|census|data-plots/.test(document.body.innerText);
  // Zooming in moves every lane of both sides together: one viewBox, half as wide.
  var lanes = Array.from(document.querySelectorAll('svg.tl-lanes'));
  var width = function (svg) { return parseFloat(svg.getAttribute('viewBox').split(' ')[2]); };
  var before = width(lanes[0]);
  document.querySelector('.tl-toolbar button[data-zoom="in"]').click();
  out.zoom = {before: before, after: width(lanes[0]),
              viewboxes: new Set(lanes.map(function (svg) { return svg.getAttribute('viewBox'); })).size,
              ticks: document.querySelector('.tl-axis').children.length};
  var plan = document.querySelector('section[data-section="plan"]');
  out.plan_text = plan ? plan.innerText : '';
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
)JS";

  std::string chromium_;
  fs::path work_;
};

TEST_F(ReportInChromium, RendersEverySectionsPlotWithoutConsoleErrorsAndSavesAScreenshot) {
  const fs::path beside_binary = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path page = beside_binary / "report-chromium.html";
  write_report_html(analysis_test::heterogeneous_report_inputs(64), page.string());

  ASSERT_EQ(chromium(page, "--enable-logging=stderr --v=0 --dump-dom", "dom"), 0) << read_file(work_ / "dom.err");
  const std::string dom = read_file(work_ / "dom.out");
  std::smatch census;
  ASSERT_TRUE(std::regex_search(dom, census, std::regex("id=\"plot-census\" data-plots=\"([^\"]*)\" data-errors=\"([0-9]+)\"")))
      << "the census script did not run";
  EXPECT_EQ(census[2].str(), "0") << "script errors on the page";
  const std::string plots = census[1];
  for (const char* section : {"summary", "plan", "timelines", "errors", "breakdown", "memory", "search", "goodput"}) {
    std::smatch count;
    ASSERT_TRUE(std::regex_search(plots, count, std::regex(std::string(section) + "=([0-9]+)"))) << section << " missing: " << plots;
    EXPECT_GE(std::stoi(count[1]), 1) << section << " has no drawn plot: " << plots;
  }
  // Chromium logs every console message (an uncaught error included) as a CONSOLE line.
  const std::string log = read_file(work_ / "dom.err");
  EXPECT_EQ(log.find(":CONSOLE"), std::string::npos) << log;

  const fs::path screenshot = beside_binary / "report-screenshot.png";
  fs::remove(screenshot);
  ASSERT_EQ(chromium(page, "--hide-scrollbars --window-size=1400,4200 --screenshot=" + screenshot.string(), "shot"), 0)
      << read_file(work_ / "shot.err");
  ASSERT_TRUE(fs::exists(screenshot));
  EXPECT_GT(fs::file_size(screenshot), 10000u);  // a blank page compresses to far less
  const std::string png = read_file(screenshot);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST_F(ReportInChromium, HeterogeneousReportShowsEveryDeviceGroupInItsOwnColoursWithoutOverlappingText) {
  const nlohmann::json layout = layout_of(analysis_test::heterogeneous_report_inputs(64), "hetero64");
  ASSERT_TRUE(layout.is_object());
  for (const char* group : {"h100", "a100"}) {
    ASSERT_TRUE(layout["groups"].contains(group)) << layout["groups"];
    EXPECT_GE(layout["groups"][group].get<int>(), 2) << group << ": a lane per stage at least";
  }
  EXPECT_EQ(layout["kinds"].size(), static_cast<std::size_t>(kOpKindCount)) << layout["kinds"];
  EXPECT_TRUE(layout["duplicate_colours"].empty()) << layout["duplicate_colours"];
  EXPECT_TRUE(layout["unlisted_fills"].empty()) << layout["unlisted_fills"];
  EXPECT_GT(layout["texts"].get<int>(), 100);
  EXPECT_TRUE(layout["overlaps"].empty()) << layout["overlaps"];
  EXPECT_FALSE(layout["debug_text"].get<bool>());
  EXPECT_NEAR(layout["zoom"]["after"].get<double>(), layout["zoom"]["before"].get<double>() / 2, 1e-6);
  EXPECT_EQ(layout["zoom"]["viewboxes"], 1) << "predicted and measured lanes share one time axis";
  EXPECT_GE(layout["zoom"]["ticks"].get<int>(), 4);
  const std::string plan = layout["plan_text"];
  for (const char* words : {"75.0 %", "25.0 %", "46.7 %", "H100-SXM", "A100-SXM-80GB", "18 | 14"})
    EXPECT_NE(plan.find(words), std::string::npos) << words << " not in the plan section:\n" << plan;
}

TEST_F(ReportInChromium, TheLossAgainstTimePlotOfATargetLossSearchDrawsWithoutOverlappingText) {
  ReportInputs in = analysis_test::full_report_inputs();
  in.search->objective = "time_to_target_loss";
  in.search->objective_basis = "steps measured on a small GPT";
  in.search->target_loss = 3.6;
  for (std::size_t c = 0; c < in.search->candidates.size(); ++c)
    for (int step = 1; step <= 80; ++step)
      in.search->candidates[c].loss_per_step.push_back(3 + 2.5 / (1 + 0.1 * step * (c + 1)));
  const nlohmann::json layout = layout_of(in, "loss");
  ASSERT_TRUE(layout.is_object());
  EXPECT_TRUE(layout["overlaps"].empty()) << layout["overlaps"];
  EXPECT_FALSE(layout["debug_text"].get<bool>());
  const std::string dom = read_file(work_ / "loss.out");
  EXPECT_NE(dom.find("aria-label=\"Loss vs predicted wall time\""), std::string::npos);
  EXPECT_NE(dom.find("<polyline"), std::string::npos);
}

TEST_F(ReportInChromium, StaysLegibleAtFourThousandRanks) {
  const nlohmann::json layout = layout_of(analysis_test::heterogeneous_report_inputs(4096, false), "hetero4096");
  ASSERT_TRUE(layout.is_object());
  EXPECT_GE(layout["groups"]["h100"].get<int>(), 2);
  EXPECT_GE(layout["groups"]["a100"].get<int>(), 2);
  EXPECT_LE(layout["lanes"].get<int>(), 16) << "a lane per device group and stage, not per rank";
  EXPECT_TRUE(layout["overlaps"].empty()) << layout["overlaps"];
}

}  // namespace
}  // namespace tandem::report
