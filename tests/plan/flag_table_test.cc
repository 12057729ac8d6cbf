#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/deepspeed_config.h"
#include "plan/flag_tables.h"
#include "plan/megatron_args.h"
#include "plan/plan_test_support.h"
#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

// The emitters' flags and keys against the tables tools/flag_tables read from each target's own
// parser code (issue 21: "every flag is one the target's argument parser defines").
namespace loom {
namespace {

using Args = std::vector<std::string>;
using Json = nlohmann::ordered_json;

FlagTable Flags(const std::string& name) {
  Result<FlagTable> table = LoadFlagTable(FlagTablePath(name));
  EXPECT_TRUE(table.ok()) << table.status().message();
  return table.ok() ? table.value() : FlagTable{};
}

ConfigKeyTable Keys() {
  Result<ConfigKeyTable> table = LoadConfigKeyTable(FlagTablePath("deepspeed-config"));
  EXPECT_TRUE(table.ok()) << table.status().message();
  return table.ok() ? table.value() : ConfigKeyTable{};
}

std::string OneProblem(const std::vector<std::string>& problems) {
  EXPECT_EQ(problems.size(), 1u);
  return problems.empty() ? "" : problems.front();
}

TEST(FlagTable, TablesHoldTheTargetsFlags) {
  const FlagTable megatron = Flags("megatron-lm");
  EXPECT_GT(megatron.flags.size(), 800u);
  ASSERT_TRUE(megatron.flags.count("--tensor-model-parallel-size"));
  EXPECT_EQ(megatron.flags.at("--tensor-model-parallel-size").type, "int");
  EXPECT_EQ(megatron.flags.at("--sequence-parallel").kind, "store_true");
  EXPECT_EQ(megatron.flags.at("--recompute-granularity").choices, (Args{"full", "selective"}));
  // Flags by version (issue 21, defect 5): Megatron-FSDP from core_v0.14.0, layouts likewise.
  EXPECT_FALSE(Flags("megatron-lm-core_v0.12.0").flags.count("--use-megatron-fsdp"));
  EXPECT_TRUE(Flags("megatron-lm-core_v0.14.0").flags.count("--use-megatron-fsdp"));
  EXPECT_FALSE(Flags("megatron-lm-core_v0.12.0").flags.count("--pipeline-model-parallel-layout"));
  const FlagTable deepspeed = Flags("megatron-deepspeed");
  EXPECT_EQ(deepspeed.flags.at("--deepspeed").kind, "store_true");
  EXPECT_EQ(deepspeed.flags.at("--deepspeed_config").nargs, "1");
  const ConfigKeyTable keys = Keys();
  EXPECT_EQ(keys.keys.at("zero_optimization.offload_optimizer.device").choices,
            (Args{"none", "cpu", "nvme"}));
  EXPECT_EQ(keys.keys.at("zero_optimization.stage").choices, (Args{"0", "1", "2", "3"}));
  EXPECT_TRUE(keys.keys.count("pipeline.pipe_partitioned"));
  EXPECT_TRUE(keys.keys.count("data_types.grad_accum_dtype"));
}

TEST(FlagTable, AcceptsWhatTheParserTakes) {
  const FlagTable megatron = Flags("megatron-lm");
  EXPECT_EQ(
      CheckArguments(megatron, {"--tensor-model-parallel-size", "8", "--sequence-parallel",
                                "--recompute-granularity", "selective", "--cp-comm-type", "p2p",
                                "a2a", "--norm-epsilon", "1e-05", "--rotary-base", "500000"}),
      Args{});
}

TEST(FlagTable, RefusesAMadeUpFlag) {
  const std::string problem =
      OneProblem(CheckArguments(Flags("megatron-lm"), {"--tensor-parallel-size", "8"}));
  EXPECT_NE(problem.find("--tensor-parallel-size is not an option the parser defines"),
            std::string::npos);
  EXPECT_NE(problem.find("megatron-lm.tsv"), std::string::npos) << problem;
}

TEST(FlagTable, RefusesAValueAfterAStoreTrueFlag) {
  const std::string problem =
      OneProblem(CheckArguments(Flags("megatron-lm"), {"--sequence-parallel", "true"}));
  EXPECT_NE(problem.find("--sequence-parallel (store_true, nargs 0) given 1 value(s)"),
            std::string::npos)
      << problem;
}

TEST(FlagTable, RefusesAValueMissingAfterAValueFlag) {
  const std::string problem = OneProblem(
      CheckArguments(Flags("megatron-lm"), {"--micro-batch-size", "--sequence-parallel"}));
  EXPECT_NE(problem.find("--micro-batch-size (value, nargs 1) given 0 value(s)"), std::string::npos)
      << problem;
}

TEST(FlagTable, RefusesAWrongChoice) {
  const std::string problem =
      OneProblem(CheckArguments(Flags("megatron-lm"), {"--recompute-granularity", "partial"}));
  EXPECT_NE(problem.find("--recompute-granularity partial: not among the choices full, selective"),
            std::string::npos)
      << problem;
}

TEST(FlagTable, RefusesANonIntegerForAnIntFlag) {
  const FlagTable megatron = Flags("megatron-lm");
  EXPECT_NE(
      OneProblem(CheckArguments(megatron, {"--rotary-base", "1e+06"})).find("1e+06: not an int"),
      std::string::npos);
  EXPECT_NE(
      OneProblem(CheckArguments(megatron, {"--norm-epsilon", "small"})).find("small: not a float"),
      std::string::npos);
}

TEST(FlagTable, RefusesAStrayValue) {
  const std::string problem =
      OneProblem(CheckArguments(Flags("megatron-deepspeed"), {"8", "--deepspeed"}));
  EXPECT_NE(problem.find("'8' where a flag was expected"), std::string::npos) << problem;
}

TEST(FlagTable, RefusesAFlagOfTheOtherTarget) {
  // Megatron-DeepSpeed spells its config flag with an underscore and has no
  // --use-distributed-optimizer.
  const FlagTable deepspeed = Flags("megatron-deepspeed");
  EXPECT_EQ(CheckArguments(deepspeed, {"--deepspeed-config", "ds.json"}).size(), 1u);
  EXPECT_EQ(CheckArguments(Flags("megatron-lm"), {"--deepspeed_config", "ds.json"}).size(), 1u);
}

TEST(FlagTable, RefusesAnUnknownConfigKey) {
  const ConfigKeyTable keys = Keys();
  Json config = {{"train_batch_size", 64},
                 {"zero_optimization", {{"stage", 1}, {"overlap_grads", true}}}};
  const std::string problem = OneProblem(CheckConfig(keys, config));
  EXPECT_NE(problem.find("zero_optimization.overlap_grads is not a key"), std::string::npos)
      << problem;
  EXPECT_NE(problem.find("deepspeed-config.tsv"), std::string::npos) << problem;
}

TEST(FlagTable, RefusesAConfigValueOfTheWrongTypeOrChoice) {
  const ConfigKeyTable keys = Keys();
  EXPECT_NE(OneProblem(CheckConfig(keys, {{"zero_optimization", {{"stage", 4}}}}))
                .find("not among 0, 1, 2, 3"),
            std::string::npos);
  EXPECT_NE(OneProblem(CheckConfig(keys, {{"bf16", {{"enabled", "yes"}}}})).find("expected bool"),
            std::string::npos);
  EXPECT_NE(OneProblem(CheckConfig(keys, {{"communication_data_type", "fp8"}})).find("not among"),
            std::string::npos);
  EXPECT_EQ(
      CheckConfig(keys, {{"zero_optimization", {{"offload_optimizer", {{"device", "cpu"}}}}},
                         {"pipeline", {{"pipe_partitioned", false}, {"grad_partitioned", false}}},
                         {"data_types", {{"grad_accum_dtype", "fp32"}}}}),
      Args{});
}

// The sweep: strategies of the planner's space for every shipped model, on every shipped cluster,
// a few shapes and precisions; each one the emitters accept must pass the HEAD tables.
struct Sweep {
  int64_t megatron_checked = 0;
  int64_t deepspeed_checked = 0;
  std::map<std::string, std::string> problems;  // problem -> one model and strategy that shows it
};

// At most |cap| strategies of |all|, spread evenly over it.
std::vector<Strategy> Spread(const std::vector<Strategy>& all, size_t cap) {
  if (all.size() <= cap) return all;
  std::vector<Strategy> picked;
  for (size_t i = 0; i < cap; ++i) picked.push_back(all[i * all.size() / cap]);
  return picked;
}

void Record(const std::vector<std::string>& problems, const ModelSpec& model, const Strategy& s,
            Sweep& sweep) {
  for (const std::string& problem : problems) {
    sweep.problems.emplace(problem, model.file + " " + ConstraintText(s));
  }
}

// Up to |cap| strategies of the space for |request| that each emitter accepts, spread over the
// space. The DeepSpeed plans take the gradient accumulation DeepSpeed runs, as the planner's
// deepspeed_accumulation does.
void SweepOne(const ModelSpec& model, const ClusterSpec& cluster, const SearchRequest& request,
              const FlagTable& megatron, const FlagTable& deepspeed, const ConfigKeyTable& keys,
              Sweep& sweep) {
  constexpr size_t kCap = 40;
  Result<std::vector<Strategy>> space = EnumerateStrategies(model, cluster, request);
  ASSERT_TRUE(space.ok()) << space.status().message();
  size_t megatron_taken = 0;
  size_t deepspeed_taken = 0;
  for (Strategy s : Spread(space.value(), 20 * kCap)) {
    if (megatron_taken == kCap && deepspeed_taken == kCap) break;
    if (!ValidateStrategy(s, model, cluster).ok()) continue;
    if (megatron_taken < kCap) {
      Result<Args> args = MegatronArguments(model, s);
      if (args.ok()) {
        ++megatron_taken;
        ++sweep.megatron_checked;
        Record(CheckArguments(megatron, args.value()), model, s, sweep);
      }
    }
    s.grad_accumulation = DeepSpeedGradAccumulation(s);
    if (deepspeed_taken == kCap || !ValidateStrategy(s, model, cluster).ok()) continue;
    Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s);
    if (!plan.ok()) continue;
    ++deepspeed_taken;
    ++sweep.deepspeed_checked;
    Record(CheckArguments(deepspeed, plan.value().launcher_args), model, s, sweep);
    Record(CheckConfig(keys, plan.value().config), model, s, sweep);
  }
}

TEST(FlagTable, EveryEmittedConfigurationPassesTheTables) {
  const FlagTable megatron = Flags("megatron-lm");
  const FlagTable deepspeed = Flags("megatron-deepspeed");
  const ConfigKeyTable keys = Keys();
  Sweep sweep;
  for (const std::string& model_file : ShippedFiles("models")) {
    Result<ModelSpec> model = LoadModelSpec(model_file);
    ASSERT_TRUE(model.ok()) << model.status().message();
    for (const std::string& cluster_file : ShippedFiles("hardware/clusters")) {
      for (const int64_t nodes : {1, 4}) {
        Result<ClusterSpec> cluster = LoadClusterSpec(cluster_file, nodes);
        ASSERT_TRUE(cluster.ok()) << cluster.status().message();
        for (const Dtype dtype : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
          SearchRequest request = Request(nodes * cluster.value().gpus_per_node, 512, 4096);
          request.dtype = dtype;
          request.optimizer = dtype == Dtype::kFp16 ? Optimizer::kSgd : Optimizer::kAdam;
          SweepOne(model.value(), cluster.value(), request, megatron, deepspeed, keys, sweep);
        }
      }
    }
  }
  std::cout << "checked " << sweep.megatron_checked << " Megatron-LM argument lists and "
            << sweep.deepspeed_checked << " DeepSpeed plans (launcher arguments and ds_config)\n";
  EXPECT_GT(sweep.megatron_checked, 1000);
  EXPECT_GT(sweep.deepspeed_checked, 500);
  for (const auto& [problem, example] : sweep.problems)
    ADD_FAILURE() << problem << "\n  e.g. " << example;
}

}  // namespace
}  // namespace loom
