#include "spec/model_family.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "spec/model.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

::testing::AssertionResult TextContains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\"\n does not contain \"" << part << "\"";
}

std::string ShippedModelFile(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/models/" + name + ".json";
}

nlohmann::json ShippedJson(const std::string& name) {
  std::ifstream in(ShippedModelFile(name));
  return nlohmann::json::parse(in);
}

ModelSpec Parse(const nlohmann::json& config) {
  Result<ModelSpec> spec = ParseModelSpec(config, "models/x.json");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? *spec : ModelSpec();
}

std::string ParseError(const nlohmann::json& config) {
  Result<ModelSpec> spec = ParseModelSpec(config, "models/x.json");
  return spec.ok() ? "" : spec.status().message();
}

int64_t Total(const ModelSpec& m) {
  Result<ParameterCount> count = CountParameters(m);
  EXPECT_TRUE(count.ok());
  return count.ok() ? count->total : 0;
}

// A fresh empty folder under the test temp dir.
fs::path TempDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ModelFolder, ReadsConfigJsonOfASnapshotFolderAndNamesTheModelByItsRepository) {
  fs::path snapshot = TempDir("hub") / "models--google--gemma-7b" / "snapshots" / "0123abc";
  fs::create_directories(snapshot);
  fs::copy_file(ShippedModelFile("gemma-7b"), snapshot / "config.json");
  Result<ModelSpec> spec = LoadModelSpec(snapshot.string());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "gemma-7b");
  EXPECT_EQ(spec->file, (snapshot / "config.json").string());
  EXPECT_EQ(Total(*spec), Total(*LoadModelSpec(ShippedModelFile("gemma-7b"))));

  fs::path plain = TempDir("my-model");
  fs::copy_file(ShippedModelFile("qwen3-8b"), plain / "config.json");
  Result<ModelSpec> named = LoadModelSpec(plain.string() + "/");
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->name, "my-model");
}

TEST(ModelFolder, AFolderWithoutConfigJsonNamesTheFolderAndTheFix) {
  fs::path empty = TempDir("empty-snapshot");
  Result<ModelSpec> spec = LoadModelSpec(empty.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(TextContains(spec.status().message(),
                           empty.string() + ": is a directory without a config.json"));
  EXPECT_TRUE(
      TextContains(spec.status().message(), "snapshot folder (the one holding config.json"));
}

TEST(ModelFamily, GemmaGeluMlpIsGatedByItsModelTypeNotItsActivation) {
  nlohmann::json gemma = ShippedJson("gemma-7b");
  EXPECT_EQ(Parse(gemma).mlp, MlpKind::kGated);
  // The architecture names the family when model_type is absent.
  nlohmann::json by_architecture = gemma;
  by_architecture.erase("model_type");
  EXPECT_EQ(Parse(by_architecture).mlp, MlpKind::kGated);
  // Without either, the activation decides, as before: gelu is a 2-matrix MLP.
  nlohmann::json bare = by_architecture;
  bare.erase("architectures");
  EXPECT_EQ(Parse(bare).mlp, MlpKind::kPlain);
  // GPT-NeoX's MLP has two matrices whatever its activation.
  nlohmann::json neox = ShippedJson("pythia-1b");
  neox["hidden_act"] = "silu";
  EXPECT_EQ(Parse(neox).mlp, MlpKind::kPlain);
}

TEST(ModelFamily, MissingTieWordEmbeddingsTakesTheDefaultOfTheConfigClass) {
  nlohmann::json gemma = ShippedJson("gemma-7b");
  ASSERT_FALSE(gemma.contains("tie_word_embeddings"));
  EXPECT_TRUE(Parse(gemma).tie_word_embeddings);  // GemmaConfig: tie_word_embeddings=True
  nlohmann::json qwen = ShippedJson("qwen3-8b");
  qwen.erase("tie_word_embeddings");
  EXPECT_FALSE(Parse(qwen).tie_word_embeddings);  // Qwen3Config: False
  nlohmann::json gpt2 = ShippedJson("gpt3-125m");
  gpt2.erase("tie_word_embeddings");
  EXPECT_TRUE(Parse(gpt2).tie_word_embeddings);  // GPT2Config keeps PretrainedConfig's True
}

TEST(ModelFamily, UnknownModelTypeIsAWarningNamingTheFileNotAnError) {
  nlohmann::json config = ShippedJson("mistral-7b-v0.3");
  config["model_type"] = "mistral_next";
  ModelSpec spec = Parse(config);
  ASSERT_EQ(spec.warnings.size(), 1u);
  EXPECT_TRUE(TextContains(spec.warnings[0],
                           "models/x.json: model_type \"mistral_next\" is not one loom knows"));
  EXPECT_TRUE(TextContains(spec.warnings[0], "compare the parameter count"));
  EXPECT_EQ(spec.mlp, MlpKind::kGated);  // silu, by the activation
  EXPECT_TRUE(Parse(ShippedJson("mistral-7b-v0.3")).warnings.empty());
}

TEST(ModelFamily, Qwen2HasQkvBiasesButNoOutputBias) {
  ModelSpec qwen = Parse(ShippedJson("qwen2.5-7b"));
  EXPECT_TRUE(qwen.attention_bias);
  EXPECT_FALSE(qwen.attention_output_bias);
  nlohmann::json no_bias = ShippedJson("qwen2.5-7b");
  no_bias["model_type"] = "llama";
  no_bias.erase("architectures");
  // Per layer: q (28 * 128) + k and v (2 * 4 * 128) biases.
  EXPECT_EQ(Total(qwen) - Total(Parse(no_bias)), 28 * (3584 + 2 * 512));
}

TEST(ModelFamily, ExtraNormsOfGemma2And3Qwen3AndOlmoAreCounted) {
  ModelSpec gemma2 = Parse(ShippedJson("gemma-2-9b"));
  EXPECT_EQ(gemma2.norms_per_layer, 4);
  ModelSpec gemma3 = Parse(ShippedJson("gemma-3-1b"));
  EXPECT_EQ(gemma3.q_norm_width, 256);  // RMSNorm(head_dim)
  ModelSpec qwen3 = Parse(ShippedJson("qwen3-8b"));
  EXPECT_EQ(qwen3.k_norm_width, 128);
  ModelSpec olmo2 = Parse(ShippedJson("olmo-2-7b"));
  EXPECT_EQ(olmo2.q_norm_width, 32 * 128);  // over the whole q projection
  EXPECT_EQ(olmo2.k_norm_width, 32 * 128);
  ModelSpec olmo = Parse(ShippedJson("olmo-7b"));
  EXPECT_EQ(olmo.norm, NormKind::kLayerNorm);
  EXPECT_FALSE(olmo.norm_weights);  // no epsilon key, no weights: OlmoLayerNorm
  nlohmann::json as_llama = ShippedJson("olmo-2-7b");
  as_llama["model_type"] = "llama";
  as_llama.erase("architectures");
  EXPECT_EQ(Total(olmo2) - Total(Parse(as_llama)), 32 * (2 * 32 * 128));
}

TEST(ModelFamily, QwenMoeDenseLayersInFrontAreReadAndAnyOtherPlacementIsRefused) {
  nlohmann::json config = ShippedJson("qwen3-30b-a3b");
  config["mlp_only_layers"] = {0, 1};
  EXPECT_EQ(Parse(config).moe->first_dense_layers, 2);
  config["mlp_only_layers"] = {5};
  EXPECT_TRUE(TextContains(
      ParseError(config),
      "models/x.json: mlp_only_layers: is [5]; loom models dense layers only in front"));
  config["mlp_only_layers"] = nlohmann::json::array();
  config["decoder_sparse_step"] = 2;
  EXPECT_TRUE(TextContains(ParseError(config), "models/x.json: decoder_sparse_step: is 2"));
}

TEST(ModelFamily, Qwen2MoeSharedExpertHasItsOwnWidthAndAGate) {
  ModelSpec m = Parse(ShippedJson("qwen2-57b-a14b"));
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_shared_experts, 1);
  EXPECT_EQ(m.moe->shared_expert_intermediate_size, 20480);
  EXPECT_TRUE(m.moe->shared_expert_gate);
  EXPECT_EQ(m.moe->expert_intermediate_size, 2560);
  nlohmann::json both = ShippedJson("qwen2-57b-a14b");
  both["n_shared_experts"] = 2;
  EXPECT_TRUE(TextContains(ParseError(both),
                           "shared_expert_intermediate_size: and n_shared_experts are both set"));
  nlohmann::json dense = ShippedJson("qwen2-57b-a14b");
  dense.erase("num_experts");
  dense.erase("num_experts_per_tok");
  dense.erase("moe_intermediate_size");
  EXPECT_TRUE(TextContains(ParseError(dense),
                           "shared_expert_intermediate_size: is set but the expert count is not"));
}

TEST(ModelFamily, KeysThatChangeTheCountLoomCannotModelAreRefused) {
  nlohmann::json multimodal = ShippedJson("gemma-3-1b");
  multimodal["text_config"] = {{"hidden_size", 2560}};
  EXPECT_TRUE(TextContains(ParseError(multimodal),
                           "models/x.json: text_config: is set: this is a multimodal config"));
  nlohmann::json qk = ShippedJson("mistral-7b-v0.3");
  qk["qk_layernorm"] = true;
  EXPECT_TRUE(TextContains(ParseError(qk), "models/x.json: qk_layernorm: is true"));
  qk["qk_layernorm"] = false;
  EXPECT_EQ(ParseError(qk), "");
}

TEST(ModelFamily, ArchitectureNamesMapToModelTypes) {
  EXPECT_EQ(ModelTypeOfArchitecture("GemmaForCausalLM"), "gemma");
  EXPECT_EQ(ModelTypeOfArchitecture("Qwen2MoeForCausalLM"), "qwen2_moe");
  EXPECT_EQ(ModelTypeOfArchitecture("GPTNeoXForCausalLM"), "gpt_neox");
  EXPECT_EQ(ModelTypeOfArchitecture("FalconForCausalLM"), "");
  EXPECT_FALSE(FindModelFamily("falcon").has_value());
  EXPECT_TRUE(TextContains(KnownModelTypes(), "gemma3_text"));
}

// GPT-NeoX rotates a quarter of each head and runs attention and the MLP in parallel unless its
// config says otherwise (GPTNeoXConfig's defaults); partial_rotary_factor sets the share elsewhere.
TEST(ModelFamily, GptNeoxRotaryShareAndParallelResidual) {
  nlohmann::json neox = ShippedJson("pythia-1b");
  EXPECT_DOUBLE_EQ(Parse(neox).rotary_fraction, 0.25);
  EXPECT_TRUE(Parse(neox).parallel_residual);
  neox.erase("rotary_pct");
  neox.erase("use_parallel_residual");
  EXPECT_DOUBLE_EQ(Parse(neox).rotary_fraction, 0.25);
  EXPECT_TRUE(Parse(neox).parallel_residual);
  neox["use_parallel_residual"] = false;
  neox["rotary_pct"] = 1.0;
  EXPECT_FALSE(Parse(neox).parallel_residual);
  EXPECT_DOUBLE_EQ(Parse(neox).rotary_fraction, 1.0);
  nlohmann::json llama = ShippedJson("llama3-8b");
  EXPECT_DOUBLE_EQ(Parse(llama).rotary_fraction, 1.0);
  EXPECT_FALSE(Parse(llama).parallel_residual);
  llama["partial_rotary_factor"] = 0.5;
  EXPECT_DOUBLE_EQ(Parse(llama).rotary_fraction, 0.5);
  llama["partial_rotary_factor"] = 2;
  EXPECT_TRUE(TextContains(ParseError(llama), "partial_rotary_factor"));
}

}  // namespace
}  // namespace loom
