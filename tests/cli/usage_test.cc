// Command-line mistakes get loom's quality of message (issue 45, section 1): the prefix, the
// nearest option, choices without case, a repeated option named as such, bare `loom`; and models by
// their hub name from the command line.

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "cli/command.h"
#include "cli/run_loom.h"

namespace loom {
namespace {

const std::vector<std::string> kUsagePlanInputs = {"plan", "--model",
                                                   Shipped("models/llama3-8b.json"), "--cluster",
                                                   Shipped("hardware/clusters/dgx-h100.json")};

std::vector<std::string> UsageArgs(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(Usage, BareLoomPrintsTheHelp) {
  CommandResult r = Loom({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulate"), std::string::npos);
  EXPECT_EQ(r.err, "");
}

TEST(Usage, AnUnknownOptionIsNamedWithTheNearestTheCommandHas) {
  // --gpus is required by plan: the misspelt --gpu, not the missing --gpus, is the message.
  CommandResult r = Loom(UsageArgs(kUsagePlanInputs, {"--gpu", "64"}));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "loom: plan: unknown option --gpu; did you mean --gpus? Run `loom plan --help` for its "
            "options.\n");
  // A unique prefix is a guess too; a word near nothing gets none.
  r = Loom(UsageArgs(kUsagePlanInputs, {"--gpus", "64", "--glob", "8"}));
  EXPECT_NE(r.err.find("unknown option --glob; did you mean --global-batch?"), std::string::npos)
      << r.err;
  r = Loom(UsageArgs(kUsagePlanInputs, {"--gpus", "64", "--frobnicate"}));
  EXPECT_NE(r.err.find("unknown option --frobnicate. Run `loom plan --help`"), std::string::npos)
      << r.err;
  // The same in a subcommand's subcommand, and in --opt=value form.
  r = Loom({"trace", "merge", "--outt=x.json", "a.json"});
  EXPECT_NE(r.err.find("loom: trace merge: unknown option --outt; did you mean --out?"),
            std::string::npos)
      << r.err;
}

TEST(Usage, ASingleValuedOptionGivenTwiceIsNamed) {
  CommandResult r = Loom(UsageArgs(kUsagePlanInputs, {"--gpus", "64", "--gpus", "128"}));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("loom: plan: --gpus is given more than once; give it once"),
            std::string::npos)
      << r.err;
  // Options that take several values may repeat.
  r = Loom(UsageArgs(kUsagePlanInputs,
                     {"--gpus", "64", "--fix", "tp=8", "--fix", "pp=1", "--global-batch", "64",
                      "--seq", "8192", "--top", "1", "--json"}));
  EXPECT_EQ(r.code, kExitOk) << r.err;
}

TEST(Usage, ChoicesMatchWithoutCaseWhereOneNameMatches) {
  CommandResult r = Loom({"simulate",
                          "--model",
                          Shipped("models/llama3-8b.json"),
                          "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"),
                          "--tp",
                          "8",
                          "--pp",
                          "2",
                          "--micro-batch",
                          "1",
                          "--global-batch",
                          "16",
                          "--seq",
                          "2048",
                          "--schedule",
                          "1F1B",
                          "--dtype",
                          "BF16",
                          "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("\"schedule\": \"1f1b\""), std::string::npos);
  r = Loom({"simulate", "--model", Shipped("models/llama3-8b.json"), "--cluster",
            Shipped("hardware/clusters/dgx-h100.json"), "--tp", "8", "--schedule", "1fb1"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("loom: simulate: --schedule: 1fb1 is not one of "
                       "{gpipe,1f1b,interleaved,zb-h1,zb-v,dualpipev}; did you mean 1f1b?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Run `loom simulate --help` for its options and an example."),
            std::string::npos);
}

TEST(Usage, AModelByItsHubNameFromTheCommandLine) {
  const char* old = std::getenv("HF_HUB_CACHE");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("HF_HUB_CACHE", Shipped("tests/data/hf-hub").c_str(), 1);
  CommandResult by_name = Loom({"describe", "--model", "meta-llama/Meta-Llama-3-8B"});
  CommandResult missing = Loom({"describe", "--model", "meta-llama/Meta-Llama-3-70B"});
  if (saved) {
    setenv("HF_HUB_CACHE", saved->c_str(), 1);
  } else {
    unsetenv("HF_HUB_CACHE");
  }
  ASSERT_EQ(by_name.code, kExitOk) << by_name.err;
  EXPECT_NE(by_name.out.find("8.03 B total"), std::string::npos) << by_name.out;
  EXPECT_EQ(missing.code, kExitBadInput);
  EXPECT_NE(missing.err.find("`huggingface-cli download meta-llama/Meta-Llama-3-70B config.json`"),
            std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace loom
