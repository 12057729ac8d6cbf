#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_loom.h"
#include "core/build_info.h"

namespace loom {
namespace {

TEST(Describe, JsonHasParametersFlopsAndStates) {
  CommandResult r = Loom({"describe", "--model", Shipped("models/llama3-70b.json"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "loom.describe/1");
  EXPECT_EQ(j["parameters"]["total"], 70'553'706'496);
  EXPECT_EQ(j["parameters"]["active"], 70'553'706'496);
  EXPECT_EQ(j["seq_len"], 8192);
  EXPECT_EQ(j["seq_len_from"], "max_position_embeddings");
  EXPECT_EQ(j["model_states"][0]["dtype"], "bf16");
  // bf16 + Adam as Megatron-LM keeps it: 2 + 4 (fp32 gradient buffer) + 12 bytes per parameter.
  EXPECT_EQ(j["model_states"][0]["total_bytes"], int64_t{18} * 70'553'706'496);
  EXPECT_FALSE(j.contains("cluster"));
}

TEST(Describe, ClusterAddsTheFewestGpusForModelStates) {
  CommandResult r = Loom({"describe", "--model", Shipped("models/llama3-70b.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--seq", "4096", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["seq_len"], 4096);
  EXPECT_EQ(j["seq_len_from"], "--seq");
  const int64_t states = int64_t{18} * 70'553'706'496;  // bf16: 2 + 4 + 12 bytes per parameter
  const int64_t memory = j["cluster"]["gpu_memory_bytes"];
  EXPECT_EQ(j["model_states"][0]["min_gpus_for_model_states"], (states + memory - 1) / memory);
  EXPECT_EQ(j["cluster"]["gpus_per_node"], 8);
}

TEST(Describe, HumanTableNamesTheModelAndCounts) {
  CommandResult r = Loom({"describe", "--model", Shipped("models/mixtral-8x7b.json")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("mixtral-8x7b"), std::string::npos);
  EXPECT_NE(r.out.find("8 routed (top 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bf16"), std::string::npos);
}

TEST(Describe, MissingModelFileIsABadInputError) {
  CommandResult r = Loom({"describe", "--model", "no/such/model.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("loom: error: no/such/model.json: no such file"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Describe, NodesWithoutClusterIsAUsageError) {
  CommandResult r = Loom({"describe", "--model", Shipped("models/llama3-8b.json"), "--nodes", "4"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--nodes requires --cluster"), std::string::npos) << r.err;
}

TEST(Describe, UnknownOptimizerIsAUsageError) {
  CommandResult r =
      Loom({"describe", "--model", Shipped("models/llama3-8b.json"), "--optimizer", "adamw"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("adamw"), std::string::npos) << r.err;
}

TEST(Describe, ZeroSeqIsAUsageError) {
  CommandResult r = Loom({"describe", "--model", Shipped("models/llama3-8b.json"), "--seq", "0"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--seq"), std::string::npos) << r.err;
}

TEST(Loom, VersionAndHelpExitZero) {
  CommandResult v = Loom({"--version"});
  EXPECT_EQ(v.code, kExitOk);
  EXPECT_NE(v.out.find("loom " LOOM_VERSION "+"), std::string::npos) << v.out;
  // The commit, the build type and the libraries it was built with (issue 45, section 3).
  EXPECT_EQ(v.out, "loom " + LoomBuildVersion() + "\n");
  for (const char* part : {" (", "CUDA", "cuDNN", "NCCL", "MPI"}) {
    EXPECT_NE(v.out.find(part), std::string::npos) << part << " in " << v.out;
  }
  CommandResult h = Loom({"describe", "--help"});
  EXPECT_EQ(h.code, kExitOk);
  EXPECT_NE(h.out.find("Examples:"), std::string::npos) << h.out;
}

}  // namespace
}  // namespace loom
