// The field reference in the docs (docs/fields.md) is what `tandem fields` prints from the tables
// the readers check keys and ranges against: a field added to a reader and not to the docs fails
// here (regenerate with docs/make_fields.sh BUILD_DIR).
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

TEST(FieldsDocCli, TheReferenceInTheDocsIsWhatTheReadersPrint) {
  const std::string doc = test::bundled_text("docs/fields.md");
  ASSERT_FALSE(doc.empty()) << "docs/fields.md is missing";
  for (const char* kind : {"scenario", "reliability", "cluster", "device", "failures"}) {
    const cli_test::CliRun run = cli_test::run_tandem(std::string("fields ") + kind);
    ASSERT_EQ(run.status, 0) << run.err;
    const std::string section = "## " + std::string(kind) + "\n\n```\n" + run.out + "```\n";
    EXPECT_NE(doc.find(section), std::string::npos)
        << "docs/fields.md is out of date for '" << kind << "': run docs/make_fields.sh BUILD_DIR";
  }
}

}  // namespace
}  // namespace tandem
