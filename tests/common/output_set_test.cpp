// OutputSet: outputs written beside their targets, renamed together on commit, and removed
// (targets untouched) when the set is dropped without it.
#include "common/output_set.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/input_error.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class OutputSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tandem-output-set-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::size_t files() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {})); }

  fs::path dir_;
};

TEST_F(OutputSetTest, CommitReplacesEveryTargetAtOnce) {
  std::ofstream(path("a.json")) << "old a";
  OutputSet set;
  set.stage(path("a.json"), "new a");
  set.stage(path("b.json"), "new b");
  EXPECT_EQ(read(path("a.json")), "old a") << "nothing replaced before commit";
  EXPECT_FALSE(fs::exists(path("b.json")));
  set.commit();
  EXPECT_EQ(read(path("a.json")), "new a");
  EXPECT_EQ(read(path("b.json")), "new b");
  EXPECT_EQ(files(), 2u) << "no temporary file left";
}

TEST_F(OutputSetTest, ASetDroppedWithoutCommitLeavesTargetsAsTheyWere) {
  std::ofstream(path("a.json")) << "old a";
  {
    OutputSet set;
    set.stage(path("a.json"), "new a");
    set.stage(path("b.json"), "new b");
  }
  EXPECT_EQ(read(path("a.json")), "old a");
  EXPECT_FALSE(fs::exists(path("b.json")));
  EXPECT_EQ(files(), 1u);
}

TEST_F(OutputSetTest, StagingATargetAgainReplacesTheFirstText) {
  OutputSet set;
  set.stage(path("a.json"), "first");
  set.stage(path("a.json"), "second");
  set.commit();
  EXPECT_EQ(read(path("a.json")), "second");
  EXPECT_EQ(files(), 1u);
}

TEST_F(OutputSetTest, SyncedOutputsCommitLikeTheOthers) {
  OutputSet set;
  set.stage(path("ck.bin"), std::string("\0binary\0", 8), OutputSet::Durability::synced);
  set.commit();
  EXPECT_EQ(fs::file_size(path("ck.bin")), 8u);
}

TEST_F(OutputSetTest, AMissingFolderIsBadInputNamingTheOption) {
  try {
    OutputSet::check_writable(path("no-such-folder/t.json"), "--trace");
    FAIL() << "accepted a target in a missing folder";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "--trace");
    EXPECT_NE(std::string(e.what()).find("no such folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputSet::check_writable(dir_.string(), "--json"), InputError) << "a folder as target";
  EXPECT_NO_THROW(OutputSet::check_writable("-", "--json"));
  EXPECT_NO_THROW(OutputSet::check_writable("", "--json"));
  EXPECT_NO_THROW(OutputSet::check_writable(path("new.json"), "--json"));
}

TEST_F(OutputSetTest, AFileThatCannotBeWrittenIsAnEnvironmentFailureWithItsCause) {
  OutputSet set;
  try {
    set.stage(path("no-such-folder/t.json"), "text");
    FAIL() << "wrote into a missing folder";
  } catch (const InputError&) {
    FAIL() << "an environment failure, not bad input";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
