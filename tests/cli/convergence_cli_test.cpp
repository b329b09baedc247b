// `tandem convergence` (cli/convergence_command.hpp): each variant trains for real on a text, the
// file it writes is the one a search's `convergence:` reads, the synchronous variant's curve is
// `tandem run`'s on the same corpus, and bad variants, steps or clusters are refused at their
// option or field (exit 2).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "scenarios/convergence_table.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

const std::string kCorpus = " --corpus /usr/share/common-licenses/GPL-3";

TEST(ConvergenceCli, WritesTheFileASearchReadsWithEachVariantsMeasuredCurve) {
  const auto dir = cli_test::fresh_dir("tandem-convergence", "file");
  const std::string path = (dir / "curves.json").string();
  const CliRun run = run_tandem("convergence gpt-tiny-localhost --steps 6" + kCorpus +
                                " --variant sync= --variant 'int8=gradient_compression: int8' --json " + path);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("steps->target"), std::string::npos) << run.out;
  const ConvergenceTable table = load_convergence_table(path);
  ASSERT_EQ(table.variants.size(), 2u);
  EXPECT_EQ(table.variants[0].name, "sync");
  EXPECT_EQ(describe(table.variants[1].key), describe(convergence_key([] {
              ParallelConfig p;
              apply_convergence_fields("gradient_compression: int8", "test", p);
              return p;
            }())));
  for (const auto& v : table.variants) EXPECT_EQ(v.losses.size(), 6u) << v.name;
  // The default target: the synchronous curve's last 5 steps, which it therefore reaches at step 6.
  const auto& sync = table.variants[0].losses;
  EXPECT_NEAR(table.target_loss, (sync[1] + sync[2] + sync[3] + sync[4] + sync[5]) / 5, 1e-12);
  EXPECT_EQ(steps_to_loss(sync, table.target_loss), 6);
  // The synchronous curve is `tandem run`'s on the same text, step for step.
  const CliRun reference = run_tandem("run gpt-tiny-localhost --iterations 6" + kCorpus + " --json -");
  ASSERT_EQ(reference.status, 0) << reference.err;
  const nlohmann::json r = nlohmann::json::parse(reference.out);
  ASSERT_EQ(r["iterations"].size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(r["iterations"][i]["loss"].get<double>(), sync[i]) << i;
  std::filesystem::remove_all(dir);
}

TEST(ConvergenceCli, BadVariantsStepsAndClustersAreRefusedAtTheirOptionOrField) {
  struct Case {
    std::string args, where;
  };
  const std::vector<Case> cases = {
      {"gpt-tiny-localhost --variant nonsense", "--variant"},
      {"gpt-tiny-localhost --variant 'a=bogus_field: 1'", "--variant"},
      {"gpt-tiny-localhost --variant a= --variant a=", "--variant"},
      {"gpt-tiny-localhost --variant 'a=gradient_compression: zip'", "--variant"},
      {"gpt-tiny-localhost --steps 2", "--steps"},
      {"gpt-tiny-localhost --target-loss -1", "--target-loss"},
      {"gpt-tiny-localhost --corpus /nonexistent", "--corpus"},
      {"gpt2-124m-h200", "cluster"},
  };
  for (const Case& c : cases) {
    const CliRun run = run_tandem("convergence " + c.args);
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.err;
    EXPECT_NE(run.err.find(c.where), std::string::npos) << c.args << ": " << run.err;
  }
}

}  // namespace
}  // namespace tandem
