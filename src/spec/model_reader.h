#ifndef LOOM_SPEC_MODEL_READER_H_
#define LOOM_SPEC_MODEL_READER_H_

// Internal to src/spec: what the readers of a model config.json (model.cc, model_moe.cc) share.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/json_reader.h"
#include "spec/model.h"
#include "spec/model_family.h"

namespace loom {
namespace model_reader {

// Physical bounds on a config's sizes, each far above any published model (Llama 3 405B: 126
// layers, hidden 16384, 128 heads, MLP 53248, vocabulary 128256; DeepSeek-V3: 256 experts of width
// 2048, 163840 positions) and low enough that every product loom forms from them (parameters,
// bytes, FLOPs per token) stays inside 64 bits. A config beyond them is a typo, not a model.
inline constexpr IntRange kLayerRange{1, 10'000};
inline constexpr IntRange kWidthRange{1, int64_t{1} << 20};  // hidden, head and LoRA dimensions
inline constexpr IntRange kHeadRange{1, int64_t{1} << 16};   // attention and key/value heads
inline constexpr IntRange kMlpRange{1, int64_t{1} << 22};    // MLP and expert widths
inline constexpr IntRange kVocabRange{1, int64_t{1} << 24};
inline constexpr IntRange kPositionRange{1, int64_t{1} << 27};
inline constexpr IntRange kExpertRange{1, int64_t{1} << 16};
// A norm epsilon is a small positive number (1e-5 in Llama, 1e-6 in DeepSeek-V3); 1 or more is a
// typo.
inline constexpr NumberRange kEpsilonRange{0, 1};
// Rotary bases run from 1e4 (the original) to 1e6 (Mixtral) and beyond; the bound only keeps them
// finite.
inline constexpr NumberRange kRopeThetaRange{1, 1e12};
// rope_scaling's factors and betas: Llama 3.1 scales by 8, DeepSeek-V3 by 40; YaRN's betas are 32
// and 1.
inline constexpr NumberRange kRopeFactorRange{0, 1e6};

// |s| in double quotes, for messages.
inline std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// The mixture of experts of |config| (Mixtral, DeepSeek or Qwen MoE keys), or nullopt for a dense
// model; problems are recorded in |r|. |m| holds the dense sizes already read; |layers| is
// num_hidden_layers when valid.
std::optional<MoeSpec> ReadMoe(JsonReader& r, const nlohmann::json& config,
                               const std::optional<ModelFamily>& family, const ModelSpec& m,
                               std::optional<int64_t> layers);

// The sliding window of |config| and which layers it applies to, into |m| (whose num_layers and
// model_type are read): layer_types where given (transformers 4.53 and later: "sliding_attention"
// or "full_attention" per layer), else the family's rule: Gemma 2 every other layer from the first
// (Gemma2Attention: is_sliding = not layer_idx % 2), Gemma 3 all but every
// sliding_window_pattern-th (default 6; Gemma3Attention: (layer_idx + 1) % pattern != 0), Qwen2 and
// Qwen3 with use_sliding_window the layers from max_window_layers on, every layer otherwise
// (Mistral, Mixtral, Phi-3, Starcoder2). A null sliding_window, or use_sliding_window false, is
// none. Problems are recorded in |r|: a window below 1, a layer_types list of another length or
// with a kind loom does not model (Llama 4's chunked_attention).
void ReadSlidingWindow(JsonReader& r, ModelSpec* m);

}  // namespace model_reader
}  // namespace loom

#endif  // LOOM_SPEC_MODEL_READER_H_
