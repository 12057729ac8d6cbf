// Sliding-window attention read from config.json (issue 45, section 2): which layers, the window,
// and the FLOPs per token they leave.

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {
namespace {

ModelSpec WindowModel(const std::string& name) {
  Result<ModelSpec> model =
      LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/" + name + ".json");
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? *model : ModelSpec();
}

// A small Mistral-shaped config with |extra| keys over it.
Result<ModelSpec> ParseWindowed(const nlohmann::json& extra) {
  nlohmann::json config = {{"model_type", "mistral"},   {"hidden_size", 1024},
                           {"intermediate_size", 4096}, {"num_hidden_layers", 8},
                           {"num_attention_heads", 8},  {"num_key_value_heads", 8},
                           {"vocab_size", 32000},       {"max_position_embeddings", 32768},
                           {"hidden_act", "silu"},      {"rms_norm_eps", 1e-5}};
  config.update(extra);
  return ParseModelSpec(config, "window.json");
}

TEST(ModelWindow, Gemma3WindowsAllButEverySixthLayer) {
  const ModelSpec m = WindowModel("gemma-3-1b");
  EXPECT_EQ(m.sliding_window, 512);
  EXPECT_EQ(m.NumWindowedLayers(), 22);  // layers 6, 12, 18 and 24 (from 1) attend globally
  for (int64_t i = 0; i < m.num_layers; ++i) EXPECT_EQ(m.windowed_layers[i], (i + 1) % 6 != 0) << i;
  EXPECT_EQ(m.AttentionSpan(0, 32768), 512);
  EXPECT_EQ(m.AttentionSpan(5, 32768), 32768);
  EXPECT_EQ(m.AttentionSpan(0, 256), 256);  // a sequence shorter than the window
}

TEST(ModelWindow, Gemma2WindowsEveryOtherLayerFromTheFirst) {
  const ModelSpec m = WindowModel("gemma-2-9b");
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_EQ(m.NumWindowedLayers(), 21);
  EXPECT_TRUE(m.windowed_layers[0]);
  EXPECT_FALSE(m.windowed_layers[1]);
}

TEST(ModelWindow, NullOrSwitchedOffWindowsAreNone) {
  EXPECT_EQ(WindowModel("mistral-7b-v0.3").NumWindowedLayers(), 0);  // sliding_window null
  EXPECT_EQ(WindowModel("qwen2.5-7b").NumWindowedLayers(), 0);       // use_sliding_window false
  EXPECT_EQ(WindowModel("llama3-8b").NumWindowedLayers(), 0);
}

TEST(ModelWindow, QwenWindowsTheLayersFromMaxWindowLayersAndLayerTypesWin) {
  Result<ModelSpec> qwen = ParseWindowed({{"model_type", "qwen2"},
                                          {"use_sliding_window", true},
                                          {"sliding_window", 4096},
                                          {"max_window_layers", 6}});
  ASSERT_TRUE(qwen.ok()) << qwen.status().message();
  EXPECT_EQ(qwen->NumWindowedLayers(), 2);
  EXPECT_TRUE(qwen->windowed_layers[6]);
  EXPECT_FALSE(qwen->windowed_layers[5]);
  Result<ModelSpec> mistral = ParseWindowed({{"sliding_window", 4096}});
  ASSERT_TRUE(mistral.ok());
  EXPECT_EQ(mistral->NumWindowedLayers(), 8);  // every layer, as MistralAttention
  const nlohmann::json types = {"sliding_attention", "full_attention",   "sliding_attention",
                                "full_attention",    "full_attention",   "full_attention",
                                "full_attention",    "sliding_attention"};
  Result<ModelSpec> listed = ParseWindowed({{"sliding_window", 128}, {"layer_types", types}});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->NumWindowedLayers(), 3);
  EXPECT_TRUE(listed->windowed_layers[7]);
}

TEST(ModelWindow, LayerTypesLoomCannotReadAreErrors) {
  Result<ModelSpec> short_list =
      ParseWindowed({{"sliding_window", 128}, {"layer_types", {"sliding_attention"}}});
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find(
                "layer_types: lists 1 kinds of attention for num_hidden_layers 8"),
            std::string::npos)
      << short_list.status().message();
  nlohmann::json chunked = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) chunked.push_back("chunked_attention");
  Result<ModelSpec> llama4 = ParseWindowed({{"sliding_window", 128}, {"layer_types", chunked}});
  ASSERT_FALSE(llama4.ok());
  EXPECT_NE(llama4.status().message().find("\"chunked_attention\" is a kind of attention loom does "
                                           "not model"),
            std::string::npos)
      << llama4.status().message();
  EXPECT_FALSE(ParseWindowed({{"sliding_window", 0}}).ok());
}

// Gemma 3 1B at 32,768 tokens, by hand: attention meets 2 * span * heads * (d_qk + d_v) per layer
// and token, 2 * 32768 * 4 * 512 = 134.2 M in each of the 4 global layers and 2 * 512 * 4 * 512 =
// 2.10 M in each of the 22 windowed ones; the matmuls are 2 per weight a token passes through
// (without the input embedding, with the tied output head).
TEST(ModelWindow, Gemma3FlopsPerTokenCountTheWindowInTheWindowedLayers) {
  const ModelSpec m = WindowModel("gemma-3-1b");
  const double attention = 4 * 2.0 * 32768 * 4 * 512 + 22 * 2.0 * 512 * 4 * 512;
  const double per_layer = 1152.0 * (4 * 256) + 2 * 1152.0 * 256 + 4 * 256 * 1152.0 +
                           3 * 1152.0 * 6912;  // q, k and v, o, the gated MLP
  const double matmuls = 2 * (26 * per_layer + 1152.0 * 262144);
  const FlopsPerToken flops = ModelFlopsPerToken(m, 32768);
  EXPECT_NEAR(flops.forward, matmuls + attention, 1e-9 * flops.forward);
  // Without the window every layer would meet the whole sequence: 26 * 134.2 M.
  ModelSpec full = m;
  full.sliding_window = 0;
  EXPECT_NEAR(ModelFlopsPerToken(full, 32768).forward - flops.forward,
              22 * 2.0 * (32768 - 512) * 4 * 512, 1);
}

TEST(ModelWindow, RingAttentionIsRefusedForAWindowAllGatherIsNot) {
  const ModelSpec m = WindowModel("gemma-3-1b");
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json", 1);
  ASSERT_TRUE(cluster.ok());
  Strategy s;
  s.cp = 2;
  s.dp = 4;
  s.seq_len = 32768;
  s.global_batch = 8;
  Status status = ValidateStrategy(s, m, *cluster);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--cp 2 --cp-comm p2p with the sliding window"),
            std::string::npos)
      << status.message();
  s.cp_comm = CpComm::kAllGather;
  EXPECT_TRUE(ValidateStrategy(s, m, *cluster).ok()) << ValidateStrategy(s, m, *cluster).message();
  s.cp_comm = CpComm::kP2p;
  s.seq_len = 512;  // the window covers the sequence: no window to refuse
  s.global_batch = 8;
  EXPECT_TRUE(ValidateStrategy(s, m, *cluster).ok()) << ValidateStrategy(s, m, *cluster).message();
}

}  // namespace
}  // namespace loom
