// The platforms README names every bundled cluster (a user reads the list there, not the folder).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "platforms/cluster.hpp"

namespace tandem {
namespace {

TEST(BundledList, ThePlatformsReadmeNamesEveryBundledCluster) {
  std::ifstream in(bundled_dir("platforms/README.md"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto list = readme.find("Bundled (");
  ASSERT_NE(list, std::string::npos) << "the list of bundled clusters";
  const std::string paragraph = readme.substr(list, readme.find("\n\n", list) - list);
  for (const std::string& name : available_clusters())
    EXPECT_NE(paragraph.find("`" + name + "`"), std::string::npos) << name << " is not in platforms/README.md's list";
}

}  // namespace
}  // namespace tandem
