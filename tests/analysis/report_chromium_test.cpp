// Renders a full report in headless Chromium (Debian's `chromium`): every section must hold a
// drawn plot, the page must log nothing to the console (no script error), and a screenshot is
// left beside the test binary (report-screenshot.png, with the page as report-chromium.html) for
// people to look at. Skipped when chromium is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

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

  std::string chromium_;
  fs::path work_;
};

TEST_F(ReportInChromium, RendersEverySectionsPlotWithoutConsoleErrorsAndSavesAScreenshot) {
  const fs::path beside_binary = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path page = beside_binary / "report-chromium.html";
  write_report_html(analysis_test::full_report_inputs(), page.string());

  ASSERT_EQ(chromium(page, "--enable-logging=stderr --v=0 --dump-dom", "dom"), 0) << read_file(work_ / "dom.err");
  const std::string dom = read_file(work_ / "dom.out");
  std::smatch census;
  ASSERT_TRUE(std::regex_search(dom, census, std::regex("id=\"plot-census\" data-plots=\"([^\"]*)\" data-errors=\"([0-9]+)\"")))
      << "the census script did not run";
  EXPECT_EQ(census[2].str(), "0") << "script errors on the page";
  const std::string plots = census[1];
  for (const char* section : {"summary", "timelines", "errors", "breakdown", "memory", "search"}) {
    std::smatch count;
    ASSERT_TRUE(std::regex_search(plots, count, std::regex(std::string(section) + "=([0-9]+)"))) << section << " missing: " << plots;
    EXPECT_GE(std::stoi(count[1]), 1) << section << " has no drawn plot: " << plots;
  }
  // Chromium logs every console message (an uncaught error included) as a CONSOLE line.
  const std::string log = read_file(work_ / "dom.err");
  EXPECT_EQ(log.find(":CONSOLE"), std::string::npos) << log;

  const fs::path screenshot = beside_binary / "report-screenshot.png";
  fs::remove(screenshot);
  ASSERT_EQ(chromium(page, "--hide-scrollbars --window-size=1200,3200 --screenshot=" + screenshot.string(), "shot"), 0)
      << read_file(work_ / "shot.err");
  ASSERT_TRUE(fs::exists(screenshot));
  EXPECT_GT(fs::file_size(screenshot), 10000u);  // a blank page compresses to far less
  const std::string png = read_file(screenshot);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace tandem::report
