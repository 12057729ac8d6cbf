#include "plan/deepspeed_config.h"
#include "plan/deepspeed_partition.h"
#include "plan/plan_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/flag_tables.h"
#include "spec/model.h"
#include "spec/strategy.h"

// The rules of issue 21 that keep DeepSpeed launches starting and running what loom simulated,
// each with the file of DeepSpeed (deepspeedai/DeepSpeed edaa72212) or Megatron-DeepSpeed
// (microsoft/Megatron-DeepSpeed f4157bea) it follows.
namespace loom {
namespace {

using Args = std::vector<std::string>;

bool Has(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

std::optional<std::string> ValueAfter(const Args& args, const std::string& flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end() || it + 1 == args.end()) return std::nullopt;
  return *(it + 1);
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

// |s| with the gradient accumulation DeepSpeed runs at its ZeRO stage.
Strategy AsDeepSpeed(Strategy s) {
  s.grad_accumulation = DeepSpeedGradAccumulation(s);
  return s;
}

DeepSpeedOptions Unfused() {
  DeepSpeedOptions options;
  options.attention = AttentionKernel::kUnfused;
  return options;
}

DeepSpeedPlan Ok(const ModelSpec& model, const Strategy& s, const DeepSpeedOptions& options = {}) {
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s, options);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return DeepSpeedPlan{};
  // Only what Megatron-DeepSpeed's parser and DeepSpeed's config code define (issue 21).
  const std::vector<std::string> problems = DeepSpeedProblems(plan->launcher_args, plan->config);
  EXPECT_TRUE(problems.empty()) << problems.front();
  return *plan;
}

std::string Error(const ModelSpec& model, const Strategy& s, const DeepSpeedOptions& options = {}) {
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s, options);
  EXPECT_FALSE(plan.ok());
  if (plan.ok()) return "";
  EXPECT_EQ(plan.status().code(), Status::Code::kInvalidArgument);
  return plan.status().message();
}

// Mixtral 8x7B over 64 GPUs with 8 experts parallel, as loom plan's top DeepSpeed plan had it.
Strategy MixtralStrategy(int64_t zero_stage) {
  Strategy s;
  s.dp = 64;
  s.ep = 8;
  s.global_batch = 512;
  s.seq_len = 4096;
  s.zero_stage = zero_stage;
  return AsDeepSpeed(s);
}

TEST(DeepSpeedConfig, Zero3WithExpertsIsRefusedAsDeepSpeedRefusesNativeMoe) {
  const ModelSpec mixtral = ShippedModel("mixtral-8x7b");
  const std::string message = Error(mixtral, MixtralStrategy(3));
  EXPECT_NE(message.find("--zero 3 with the experts of"), std::string::npos) << message;
  EXPECT_NE(message.find("Native DeepSpeed MoE is not supported with ZeRO Stage 3"),
            std::string::npos)
      << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 0) << message;
  // ZeRO-1 of the same plan starts, and ZeRO-3 of a dense model is no MoE.
  EXPECT_EQ(Ok(mixtral, MixtralStrategy(1)).config["zero_optimization"]["stage"], 1);
  Strategy dense = MixtralStrategy(3);
  dense.ep = 1;
  EXPECT_EQ(Ok(ShippedModel("llama3-8b"), dense).config["zero_optimization"]["stage"], 3);
}

TEST(DeepSpeedConfig, SequenceParallelSetsOneDeviceConnectionInEnvAndNotes) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.tp = 2;
  s.dp = 4;
  s.global_batch = 8;
  s.sp = true;
  const DeepSpeedPlan plan = Ok(model, AsDeepSpeed(s));
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  EXPECT_EQ(plan.env, expected);
  EXPECT_TRUE(Has(plan.launcher_args, "--sequence-parallel"));
  EXPECT_TRUE(AnyContains(plan.notes, "CUDA_DEVICE_MAX_CONNECTIONS=1"))
      << ::testing::PrintToString(plan.notes);
  s.sp = false;
  const DeepSpeedPlan without = Ok(model, AsDeepSpeed(s));
  EXPECT_TRUE(without.env.empty());
  EXPECT_FALSE(AnyContains(without.notes, "CUDA_DEVICE_MAX_CONNECTIONS"));
}

TEST(DeepSpeedConfig, ExpertsOverPipelineAndTensorParallelTurnPipePartitioningOff) {
  const ModelSpec mixtral = ShippedModel("mixtral-8x7b");
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 8;
  s.ep = 4;
  s.global_batch = 64;
  s.zero_stage = 1;
  s = AsDeepSpeed(s);
  const nlohmann::ordered_json expected = {{"pipe_partitioned", false},
                                           {"grad_partitioned", false}};
  nlohmann::ordered_json config = Ok(mixtral, s).config;
  ASSERT_TRUE(config.contains("pipeline")) << config.dump();
  EXPECT_EQ(config["pipeline"], expected);
  EXPECT_EQ(config.begin().key(), "train_batch_size");
  EXPECT_EQ((--config.end()).key(), "pipeline");
  // DeepSpeed partitions only over a model-parallel group (tp > 1) and only a pipeline passes
  // tensors.
  Strategy no_tp = s;
  no_tp.tp = 1;
  no_tp.dp = 16;
  EXPECT_FALSE(Ok(mixtral, no_tp).config.contains("pipeline"));
  Strategy no_pp = s;
  no_pp.pp = 1;
  no_pp.dp = 32;
  EXPECT_FALSE(Ok(mixtral, AsDeepSpeed(no_pp)).config.contains("pipeline"));
  EXPECT_FALSE(Ok(ShippedModel("llama3-8b"), s)
                   .config.contains("pipeline"));  // dense: one tensor needs a gradient
}

TEST(DeepSpeedConfig, FusedAttentionIsFlashAttention2AndUnfusedIsMegatronDeepSpeedsDefault) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s = AsDeepSpeed(s);
  const DeepSpeedPlan fused = Ok(model, s);
  EXPECT_TRUE(Has(fused.launcher_args, "--use-flash-attn-v2"));
  EXPECT_TRUE(AnyContains(fused.notes, "flash-attn")) << ::testing::PrintToString(fused.notes);
  const DeepSpeedPlan unfused = Ok(model, s, Unfused());
  for (const std::string& arg : unfused.launcher_args)
    EXPECT_EQ(arg.find("flash"), std::string::npos) << arg;
  // FlashSelfAttention asserts fp16 or bf16 inputs.
  s.dtype = Dtype::kFp32;
  s = AsDeepSpeed(s);
  const std::string message = Error(model, s);
  EXPECT_NE(message.find("--dtype fp32 with --attention fused"), std::string::npos) << message;
  EXPECT_FALSE(Has(Ok(model, s, Unfused()).launcher_args, "--use-flash-attn-v2"));
}

TEST(DeepSpeedConfig, Tf32AndFp32PlansSayPyTorchDecidesTf32) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.dtype = Dtype::kTf32;
  s = AsDeepSpeed(s);
  const DeepSpeedPlan tf32 = Ok(model, s, Unfused());
  EXPECT_TRUE(AnyContains(tf32.notes, "torch.backends.cuda.matmul.allow_tf32 = True"))
      << ::testing::PrintToString(tf32.notes);
  EXPECT_EQ(tf32.config["data_types"]["grad_accum_dtype"], "fp32");
  s.dtype = Dtype::kFp32;
  EXPECT_TRUE(
      AnyContains(Ok(model, s, Unfused()).notes, "keep torch.backends.cuda.matmul.allow_tf32 off"));
  s.dtype = Dtype::kBf16;
  EXPECT_FALSE(AnyContains(Ok(model, AsDeepSpeed(s)).notes, "allow_tf32"));
}

TEST(DeepSpeedConfig, Bf16GradientsAreFp32OnlyWhereDeepSpeedSumsInFp32) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 16;
  const auto keeps_bf16 = [&](int64_t zero, Offload offload) {
    Strategy t = s;
    t.zero_stage = zero;
    t.offload = offload;
    return DeepSpeedKeepsBf16Gradients(t);
  };
  // BF16_Optimizer at ZeRO-1 without offload; stage3.py's fp32 partitions at ZeRO-3.
  EXPECT_FALSE(keeps_bf16(1, Offload::kNone));
  EXPECT_FALSE(keeps_bf16(3, Offload::kNone));
  EXPECT_FALSE(keeps_bf16(3, Offload::kOptimizerAndParams));
  EXPECT_FALSE(keeps_bf16(0, Offload::kNone));  // BF16_Optimizer's buffer, fp32 by default
  EXPECT_TRUE(keeps_bf16(1, Offload::kOptimizer));
  EXPECT_TRUE(keeps_bf16(2, Offload::kNone));
  Strategy fp16 = s;
  fp16.dtype = Dtype::kFp16;
  EXPECT_FALSE(DeepSpeedKeepsBf16Gradients(fp16));

  const auto accum_dtype = [&](const Strategy& t) {
    Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, t);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (plan.ok()) {
      EXPECT_TRUE(DeepSpeedProblems(plan->launcher_args, plan->config).empty());
    }
    return plan.ok() ? plan->config["data_types"]["grad_accum_dtype"].get<std::string>()
                     : std::string();
  };
  Strategy t = s;
  t.zero_stage = 2;
  t = AsDeepSpeed(t);
  std::string message = Error(model, t);
  EXPECT_NE(message.find("--zero 2 with fp32 gradient accumulation"), std::string::npos) << message;
  EXPECT_NE(message.find("add --grad-reduce-in-bf16"), std::string::npos) << message;
  t.grad_reduce_in_bf16 = true;
  EXPECT_EQ(accum_dtype(t), "bf16");
  EXPECT_EQ(Ok(model, t).config["communication_data_type"], "bf16");

  t = s;
  t.zero_stage = 1;
  t.offload = Offload::kOptimizer;
  message = Error(model, AsDeepSpeed(t));
  EXPECT_NE(message.find("--zero 1 --offload optimizer with fp32 gradient accumulation"),
            std::string::npos)
      << message;
  t.offload = Offload::kNone;
  EXPECT_EQ(accum_dtype(AsDeepSpeed(t)), "fp32");
  t.zero_stage = 3;
  EXPECT_EQ(accum_dtype(AsDeepSpeed(t)), "fp32");

  // Without ZeRO: BF16_Optimizer adds each micro-batch into a buffer of grad_accum_dtype, fp32
  // with or without the pipeline engine, bf16 only under it (DeepSpeed raises elsewhere).
  t = s;
  EXPECT_EQ(DeepSpeedGradAccumulation(t), GradAccumulation::kAdd);
  t = AsDeepSpeed(t);
  EXPECT_EQ(accum_dtype(t), "fp32");
  t.grad_reduce_in_bf16 = true;
  message = Error(model, t);
  EXPECT_NE(message.find("--grad-reduce-in-bf16 with --zero 0 --pp 1"), std::string::npos)
      << message;
  t.pp = 2;
  t.dp = 4;
  EXPECT_EQ(accum_dtype(t), "bf16");
  t.grad_reduce_in_bf16 = false;
  EXPECT_EQ(accum_dtype(t), "fp32");
  t.dtype = Dtype::kFp16;
  EXPECT_EQ(DeepSpeedGradAccumulation(t), GradAccumulation::kAutograd);  // FP16_Optimizer on .grad
}

TEST(DeepSpeedConfig, SelectiveRecomputeIsMegatronDeepSpeedsWithUnfusedAttentionOnly) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.pp = 2;
  s.dp = 4;
  s.global_batch = 8;
  s.zero_stage = 1;
  s.recompute = Recompute::kSelective;
  s = AsDeepSpeed(s);
  const DeepSpeedPlan plan = Ok(model, s, Unfused());
  EXPECT_EQ(ValueAfter(plan.launcher_args, "--recompute-granularity"), "selective");
  EXPECT_FALSE(Has(plan.launcher_args, "--recompute-method"));  // validate_args asserts none
  EXPECT_FALSE(Has(plan.launcher_args, "--checkpoint-activations"));
  EXPECT_FALSE(plan.config.contains("activation_checkpointing"));
  const std::string message = Error(model, s);
  EXPECT_NE(message.find("--recompute selective with --attention fused"), std::string::npos)
      << message;
}

TEST(DeepSpeedConfig, BlockRecomputeRunsWithoutThePipelineEngineOnly) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.zero_stage = 1;
  s.recompute = Recompute::kFull;
  s.recompute_layers = 2;
  s = AsDeepSpeed(s);
  const DeepSpeedPlan plan = Ok(model, s);
  const Args& args = plan.launcher_args;
  const auto at = std::find(args.begin(), args.end(), "--recompute-granularity");
  ASSERT_NE(at, args.end());
  const Args block(at, std::min(at + 6, args.end()));
  const Args expected = {"--recompute-granularity", "full", "--recompute-method", "block",
                         "--recompute-num-layers",  "2"};
  EXPECT_EQ(block, expected);
  EXPECT_TRUE(Has(args, "--no-pipeline-parallel"));
  // --checkpoint-activations would take precedence over the block method.
  EXPECT_FALSE(Has(args, "--checkpoint-activations"));
  EXPECT_FALSE(Has(args, "--deepspeed-activation-checkpointing"));
  EXPECT_FALSE(plan.config.contains("activation_checkpointing"));
  // Every layer stays DeepSpeed's checkpointing.
  s.recompute_layers = 0;
  EXPECT_EQ(ValueAfter(Ok(model, s).launcher_args, "--checkpoint-num-layers"), "1");

  s.recompute_layers = 2;
  s.pp = 2;
  s.dp = 4;
  const std::string message = Error(model, AsDeepSpeed(s));
  EXPECT_NE(message.find("--recompute-layers 2 with --pp 2"), std::string::npos) << message;
}

// Megatron-DeepSpeed's pipeline splits the layers as DeepSpeed's partition_balanced cuts
// GPTModelPipe's specs (issue 45, section 4): 80 layers over 6 stages as 14,14,13,13,13,13; a plan
// with that layout is emitted, one with another split is refused naming the one to use.
TEST(DeepSpeedConfig, UnevenStagesAreDeepSpeedsPartitionBalanced) {
  const ModelSpec model = ShippedModel("llama3-70b");
  EXPECT_EQ(MegatronDeepSpeedStageLayers(model, 6), (std::vector<int64_t>{14, 14, 13, 13, 13, 13}));
  EXPECT_EQ(MegatronDeepSpeedStageLayers(model, 8), std::vector<int64_t>(8, 10));
  // Where pp divides the layers the dynamic program itself cuts them evenly (the even split is
  // taken without it): GPTModelPipe's specs, 2 before the layers and 3 after.
  for (const int64_t pp : {2, 4, 5, 8, 16, 20}) {
    std::vector<int64_t> weights = {0, 0};
    weights.insert(weights.end(), 80, 1);
    weights.insert(weights.end(), {0, 0, 0});
    const std::vector<int64_t> cuts = PartitionBalanced(weights, pp);
    for (int64_t p = 0; p < pp; ++p) {
      int64_t layers = 0;
      for (int64_t i = cuts[p]; i < cuts[p + 1]; ++i) layers += weights[i];
      EXPECT_EQ(layers, 80 / pp) << "pp " << pp << " stage " << p;
    }
  }
  EXPECT_EQ(MegatronDeepSpeedStageLayers(ShippedModel("llama3-405b"), 16),
            (std::vector<int64_t>{8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7, 7}));
  // Weights as partition_balanced's own cases: the cost of equal splits ties, and the last cut
  // of equal cost wins.
  EXPECT_EQ(PartitionBalanced({1, 1, 1, 1, 1}, 2), (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(PartitionBalanced({1, 1}, 3), (std::vector<int64_t>{0, 1, 2, 2}));
  Strategy s;
  s.tp = 8;
  s.pp = 6;
  s.dp = 1;
  s.global_batch = 12;
  s.zero_stage = 1;
  s.first_stage_layers = 15;
  s.last_stage_layers = 13;
  s = AsDeepSpeed(s);
  const std::string message = Error(model, s);
  EXPECT_NE(message.find("layers per stage 15,13,13,13,13,13"), std::string::npos) << message;
  EXPECT_NE(message.find("as 14,14,13,13,13,13"), std::string::npos) << message;
  s.first_stage_layers = s.last_stage_layers = 0;
  s.layout = MegatronDeepSpeedStageLayers(model, 6);
  const DeepSpeedPlan plan = Ok(model, s);
  EXPECT_EQ(ValueAfter(plan.launcher_args, "--pipeline-model-parallel-size"), "6");
}

// fp8 through Megatron-DeepSpeed is Transformer Engine's TransformerLayer (issue 45, section 4):
// at pp 1, for a dense multi-head LayerNorm and GeLU model; the config says bf16.
TEST(DeepSpeedConfig, Fp8IsTransformerEnginesLayerWithoutThePipelineEngine) {
  const ModelSpec gpt = ShippedModel("gpt3-1.3b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 16;
  s.dtype = Dtype::kFp8;
  s.zero_stage = 1;
  s = AsDeepSpeed(s);
  const DeepSpeedPlan plan = Ok(gpt, s);
  EXPECT_EQ(ValueAfter(plan.launcher_args, "--transformer-impl"), "transformer_engine");
  EXPECT_TRUE(Has(plan.launcher_args, "--fp8-hybrid"));
  EXPECT_TRUE(Has(plan.launcher_args, "--bf16"));
  EXPECT_FALSE(Has(plan.launcher_args, "--use-flash-attn-v2"));
  EXPECT_EQ(plan.config["bf16"]["enabled"], true);
  std::string message = Error(ShippedModel("llama3-8b"), s);
  EXPECT_NE(message.find("grouped-query attention"), std::string::npos) << message;
  EXPECT_NE(message.find("a LayerNorm and a GeLU MLP"), std::string::npos) << message;
  s.pp = 2;
  s.dp = 4;
  message = Error(gpt, AsDeepSpeed(s));
  EXPECT_NE(message.find("--dtype fp8 with --pp 2"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
