#include "plan/deepspeed_config_in.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/deepspeed_config.h"
#include "plan/plan_test_support.h"
#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {
namespace {

using Words = std::vector<std::string>;
const MegatronDeepSpeedFiles kMdsFiles{"run.sh", "ds_config.json"};

// A Megatron-DeepSpeed launch of Llama 3 8B on two nodes as a user writes it: torchrun, the model's
// shape, the run's data and learning rate, and the switches that hand it to DeepSpeed.
Words Llama8bLaunch() {
  return {"torchrun",
          "--nproc_per_node",
          "8",
          "--nnodes",
          "2",
          "pretrain_gpt.py",
          "--tensor-model-parallel-size",
          "2",
          "--pipeline-model-parallel-size",
          "2",
          "--num-layers",
          "32",
          "--hidden-size",
          "4096",
          "--ffn-hidden-size",
          "14336",
          "--num-attention-heads",
          "32",
          "--num-key-value-heads",
          "8",
          "--seq-length",
          "4096",
          "--micro-batch-size",
          "2",
          "--global-batch-size",
          "64",
          "--use-flash-attn-v2",
          "--attention-dropout",
          "0",
          "--hidden-dropout",
          "0",
          "--swiglu",
          "--normalization",
          "rmsnorm",
          "--bf16",
          "--optimizer",
          "adam",
          "--lr",
          "3e-4",
          "--data-path",
          "1",
          "corpus",
          "--zero-stage",
          "1",
          "--checkpoint-activations",
          "--deepspeed-activation-checkpointing",
          "--deepspeed",
          "--deepspeed_config",
          "ds_config.json"};
}

nlohmann::json Llama8bConfig() {
  return nlohmann::json::parse(R"({
    "train_batch_size": 64,
    "train_micro_batch_size_per_gpu": 2,
    "steps_per_print": 10,
    "gradient_clipping": 1.0,
    "zero_optimization": {"stage": 1, "reduce_bucket_size": 500000000},
    "bf16": {"enabled": true},
    "data_types": {"grad_accum_dtype": "fp32"},
    "wall_clock_breakdown": false
  })");
}

Result<MegatronLaunch> ReadMds(const Words& words, const nlohmann::json& config,
                               const std::string& model = "llama3-8b", int64_t world = 1024) {
  return ReadMegatronDeepSpeedLaunch(words, config, ShippedModel(model), world, kMdsFiles);
}

std::string MdsError(const Words& words, const nlohmann::json& config) {
  Result<MegatronLaunch> launch = ReadMds(words, config);
  return launch.ok() ? std::string("ok") : launch.status().message();
}

Words WithArgs(Words words, const Words& extra) {
  words.insert(words.end(), extra.begin(), extra.end());
  return words;
}

Words WithoutArg(Words words, const std::string& flag, int values) {
  const auto it = std::find(words.begin(), words.end(), flag);
  if (it != words.end()) words.erase(it, it + 1 + values);
  return words;
}

TEST(DeepSpeedConfigIn, AUsersLaunchReadsToItsStrategyAndListsWhatLoomDoesNotModel) {
  Result<MegatronLaunch> launch = ReadMds(Llama8bLaunch(), Llama8bConfig());
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  const Strategy& s = launch->strategy;
  EXPECT_EQ(launch->launcher_world_size, 16);
  EXPECT_EQ(s.tp, 2);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.dp, 4);  // torchrun's 16 GPUs
  EXPECT_EQ(s.micro_batch, 2);
  EXPECT_EQ(s.global_batch, 64);
  EXPECT_EQ(s.NumMicroBatches(), 8);
  EXPECT_EQ(s.schedule, ScheduleKind::k1F1B);
  EXPECT_EQ(s.dtype, Dtype::kBf16);
  EXPECT_EQ(s.zero_stage, 1);
  EXPECT_FALSE(s.overlap_grad_reduce);  // overlap_comm is off below ZeRO-3 by default
  EXPECT_FALSE(s.grad_reduce_in_bf16);  // BF16_Optimizer's fp32 buffer at ZeRO-1
  EXPECT_EQ(s.grad_accumulation, GradAccumulation::kAdd);
  EXPECT_EQ(s.recompute, Recompute::kFull);
  EXPECT_EQ(s.recompute_layers, 0);
  EXPECT_EQ(launch->options.attention, AttentionKernel::kFused);
  EXPECT_EQ(launch->options.fused_family, AttentionFamily::kFlashAttention2);
  EXPECT_FALSE(launch->options.dropout);
  EXPECT_EQ(launch->not_modelled,
            (Words{"--swiglu", "--normalization rmsnorm", "--lr 3e-4", "--data-path 1 corpus",
                   "ds_config.json: gradient_clipping 1.0", "ds_config.json: steps_per_print 10",
                   "ds_config.json: wall_clock_breakdown false",
                   "ds_config.json: zero_optimization.reduce_bucket_size 500000000"}));
}

TEST(DeepSpeedConfigIn, TheBatchIsAnyTwoOfTheThreeKeysAsDeepSpeedDerivesIt) {
  nlohmann::json config = Llama8bConfig();
  config.erase("train_micro_batch_size_per_gpu");
  config["gradient_accumulation_steps"] = 8;
  Result<MegatronLaunch> launch = ReadMds(Llama8bLaunch(), config);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  EXPECT_EQ(launch->strategy.micro_batch, 2);  // 64 / dp 4 / 8
  config["gradient_accumulation_steps"] = 4;
  const std::string m = MdsError(Llama8bLaunch(), config);
  EXPECT_NE(m.find("--micro-batch-size differs from the DeepSpeed config's 4"), std::string::npos)
      << m;
  config = Llama8bConfig();
  config["train_batch_size"] = 60;
  EXPECT_NE(MdsError(Llama8bLaunch(), config).find("ds_config.json: train_batch_size: 60 is not "),
            std::string::npos)
      << MdsError(Llama8bLaunch(), config);
  config["train_batch_size"] = "auto";
  EXPECT_NE(MdsError(Llama8bLaunch(), config).find("train_batch_size"), std::string::npos);
}

TEST(DeepSpeedConfigIn, WhatTheTwoFilesDisagreeOnOrLoomCannotSimulateIsNamed) {
  const Words launch = Llama8bLaunch();
  const nlohmann::json config = Llama8bConfig();
  EXPECT_NE(MdsError(WithoutArg(launch, "--bf16", 0), config)
                .find("run.sh: the arguments say neither --bf16 nor --fp16 and the DeepSpeed "
                      "config bf16.enabled"),
            std::string::npos);
  EXPECT_NE(MdsError(WithoutArg(launch, "--deepspeed", 0), config).find("lack --deepspeed"),
            std::string::npos);
  EXPECT_NE(MdsError(WithArgs(launch, {"--ds-sequence-parallel-size", "2"}), config)
                .find("DeepSpeed-Ulysses"),
            std::string::npos);
  EXPECT_NE(MdsError(WithArgs(launch, {"--num-layers", "40"}), config)
                .find("--num-layers 40 builds another model than"),
            std::string::npos);
  nlohmann::json zero3 = config;
  zero3["zero_optimization"] = {{"stage", 3}};
  // ZeRO-3 on two pipeline stages: DeepSpeed's pipeline engine refuses it, and loom's emitter too.
  EXPECT_NE(MdsError(launch, zero3).find("loom cannot simulate this launch as Megatron-DeepSpeed"),
            std::string::npos)
      << MdsError(launch, zero3);
  nlohmann::json nvme = config;
  nvme["zero_optimization"]["offload_optimizer"] = {{"device", "nvme"}};
  const std::string m = MdsError(WithArgs(launch, {"--cpu-optimizer"}), nvme);
  EXPECT_NE(m.find("ds_config.json: zero_optimization.offload_optimizer.device"), std::string::npos)
      << m;
  nlohmann::json typo = config;
  typo["zero_optimisation"] = {{"stage", 2}};
  EXPECT_NE(MdsError(launch, typo).find("zero_optimisation"), std::string::npos);
  nlohmann::json bf16_sum = config;
  bf16_sum["zero_optimization"]["stage"] = 0;
  bf16_sum["data_types"]["grad_accum_dtype"] = "bf16";
  Words one_stage =
      WithArgs(WithoutArg(launch, "--pipeline-model-parallel-size", 1), {"--no-pipeline-parallel"});
  EXPECT_NE(MdsError(one_stage, bf16_sum).find("raises NotImplementedError"), std::string::npos)
      << MdsError(one_stage, bf16_sum);
}

// The round trip: every DeepSpeed plan DeepSpeedConfig writes for the strategies of the planner's
// space (dense and expert models, one and four DGX H100 nodes, bf16, fp16 and fp8, fused and
// unfused attention) reads back, from its launcher arguments and config, to a strategy that writes
// the same arguments and config on the same GPUs.
TEST(DeepSpeedConfigIn, EveryEmittedPlanReadsBackToItsStrategy) {
  int64_t checked = 0, fp8 = 0;
  for (const std::string name : {"llama3-8b", "gpt3-1.3b", "mixtral-8x7b", "qwen2.5-7b"}) {
    const ModelSpec model = ShippedModel(name);
    for (const int64_t nodes : {1, 4}) {
      Result<ClusterSpec> cluster =
          LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"), nodes);
      ASSERT_TRUE(cluster.ok());
      for (const Dtype dtype : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
        SearchRequest request = Request(nodes * 8, 256, 2048);
        request.dtype = dtype;
        request.optimizer = dtype == Dtype::kFp16 ? Optimizer::kSgd : Optimizer::kAdam;
        request.deepspeed_stage_split = true;
        Result<std::vector<Strategy>> space = EnumerateStrategies(model, *cluster, request);
        ASSERT_TRUE(space.ok()) << space.status().message();
        // Most of the space is what DeepSpeed cannot run (virtual stages, cp, ZeRO-2/3 with a
        // pipeline): walk it finely and read back up to 40 plans of each kind.
        const size_t step = std::max<size_t>(1, space->size() / 3000);
        int64_t here = 0;
        for (size_t i = 0; i < space->size() && here < 40; i += step) {
          Strategy s = (*space)[i];
          s.grad_accumulation = DeepSpeedGradAccumulation(s);
          s.grad_reduce_in_bf16 = DeepSpeedBudgetsBf16Gradients(s);
          if (!ValidateStrategy(s, model, *cluster).ok()) continue;
          DeepSpeedOptions options;
          if (i % 2 == 1) options.attention = AttentionKernel::kUnfused;
          Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s, options);
          if (!plan.ok()) continue;
          const nlohmann::json config = nlohmann::json::parse(plan->config.dump());
          Result<MegatronLaunch> back = ReadMegatronDeepSpeedLaunch(
              plan->launcher_args, config, model, s.WorldSize(), kMdsFiles);
          ASSERT_TRUE(back.ok()) << name << " " << ConstraintText(s) << "\n"
                                 << back.status().message();
          EXPECT_TRUE(back->not_modelled.empty()) << back->not_modelled.front();
          EXPECT_EQ(back->strategy.WorldSize(), s.WorldSize());
          DeepSpeedOptions again_options;
          again_options.attention = back->options.attention;
          Result<DeepSpeedPlan> again = DeepSpeedConfig(model, back->strategy, again_options);
          ASSERT_TRUE(again.ok()) << again.status().message();
          EXPECT_EQ(again->launcher_args, plan->launcher_args) << name << " " << ConstraintText(s);
          EXPECT_EQ(again->config, plan->config) << name << " " << ConstraintText(s);
          ++checked, ++here;
          fp8 += s.dtype == Dtype::kFp8;
        }
      }
    }
  }
  std::cout << "read back " << checked << " emitted DeepSpeed plans\n";
  EXPECT_GT(checked, 300);
  EXPECT_GT(fp8, 0) << "no fp8 plan (Transformer Engine's layers at pp 1) was read back";
}

}  // namespace
}  // namespace loom
