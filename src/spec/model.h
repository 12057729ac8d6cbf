#ifndef LOOM_SPEC_MODEL_H_
#define LOOM_SPEC_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/enum_names.h"
#include "core/status.h"

namespace loom {

// A 2-matrix MLP (up, down: GPT-2, GPT-NeoX) or a 3-matrix gated one (gate, up, down: Llama,
// Gemma; Shazeer 2020 "GLU Variants"). A known model_type decides (spec/model_family.h); without
// one, the activation does: gelu and relu kinds plain, silu and swiglu gated.
enum class MlpKind { kPlain, kGated };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kRotary, kLearnedAbsolute };

inline constexpr EnumNames<PositionKind, 2> kPositionNames({{
    {PositionKind::kRotary, "rope"},
    {PositionKind::kLearnedAbsolute, "learned_absolute"},
}});

// How a router turns its logits into expert weights (Hugging Face scoring_func).
enum class RouterScore { kSoftmax, kSigmoid };

// Mixture of experts (Mixtral: num_local_experts; DeepSeek: n_routed_experts).
struct MoeSpec {
  int64_t num_experts = 0;               // routed experts per MoE layer
  int64_t experts_per_token = 0;         // num_experts_per_tok (top-k)
  int64_t expert_intermediate_size = 0;  // moe_intermediate_size, else intermediate_size
  int64_t num_shared_experts = 0;        // n_shared_experts (DeepSeek), or 1 (Qwen2-MoE)
  int64_t shared_expert_intermediate_size =
      0;                            // width of each shared expert: moe_intermediate_size
                                    // (DeepSeek), shared_expert_intermediate_size (Qwen2-MoE)
  bool shared_expert_gate = false;  // Qwen2-MoE: a hidden -> 1 sigmoid gate on the shared expert
  int64_t first_dense_layers = 0;   // first_k_dense_replace, or Qwen's mlp_only_layers
                                    // [0, k): leading layers with a dense MLP

  // Routing, as DeepSeek's modeling code reads these keys (absent: Mixtral's routing).
  RouterScore score = RouterScore::kSoftmax;  // scoring_func
  bool normalize_top_k = true;                // norm_topk_prob (Mixtral always renormalises)
  int64_t router_groups = 0;       // n_group when topk_method limits routing to groups, else 0
  int64_t router_group_top_k = 0;  // topk_group: groups a token may reach
  bool expert_bias = false;        // topk_method "noaux_tc": auxiliary-loss-free bias on the scores
  double routed_scaling_factor = 1.0;  // routed_scaling_factor: multiplies the top-k weights
  double aux_loss_coeff = 0.0;     // router_aux_loss_coef (Mixtral) or aux_loss_alpha (DeepSeek)
  bool sequence_aux_loss = false;  // seq_aux: the balance loss per sequence, not per batch
};

// Rotary-embedding scaling (Hugging Face rope_scaling; its "rope_type", or "type" in older files).
// kOther: a kind loom does not simulate differently and no emitter expresses (linear, dynamic,
// ...).
enum class RopeScalingKind { kLlama3, kYarn, kOther };

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kLlama3;
  std::string type;  // the file's own name for the kind
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;
  double low_freq_factor = 0.0;   // llama3
  double high_freq_factor = 0.0;  // llama3
  double beta_fast = 0.0;         // yarn
  double beta_slow = 0.0;         // yarn
  double mscale = 0.0;            // yarn
  double mscale_all_dim = 0.0;    // yarn
};

// DeepSeek multi-head latent attention (DeepSeek-V2 paper, Section 2.1).
struct MlaSpec {
  int64_t q_lora_rank = 0;  // 0: queries projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// A decoder-only transformer as described by a Hugging Face config.json.
struct ModelSpec {
  std::string name;        // file name without directory and ".json" (a snapshot folder: its name)
  std::string file;        // the path it was read from, for messages
  std::string model_type;  // Hugging Face model_type; "" when the file has none
  // Things a user should know that do not stop loom (an unknown model_type); the CLI prints them.
  std::vector<std::string> warnings;

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP width
  int64_t num_layers = 0;         // num_hidden_layers
  int64_t num_heads = 0;          // num_attention_heads
  int64_t num_kv_heads = 0;       // num_key_value_heads, = num_heads when absent
  int64_t head_dim = 0;           // head_dim, = hidden_size / num_heads when absent
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  std::string hidden_act;
  MlpKind mlp = MlpKind::kPlain;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRotary;
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // biases on the q, k and v projections
  bool attention_output_bias = false;  // a bias on the output projection (not in Qwen2)
  bool mlp_bias = false;               // biases on the MLP projections
  bool norm_weights = true;            // false: OLMo 1's LayerNorm without weight or bias
  int64_t norms_per_layer = 2;     // 4 in Gemma 2 and 3: a pre- and a post-norm around each block
  int64_t q_norm_width = 0;        // RMSNorm on the queries, per layer: head_dim (Qwen3, Gemma 3)
                                   // or num_heads * head_dim (OLMo 2); 0 without
  int64_t k_norm_width = 0;        // the same on the keys
  double norm_epsilon = 1e-5;      // rms_norm_eps, layer_norm_eps or layer_norm_epsilon
  double rope_theta = 10000.0;     // rotary base; Hugging Face's default when the key is absent
  double rotary_fraction = 1.0;    // share of each head's dims rotated: rotary_pct (GPT-NeoX: 0.25
                                   // by default) or partial_rotary_factor
  bool parallel_residual = false;  // use_parallel_residual (GPT-NeoX): attention and MLP read the
                                   // same input and add to the residual together
  std::optional<RopeScaling> rope_scaling;  // null or absent: none
  int64_t mtp_layers = 0;  // num_nextn_predict_layers: DeepSeek-V3's multi-token prediction

  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  // Sliding-window attention (Mistral, Gemma 2 and 3, Qwen2 with use_sliding_window, Phi-3): a
  // query of a windowed layer sees itself and the sliding_window - 1 keys before it (Hugging Face's
  // masks keep key k for query q when q - sliding_window < k <= q); 0: every layer attends to the
  // whole sequence. |windowed_layers| has num_layers entries when sliding_window > 0.
  int64_t sliding_window = 0;
  std::vector<bool> windowed_layers;
  // The keys a query of |layer| meets in a sequence of |seq_len| tokens at most: the window in a
  // windowed layer (when shorter), else the sequence.
  int64_t AttentionSpan(int64_t layer, int64_t seq_len) const;
  // Whether |layer| attends to fewer keys than a sequence of |seq_len| holds.
  bool WindowedAt(int64_t layer, int64_t seq_len) const {
    return AttentionSpan(layer, seq_len) < seq_len;
  }
  int64_t NumWindowedLayers() const;

  // Layers whose MLP is a mixture of experts (0 for a dense model).
  int64_t NumMoeLayers() const;
};

// Parameter counts, exact for the architectures loom knows (norm weights and biases included).
struct ParameterCount {
  int64_t total = 0;
  // Parameters touched by one token: total minus the routed experts it is not sent to.
  int64_t active = 0;
  // Input embedding (and learned position) table; a gather, so it costs no FLOPs.
  int64_t embedding = 0;
  // Output projection to the vocabulary; 0 when tied to the input embedding.
  int64_t output_head = 0;
};

// Model FLOPs per token of a sequence of |seq_len| tokens.
struct FlopsPerToken {
  double forward = 0;
  double training = 0;  // forward + backward, no recompute
};

// Reads a Hugging Face config.json, or DIR/config.json when |path| is a folder (a downloaded
// snapshot), or, when nothing is at |path| and it reads as a hub model name (ORG/NAME[@REVISION]),
// that model's snapshot in the Hugging Face hub cache, offline (spec/hub_cache.h). Keys loom does
// not use are ignored; a key that looks like a misspelling of one it uses, or that changes the
// parameters or FLOPs in a way loom does not model, is an error. Errors name the file, the key and
// the fix; an unknown model_type is a warning in ModelSpec::warnings.
Result<ModelSpec> LoadModelSpec(const std::string& path);
// Same, from an already parsed object; |file| names it in messages.
Result<ModelSpec> ParseModelSpec(const nlohmann::json& config, const std::string& file);

// How messages name |model|: the file it came from, else its name, else "the model".
std::string ModelRef(const ModelSpec& model);

// Counts parameters; an error if any count overflows 64 bits.
Result<ParameterCount> CountParameters(const ModelSpec& model);

// Model FLOPs per token: 2 per multiply-add of every matmul weight a token passes through (output
// head included, input embedding excluded) plus attention scores and values over the full
// sequence (over the window in a windowed layer: ModelSpec::AttentionSpan), not halved for causal
// masking — the convention of Narayanan et al. 2021 (eq. 3) and
// PaLM (Chowdhery et al. 2022, App. B), so MFU compares with published numbers. Training = 3x.
FlopsPerToken ModelFlopsPerToken(const ModelSpec& model, int64_t seq_len);

}  // namespace loom

#endif  // LOOM_SPEC_MODEL_H_
