// Parameters per rank: a pipeline stage's share of the model, split over tensor and expert
// parallel ranks as Megatron-LM splits them.

#include <string>
#include <vector>

#include "core/checked.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"

namespace loom {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// One layer's parameters on one tp rank, in checked integers.
class ShardedLayer {
 public:
  ShardedLayer(const ModelSpec& m, int64_t tp) : m_(m), tp_(tp) {}

  // Weight split over tp; a column-parallel bias is split with it, a row-parallel one replicated.
  CheckedInt ColumnLinear(int64_t in, int64_t out, bool bias) const {
    return CheckedInt(in) * (out / tp_) + (bias ? out / tp_ : 0);
  }
  CheckedInt RowLinear(int64_t in, int64_t out, bool bias) const {
    return CheckedInt(in / tp_) * out + (bias ? out : 0);
  }
  CheckedInt Norm(int64_t width) const {
    if (!m_.norm_weights) return CheckedInt(0);  // OLMo 1's LayerNorm has no parameters
    return CheckedInt(width) * (m_.norm == NormKind::kLayerNorm ? 2 : 1);
  }
  // A weight every tp rank holds whole (TELinear with parallel_mode "duplicated").
  CheckedInt ReplicatedLinear(int64_t in, int64_t out, bool bias) const {
    return CheckedInt(in) * out + (bias ? out : 0);
  }

  CheckedInt Attention() const {
    if (m_.mla) return LatentAttention(*m_.mla);
    const int64_t q = m_.num_heads * m_.head_dim;
    const int64_t qkv = q + 2 * m_.num_kv_heads * m_.head_dim;
    // Query/key norms (Qwen3, Gemma 3, OLMo 2) kept whole on every rank, as spec/model_size.cc
    // counts them.
    return ColumnLinear(m_.hidden_size, qkv, m_.attention_bias) +
           RowLinear(q, m_.hidden_size, m_.attention_output_bias) + CheckedInt(m_.q_norm_width) +
           m_.k_norm_width;
  }
  // DeepSeek-V2 latent attention as Megatron-core's MLASelfAttention splits it (see mla_ops.cc):
  // the down projections and their norms replicated, the up projections (or linear_q_proj)
  // column parallel, linear_proj row parallel; biases where spec/model_size.cc counts them
  // (q_a_proj, kv_a_proj_with_mqa and o_proj of Hugging Face's DeepseekV3Attention).
  CheckedInt LatentAttention(const MlaSpec& a) const {
    const int64_t h = m_.hidden_size;
    const bool bias = m_.attention_bias;
    const int64_t q_out = m_.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
    const int64_t kv_out = m_.num_heads * (a.qk_nope_head_dim + a.v_head_dim);
    const CheckedInt q = a.q_lora_rank == 0
                             ? ColumnLinear(h, q_out, false)
                             : ReplicatedLinear(h, a.q_lora_rank, bias) + Norm(a.q_lora_rank) +
                                   ColumnLinear(a.q_lora_rank, q_out, false);
    const CheckedInt kv = ReplicatedLinear(h, a.kv_lora_rank + a.qk_rope_head_dim, bias) +
                          Norm(a.kv_lora_rank) + ColumnLinear(a.kv_lora_rank, kv_out, false);
    return q + kv + RowLinear(m_.num_heads * a.v_head_dim, h, m_.attention_output_bias);
  }
  CheckedInt Mlp(int64_t ffn) const {
    const int64_t up = m_.mlp == MlpKind::kGated ? 2 * ffn : ffn;
    return ColumnLinear(m_.hidden_size, up, m_.mlp_bias) +
           RowLinear(ffn, m_.hidden_size, m_.mlp_bias);
  }
  // Attention, the layer's norms and the MLP or, in an MoE layer, the router and the shared
  // experts (with Qwen2-MoE's hidden -> 1 gate on them, replicated).
  CheckedInt Dense(bool moe) const {
    CheckedInt common = Attention() + Norm(m_.hidden_size) * m_.norms_per_layer;
    if (!moe) return common + Mlp(m_.intermediate_size);
    const MoeSpec& e = *m_.moe;
    return common + CheckedInt(e.num_experts) * m_.hidden_size +
           CheckedInt(e.num_shared_experts) * Mlp(e.shared_expert_intermediate_size) +
           (e.shared_expert_gate ? m_.hidden_size : 0);
  }
  // The num_experts / ep routed experts of a rank; construct with the etp size as |tp|.
  CheckedInt RoutedExperts(int64_t ep) const {
    return CheckedInt(m_.moe->num_experts / ep) * Mlp(m_.moe->expert_intermediate_size);
  }

 private:
  const ModelSpec& m_;
  int64_t tp_;
};

Status CheckSplits(const ModelSpec& m, const Strategy& s, int64_t stage) {
  if (s.tp < 1 || s.pp < 1 || s.vpp < 1 || s.ep < 1) {
    return Status::InvalidArgument("--tp, --pp, --vpp and --ep must be at least 1");
  }
  if (stage < 0 || stage >= s.pp) {
    return Status::InvalidArgument("pipeline stage " + Str(stage) + " does not exist with --pp " +
                                   Str(s.pp) + "; use a stage from 0 to " + Str(s.pp - 1));
  }
  if (s.layout.empty() && s.first_stage_layers == 0 && s.last_stage_layers == 0 &&
      m.num_layers % s.pp != 0) {
    return Status::InvalidArgument(ModelRef(m) + ": num_hidden_layers (" + Str(m.num_layers) +
                                   ") is not divisible by pp (" + Str(s.pp) +
                                   "); use a pp that divides it");
  }
  if (!s.layout.empty() && static_cast<int64_t>(s.layout.size()) != s.pp * s.vpp) {
    return Status::InvalidArgument("the pipeline layout has " +
                                   Str(static_cast<int64_t>(s.layout.size())) +
                                   " virtual stages, not pp * vpp = " + Str(s.pp * s.vpp));
  }
  // Latent attention splits over tp by its heads alone: its latent ranks are replicated.
  const bool split = m.num_heads % s.tp == 0 && m.num_kv_heads % s.tp == 0 &&
                     m.intermediate_size % s.tp == 0 &&
                     (!m.moe || (m.moe->expert_intermediate_size % s.tp == 0 &&
                                 m.moe->shared_expert_intermediate_size % s.tp == 0));
  if (!split) {
    return Status::InvalidArgument(ModelRef(m) + ": num_attention_heads (" + Str(m.num_heads) +
                                   "), num_key_value_heads (" + Str(m.num_kv_heads) +
                                   ") and the intermediate sizes must all be divisible by --tp " +
                                   Str(s.tp));
  }
  if (m.moe && (s.ExpertTp() < 1 || m.moe->expert_intermediate_size % s.ExpertTp() != 0)) {
    return Status::InvalidArgument(
        ModelRef(m) + ": the expert intermediate size (" + Str(m.moe->expert_intermediate_size) +
        ") is not divisible by --etp " + Str(s.ExpertTp()) + "; use an etp that divides it");
  }
  if (m.moe && m.moe->num_experts % s.ep != 0) {
    return Status::InvalidArgument(ModelRef(m) + ": the " + Str(m.moe->num_experts) +
                                   " routed experts do not split over --ep " + Str(s.ep) +
                                   "; use an ep that divides " + Str(m.moe->num_experts));
  }
  return Status::Ok();
}

// Layer |i|'s parameters on one rank: the dense part over |layer|'s tp and, in an MoE layer, the
// routed experts over |expert_layer|'s etp and ep.
struct LayerShare {
  CheckedInt dense = 0;
  CheckedInt expert = 0;
};
LayerShare LayerShareOf(const ModelSpec& m, const ShardedLayer& layer,
                        const ShardedLayer& expert_layer, int64_t ep, int64_t i) {
  const bool moe = m.moe.has_value() && i >= m.moe->first_dense_layers;
  return {layer.Dense(moe), moe ? expert_layer.RoutedExperts(ep) : CheckedInt(0)};
}

}  // namespace

Result<RankParameters> ParametersPerRank(const ModelSpec& m, const Strategy& s, int64_t stage) {
  LOOM_RETURN_IF_ERROR(CheckSplits(m, s, stage));
  const ShardedLayer layer(m, s.tp);
  const ShardedLayer expert_layer(m, s.ExpertTp());  // routed experts split over etp, not tp
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, m.num_layers);
  CheckedInt dense = 0;
  CheckedInt expert = 0;
  for (int64_t chunk = 0; chunk < s.vpp; ++chunk) {
    const size_t v = static_cast<size_t>(VirtualStageOf(s.pp, s.schedule, stage, chunk));
    int64_t first = 0;
    for (size_t before = 0; before < v; ++before) first += layers[before];
    for (int64_t i = first; i < first + layers[v]; ++i) {
      const LayerShare share = LayerShareOf(m, layer, expert_layer, s.ep, i);
      dense += share.dense;
      expert += share.expert;
    }
  }
  const CheckedInt vocab_shard =
      CheckedInt(PaddedVocabSize(m.vocab_size, s.tp) / s.tp) * m.hidden_size;
  if (stage == 0) {
    dense += vocab_shard;
    if (m.position == PositionKind::kLearnedAbsolute)
      dense += CheckedInt(m.max_position_embeddings) * m.hidden_size;
  }
  // The output layer sits with the last virtual stage: on the last stage, or on the first where
  // the chunks run in a V.
  if (stage == StageOfVirtualStage(s.pp, s.schedule, s.pp * s.vpp - 1)) {
    dense += layer.Norm(m.hidden_size);
    if (!m.tie_word_embeddings || s.pp > 1) dense += vocab_shard;
  }
  if (dense.overflowed() || expert.overflowed()) {
    return Status::InvalidArgument(ModelRef(m) + ": the parameter count of pipeline stage " +
                                   Str(stage) + " overflows 64 bits; check the model's sizes");
  }
  return RankParameters{dense.value(), expert.value()};
}

Result<int64_t> LayerParametersPerRank(const ModelSpec& m, const Strategy& s, int64_t layer) {
  if (s.tp < 1 || s.ep < 1 || s.ExpertTp() < 1) {
    return Status::InvalidArgument("--tp, --ep and --etp must be at least 1");
  }
  if (layer < 0 || layer >= m.num_layers) {
    return Status::InvalidArgument(ModelRef(m) + ": layer " + Str(layer) +
                                   " does not exist; the model has " + Str(m.num_layers) +
                                   " layers");
  }
  const LayerShare share =
      LayerShareOf(m, ShardedLayer(m, s.tp), ShardedLayer(m, s.ExpertTp()), s.ep, layer);
  const CheckedInt params = share.dense + share.expert;
  if (params.overflowed()) {
    return Status::InvalidArgument(ModelRef(m) + ": the parameter count of layer " + Str(layer) +
                                   " overflows 64 bits; check the model's sizes");
  }
  return params.value();
}

}  // namespace loom
