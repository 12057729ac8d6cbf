#include "spec/model_family.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace loom {
namespace {

constexpr MlpKind kGated = MlpKind::kGated;
constexpr MlpKind kPlain = MlpKind::kPlain;
constexpr PositionKind kRope = PositionKind::kRotary;
constexpr PositionKind kLearned = PositionKind::kLearnedAbsolute;
constexpr std::optional<NormKind> kByEpsilonKey = std::nullopt;
constexpr std::optional<NormKind> kLayer = NormKind::kLayerNorm;
constexpr QkNorm kNoQk = QkNorm::kNone;
constexpr QkNorm kPerHead = QkNorm::kPerHead;
constexpr QkNorm kWhole = QkNorm::kWholeProjection;
constexpr std::string_view kSilu = "silu";
constexpr std::string_view kTanh = "gelu_pytorch_tanh";

// Read from huggingface/transformers, src/transformers/models/<model_type>/configuration_*.py (the
// defaults of __init__) and modeling_*.py or modular_*.py (the nn.Linear biases and the norms),
// at the commits the search index holds: gemma/configuration_gemma.py 3676fc80 (GemmaMLP:
// gate_proj, up_proj, down_proj; tie_word_embeddings=True); qwen2/modular_qwen2.py 022c4a9b
// (q/k/v_proj bias=True, o_proj bias=False); olmo2/modular_olmo2.py 008f5c8c (q_norm over
// num_attention_heads * head_dim, k_norm over num_key_value_heads * head_dim, post-norms only).
// Gemma 2 and 3 (Gemma2DecoderLayer) add pre_feedforward_layernorm and post_feedforward_layernorm
// to the two norms; Gemma 3 and Qwen3 norm q and k per head (RMSNorm(head_dim)). OLMo 1's
// OlmoLayerNorm has no parameters. GPT-NeoX: attention_bias defaults to True and dense_h_to_4h,
// dense_4h_to_h always have biases. gpt2, opt and bloom keep PretrainedConfig's tie default (True).
// Columns: the fields of ModelFamily in order (tie: tie_word_embeddings, attn: attention_bias,
// qkv: qkv_bias_only, mlp_b: mlp_bias, n: norms_per_layer, topk: normalize_top_k, act: activation).
constexpr ModelFamily kFamilies[] = {
    // model_type   mlp     tie    attn   qkv    mlp_b  position  norm           weights n  qk topk
    // act
    {"llama", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true,
     kSilu},
    {"mistral", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true,
     kSilu},
    {"mixtral", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true,
     kSilu},
    {"qwen2", kGated, false, false, true, false, kRope, kByEpsilonKey, true, 2, kNoQk, false,
     kSilu},
    {"qwen2_moe", kGated, false, false, true, false, kRope, kByEpsilonKey, true, 2, kNoQk, false,
     kSilu},
    {"qwen3", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kPerHead, false,
     kSilu},
    {"qwen3_moe", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kPerHead,
     false, kSilu},
    {"gemma", kGated, true, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true, kTanh},
    {"gemma2", kGated, true, false, false, false, kRope, kByEpsilonKey, true, 4, kNoQk, true,
     kTanh},
    {"gemma3_text", kGated, true, false, false, false, kRope, kByEpsilonKey, true, 4, kPerHead,
     true, kTanh},
    {"phi3", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true, kSilu},
    {"olmo", kGated, false, false, false, false, kRope, kLayer, false, 2, kNoQk, true, kSilu},
    {"olmo2", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kWhole, true,
     kSilu},
    {"deepseek_v2", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, false,
     kSilu},
    {"deepseek_v3", kGated, false, false, false, false, kRope, kByEpsilonKey, true, 2, kNoQk, true,
     kSilu},
    {"gpt_neox", kPlain, false, true, false, true, kRope, kByEpsilonKey, true, 2, kNoQk, true,
     "gelu"},
    {"gpt2", kPlain, true, false, false, false, kLearned, kByEpsilonKey, true, 2, kNoQk, true,
     "gelu_new"},
    {"opt", kPlain, true, false, false, false, kLearned, kByEpsilonKey, true, 2, kNoQk, true,
     "relu"},
    {"bloom", kPlain, true, false, false, false, kLearned, kByEpsilonKey, true, 2, kNoQk, true,
     "gelu"},
};

// Architecture class prefixes (before "For...") whose model_type is not their lowercase name.
struct ArchitectureName {
  std::string_view prefix;
  std::string_view model_type;
};
constexpr ArchitectureName kArchitectures[] = {
    {"Qwen2Moe", "qwen2_moe"},
    {"Qwen3Moe", "qwen3_moe"},
    {"Gemma3", "gemma3_text"},
    {"DeepseekV2", "deepseek_v2"},
    {"DeepseekV3", "deepseek_v3"},
    {"GPTNeoX", "gpt_neox"},
    {"GPT2", "gpt2"},
    {"OPT", "opt"},
};

}  // namespace

std::optional<ModelFamily> FindModelFamily(std::string_view model_type) {
  for (const ModelFamily& f : kFamilies) {
    if (f.model_type == model_type) return f;
  }
  return std::nullopt;
}

std::string ModelTypeOfArchitecture(std::string_view architecture) {
  size_t end = architecture.find("For");
  if (end == std::string_view::npos || end == 0) return "";
  std::string_view prefix = architecture.substr(0, end);
  for (const ArchitectureName& a : kArchitectures) {
    if (a.prefix == prefix) return std::string(a.model_type);
  }
  std::string lower(prefix);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return FindModelFamily(lower) ? lower : "";
}

std::string KnownModelTypes() {
  std::string out;
  for (const ModelFamily& f : kFamilies)
    out += (out.empty() ? "" : ", ") + std::string(f.model_type);
  return out;
}

}  // namespace loom
