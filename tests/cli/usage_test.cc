// Command-line mistakes get loom's quality of message (issue 45, section 1): the prefix, the
// nearest option, choices without case, a repeated option named as such, bare `loom`; and models by
// their hub name from the command line.

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

namespace loom {
namespace {

// A Megatron-LM launch script simulated as it runs (issue 45, section 1): the strategy from its
// flags, the GPUs from torchrun's, its other flags listed; the same step as the flags given to
// loom.
TEST(Usage, AMegatronLaunchIsSimulatedAsItRuns) {
  const std::string script = ::testing::TempDir() + "loom-megatron-launch.sh";
  std::ofstream(script)
      << "#!/bin/bash\n"
         "torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py \\\n"
         "  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel "
         "\\\n"
         "  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
         "\\\n"
         "  --group-query-attention --num-query-groups 8 --kv-channels 128 \\\n"
         "  --max-position-embeddings 8192 --position-embedding-type rope --rotary-base 500000 \\\n"
         "  --normalization RMSNorm --norm-epsilon 1e-5 --swiglu \\\n"
         "  --untie-embeddings-and-output-weights --disable-bias-linear \\\n"
         "  --seq-length 8192 --micro-batch-size 1 --global-batch-size 256 --bf16 \\\n"
         "  --use-distributed-optimizer --overlap-grad-reduce --recompute-activations \\\n"
         "  --attention-dropout 0.0 --hidden-dropout 0.0 --lr 3e-4 --data-path /data/c4\n";
  const std::vector<std::string> inputs = {"--model", Shipped("models/llama3-8b.json"), "--cluster",
                                           Shipped("hardware/clusters/dgx-h100.json")};
  CommandResult launch =
      Loom(UsageArgs(UsageArgs({"simulate", "--megatron-args", script}, inputs), {"--json"}));
  CommandResult flags =
      Loom(UsageArgs(UsageArgs({"simulate"}, inputs),
                     {"--nodes", "4", "--tp", "2", "--pp", "2", "--dp", "8", "--sp", "--seq",
                      "8192", "--global-batch", "256", "--recompute", "selective", "--zero", "1",
                      "--overlap-grad-reduce", "--json"}));
  ASSERT_EQ(launch.code, kExitOk) << launch.err;
  ASSERT_EQ(flags.code, kExitOk) << flags.err;
  const nlohmann::json a = nlohmann::json::parse(launch.out), b = nlohmann::json::parse(flags.out);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  EXPECT_EQ(a["megatron_args"]["strategy"]["dp"], 8);
  EXPECT_EQ(a["megatron_args"]["not_modelled"],
            nlohmann::json({"--lr 3e-4", "--data-path /data/c4"}));
  CommandResult text = Loom(UsageArgs({"simulate", "--megatron-args", script}, inputs));
  EXPECT_NE(text.out.find("  not modelled        --lr 3e-4, --data-path /data/c4\n"),
            std::string::npos)
      << text.out;
  // A flag the arguments set is not given beside them.
  CommandResult both =
      Loom(UsageArgs(UsageArgs({"simulate", "--megatron-args", script}, inputs), {"--tp", "4"}));
  EXPECT_EQ(both.code, kExitBadInput);
  EXPECT_NE(both.err.find("--tp with --megatron-args"), std::string::npos) << both.err;
  // The model must be the one the arguments build.
  CommandResult other =
      Loom({"simulate", "--megatron-args", script, "--model", Shipped("models/llama3-70b.json"),
            "--cluster", Shipped("hardware/clusters/dgx-h100.json")});
  EXPECT_EQ(other.code, kExitBadInput);
  EXPECT_NE(other.err.find("--num-layers 32 builds another model than"), std::string::npos)
      << other.err;
}

// A Megatron-DeepSpeed launch with its DeepSpeed config (issue 45, section 1): the shipped example
// simulates as the same strategy given as flags, on Megatron-DeepSpeed's host stack; the config
// alone, or the arguments alone, are refused with the fix.
TEST(Usage, AMegatronDeepSpeedLaunchIsSimulatedWithItsConfig) {
  const std::string script = Shipped("scenarios/launches/llama3-8b-megatron-deepspeed.sh");
  const std::string config = Shipped("scenarios/launches/llama3-8b-ds_config.json");
  const std::vector<std::string> inputs = {"--model", Shipped("models/llama3-8b.json"), "--cluster",
                                           Shipped("hardware/clusters/dgx-h100.json")};
  CommandResult launch = Loom(UsageArgs(
      UsageArgs({"simulate", "--megatron-args", script, "--deepspeed-config", config}, inputs),
      {"--json"}));
  ASSERT_EQ(launch.code, kExitOk) << launch.err;
  CommandResult flags = Loom(UsageArgs(UsageArgs({"simulate"}, inputs), {"--nodes",
                                                                         "2",
                                                                         "--tp",
                                                                         "2",
                                                                         "--pp",
                                                                         "2",
                                                                         "--dp",
                                                                         "4",
                                                                         "--seq",
                                                                         "8192",
                                                                         "--global-batch",
                                                                         "128",
                                                                         "--recompute",
                                                                         "full",
                                                                         "--zero",
                                                                         "1",
                                                                         "--grad-accumulation",
                                                                         "add",
                                                                         "--attention",
                                                                         "flash2",
                                                                         "--framework",
                                                                         "megatron-deepspeed-2024",
                                                                         "--json"}));
  ASSERT_EQ(flags.code, kExitOk) << flags.err;
  const nlohmann::json a = nlohmann::json::parse(launch.out), b = nlohmann::json::parse(flags.out);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  EXPECT_EQ(a["framework"], "megatron-deepspeed-2024");
  EXPECT_EQ(a["megatron_args"]["deepspeed_config"], config);
  EXPECT_EQ(a["megatron_args"]["strategy"]["zero_stage"], 1);
  const nlohmann::json& listed = a["megatron_args"]["not_modelled"];
  EXPECT_NE(std::find(listed.begin(), listed.end(), config + ": gradient_clipping 1.0"),
            listed.end())
      << listed.dump();

  CommandResult alone = Loom(UsageArgs({"simulate", "--megatron-args", script}, inputs));
  EXPECT_EQ(alone.code, kExitBadInput);
  EXPECT_NE(alone.err.find("give that file with --deepspeed-config"), std::string::npos)
      << alone.err;
  CommandResult config_alone = Loom(UsageArgs({"simulate", "--deepspeed-config", config}, inputs));
  EXPECT_EQ(config_alone.code, kExitBadInput);
  EXPECT_NE(config_alone.err.find("without --megatron-args"), std::string::npos)
      << config_alone.err;
}

}  // namespace
}  // namespace loom
