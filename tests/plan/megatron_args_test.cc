#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/flag_tables.h"
#include "plan/megatron_args.h"
#include "plan/plan_test_support.h"
#include "spec/model.h"
#include "spec/strategy.h"

// The Megatron-LM emitter's rules from issue 21: what each release parses, what the launch runs,
// and the model settings it carries.
namespace loom {
namespace {

using Args = std::vector<std::string>;

std::optional<std::string> After(const Args& args, const std::string& flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end() || it + 1 == args.end()) return std::nullopt;
  return *(it + 1);
}

bool HasArg(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

Args ArgsOf(const ModelSpec& model, const Strategy& s, const MegatronOptions& o = {}) {
  Result<Args> args = MegatronArguments(model, s, o);
  EXPECT_TRUE(args.ok()) << args.status().ToString();
  if (!args.ok()) return Args{};
  // Only what Megatron-LM's own parser defines at the release written for, where a table of it is
  // kept (issue 21), else at the tables' newest commit.
  const std::string table = o.version == MegatronVersion::kCore012   ? "megatron-lm-core_v0.12.0"
                            : o.version == MegatronVersion::kCore014 ? "megatron-lm-core_v0.14.0"
                                                                     : "megatron-lm";
  const std::vector<std::string> problems = MegatronProblems(*args, table);
  EXPECT_TRUE(problems.empty()) << problems.front();
  return *args;
}

std::string Refusal(const ModelSpec& model, const Strategy& s, const MegatronOptions& o = {}) {
  Result<Args> args = MegatronArguments(model, s, o);
  EXPECT_FALSE(args.ok());
  return args.ok() ? "" : args.status().message();
}

MegatronOptions At(MegatronVersion v) {
  MegatronOptions o;
  o.version = v;
  return o;
}

Strategy Plain(int64_t tp = 1) {
  Strategy s;
  s.tp = tp;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.seq_len = 4096;
  return s;
}

// Defect 4: offload needs --use-precision-aware-optimizer, which optimizer_config.py allows with
// adam only.
TEST(MegatronArgs, OptimizerOffloadWithSgdIsRefusedAndWithAdamEmitted) {
  Strategy s = Plain();
  s.zero_stage = 1;
  s.offload = Offload::kOptimizer;
  s.optimizer = Optimizer::kSgd;
  EXPECT_NE(Refusal(ShippedModel("llama3-8b"), s).find("--offload optimizer with --optimizer sgd"),
            std::string::npos);
  s.optimizer = Optimizer::kAdam;
  EXPECT_TRUE(HasArg(ArgsOf(ShippedModel("llama3-8b"), s), "--use-precision-aware-optimizer"));
}

// Defect 5: Megatron-FSDP flags exist from core_v0.14.0; older trees get a refusal naming it.
TEST(MegatronArgs, MegatronFsdpNeedsCoreV014AndTheCommandSaysSo) {
  Strategy s = Plain();
  s.zero_stage = 3;
  const std::string refusal = Refusal(ShippedModel("llama3-8b"), s, At(MegatronVersion::kCore013));
  EXPECT_NE(
      refusal.find("--megatron-version core_v0.13: --zero 3 (Megatron-FSDP) needs core_v0.14"),
      std::string::npos)
      << refusal;
  const Args args = ArgsOf(ShippedModel("llama3-8b"), s, At(MegatronVersion::kCore014));
  EXPECT_TRUE(HasArg(args, "--use-megatron-fsdp"));
  EXPECT_EQ(MinimumMegatronVersion(args), MegatronVersion::kCore014);
  EXPECT_NE(FormatMegatronCommand(args).find("# Needs Megatron-LM core_v0.14 or later"),
            std::string::npos);
  s.zero_stage = 1;
  EXPECT_EQ(MinimumMegatronVersion(ArgsOf(ShippedModel("llama3-8b"), s)),
            MegatronVersion::kCore012);
}

// Defect 5: MLA needs --no-rope-fusion at core_r0.12.0 only, and its YaRN needs --rope-type
// (core_v0.14.0).
TEST(MegatronArgs, MlaRopeFusionAndYarnFollowTheVersion) {
  const ModelSpec v3 = ShippedModel("deepseek-v3");
  Strategy s = Plain(8);
  s.ep = 8;
  s.dp = 8;
  const Args latest = ArgsOf(v3, s);
  EXPECT_FALSE(HasArg(latest, "--no-rope-fusion"));
  EXPECT_EQ(After(latest, "--rope-type"), "yarn");
  EXPECT_NE(Refusal(v3, s, At(MegatronVersion::kCore012)).find("needs core_v0.14"),
            std::string::npos);
  ModelSpec no_yarn = v3;
  no_yarn.rope_scaling.reset();
  EXPECT_TRUE(HasArg(ArgsOf(no_yarn, s, At(MegatronVersion::kCore012)), "--no-rope-fusion"));
  EXPECT_FALSE(HasArg(ArgsOf(no_yarn, s, At(MegatronVersion::kCore013)), "--no-rope-fusion"));
  EXPECT_FALSE(HasArg(ArgsOf(no_yarn, s, At(MegatronVersion::kCore013)), "--rope-type"));
  EXPECT_EQ(After(ArgsOf(no_yarn, s), "--rope-type"), "rope");
}

// Defect 6: the environment is decided once, for the command and the JSON alike.
TEST(MegatronArgs, EnvironmentHoldsConnectionsAndTf32) {
  const Args tp = ArgsOf(ShippedModel("llama3-8b"), Plain(8));
  const std::vector<EnvVariable> env = MegatronEnvironment(tp);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].name, "CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_EQ(env[0].value, "1");
  EXPECT_TRUE(MegatronEnvironment(ArgsOf(ShippedModel("llama3-8b"), Plain(1))).empty());
  Strategy tf32 = Plain(1);
  tf32.dtype = Dtype::kTf32;
  const Args args = ArgsOf(ShippedModel("llama3-8b"), tf32);
  const std::vector<EnvVariable> tf32_env = MegatronEnvironment(args, Dtype::kTf32);
  ASSERT_EQ(tf32_env.size(), 1u);
  EXPECT_EQ(tf32_env[0].name, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
  EXPECT_NE(FormatMegatronCommand(args, {}, Dtype::kTf32)
                .find("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 torchrun"),
            std::string::npos);
  EXPECT_NE(FormatMegatronCommand(args, {}, Dtype::kFp32).find("matmuls run in full fp32"),
            std::string::npos);
}

// Defect 7: unfused simulations launch the unfused backend; fused ones keep auto; no dropout is
// launched unless it was simulated.
TEST(MegatronArgs, AttentionBackendAndDropoutFollowTheSimulation) {
  MegatronOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  const Args u = ArgsOf(ShippedModel("gpt3-1.3b"), Plain(1), unfused);
  EXPECT_EQ(After(u, "--attention-backend"), "unfused");
  EXPECT_EQ(After(u, "--attention-dropout"), "0.0");
  EXPECT_EQ(After(u, "--hidden-dropout"), "0.0");
  const Args fused = ArgsOf(ShippedModel("gpt3-1.3b"), Plain(1));
  EXPECT_FALSE(HasArg(fused, "--attention-backend"));
  EXPECT_NE(FormatMegatronCommand(fused).find("cuDNN's fused attention\n# from Hopper on"),
            std::string::npos);
  // --attention cudnn or flash2 pins Transformer Engine's backend to the kernel simulated.
  for (const auto& [family, backend] : {std::pair{AttentionFamily::kCudnn, "fused"},
                                        std::pair{AttentionFamily::kFlashAttention2, "flash"}}) {
    MegatronOptions pinned;
    pinned.fused_family = family;
    const Args a = ArgsOf(ShippedModel("gpt3-1.3b"), Plain(1), pinned);
    EXPECT_EQ(After(a, "--attention-backend"), backend);
    EXPECT_NE(FormatMegatronCommand(a, pinned, Dtype::kBf16)
                  .find(std::string("--attention-backend ") + backend + "), as simulated"),
              std::string::npos)
        << FormatMegatronCommand(a, pinned, Dtype::kBf16);
  }
  MegatronOptions dropout;
  dropout.dropout = true;
  EXPECT_FALSE(HasArg(ArgsOf(ShippedModel("gpt3-1.3b"), Plain(1), dropout), "--attention-dropout"));
  EXPECT_EQ(MegatronNotes(ShippedModel("gpt3-1.3b"), dropout).size(), 1u);
}

// Defect 8: rotary base, norm epsilon and Llama 3.1's rope scaling.
TEST(MegatronArgs, RotaryBaseEpsilonAndLlamaRopeScaling) {
  const Args llama = ArgsOf(ShippedModel("llama3-405b"), Plain(8));
  EXPECT_EQ(After(llama, "--rotary-base"), "500000");
  EXPECT_EQ(After(llama, "--norm-epsilon"), "1e-05");
  EXPECT_TRUE(HasArg(llama, "--use-rope-scaling"));
  EXPECT_EQ(After(llama, "--rope-scaling-factor"), "8");
  EXPECT_FALSE(HasArg(ArgsOf(ShippedModel("llama3-70b"), Plain(8)), "--use-rope-scaling"));
  Strategy moe = Plain(1);
  moe.ep = 8;
  moe.dp = 8;
  EXPECT_EQ(After(ArgsOf(ShippedModel("mixtral-8x7b"), moe), "--rotary-base"), "1000000");
  EXPECT_FALSE(HasArg(ArgsOf(ShippedModel("gpt3-1.3b"), Plain(1)), "--rotary-base"));
}

TEST(MegatronArgs, RopeScalingMegatronCannotExpressIsRefused) {
  ModelSpec llama = ShippedModel("llama3-405b");
  llama.rope_scaling->high_freq_factor = 2;
  EXPECT_NE(Refusal(llama, Plain(8)).find("fixes them at 1, 4 and 8192"), std::string::npos);
  llama.rope_scaling->kind = RopeScalingKind::kOther;
  llama.rope_scaling->type = "linear";
  EXPECT_NE(Refusal(llama, Plain(8)).find("rope_scaling \"linear\""), std::string::npos);
  ModelSpec theta = ShippedModel("llama3-8b");
  theta.rope_theta = 10000.5;
  EXPECT_NE(Refusal(theta, Plain(8)).find("--rotary-base is an integer"), std::string::npos);
}

// Defect 8: DeepSeek-V3's router and YaRN as its config.json gives them.
TEST(MegatronArgs, DeepSeekV3RouterYarnAndLatentNorms) {
  Strategy s = Plain(8);
  s.ep = 8;
  s.dp = 8;
  const Args args = ArgsOf(ShippedModel("deepseek-v3"), s);
  EXPECT_EQ(After(args, "--moe-router-score-function"), "sigmoid");
  EXPECT_EQ(After(args, "--moe-router-num-groups"), "8");
  EXPECT_EQ(After(args, "--moe-router-group-topk"), "4");
  EXPECT_TRUE(HasArg(args, "--moe-router-enable-expert-bias"));
  EXPECT_EQ(After(args, "--moe-router-topk-scaling-factor"), "2.5");
  EXPECT_EQ(After(args, "--moe-router-load-balancing-type"), "seq_aux_loss");
  EXPECT_EQ(After(args, "--moe-aux-loss-coeff"), "0.001");
  EXPECT_EQ(After(args, "--rotary-scaling-factor"), "40");
  EXPECT_EQ(After(args, "--mscale"), "1");
  EXPECT_EQ(After(args, "--mscale-all-dim"), "1");
  EXPECT_EQ(After(args, "--norm-epsilon"), "1e-06");
  EXPECT_TRUE(HasArg(args, "--qk-layernorm"));
  const std::vector<std::string> notes = MegatronNotes(ShippedModel("deepseek-v3"), {});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("--mtp-num-layers 1"), std::string::npos);
}

TEST(MegatronArgs, RoutersMegatronCannotExpressAreRefused) {
  Strategy s = Plain(8);
  s.ep = 8;
  s.dp = 8;
  ModelSpec v3 = ShippedModel("deepseek-v3");
  v3.moe->normalize_top_k = false;
  EXPECT_NE(Refusal(v3, s).find("always renormalises"), std::string::npos);
  ModelSpec yarn = ShippedModel("deepseek-v3");
  yarn.rope_scaling->beta_fast = 16;
  EXPECT_NE(Refusal(yarn, s).find("uses 32, 1 and 4096"), std::string::npos);
  ModelSpec mixtral = ShippedModel("mixtral-8x7b");
  mixtral.moe->normalize_top_k = false;
  EXPECT_TRUE(HasArg(ArgsOf(mixtral, s), "--moe-router-pre-softmax"));
  EXPECT_FALSE(HasArg(ArgsOf(ShippedModel("mixtral-8x7b"), s), "--moe-router-pre-softmax"));
  EXPECT_EQ(After(ArgsOf(ShippedModel("mixtral-8x7b"), s), "--moe-aux-loss-coeff"), "0.02");
}

// Defect 9: expert parallelism with fp16 is refused up to core_v0.15 and allowed from core_v0.16.
TEST(MegatronArgs, ExpertParallelFp16FollowsTheVersion) {
  Strategy s = Plain(1);
  s.ep = 8;
  s.dp = 8;
  s.dtype = Dtype::kFp16;
  EXPECT_NE(Refusal(ShippedModel("mixtral-8x7b"), s, At(MegatronVersion::kCore015))
                .find("needs core_v0.16"),
            std::string::npos);
  const Args args = ArgsOf(ShippedModel("mixtral-8x7b"), s, At(MegatronVersion::kCore016));
  EXPECT_TRUE(HasArg(args, "--fp16"));
  EXPECT_EQ(MinimumMegatronVersion(args), MegatronVersion::kCore016);
}

// Issue 23: the Hugging Face architectures loom now reads either map to Megatron-LM flags or are
// refused, never emitted as another model.
TEST(MegatronArgs, QwenBiasesQkNormsSharedExpertGateAndPartialRotary) {
  const Args qwen2 = ArgsOf(ShippedModel("qwen2.5-7b"), Plain(4));
  EXPECT_TRUE(HasArg(qwen2, "--disable-bias-linear"));
  EXPECT_TRUE(HasArg(qwen2, "--add-qkv-bias"));
  EXPECT_FALSE(HasArg(qwen2, "--qk-layernorm"));
  const Args qwen3 = ArgsOf(ShippedModel("qwen3-8b"), Plain(4));
  EXPECT_TRUE(HasArg(qwen3, "--qk-layernorm"));
  EXPECT_FALSE(HasArg(qwen3, "--add-qkv-bias"));
  Strategy moe = Plain(1);
  moe.ep = 8;
  moe.dp = 8;
  const ModelSpec qwen_moe = ShippedModel("qwen2-57b-a14b");
  const Args gated = ArgsOf(qwen_moe, moe);
  // The shared expert's own width (shared_expert_intermediate_size), not moe_intermediate_size.
  EXPECT_EQ(After(gated, "--moe-shared-expert-intermediate-size"),
            std::to_string(qwen_moe.moe->num_shared_experts *
                           qwen_moe.moe->shared_expert_intermediate_size));
  EXPECT_NE(qwen_moe.moe->shared_expert_intermediate_size, qwen_moe.moe->expert_intermediate_size);
  EXPECT_TRUE(HasArg(gated, "--moe-shared-expert-gate"));
  EXPECT_EQ(MinimumMegatronVersion(gated), MegatronVersion::kCore016);
  EXPECT_NE(Refusal(qwen_moe, moe, At(MegatronVersion::kCore015))
                .find("--moe-shared-expert-gate first appears"),
            std::string::npos);
  ModelSpec partial = ShippedModel("llama3-8b");
  partial.rotary_fraction = 0.5;
  EXPECT_EQ(After(ArgsOf(partial, Plain(4)), "--rotary-percent"), "0.5");
  EXPECT_FALSE(HasArg(ArgsOf(ShippedModel("llama3-8b"), Plain(4)), "--rotary-percent"));
}

TEST(MegatronArgs, ArchitecturesMegatronCannotBuildAreRefused) {
  EXPECT_NE(Refusal(ShippedModel("gemma-7b"), Plain(4)).find("Megatron-LM's gated MLP is SwiGLU"),
            std::string::npos);
  EXPECT_NE(Refusal(ShippedModel("gemma-2-9b"), Plain(4)).find("puts a norm after each block"),
            std::string::npos);
  EXPECT_NE(Refusal(ShippedModel("olmo-7b"), Plain(4)).find("LayerNorms without weights"),
            std::string::npos);
  EXPECT_NE(Refusal(ShippedModel("olmo-2-7b"), Plain(4)).find("over the whole projection"),
            std::string::npos);
  EXPECT_NE(Refusal(ShippedModel("pythia-1b"), Plain(1)).find("use_parallel_residual"),
            std::string::npos);
}

TEST(MegatronArgs, VersionNamesParseAndLatestIsDefault) {
  EXPECT_EQ(kMegatronVersionNames.Parse("core_v0.12"), MegatronVersion::kCore012);
  EXPECT_EQ(kMegatronVersionNames.Parse("latest"), MegatronVersion::kLatest);
  EXPECT_FALSE(kMegatronVersionNames.Parse("core_v0.11").has_value());
  EXPECT_EQ(MegatronOptions{}.version, MegatronVersion::kLatest);
}

// Sliding-window attention (issue 45, section 2): --window-size (window - 1, 0), the layers at full
// attention as --window-attn-skip-freq N where every N-th layer is, else as the per-layer list;
// Megatron-LM parses both from core_v0.15.0 on.
TEST(MegatronArgs, SlidingWindowsAreTheWindowSizeAndTheLayersThatSkipIt) {
  nlohmann::json config = {{"model_type", "mistral"},   {"hidden_size", 1024},
                           {"intermediate_size", 4096}, {"num_hidden_layers", 12},
                           {"num_attention_heads", 8},  {"num_key_value_heads", 8},
                           {"vocab_size", 32000},       {"max_position_embeddings", 32768},
                           {"hidden_act", "silu"},      {"rms_norm_eps", 1e-5},
                           {"sliding_window", 4096}};
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.seq_len = 8192;
  Result<ModelSpec> every = ParseModelSpec(config, "mistral-window.json");
  ASSERT_TRUE(every.ok()) << every.status().message();
  Args args = ArgsOf(*every, s);
  EXPECT_EQ(After(args, "--window-size"), "(4095,0)");
  EXPECT_FALSE(HasArg(args, "--window-attn-skip-freq"));
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 12; ++i)
    types.push_back((i + 1) % 6 ? "sliding_attention" : "full_attention");
  config["layer_types"] = types;
  Result<ModelSpec> sixth = ParseModelSpec(config, "gemma-like.json");
  ASSERT_TRUE(sixth.ok());
  EXPECT_EQ(After(ArgsOf(*sixth, s), "--window-attn-skip-freq"), "6");
  config.erase("layer_types");
  config["model_type"] = "qwen2";
  config["use_sliding_window"] = true;
  config["max_window_layers"] = 9;
  Result<ModelSpec> qwen = ParseModelSpec(config, "qwen-window.json");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(After(ArgsOf(*qwen, s), "--window-attn-skip-freq"), "[0,0,0,0,0,0,0,0,0,1,1,1]");
  EXPECT_NE(Refusal(*every, s, At(MegatronVersion::kCore014)).find("first appear in core_v0.15.0"),
            std::string::npos);
  EXPECT_EQ(MinimumMegatronVersion(args), MegatronVersion::kCore015);
}

}  // namespace
}  // namespace loom
