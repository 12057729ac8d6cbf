// `loom simulate`'s goodput section and `loom plan --objective goodput`.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/run_loom.h"

namespace loom {
namespace {

// The shipped DGX H100 file with |restart_s| added to its reliability object (the shipped file has
// none: no public source gives one), written where the test can read it. Commands on it name the
// framework by its file: the copy has no frameworks/ folder beside it.
std::string DgxH100WithRestart(double restart_s) {
  std::ifstream in(Shipped("hardware/clusters/dgx-h100.json"));
  nlohmann::ordered_json cluster = nlohmann::ordered_json::parse(in);
  cluster["gpu"] = Shipped("hardware/gpus/h100-sxm5-80gb.json");
  cluster["reliability"]["restart_s"] = restart_s;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                                     (std::string("loom_goodput_") + info->name() + ".json");
  std::ofstream(path) << cluster.dump(2);
  return path.string();
}

std::vector<std::string> SimulateLlama8b(const std::string& cluster) {
  return {"simulate",
          "--model",
          Shipped("models/llama3-8b.json"),
          "--cluster",
          cluster,
          "--tp",
          "2",
          "--pp",
          "2",
          "--dp",
          "4",
          "--micro-batch",
          "1",
          "--global-batch",
          "32",
          "--seq",
          "4096",
          "--framework",
          Shipped("hardware/frameworks/megatron-core.json")};
}

TEST(SimulateGoodput, AClusterWithoutReliabilityKeepsItsOutput) {
  std::vector<std::string> args = SimulateLlama8b(Shipped("hardware/clusters/dgx-a100.json"));
  CommandResult text = Loom(args);
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_EQ(text.out.find("\ngoodput ("), std::string::npos) << text.out;
  args.push_back("--json");
  CommandResult json = Loom(args);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_FALSE(nlohmann::json::parse(json.out).contains("goodput"));
}

TEST(SimulateGoodput, TheShippedDgxH100NamesTheMissingRestartTime) {
  std::vector<std::string> args = SimulateLlama8b(Shipped("hardware/clusters/dgx-h100.json"));
  args.push_back("--goodput");
  CommandResult text = Loom(args);
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("MTBF"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("reliability.restart_s is missing"), std::string::npos) << text.out;
  args.push_back("--json");
  CommandResult json = Loom(args);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const nlohmann::json g = nlohmann::json::parse(json.out).at("goodput");
  EXPECT_TRUE(g["goodput"].is_null());
  EXPECT_TRUE(g["effective_tokens_per_s"].is_null());
  EXPECT_EQ(g["missing_keys"], nlohmann::json::array({"reliability.restart_s"}));
  EXPECT_GT(g["daly_interval_s"].get<double>(), 0);
}

TEST(SimulateGoodput, JsonGivesTheEstimateAndTheEffectiveThroughput) {
  std::vector<std::string> args = SimulateLlama8b(DgxH100WithRestart(600));
  args.push_back("--json");
  CommandResult r = Loom(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& g = j.at("goodput");
  // 16 GPUs on nodes of 8: 2 nodes and their 16 NICs.
  EXPECT_EQ(g["gpus"], 16);
  EXPECT_EQ(g["nodes"], 2);
  EXPECT_EQ(g["nics"], 16);
  EXPECT_NEAR(g["mtbf_s"].get<double>(), 86400 / g["failures_per_day"].get<double>(), 1e-6);
  // Llama 3 8B in bf16 with Adam: 14 bytes per parameter, at 2000 GB/s each way.
  const double bytes = g["checkpoint_bytes"].get<double>();
  EXPECT_NEAR(g["checkpoint_write_s"].get<double>(), bytes / 2e12, 1e-9);
  EXPECT_NEAR(g["recovery_s"].get<double>(), 600 + bytes / 2e12, 1e-9);
  const double goodput = g["goodput"].get<double>();
  EXPECT_GT(goodput, 0.9);
  EXPECT_LT(goodput, 1.0);
  EXPECT_NEAR(g["effective_tokens_per_s"].get<double>(), j["tokens_per_s"].get<double>() * goodput,
              1e-6);
  EXPECT_TRUE(g["missing_keys"].empty());
}

TEST(SimulateGoodput, TextHasAGoodputSection) {
  CommandResult r = Loom(SimulateLlama8b(DgxH100WithRestart(600)));
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* part : {"goodput (failures, checkpoints and restarts;", "MTBF",
                           "checkpoint every", "effective tokens/s"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
}

// A cluster whose reliability lacks a key the goodput needs gets no section of "unknown" lines in
// the text unless asked (--goodput); one node is "1 node" (issue 45, section 3).
TEST(SimulateGoodput, AnIncompleteFileShowsTheSectionOnlyWhenAsked) {
  std::vector<std::string> args = {"simulate",
                                   "--model",
                                   Shipped("models/llama3-8b.json"),
                                   "--cluster",
                                   Shipped("hardware/clusters/dgx-h100.json"),
                                   "--tp",
                                   "8",
                                   "--global-batch",
                                   "8",
                                   "--seq",
                                   "2048"};
  CommandResult quiet = Loom(args);
  ASSERT_EQ(quiet.code, kExitOk) << quiet.err;
  EXPECT_EQ(quiet.out.find("goodput"), std::string::npos) << quiet.out;
  args.push_back("--goodput");
  CommandResult asked = Loom(args);
  ASSERT_EQ(asked.code, kExitOk) << asked.err;
  EXPECT_NE(asked.out.find("reliability.restart_s is missing"), std::string::npos) << asked.out;
  EXPECT_NE(asked.out.find("8 GPUs, 1 node, 8 NICs"), std::string::npos) << asked.out;
}

std::vector<std::string> PlanLlama8b(const std::string& cluster) {
  return {"plan",
          "--model",
          Shipped("models/llama3-8b.json"),
          "--cluster",
          cluster,
          "--gpus",
          "16",
          "--min-gpus",
          "8",
          "--global-batch",
          "32",
          "--seq",
          "4096",
          "--fix",
          "pp=1",
          "--objective",
          "goodput",
          "--top",
          "5",
          "--framework",
          Shipped("hardware/frameworks/megatron-core.json")};
}

TEST(PlanGoodput, NeedsAReliabilityObject) {
  CommandResult r = Loom(PlanLlama8b(Shipped("hardware/clusters/dgx-a100.json")));
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("dgx-a100.json: has no \"reliability\" object, which --objective goodput "
                       "needs"),
            std::string::npos)
      << r.err;
}

TEST(PlanGoodput, NeedsEveryKeyOfTheEstimate) {
  CommandResult r = Loom(PlanLlama8b(Shipped("hardware/clusters/dgx-h100.json")));
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("dgx-h100.json: reliability.restart_s is missing"), std::string::npos)
      << r.err;
}

// --restart-s completes the shipped file's reliability on the command line: the same ranking as a
// copy of the file with the key.
TEST(PlanGoodput, RestartSecondsOnTheCommandLineCompleteTheFile) {
  std::vector<std::string> flag = PlanLlama8b(Shipped("hardware/clusters/dgx-h100.json"));
  flag.insert(flag.end(), {"--restart-s", "600", "--json"});
  std::vector<std::string> file = PlanLlama8b(DgxH100WithRestart(600));
  file.push_back("--json");
  CommandResult a = Loom(flag), b = Loom(file);
  ASSERT_EQ(a.code, kExitOk) << a.err;
  ASSERT_EQ(b.code, kExitOk) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["plans"], nlohmann::json::parse(b.out)["plans"]);

  std::vector<std::string> no_reliability = PlanLlama8b(Shipped("hardware/clusters/dgx-a100.json"));
  no_reliability.insert(no_reliability.end(), {"--restart-s", "600"});
  CommandResult r = Loom(no_reliability);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("dgx-a100.json has no \"reliability\" object"), std::string::npos) << r.err;
}

TEST(SimulateGoodput, RestartSecondsOnTheCommandLineGiveTheGoodput) {
  std::vector<std::string> args = SimulateLlama8b(Shipped("hardware/clusters/dgx-h100.json"));
  args.insert(args.end(), {"--restart-s", "600", "--json"});
  CommandResult r = Loom(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["goodput"]["goodput"].is_number()) << j["goodput"];
  EXPECT_TRUE(j["goodput"]["missing_keys"].empty()) << j["goodput"];
}

TEST(PlanGoodput, RanksByEffectiveThroughput) {
  std::vector<std::string> args = PlanLlama8b(DgxH100WithRestart(600));
  args.push_back("--json");
  CommandResult r = Loom(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["request"]["objective"], "goodput");
  EXPECT_EQ(j["request"]["score_unit"], "effective_s");
  const nlohmann::json& plans = j["plans"];
  ASSERT_FALSE(plans.empty());
  for (size_t i = 0; i < plans.size(); ++i) {
    const double goodput = plans[i]["goodput"].get<double>();
    EXPECT_GT(goodput, 0);
    EXPECT_LT(goodput, 1);
    EXPECT_NEAR(plans[i]["score"].get<double>(), plans[i]["step_time_s"].get<double>() / goodput,
                1e-9);
    EXPECT_NEAR(plans[i]["effective_tokens_per_s"].get<double>(),
                plans[i]["tokens_per_s"].get<double>() * goodput, 1e-6);
    if (i > 0) {
      EXPECT_GE(plans[i - 1]["effective_tokens_per_s"].get<double>(),
                plans[i]["effective_tokens_per_s"].get<double>());
    }
  }
}

TEST(PlanGoodput, TheTableShowsGoodputAndEffectiveThroughput) {
  CommandResult r = Loom(PlanLlama8b(DgxH100WithRestart(600)));
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("objective goodput"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eff.tok/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("goodput: the expected share of wall time that trains"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace loom
