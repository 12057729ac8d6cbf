#include "spec/model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace loom {
namespace {

// Passes if |text| contains |part|; on failure shows both.
::testing::AssertionResult ErrorContains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\"\n does not contain \"" << part << "\"";
}

std::string ShippedModel(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/models/" + name + ".json";
}

ModelSpec LoadShipped(const std::string& name) {
  Result<ModelSpec> spec = LoadModelSpec(ShippedModel(name));
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? *spec : ModelSpec();
}

ParameterCount CountShipped(const std::string& name) {
  Result<ParameterCount> count = CountParameters(LoadShipped(name));
  EXPECT_TRUE(count.ok()) << (count.ok() ? "" : count.status().message());
  return count.ok() ? *count : ParameterCount();
}

// A valid Llama-3-8B-like config that tests change one key at a time.
nlohmann::json LlamaLike() {
  return {{"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"vocab_size", 128256},
          {"max_position_embeddings", 8192},
          {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0}};
}

// Parses |config| as "bad.json" and returns the error message ("" if it parsed).
std::string ModelParseError(const nlohmann::json& config) {
  Result<ModelSpec> spec = ParseModelSpec(config, "models/bad.json");
  return spec.ok() ? "" : spec.status().message();
}

std::string WriteTempConfig(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ModelSpec, EveryShippedModelLoadsAndIsNamedByItsFile) {
  int loaded = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(LOOM_SOURCE_DIR) + "/models")) {
    if (entry.path().extension() != ".json") continue;
    Result<ModelSpec> spec = LoadModelSpec(entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EXPECT_EQ(spec->name, entry.path().stem().string());
    EXPECT_EQ(spec->file, entry.path().string());
    ++loaded;
  }
  EXPECT_GE(loaded, 9);
}

TEST(ModelSpec, Llama3_8bHasExactParameterCount) {
  ParameterCount count = CountShipped("llama3-8b");
  EXPECT_EQ(count.total, 8'030'261'248);
  EXPECT_EQ(count.active, count.total);
  EXPECT_EQ(count.embedding, 128256LL * 4096);
  EXPECT_EQ(count.output_head, 128256LL * 4096);
}

TEST(ModelSpec, Llama3_70bHasExactParameterCount) {
  EXPECT_EQ(CountShipped("llama3-70b").total, 70'553'706'496);
}

TEST(ModelSpec, Llama3_405bHasExactParameterCount) {
  // 126 layers x (attention 570,425,344 + MLP 2,617,245,696 + norms 32,768) + embedding and head
  // 2 x 128256 x 16384 + final norm 16384.
  EXPECT_EQ(CountShipped("llama3-405b").total, 405'853'388'800);
}

TEST(ModelSpec, Llama3ReadsItsHuggingFaceShape) {
  ModelSpec m = LoadShipped("llama3-8b");
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.mlp, MlpKind::kGated);
  EXPECT_EQ(m.norm, NormKind::kRmsNorm);
  EXPECT_EQ(m.position, PositionKind::kRotary);
  EXPECT_FALSE(m.moe.has_value());
  EXPECT_FALSE(m.mla.has_value());
  EXPECT_EQ(m.NumMoeLayers(), 0);
}

TEST(ModelSpec, Gpt3_175bHas174_6bParametersAndNoSeparateHead) {
  ModelSpec m = LoadShipped("gpt3-175b");
  EXPECT_EQ(m.mlp, MlpKind::kPlain);
  EXPECT_EQ(m.norm, NormKind::kLayerNorm);
  EXPECT_EQ(m.position, PositionKind::kLearnedAbsolute);
  ParameterCount count = CountShipped("gpt3-175b");
  EXPECT_NEAR(count.total, 174.6e9, 0.005 * 174.6e9);
  EXPECT_EQ(count.output_head, 0);
  // Token and learned position tables.
  EXPECT_EQ(count.embedding, (51200LL + 2048) * 12288);
}

TEST(ModelSpec, LearnedPositionsAddMaxPositionsTimesHidden) {
  nlohmann::json rope = LlamaLike();
  nlohmann::json learned = LlamaLike();
  learned["position_embedding_type"] = "learned_absolute";
  Result<ParameterCount> a = CountParameters(*ParseModelSpec(rope, "rope.json"));
  Result<ParameterCount> b = CountParameters(*ParseModelSpec(learned, "learned.json"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->total - a->total, 8192LL * 4096);
}

TEST(ModelSpec, Mixtral8x7bHas46_7bTotalAnd12_9bActiveParameters) {
  ModelSpec m = LoadShipped("mixtral-8x7b");
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 8);
  EXPECT_EQ(m.moe->expert_intermediate_size, 14336);
  EXPECT_EQ(m.NumMoeLayers(), 32);
  ParameterCount count = CountShipped("mixtral-8x7b");
  EXPECT_NEAR(count.total, 46.7e9, 0.005 * 46.7e9);
  EXPECT_NEAR(count.active, 12.9e9, 0.005 * 12.9e9);
  // Active = total minus the 6 experts of 3 x 4096 x 14336 a token skips, in each of 32 layers.
  EXPECT_EQ(count.total - count.active, 32LL * 6 * 3 * 4096 * 14336);
}

TEST(ModelSpec, DeepSeekV3Has671bTotalParameters) {
  ModelSpec m = LoadShipped("deepseek-v3");
  ASSERT_TRUE(m.moe.has_value() && m.mla.has_value());
  EXPECT_EQ(m.NumMoeLayers(), 58);
  EXPECT_EQ(m.mla->q_lora_rank, 1536);
  ParameterCount count = CountShipped("deepseek-v3");
  EXPECT_NEAR(count.total, 671e9, 0.005 * 671e9);
}

TEST(ModelSpec, DeepSeekV3ActiveCountsEightRoutedAndOneSharedExpert) {
  ParameterCount count = CountShipped("deepseek-v3");
  // 248 of 256 routed experts (3 x 7168 x 2048 each) are skipped in each of 58 MoE layers.
  EXPECT_EQ(count.total - count.active, 58LL * 248 * 3 * 7168 * 2048);
  // DeepSeek quotes 37B activated (technical report) and 36.7B (README_WEIGHTS.md); counting every
  // weight a token passes through, embedding and head included, gives 37.55B.
  EXPECT_EQ(count.active, 37'552'282'624);
  EXPECT_NEAR(count.active, 37e9, 0.025 * 37e9);
}

TEST(ModelSpec, MlaWithoutQueryCompressionProjectsQueriesDirectly) {
  nlohmann::json config = LlamaLike();
  config["num_key_value_heads"] = 32;
  config["kv_lora_rank"] = 512;
  config["qk_rope_head_dim"] = 64;
  config["qk_nope_head_dim"] = 128;
  config["v_head_dim"] = 128;
  config["q_lora_rank"] = nullptr;
  Result<ModelSpec> direct = ParseModelSpec(config, "direct.json");
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  config["q_lora_rank"] = 1536;
  Result<ModelSpec> lora = ParseModelSpec(config, "lora.json");
  ASSERT_TRUE(lora.ok()) << lora.status().message();
  EXPECT_EQ(direct->mla->q_lora_rank, 0);
  int64_t q_direct = 4096LL * 32 * 192;
  int64_t q_lora = 4096LL * 1536 + 1536 + 1536LL * 32 * 192;
  EXPECT_EQ(CountParameters(*lora)->total - CountParameters(*direct)->total,
            32 * (q_lora - q_direct));
}

TEST(ModelSpec, TrainingFlopsMatchNarayanan2021ForMegatron22b) {
  ModelSpec m = LoadShipped("megatron-22b");
  const double h = 6144, layers = 48, s = 2048, vocab = 51200;
  // Narayanan et al. 2021, eq. 3: 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) FLOPs per batch of B
  // sequences; per token divide by B s.
  double expected = 72 * layers * h * h * (1 + s / (6 * h) + vocab / (12 * h * layers));
  FlopsPerToken flops = ModelFlopsPerToken(m, 2048);
  EXPECT_NEAR(flops.training, expected, 1e-9 * expected);
  EXPECT_DOUBLE_EQ(flops.training, 3 * flops.forward);
}

TEST(ModelSpec, ForwardFlopsAreTwiceTheWeightsATokenPassesPlusAttention) {
  ModelSpec m = LoadShipped("llama3-8b");
  ParameterCount count = CountShipped("llama3-8b");
  // Matmul weights: all parameters but the input embedding and the 65 RMSNorm weight vectors.
  double matmul = static_cast<double>(count.total - count.embedding - 65 * 4096);
  double attention = 32 * 2 * 4096.0 * 32 * (128 + 128);
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(m, 4096).forward, 2 * matmul + attention);
}

TEST(ModelSpec, MoeForwardFlopsCountOnlyTheExpertsATokenIsSentTo) {
  ModelSpec m = LoadShipped("mixtral-8x7b");
  ParameterCount count = CountShipped("mixtral-8x7b");
  double matmul = static_cast<double>(count.active - count.embedding - 65 * 4096);
  double attention = 32 * 2 * 1024.0 * 32 * (128 + 128);
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(m, 1024).forward, 2 * matmul + attention);
}

TEST(ModelError, MissingFileNamesThePathAndSuggestsAShippedModel) {
  Result<ModelSpec> spec = LoadModelSpec("models/no-such-model.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(ErrorContains(spec.status().message(), "models/no-such-model.json"));
  EXPECT_TRUE(ErrorContains(spec.status().message(), "check the path"));
}

TEST(ModelError, TextThatIsNotJsonIsRejectedWithTheParserPosition) {
  std::string path = WriteTempConfig("not-json.json", "{\"hidden_size\": 4096,");
  Result<ModelSpec> spec = LoadModelSpec(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(ErrorContains(spec.status().message(), path));
  EXPECT_TRUE(ErrorContains(spec.status().message(), "not valid JSON"));
  EXPECT_TRUE(ErrorContains(spec.status().message(), "fix the syntax"));
}

TEST(ModelError, TopLevelArrayIsRejected) {
  std::string path = WriteTempConfig("array.json", "[1, 2]");
  Result<ModelSpec> spec = LoadModelSpec(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(ErrorContains(spec.status().message(), path));
  EXPECT_TRUE(ErrorContains(spec.status().message(), "it must be an object"));
  EXPECT_TRUE(ErrorContains(ModelParseError(nlohmann::json::array()),
                            "models/bad.json: the top level is a JSON array"));
}

TEST(ModelError, QuotedNumberIsAWrongTypeNamingTheKey) {
  nlohmann::json config = LlamaLike();
  config["hidden_size"] = "4096";
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error, "models/bad.json: hidden_size: must be an integer"));
  EXPECT_TRUE(ErrorContains(error, "without quotes"));
}

TEST(ModelError, ZeroAndNegativeSizesAreRejected) {
  nlohmann::json config = LlamaLike();
  config["num_hidden_layers"] = 0;
  config["intermediate_size"] = -5;
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(
      error, "models/bad.json: num_hidden_layers: is 0; it must be between 1 and 10000"));
  EXPECT_TRUE(ErrorContains(
      error, "models/bad.json: intermediate_size: is -5; it must be between 1 and 4194304"));
}

// Each size within its physical bound, the product of them still beyond 64 bits: 65536 experts of
// width 2^22 on hidden 2^20 over 10000 layers.
TEST(ModelError, OverflowingSizesAreAnErrorNamingTheKeys) {
  nlohmann::json config = LlamaLike();
  config["hidden_size"] = int64_t{1} << 20;
  config["intermediate_size"] = int64_t{1} << 22;
  config["num_attention_heads"] = 1;
  config["num_key_value_heads"] = 1;
  config["num_hidden_layers"] = 10000;
  config["num_local_experts"] = 65536;
  config["num_experts_per_tok"] = 1;
  config["moe_intermediate_size"] = int64_t{1} << 22;
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error, "models/bad.json"));
  EXPECT_TRUE(ErrorContains(error, "overflows 64 bits"));
  EXPECT_TRUE(ErrorContains(error, "hidden_size 1048576"));
  EXPECT_TRUE(ErrorContains(error, "check these keys"));
}

// A size beyond any model is refused with its bound before anything is computed from it.
TEST(ModelError, AnAbsurdSizeNamesItsBound) {
  nlohmann::json config = LlamaLike();
  config["num_hidden_layers"] = int64_t{1} << 40;
  config["vocab_size"] = int64_t{1} << 30;
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(
      error,
      "models/bad.json: num_hidden_layers: is 1099511627776; it must be between 1 and 10000"));
  EXPECT_TRUE(ErrorContains(
      error, "models/bad.json: vocab_size: is 1073741824; it must be between 1 and 16777216"));
}

TEST(ModelError, MisspeltKeyIsATypoNamingTheRealKey) {
  nlohmann::json config = LlamaLike();
  config.erase("num_hidden_layers");
  config["num_hiden_layers"] = 32;
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error,
                            "models/bad.json: num_hiden_layers: looks like a misspelling of "
                            "\"num_hidden_layers\""));
}

TEST(ModelError, UnknownActivationListsTheAcceptedOnes) {
  nlohmann::json config = LlamaLike();
  config["hidden_act"] = "mish";
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error, "models/bad.json: hidden_act: is \"mish\""));
  EXPECT_TRUE(ErrorContains(error, "\"gelu_pytorch_tanh\""));
  EXPECT_TRUE(ErrorContains(error, "\"swiglu\""));
}

TEST(ModelError, BothExpertCountKeysAreAnError) {
  nlohmann::json config = LlamaLike();
  config["num_local_experts"] = 8;
  config["n_routed_experts"] = 8;
  config["num_experts_per_tok"] = 2;
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(
      error,
      "models/bad.json: n_routed_experts: and num_local_experts or num_experts are set together"));
  EXPECT_TRUE(ErrorContains(error, "keep one"));
  config.erase("n_routed_experts");
  config["num_experts"] = 8;  // Qwen MoE's key
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "are set together; keep one"));
}

TEST(ModelError, ExpertsNeedATopKNoLargerThanTheExpertCount) {
  nlohmann::json config = LlamaLike();
  config["num_local_experts"] = 8;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "num_experts_per_tok: is missing; add \"num_experts_per_tok\""));
  config["num_experts_per_tok"] = 9;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "num_experts_per_tok: (9) exceeds the number of experts (8)"));
}

TEST(ModelError, TopKWithoutAnExpertCountIsAnError) {
  nlohmann::json config = LlamaLike();
  config["num_experts_per_tok"] = 2;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "num_experts_per_tok: is set but the expert count is not; add "
                            "\"num_local_experts\""));
}

TEST(ModelError, UnsupportedMoeLayerFrequencyIsAnError) {
  nlohmann::json config = LlamaLike();
  config["n_routed_experts"] = 8;
  config["num_experts_per_tok"] = 2;
  config["moe_layer_freq"] = 2;
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "moe_layer_freq: is 2; loom supports only 1"));
}

TEST(ModelError, AllLayersDenseIsAnError) {
  nlohmann::json config = LlamaLike();
  config["n_routed_experts"] = 8;
  config["num_experts_per_tok"] = 2;
  config["first_k_dense_replace"] = 32;
  EXPECT_TRUE(
      ErrorContains(ModelParseError(config),
                    "first_k_dense_replace: (32) must be less than num_hidden_layers (32)"));
}

TEST(ModelError, MissingNormKeyAsksForOne) {
  nlohmann::json config = LlamaLike();
  config.erase("rms_norm_eps");
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error, "models/bad.json: rms_norm_eps: is missing"));
  EXPECT_TRUE(ErrorContains(error, "add \"rms_norm_eps\""));
  EXPECT_TRUE(ErrorContains(error, "\"layer_norm_eps\""));
}

TEST(ModelError, BothNormKeysAreAnError) {
  nlohmann::json config = LlamaLike();
  config["layer_norm_epsilon"] = 1e-5;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "rms_norm_eps: and layer_norm_eps/layer_norm_epsilon are both set"));
}

TEST(ModelError, PositionsNeedATypeOrRopeTheta) {
  nlohmann::json config = LlamaLike();
  config.erase("rope_theta");
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "position_embedding_type: is missing and there is no rope_theta; "
                            "add \"position_embedding_type\""));
  config["position_embedding_type"] = "alibi";
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "position_embedding_type: is \"alibi\"; it must be one of "
                            "rope|learned_absolute"));
}

TEST(ModelError, IndivisibleHiddenSizeNeedsHeadDim) {
  nlohmann::json config = LlamaLike();
  config["num_attention_heads"] = 24;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "head_dim: is missing and hidden_size (4096) is not divisible by "
                            "num_attention_heads (24); add \"head_dim\""));
  config["head_dim"] = 128;
  EXPECT_EQ(ModelParseError(config), "");
}

TEST(ModelError, KeyValueHeadsMustDivideHeads) {
  nlohmann::json config = LlamaLike();
  config["num_key_value_heads"] = 5;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "num_key_value_heads: (5) does not divide num_attention_heads (32)"));
}

TEST(ModelError, LatentAttentionNeedsItsHeadDims) {
  nlohmann::json config = LlamaLike();
  config["kv_lora_rank"] = 512;
  config["qk_rope_head_dim"] = 64;
  config["qk_nope_head_dim"] = 128;
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "v_head_dim: is missing; add \"v_head_dim\""));
  config.erase("kv_lora_rank");
  config["v_head_dim"] = 128;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "v_head_dim: is a multi-head latent attention key but kv_lora_rank "
                            "is missing"));
}

TEST(ModelError, WrongSchemaIsRejected) {
  nlohmann::json config = LlamaLike();
  config["schema"] = "loom.model/2";
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "schema: is \"loom.model/2\"; this loom reads \"loom.model/1\""));
  config["schema"] = "loom.model/1";
  EXPECT_EQ(ModelParseError(config), "");
}

TEST(ModelError, EveryProblemOfAFileIsReportedAtOnce) {
  nlohmann::json config = LlamaLike();
  config["hidden_size"] = "4096";
  config.erase("vocab_size");
  config["hidden_act"] = "mish";
  std::string error = ModelParseError(config);
  EXPECT_TRUE(ErrorContains(error, "hidden_size"));
  EXPECT_TRUE(ErrorContains(error, "vocab_size: is missing"));
  EXPECT_TRUE(ErrorContains(error, "hidden_act"));
  // The bad hidden_size is reported once, not again by the head_dim rule.
  EXPECT_FALSE(ErrorContains(error, "head_dim"));
}

TEST(ModelSpec, ReadsRotaryBaseEpsilonAndRopeScaling) {
  const ModelSpec llama = LoadShipped("llama3-405b");
  EXPECT_EQ(llama.rope_theta, 500000.0);
  EXPECT_EQ(llama.norm_epsilon, 1e-5);
  ASSERT_TRUE(llama.rope_scaling.has_value());
  EXPECT_EQ(llama.rope_scaling->kind, RopeScalingKind::kLlama3);
  EXPECT_EQ(llama.rope_scaling->factor, 8.0);
  EXPECT_EQ(llama.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_FALSE(LoadShipped("llama3-70b").rope_scaling.has_value());  // "rope_scaling": null
  EXPECT_EQ(LoadShipped("mixtral-8x7b").rope_theta, 1e6);
  EXPECT_EQ(LoadShipped("gpt3-175b").norm_epsilon, 1e-5);  // layer_norm_epsilon
}

TEST(ModelSpec, DeepSeekV3ReadsItsRouterYarnAndMultiTokenPrediction) {
  const ModelSpec v3 = LoadShipped("deepseek-v3");
  ASSERT_TRUE(v3.moe.has_value());
  EXPECT_EQ(v3.moe->score, RouterScore::kSigmoid);
  EXPECT_EQ(v3.moe->router_groups, 8);
  EXPECT_EQ(v3.moe->router_group_top_k, 4);
  EXPECT_TRUE(v3.moe->expert_bias);
  EXPECT_TRUE(v3.moe->normalize_top_k);
  EXPECT_EQ(v3.moe->routed_scaling_factor, 2.5);
  EXPECT_EQ(v3.moe->aux_loss_coeff, 0.001);
  EXPECT_TRUE(v3.moe->sequence_aux_loss);
  EXPECT_EQ(v3.norm_epsilon, 1e-6);
  EXPECT_EQ(v3.mtp_layers, 1);
  ASSERT_TRUE(v3.rope_scaling.has_value());
  EXPECT_EQ(v3.rope_scaling->kind, RopeScalingKind::kYarn);  // its old "type" key
  EXPECT_EQ(v3.rope_scaling->factor, 40.0);
  EXPECT_EQ(v3.rope_scaling->beta_fast, 32.0);
  EXPECT_EQ(v3.rope_scaling->mscale_all_dim, 1.0);
  const ModelSpec mixtral = LoadShipped("mixtral-8x7b");
  EXPECT_EQ(mixtral.moe->score, RouterScore::kSoftmax);
  EXPECT_EQ(mixtral.moe->router_groups, 0);
  EXPECT_FALSE(mixtral.moe->expert_bias);
  EXPECT_EQ(mixtral.moe->aux_loss_coeff, 0.02);
}

TEST(ModelError, RopeScalingAndRouterKeysAreCheckedNamingTheKey) {
  nlohmann::json config = LlamaLike();
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "models/bad.json: rope_scaling.low_freq_factor: is missing"));
  config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(ModelParseError(config), "");  // kept as kOther: an emitter names what it cannot launch
  config["rope_scaling"] = 3;
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "rope_scaling: must be an object"));
  config = LlamaLike();
  config["rms_norm_eps"] = 2;
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "rms_norm_eps"));
  config = LlamaLike();
  config["num_local_experts"] = 8;
  config["num_experts_per_tok"] = 2;
  config["topk_method"] = "noaux_tc";
  config["n_group"] = 2;
  EXPECT_TRUE(ErrorContains(ModelParseError(config),
                            "models/bad.json: topk_group: is missing; topk_method \"noaux_tc\""));
  config["topk_group"] = 3;
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "topk_group: (3) exceeds n_group (2)"));
  config["topk_group"] = 1;
  config["scoring_func"] = "tanh";
  EXPECT_TRUE(ErrorContains(ModelParseError(config), "scoring_func"));
}

}  // namespace
}  // namespace loom
