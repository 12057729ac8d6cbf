// Parameter and FLOP counts of a ModelSpec: what the loader checks and describe reports.

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "core/checked.h"
#include "spec/model.h"

namespace loom {
namespace {

// Weights of one model, counted in exact checked integers (parameters) or in doubles (FLOPs).
// With |extras| false only matmul weights count: no biases, no norm weights.
template <typename Num>
class Weights {
 public:
  Weights(const ModelSpec& m, bool extras) : m_(m), extras_(extras) {}

  Num Linear(Num in, Num out, bool bias) const {
    return in * out + (extras_ && bias ? out : Num(0));
  }

  // RMSNorm has a weight per feature; LayerNorm a weight and a bias; OLMo 1's LayerNorm neither.
  Num Norm(Num width) const {
    if (!extras_ || !m_.norm_weights) return Num(0);
    return width * Num(m_.norm == NormKind::kLayerNorm ? 2 : 1);
  }

  // q, k, v and output projections; k and v have num_kv_heads heads (GQA, Ainslie et al. 2023).
  Num Attention() const {
    if (m_.mla) return Mla(*m_.mla);
    Num h = m_.hidden_size;
    Num q_width = Num(m_.num_heads) * Num(m_.head_dim);
    Num kv_width = Num(m_.num_kv_heads) * Num(m_.head_dim);
    bool bias = m_.attention_bias;
    return Linear(h, q_width, bias) + Num(2) * Linear(h, kv_width, bias) +
           Linear(q_width, h, m_.attention_output_bias) + QkNorms();
  }

  // Query and key RMSNorms (Qwen3, Gemma 3: RMSNorm(head_dim); OLMo 2: over the whole projection).
  Num QkNorms() const {
    if (!extras_) return Num(0);
    return Num(m_.q_norm_width) + Num(m_.k_norm_width);
  }

  // DeepSeek-V2 (Section 2.1) latent attention, laid out as Hugging Face's DeepseekV3Attention:
  // q_a_proj, q_a_layernorm, q_b_proj (or q_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
  // o_proj; attention_bias applies to q_a_proj, kv_a_proj_with_mqa and o_proj only.
  Num Mla(const MlaSpec& a) const {
    Num h = m_.hidden_size;
    Num heads = m_.num_heads;
    bool bias = m_.attention_bias;
    Num q_out = heads * (Num(a.qk_nope_head_dim) + Num(a.qk_rope_head_dim));
    Num q = a.q_lora_rank == 0 ? Linear(h, q_out, false)
                               : Linear(h, a.q_lora_rank, bias) + Norm(a.q_lora_rank) +
                                     Linear(a.q_lora_rank, q_out, false);
    Num kv = Linear(h, Num(a.kv_lora_rank) + Num(a.qk_rope_head_dim), bias) + Norm(a.kv_lora_rank) +
             Linear(a.kv_lora_rank, heads * (Num(a.qk_nope_head_dim) + Num(a.v_head_dim)), false);
    return q + kv + Linear(heads * Num(a.v_head_dim), h, m_.attention_output_bias);
  }

  // up and down projections, plus a gate projection when gated.
  Num Mlp(int64_t width) const {
    Num h = m_.hidden_size;
    Num in_projections = Num(m_.mlp == MlpKind::kGated ? 2 : 1);
    return in_projections * Linear(h, width, m_.mlp_bias) + Linear(width, h, m_.mlp_bias);
  }

  // One layer: attention, its norms (two, or four in Gemma 2/3) and a dense MLP, or a router,
  // |routed| routed experts and the shared experts (with Qwen2-MoE's gate on them).
  Num LayerNorms() const { return Num(m_.norms_per_layer) * Norm(m_.hidden_size); }
  Num DenseLayer() const { return Attention() + LayerNorms() + Mlp(m_.intermediate_size); }
  Num MoeLayer(int64_t routed) const {
    const MoeSpec& e = *m_.moe;
    Num router = Num(e.num_experts) * Num(m_.hidden_size);  // no bias in Mixtral, Qwen or DeepSeek
    Num shared = Num(e.num_shared_experts) * Mlp(e.shared_expert_intermediate_size) +
                 (e.shared_expert_gate ? Num(m_.hidden_size) : Num(0));
    Num experts = Num(routed) * Mlp(e.expert_intermediate_size) + shared;
    return Attention() + LayerNorms() + router + experts;
  }

  // All layers, with |routed| routed experts in each MoE layer.
  Num Layers(int64_t routed) const {
    int64_t moe_layers = m_.NumMoeLayers();
    Num all = Num(m_.num_layers - moe_layers) * DenseLayer();
    return moe_layers == 0 ? all : all + Num(moe_layers) * MoeLayer(routed);
  }

  Num Embedding() const {
    Num tokens = Num(m_.vocab_size) * Num(m_.hidden_size);
    if (m_.position != PositionKind::kLearnedAbsolute) return tokens;
    return tokens + Num(m_.max_position_embeddings) * Num(m_.hidden_size);
  }
  Num OutputHead() const { return Num(m_.vocab_size) * Num(m_.hidden_size); }

 private:
  const ModelSpec& m_;
  bool extras_;
};

std::string KeyValues(std::initializer_list<std::pair<std::string_view, int64_t>> keys) {
  std::string out;
  for (const auto& [key, value] : keys) {
    out += (out.empty() ? "" : ", ") + std::string(key) + " " + std::to_string(value);
  }
  return out;
}

// Remembers the first count that overflowed, as an error naming the keys it is a product of.
class OverflowCheck {
 public:
  explicit OverflowCheck(const ModelSpec& m) : m_(m) {}

  CheckedInt operator()(CheckedInt n, std::string_view part, const std::string& keys) {
    if (n.overflowed() && status_.ok()) {
      status_ = Status::InvalidArgument(m_.file + ": the parameter count of the " +
                                        std::string(part) + " overflows 64 bits (" + keys +
                                        "); check these keys against the model's real config.json: "
                                        "no model comes near 9.2e18 parameters");
    }
    return n;
  }
  const Status& status() const { return status_; }

 private:
  const ModelSpec& m_;
  Status status_;
};

std::string AttentionKeys(const ModelSpec& m) {
  std::string keys =
      KeyValues({{"hidden_size", m.hidden_size}, {"num_attention_heads", m.num_heads}});
  if (!m.mla) {
    return keys + ", " +
           KeyValues({{"num_key_value_heads", m.num_kv_heads}, {"head_dim", m.head_dim}});
  }
  const MlaSpec& a = *m.mla;
  return keys + ", " +
         KeyValues({{"q_lora_rank", a.q_lora_rank},
                    {"kv_lora_rank", a.kv_lora_rank},
                    {"qk_rope_head_dim", a.qk_rope_head_dim},
                    {"qk_nope_head_dim", a.qk_nope_head_dim},
                    {"v_head_dim", a.v_head_dim}});
}

// Checks each part on its own first, so that the error names the keys of the part that overflowed.
Status CheckParts(const ModelSpec& m, const Weights<CheckedInt>& w) {
  OverflowCheck check(m);
  std::string hidden = KeyValues({{"hidden_size", m.hidden_size}});
  check(w.Attention(), "attention", AttentionKeys(m));
  check(w.Mlp(m.intermediate_size), "MLP",
        hidden + ", " + KeyValues({{"intermediate_size", m.intermediate_size}}));
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    check(w.Mlp(e.expert_intermediate_size), "expert MLP",
          hidden + ", " + KeyValues({{"moe_intermediate_size", e.expert_intermediate_size}}));
    check(w.Mlp(e.shared_expert_intermediate_size), "shared expert MLP",
          hidden + ", " +
              KeyValues({{"shared_expert_intermediate_size", e.shared_expert_intermediate_size}}));
    check(w.MoeLayer(e.num_experts), "MoE layer",
          KeyValues({{"num_local_experts/n_routed_experts/num_experts", e.num_experts},
                     {"n_shared_experts", e.num_shared_experts}}));
  }
  check(w.Embedding(), "embedding",
        KeyValues({{"vocab_size", m.vocab_size},
                   {"max_position_embeddings", m.max_position_embeddings}}) +
            ", " + hidden);
  return check.status();
}

}  // namespace

int64_t ModelSpec::NumMoeLayers() const {
  if (!moe) return 0;
  return std::max<int64_t>(0, num_layers - moe->first_dense_layers);
}

Result<ParameterCount> CountParameters(const ModelSpec& model) {
  Weights<CheckedInt> w(model, /*extras=*/true);
  LOOM_RETURN_IF_ERROR(CheckParts(model, w));
  int64_t all_experts = model.moe ? model.moe->num_experts : 0;
  int64_t top_k = model.moe ? model.moe->experts_per_token : 0;
  CheckedInt head = model.tie_word_embeddings ? CheckedInt(0) : w.OutputHead();
  CheckedInt rest = w.Embedding() + head + w.Norm(model.hidden_size);  // final norm
  OverflowCheck check(model);
  std::string keys =
      KeyValues({{"num_hidden_layers", model.num_layers}, {"hidden_size", model.hidden_size}});
  CheckedInt total = check(w.Layers(all_experts) + rest, "whole model", keys);
  CheckedInt active = check(w.Layers(top_k) + rest, "whole model", keys);
  LOOM_RETURN_IF_ERROR(check.status());
  ParameterCount count;
  count.total = total.value();
  count.active = active.value();
  count.embedding = w.Embedding().value();
  count.output_head = head.value();
  return count;
}

FlopsPerToken ModelFlopsPerToken(const ModelSpec& model, int64_t seq_len) {
  Weights<double> w(model, /*extras=*/false);
  double heads = static_cast<double>(model.num_heads);
  double qk_head_dim = static_cast<double>(model.head_dim);
  double v_head_dim = qk_head_dim;
  if (model.mla) {
    qk_head_dim = static_cast<double>(model.mla->qk_nope_head_dim) +
                  static_cast<double>(model.mla->qk_rope_head_dim);
    v_head_dim = static_cast<double>(model.mla->v_head_dim);
  }
  int64_t top_k = model.moe ? model.moe->experts_per_token : 0;
  // The output head is a matmul even when its weight is tied to the input embedding.
  double matmul_weights = w.Layers(top_k) + w.OutputHead();
  // Scores Q K^T and the weighted sum of V: per token, each head meets all |seq_len| positions,
  // or the window's in a windowed layer.
  double spans = 0;
  for (int64_t layer = 0; layer < model.num_layers; ++layer) {
    spans += static_cast<double>(model.AttentionSpan(layer, seq_len));
  }
  double attention = 2 * spans * heads * (qk_head_dim + v_head_dim);
  FlopsPerToken flops;
  flops.forward = 2 * matmul_weights + attention;
  // Backward costs twice the forward: gradients of activations and of weights (Narayanan et al.
  // 2021, Section 5.1).
  flops.training = 3 * flops.forward;
  return flops;
}

}  // namespace loom
