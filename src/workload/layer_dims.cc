#include "workload/layer_dims.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/checked.h"

namespace loom {
namespace {

std::string DimText(int64_t v) { return std::to_string(v); }

bool IsMoeLayerIndex(const ModelSpec& m, int64_t layer) {
  return m.moe.has_value() && layer >= m.moe->first_dense_layers;
}

// The model's own MoE sizes, and the token routing the MoE ops model; how the sizes split over the
// strategy is a strategy rule (LayerSplitViolations).
Status CheckMoe(const ModelSpec& m, const Strategy& s) {
  const MoeSpec& e = *m.moe;
  if (e.num_experts < 1 || e.experts_per_token < 1 || e.experts_per_token > e.num_experts ||
      e.expert_intermediate_size < 1) {
    return Status::InvalidArgument(
        ModelRef(m) + ": the MoE needs at least one expert, 1 to " + DimText(e.num_experts) +
        " experts per token and a positive expert intermediate size (experts " +
        DimText(e.num_experts) + ", num_experts_per_tok " + DimText(e.experts_per_token) +
        ", moe_intermediate_size " + DimText(e.expert_intermediate_size) + ")");
  }
  // megatron/core/transformer/transformer_config.py refuses expert and tensor parallelism without
  // sequence parallelism; the token dispatcher expects each tp rank to route its own s/tp tokens.
  if (s.tp > 1 && !s.sp) {
    return Status::InvalidArgument("--tp " + DimText(s.tp) + " without --sp: the MoE layers of " +
                                   ModelRef(m) +
                                   " route sequence-parallel tokens (Megatron-LM requires sequence "
                                   "parallelism with MoE and tensor parallelism); add --sp");
  }
  return Status::Ok();
}

Status CheckKernel(const ModelSpec& m, const Strategy& s, const LayerOpsOptions& o) {
  const bool windowed = m.WindowedAt(o.layer, s.seq_len);
  if (windowed && o.attention == AttentionKernel::kUnfused) {
    return Status::Unimplemented(
        ModelRef(m) +
        ": the unfused attention kernel is not modelled for sliding-window attention "
        "(sliding_window " +
        DimText(m.sliding_window) + ", shorter than --seq " + DimText(s.seq_len) +
        "): Megatron-LM's own core attention computes every score and masks the window; use the "
        "fused kernel (flash2 or cudnn)");
  }
  if (windowed && o.attention == AttentionKernel::kFused &&
      o.fused_family == AttentionFamily::kTriton) {
    return Status::Unimplemented(
        ModelRef(m) + ": the Triton FlashAttention has no sliding window (sliding_window " +
        DimText(m.sliding_window) +
        "); use --attention flash2 or cudnn, whose kernels skip the "
        "blocks outside the window");
  }
  if (o.attention != AttentionKernel::kUnfused) return Status::Ok();
  if (m.mla) {
    return Status::Unimplemented(
        ModelRef(m) +
        ": the unfused attention kernel is not modelled for multi-head latent "
        "attention (kv_lora_rank " +
        DimText(m.mla->kv_lora_rank) + "); use the fused kernel");
  }
  if (m.num_kv_heads != m.num_heads || s.cp > 1) {
    return Status::Unimplemented(
        ModelRef(m) +
        ": the unfused attention kernel is modelled for multi-head attention "
        "without context parallelism only (num_key_value_heads " +
        DimText(m.num_kv_heads) + ", --cp " + DimText(s.cp) + "); use the fused kernel");
  }
  return Status::Ok();
}

// The model's own sizes; how they split over tp, cp and sp is a strategy rule
// (LayerSplitViolations).
Status CheckSizes(const ModelSpec& m) {
  for (auto [key, v] : {std::pair{"hidden_size", m.hidden_size},
                        {"num_attention_heads", m.num_heads},
                        {"num_key_value_heads", m.num_kv_heads},
                        {"head_dim", m.head_dim},
                        {"intermediate_size", m.intermediate_size},
                        {"vocab_size", m.vocab_size}}) {
    if (v < 1)
      return Status::InvalidArgument(ModelRef(m) + ": " + key + " (" + DimText(v) +
                                     ") must be at least 1");
  }
  if (m.num_heads % m.num_kv_heads != 0) {
    return Status::InvalidArgument(
        ModelRef(m) + ": num_attention_heads (" + DimText(m.num_heads) +
        ") is not a multiple of num_key_value_heads (" + DimText(m.num_kv_heads) +
        "); every key/value head must serve the same number of query heads");
  }
  return Status::Ok();
}

// The largest products the builders form, so that no op size or FLOP count can wrap.
Status CheckOverflow(const ModelSpec& m, const LayerDims& d) {
  const int64_t width = std::max({d.hidden, d.q_width + 2 * d.kv_width, 2 * d.ffn, d.vocab});
  CheckedInt gemm_flops = CheckedInt(2) * d.tokens * width * std::max(d.hidden, 2 * d.ffn) * 4;
  CheckedInt attention_flops =
      CheckedInt(8) * d.batch * d.heads * d.seq * d.seq_kv * d.head_dim * 4;
  CheckedInt saved = CheckedInt(d.tokens) * width * 4 * 32;
  const int64_t expert_width = std::max(d.expert_ffn, d.shared_ffn);
  // The busiest rank's expert rows are at most every routing rank's: tokens_sp * top_k * ep * etp.
  const int64_t expert_rows = std::max(d.tokens, d.tokens_sp * d.etp * d.ep);
  CheckedInt moe =
      CheckedInt(2) * expert_rows * std::max<int64_t>(d.top_k, 1) * d.hidden * expert_width * 8 +
      CheckedInt(d.tokens) * d.experts * d.hidden * 8;
  if (!gemm_flops.overflowed() && !attention_flops.overflowed() && !saved.overflowed() &&
      !moe.overflowed()) {
    return Status::Ok();
  }
  return Status::InvalidArgument(
      ModelRef(m) + ": the layer's FLOP or byte counts overflow 64 bits (hidden_size " +
      DimText(d.hidden) + ", intermediate_size " + DimText(m.intermediate_size) +
      ", tokens per micro-batch " + DimText(d.tokens) +
      "); check the model's sizes and --micro-batch/--seq");
}

// The latent sizes are widths of GEMMs and heads: at least 1, but q_lora_rank, which is 0 when
// queries are projected directly (DeepSeek-V2-Lite).
Status CheckLatentAttention(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  for (auto [key, v] : {std::pair{"kv_lora_rank", a.kv_lora_rank},
                        {"qk_rope_head_dim", a.qk_rope_head_dim},
                        {"qk_nope_head_dim", a.qk_nope_head_dim},
                        {"v_head_dim", a.v_head_dim}}) {
    if (v < 1)
      return Status::InvalidArgument(ModelRef(m) + ": " + key + " (" + DimText(v) +
                                     ") must be at least 1");
  }
  if (a.q_lora_rank < 0) {
    return Status::InvalidArgument(ModelRef(m) + ": q_lora_rank (" + DimText(a.q_lora_rank) +
                                   ") must be 0 (no query compression) or more");
  }
  return Status::Ok();
}

// Checks the latent attention sizes, sets them in |d| and checks that the largest products the
// MLA builder forms (mla_ops.cc) fit 64 bits.
Status SetLatentAttentionDims(const ModelSpec& m, LayerDims* d) {
  LOOM_RETURN_IF_ERROR(CheckLatentAttention(m));
  const MlaSpec& a = *m.mla;
  d->mla = true;
  d->q_lora_rank = a.q_lora_rank;
  d->kv_lora_rank = a.kv_lora_rank;
  d->qk_nope_dim = a.qk_nope_head_dim;
  d->qk_rope_dim = a.qk_rope_head_dim;
  d->v_head_dim = a.v_head_dim;
  const CheckedInt qk = CheckedInt(a.qk_nope_head_dim) + a.qk_rope_head_dim;
  const CheckedInt head = qk * 2 + a.v_head_dim;  // Q, K and V of one head
  const CheckedInt width = head * d->heads + a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim;
  const int64_t k = std::max({d->hidden, a.q_lora_rank, a.kv_lora_rank});
  const CheckedInt gemm_flops = CheckedInt(2) * d->tokens * width * k * 4;
  const CheckedInt attention_flops =
      CheckedInt(8) * d->batch * d->heads * d->seq * d->seq_kv * head;
  const CheckedInt saved = CheckedInt(d->tokens) * width * 4 * 32;
  if (!gemm_flops.overflowed() && !attention_flops.overflowed() && !saved.overflowed())
    return Status::Ok();
  return Status::InvalidArgument(
      ModelRef(m) + ": the latent attention's FLOP or byte counts overflow 64 bits (q_lora_rank " +
      DimText(a.q_lora_rank) + ", kv_lora_rank " + DimText(a.kv_lora_rank) +
      ", tokens per micro-batch " + DimText(d->tokens) +
      "); check the model's sizes and --micro-batch/--seq");
}

}  // namespace

// FusedScaleMaskSoftmax.is_kernel_available (megatron/core/fusions/fused_softmax.py at
// NVIDIA/Megatron-LM d98e8a64; megatron/model/fused_softmax.py at microsoft/Megatron-DeepSpeed
// 4822c87e is the same): 16-bit scores, 16 < seq <= 4096, seq a multiple of 4 and micro-batch *
// heads per rank a multiple of get_batch_per_block, 4 above 128 keys and 8 at or below. Other
// shapes run PyTorch's softmax (forward_torch_softmax).
bool FusedSoftmaxTakes(const ModelSpec& m, const Strategy& s) {
  const Dtype act = ActivationDtype(s.dtype);
  const int64_t attn_batches = s.micro_batch * (m.num_heads / s.tp);
  const int64_t per_block = s.seq_len <= 128 ? 8 : 4;
  return (act == Dtype::kBf16 || act == Dtype::kFp16) && s.seq_len > 16 && s.seq_len <= 4096 &&
         s.seq_len % 4 == 0 && attn_batches % per_block == 0;
}

Dtype ActivationDtype(Dtype dtype) { return dtype == Dtype::kFp8 ? Dtype::kBf16 : dtype; }

Status CheckLayerSupported(const ModelSpec& m, const Strategy& s, const LayerOpsOptions& o) {
  if (o.layer < 0 || o.layer >= m.num_layers) {
    return Status::InvalidArgument(
        ModelRef(m) + ": layer " + DimText(o.layer) + " does not exist; num_hidden_layers is " +
        DimText(m.num_layers) + ", so use a layer from 0 to " + DimText(m.num_layers - 1));
  }
  if (IsMoeLayerIndex(m, o.layer)) LOOM_RETURN_IF_ERROR(CheckMoe(m, s));
  return CheckKernel(m, s, o);
}

Result<LayerDims> ComputeLayerDims(const ModelSpec& m, const Strategy& s,
                                   const LayerOpsOptions& o) {
  LOOM_RETURN_IF_ERROR(CheckSizes(m));
  LayerDims d;
  d.batch = s.micro_batch;
  d.seq = s.seq_len / s.cp;
  d.seq_kv = s.seq_len;
  d.window = m.WindowedAt(o.layer, s.seq_len) ? m.sliding_window : 0;
  d.tokens = d.batch * d.seq;
  d.tokens_sp = s.sp ? d.tokens / s.tp : d.tokens;
  d.hidden = m.hidden_size;
  d.heads = m.num_heads / s.tp;
  d.kv_heads = m.num_kv_heads / s.tp;
  d.head_dim = m.head_dim;
  d.q_width = d.heads * d.head_dim;
  d.kv_width = d.kv_heads * d.head_dim;
  d.ffn = m.intermediate_size / s.tp;
  d.vocab = PaddedVocabSize(m.vocab_size, s.tp) / s.tp;
  d.tp = s.tp;
  d.cp = s.cp;
  d.gemm_dtype = s.dtype;
  d.act_dtype = ActivationDtype(s.dtype);
  d.act_bytes = BytesPerElement(d.act_dtype);
  d.sp = s.sp;
  d.gated = m.mlp == MlpKind::kGated;
  d.rope = m.position == PositionKind::kRotary;
  d.learned_positions = m.position == PositionKind::kLearnedAbsolute;
  d.dropout = o.dropout;
  d.unfused = o.attention == AttentionKernel::kUnfused;
  d.torch_softmax = d.unfused && !FusedSoftmaxTakes(m, s);
  d.modules = o.modules;
  d.fused_family = o.fused_family;
  d.causal = o.causal;
  d.attention_bias = m.attention_bias;
  d.attention_output_bias = m.attention_output_bias;
  d.mlp_bias = m.mlp_bias;
  d.recompute = s.recompute;
  if (m.mla) LOOM_RETURN_IF_ERROR(SetLatentAttentionDims(m, &d));
  if (IsMoeLayerIndex(m, o.layer)) {
    const MoeSpec& e = *m.moe;
    d.moe = true;
    d.experts = e.num_experts;
    d.top_k = e.experts_per_token;
    d.ep = s.ep;
    d.local_experts = e.num_experts / s.ep;
    d.shared_ffn = e.num_shared_experts * e.shared_expert_intermediate_size / s.tp;
    d.etp = s.ExpertTp();
    d.expert_ffn = e.expert_intermediate_size / d.etp;
    d.capacity_factor = s.moe_capacity_factor;
    d.imbalance = s.moe_imbalance;
  }
  LOOM_RETURN_IF_ERROR(CheckOverflow(m, d));
  return d;
}

Op NormOp(const LayerDims& d, OpName name) {
  const int64_t bytes = d.Hidden(d.tokens_sp);
  return MakeMemory(name, {bytes, bytes, MemoryAccess::kRowReduction}, bytes);
}

Op NormGradOp(const LayerDims& d, OpName name) {
  const int64_t bytes = d.Hidden(d.tokens_sp);
  return MakeMemory(name, {3 * bytes, bytes, MemoryAccess::kRowReduction});
}

Op ResidualOp(const LayerDims& d, OpName name) {
  const int64_t bytes = d.Hidden(d.tokens_sp);
  // Megatron's fused bias-dropout-add: reads the block output and the residual, writes the sum.
  const int64_t mask = d.dropout ? d.tokens_sp * d.hidden : 0;  // torch keeps 1-byte bool masks
  return MakeMemory(name, {2 * bytes, bytes + mask}, mask);
}

Op ResidualGradOp(const LayerDims& d, OpName name) {
  const int64_t bytes = d.Hidden(d.tokens_sp);
  return MakeMemory(name, {bytes + d.tokens_sp * d.hidden, bytes});
}

Op ColumnBiasOp(const LayerDims& d, OpName name, int64_t width) {
  const int64_t bytes = d.Bytes(d.tokens, width);
  return MakeMemory(name, {bytes, bytes});
}

Op BiasGradOp(const LayerDims& d, OpName name, int64_t rows, int64_t width) {
  return MakeMemory(name, {d.Bytes(rows, width), d.Bytes(1, width)});
}

void AppendColumnInputForward(const LayerDims& d, OpName gather, std::vector<Op>* ops) {
  AppendColumnInputForward(d, gather, d.hidden, ops);
}

void AppendColumnInputForward(const LayerDims& d, OpName gather, int64_t width,
                              std::vector<Op>* ops) {
  if (d.tp == 1 || !d.sp) return;
  ops->push_back(MakeCollective(
      gather, {CollectiveKind::kAllGather, CommGroup::kTp, d.Bytes(d.tokens, width)}));
}

void AppendColumnInputRegather(const LayerDims& d, OpName regather, std::vector<Op>* ops) {
  AppendColumnInputForward(d, regather, d.hidden, ops);
}

void AppendColumnInputGradReduce(const LayerDims& d, OpName reduce, std::vector<Op>* ops) {
  AppendColumnInputGradReduce(d, reduce, d.hidden, ops);
}

void AppendColumnInputGradReduce(const LayerDims& d, OpName reduce, int64_t width,
                                 std::vector<Op>* ops) {
  if (d.tp == 1) return;
  const CollectiveKind kind = d.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  ops->push_back(MakeCollective(reduce, {kind, CommGroup::kTp, d.Bytes(d.tokens, width)}));
}

void AppendRowOutputForward(const LayerDims& d, OpName reduce, std::vector<Op>* ops) {
  if (d.tp == 1) return;
  const CollectiveKind kind = d.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  ops->push_back(MakeCollective(reduce, {kind, CommGroup::kTp, d.Hidden(d.tokens)}));
}

void AppendRowOutputBackward(const LayerDims& d, OpName gather, std::vector<Op>* ops) {
  if (d.tp == 1 || !d.sp) return;
  ops->push_back(
      MakeCollective(gather, {CollectiveKind::kAllGather, CommGroup::kTp, d.Hidden(d.tokens)}));
}

int64_t ColumnInputSavedBytes(const LayerDims& d) { return d.Hidden(d.tokens_sp); }

void Append(const std::vector<Op>& from, std::vector<Op>* to) {
  to->insert(to->end(), from.begin(), from.end());
}

}  // namespace loom
