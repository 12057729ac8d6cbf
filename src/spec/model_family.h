#ifndef LOOM_SPEC_MODEL_FAMILY_H_
#define LOOM_SPEC_MODEL_FAMILY_H_

// What a Hugging Face model_type fixes about a model's layers that its config.json does not say:
// the MLP's gating, the default of tie_word_embeddings, the biases and norms its modeling code
// hard-codes. Read from transformers' configuration_<x>.py and modeling_<x>.py (huggingface/
// transformers, src/transformers/models/<x>/; see model_family.cc for the commit).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/model.h"

namespace loom {

// Where a family's query/key norms sit (Qwen3, Gemma 3: one RMSNorm of head_dim shared by every
// head; OLMo 2: one over all heads of the projection).
enum class QkNorm { kNone, kPerHead, kWholeProjection };

struct ModelFamily {
  std::string_view model_type;
  MlpKind mlp;
  bool tie_word_embeddings;  // the config class's default for tie_word_embeddings
  bool attention_bias;       // default of attention_bias (q, k, v and output projections)
  bool qkv_bias_only;        // q, k and v biases the modeling code always has, no output bias
  bool mlp_bias;             // MLP biases the modeling code always has
  PositionKind position;
  std::optional<NormKind> norm;  // the norm when the config names no epsilon key, else nullopt
  bool norm_weights;             // false: a LayerNorm without weight or bias (OLMo 1)
  int64_t norms_per_layer;
  QkNorm qk_norm;
  bool normalize_top_k;         // default of norm_topk_prob for a mixture of experts
  std::string_view activation;  // default activation when the config names none
};

// The family of |model_type|, or nullopt for a model_type loom does not know.
std::optional<ModelFamily> FindModelFamily(std::string_view model_type);

// The model_type a Hugging Face architecture name ("GemmaForCausalLM") belongs to, or "".
std::string ModelTypeOfArchitecture(std::string_view architecture);

// Every model_type loom knows, comma separated, for messages.
std::string KnownModelTypes();

}  // namespace loom

#endif  // LOOM_SPEC_MODEL_FAMILY_H_
