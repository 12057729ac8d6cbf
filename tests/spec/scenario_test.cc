#include "spec/scenario.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Scenario, ReadsPathsBesideTheFileAndTheStrategy) {
  std::string path = WriteTemp("gpt3.json", R"({
    "schema": "loom.scenario/1", "model": "models/gpt3-175b.json",
    "cluster": "/abs/dgx-a100.json", "nodes": 128,
    "strategy": {"tp": 8, "pp": 16, "dp": 8, "vpp": 2, "sp": true, "micro_batch": 1,
                 "global_batch": 1536, "seq_len": 2048, "schedule": "interleaved",
                 "recompute": "selective", "zero_stage": 1, "dtype": "fp16"}})");
  Result<Scenario> s = LoadScenario(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model_path, ::testing::TempDir() + "models/gpt3-175b.json");
  EXPECT_EQ(s->cluster_path, "/abs/dgx-a100.json");
  EXPECT_EQ(s->nodes, 128);
  EXPECT_EQ(s->strategy.tp, 8);
  EXPECT_EQ(s->strategy.pp, 16);
  EXPECT_EQ(s->strategy.dp, 8);
  EXPECT_EQ(s->strategy.vpp, 2);
  EXPECT_TRUE(s->strategy.sp);
  EXPECT_EQ(s->strategy.global_batch, 1536);
  EXPECT_EQ(s->strategy.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(s->strategy.recompute, Recompute::kSelective);
  EXPECT_EQ(s->strategy.zero_stage, 1);
  EXPECT_EQ(s->strategy.dtype, Dtype::kFp16);
  EXPECT_EQ(s->strategy.cp, 1);  // absent keys keep the defaults
  EXPECT_EQ(s->strategy.grad_accumulation, GradAccumulation::kFused);
}

TEST(Scenario, GradAccumulationIsReadWrittenAndCheckedByName) {
  std::string path = WriteTemp("accumulate.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json",
    "strategy": {"grad_accumulation": "autograd", "dtype": "fp16"}})");
  Result<Scenario> s = LoadScenario(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->strategy.grad_accumulation, GradAccumulation::kAutograd);
  EXPECT_EQ(StrategyJson(s->strategy).at("grad_accumulation"), "autograd");
  path = WriteTemp("accumulate-bad.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json",
    "strategy": {"grad_accumulation": "fp32"}})");
  s = LoadScenario(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(
                path + ": strategy.grad_accumulation: is \"fp32\"; it must be one of "
                       "fused|add|autograd"),
            std::string::npos)
      << s.status().message();
}

TEST(Scenario, BadValuesNameTheFileAndTheKeyPath) {
  std::string path = WriteTemp("bad.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json",
    "strategy": {"tp": 0, "schedule": "1f1b-interleaved", "zero_stage": 4, "pipeline": 2}})");
  Result<Scenario> s = LoadScenario(path);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find(path + ": strategy.tp: is 0; it must be at least 1"), std::string::npos) << m;
  EXPECT_NE(m.find(path + ": strategy.schedule: is \"1f1b-interleaved\"; it must be one of "
                          "gpipe|1f1b|interleaved|zb-h1|zb-v|dualpipev"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(path + ": strategy.zero_stage: is 4; it must be between 0 and 3"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(path + ": strategy.pipeline: is not a known key"), std::string::npos) << m;
}

TEST(Scenario, MissingKeysAndWrongSchemaAreErrors) {
  std::string path = WriteTemp("empty.json", R"({"schema": "loom.scenario/2"})");
  Result<Scenario> s = LoadScenario(path);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("schema: is \"loom.scenario/2\"; this loom reads \"loom.scenario/1\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("model: is missing"), std::string::npos) << m;
  EXPECT_NE(m.find("cluster: is missing"), std::string::npos) << m;
  EXPECT_NE(m.find("strategy: is missing"), std::string::npos) << m;
}

TEST(Scenario, FrameworkIsANameOrAPathBesideTheFile) {
  const std::string named = WriteTemp("framework-named.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json",
    "strategy": {"micro_batch": 1}, "framework": "megatron-core-cudagraphs"})");
  Result<Scenario> a = LoadScenario(named);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->framework, "megatron-core-cudagraphs");
  const std::string file = WriteTemp("framework-file.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json",
    "strategy": {"micro_batch": 1}, "framework": "frameworks/mine.json"})");
  Result<Scenario> b = LoadScenario(file);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->framework, ::testing::TempDir() + "frameworks/mine.json");
  const std::string absent = WriteTemp("framework-absent.json", R"({
    "schema": "loom.scenario/1", "model": "m.json", "cluster": "c.json", "strategy": {}})");
  Result<Scenario> c = LoadScenario(absent);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->framework.has_value());
}

// A scenario's strategy errors name the scenario file and its keys, not the flags the user did not
// type.
TEST(InScenarioTerms, NamesTheFileAndTheKeys) {
  Status flags = Status::InvalidArgument(
      "--tp 3: num_attention_heads (32) is not divisible by it\n"
      "--offload optimizer with --zero 0: needs ZeRO-1 or more (pass --zero 1)\n"
      "--seq 0: must be at least 1; use --seq 1 or more");
  Status scenario = InScenarioTerms(flags, "s.json");
  EXPECT_EQ(
      scenario.message(),
      "s.json: strategy.tp 3: num_attention_heads (32) is not divisible by it\n"
      "s.json: strategy.offload optimizer with strategy.zero_stage 0: needs ZeRO-1 or more (pass "
      "strategy.zero_stage 1)\n"
      "s.json: strategy.seq_len 0: must be at least 1; use strategy.seq_len 1 or more");
  EXPECT_TRUE(InScenarioTerms(Status::Ok(), "s.json").ok());
}

}  // namespace
}  // namespace loom
