// `run --corpus FILE`: a language model trains on a real text, its bytes the tokens, instead of the
// generated one; what cannot be a corpus is refused at the option (exit 2).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

std::vector<double> losses(const cli_test::CliRun& run) {
  std::vector<double> out;
  const nlohmann::json j = nlohmann::json::parse(run.out);  // (a temporary's member would dangle in the loop)
  for (const auto& it : j["iterations"]) out.push_back(it["loss"].get<double>());
  return out;
}

TEST(RunCorpusCli, ALanguageModelTrainsOnTheGivenText) {
  // A text of its own: a few sentences repeated (learnable, unlike the generated corpus).
  const auto dir = cli_test::fresh_dir("tandem-corpus", "text");
  std::string text;
  for (int i = 0; i < 60; ++i) text += "The quick brown fox jumps over the lazy dog. A stitch in time saves nine. ";
  std::ofstream(dir / "text.txt") << text;
  const cli_test::CliRun own = cli_test::run_tandem("run gpt-tiny-localhost --iterations 12 --json - --corpus " +
                                                    (dir / "text.txt").string());
  const cli_test::CliRun generated = cli_test::run_tandem("run gpt-tiny-localhost --iterations 12 --json -");
  ASSERT_EQ(own.status, 0) << own.err;
  ASSERT_EQ(generated.status, 0) << generated.err;
  const std::vector<double> a = losses(own), b = losses(generated);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_NE(a.front(), b.front());  // other tokens
  EXPECT_LT(a.back(), a.front() - 0.5);  // and it learns them
}

TEST(RunCorpusCli, WhatCannotBeACorpusIsRefusedAtTheOption) {
  const auto dir = cli_test::fresh_dir("tandem-corpus", "bad");
  std::ofstream(dir / "short.txt") << "too short";
  struct Case {
    std::string args, words;
  };
  const std::vector<Case> cases = {
      {"gpt-tiny-localhost --corpus " + dir.string(), "not an input file"},
      {"gpt-tiny-localhost --corpus " + (dir / "missing.txt").string(), "missing.txt"},
      {"gpt-tiny-localhost --corpus " + (dir / "short.txt").string(), "9 bytes"},
      {"mlp-localhost --corpus " + (dir / "short.txt").string(), "feeds language models"},
  };
  for (const Case& c : cases) {
    const cli_test::CliRun run = cli_test::run_tandem("run " + c.args + " --iterations 1");
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.err;
    EXPECT_NE(run.err.find("--corpus"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(c.words), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace tandem
