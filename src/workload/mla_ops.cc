// The multi-head latent attention block of a DeepSeek layer (DeepSeek-V2, Section 2.1), laid out
// as Megatron-core's MLASelfAttention (megatron/core/transformer/multi_latent_attention.py) with
// the layer spec of megatron/core/models/gpt/gpt_layer_specs.py:
//   input norm -> q path: linear_q_down_proj (hidden -> q_lora_rank), q_layernorm,
//                 linear_q_up_proj (-> heads * (qk_nope + qk_rope)), or, with q_lora_rank 0,
//                 linear_q_proj (hidden -> heads * (qk_nope + qk_rope));
//              -> kv path: linear_kv_down_proj (hidden -> kv_lora_rank + qk_rope), kv_layernorm,
//                 linear_kv_up_proj (kv_lora_rank -> heads * (qk_nope + v_head_dim));
//              -> rotary on the rope parts, concatenation into Q and K, the core attention with
//                 head dims qk_nope + qk_rope (Q, K) and v_head_dim (V); linear_proj (row
//                 parallel).
// The split over tp, as Megatron-core places it: the down projections are plain TELinear layers
// built with parallel_mode "duplicated" (replicated on every tp rank), the up projections and
// linear_q_proj column parallel, linear_proj row parallel. With sequence parallelism the
// replicated down projections run on the rank's own s/tp tokens, so the hidden state is NOT
// all-gathered; instead the normed latents are, by the up projections (TE's
// LayerNormColumnParallelLinear fuses q_layernorm/kv_layernorm into them), and the shared rotary
// key part k_pos_emb by gather_from_sequence_parallel_region. This follows the Megatron-core
// source as recalled (core_r0.12 and later; earlier releases made the down projections column
// parallel); it could not be re-read while writing this file. The duplicated weights' gradients
// are summed over tp once per step by finalize_model_grads, which is not an op of a micro-batch.
// Without sp, the column-parallel up projections all-reduce the gradients of their inputs, and
// the gradient of k_pos_emb, which every rank's heads read, is all-reduced too.

#include <vector>

#include "workload/blocks.h"

namespace loom {
namespace {

// What the core's forward ops keep for backward (as in attention_ops.cc).
enum class MlaCoreSaves {
  kAll,               // no recompute: Q, K, V and the log-sum-exp; O is kept by linear_proj
  kCheckpointInputs,  // selective recompute: only Q, K and V, the checkpoint's inputs
  kReplay,            // the recompute replay: its new O and log-sum-exp
};

int64_t QkHeadDim(const LayerDims& d) { return d.qk_nope_dim + d.qk_rope_dim; }
int64_t QUpWidth(const LayerDims& d) { return d.heads * QkHeadDim(d); }
int64_t KvUpWidth(const LayerDims& d) { return d.heads * (d.qk_nope_dim + d.v_head_dim); }
int64_t KvDownWidth(const LayerDims& d) { return d.kv_lora_rank + d.qk_rope_dim; }
int64_t OutWidth(const LayerDims& d) { return d.heads * d.v_head_dim; }
// Megatron makes Q, K (the rope part broadcast over the heads) and V contiguous for the core.
int64_t MlaQkvBytes(const LayerDims& d) {
  return d.Bytes(d.tokens, d.heads * (2 * QkHeadDim(d) + d.v_head_dim));
}
// FlashAttention-2 keeps one fp32 log-sum-exp per query row and head (Dao 2023, Algorithm 1).
int64_t MlaLogSumExpBytes(const LayerDims& d) { return d.batch * d.heads * d.seq * 4; }

// Every head has keys and values of its own: kv_heads = heads.
AttentionShape MlaFlashShape(const LayerDims& d, bool backward) {
  return {.batch = d.batch,
          .heads = d.heads,
          .kv_heads = d.heads,
          .seq_q = d.seq,
          .seq_kv = d.seq_kv,
          .head_dim_qk = QkHeadDim(d),
          .head_dim_v = d.v_head_dim,
          .causal = d.causal,
          .backward = backward,
          .dtype = d.act_dtype,
          .family = d.fused_family};
}

// K and V of the whole sequence for context parallelism; MLA's K is qk_nope + qk_rope wide per
// head, its V v_head_dim.
CollectiveShape MlaCpKvGather(const LayerDims& d, CollectiveKind kind) {
  return {kind, CommGroup::kCp,
          d.Bytes(d.batch * d.seq_kv, d.heads * (QkHeadDim(d) + d.v_head_dim))};
}

std::vector<Op> MlaCoreForward(const LayerDims& d, MlaCoreSaves saves) {
  std::vector<Op> ops;
  if (d.cp > 1)
    ops.push_back(
        MakeCollective(OpName::kCpKvAllGather, MlaCpKvGather(d, CollectiveKind::kAllGather)));
  int64_t saved = MlaQkvBytes(d) + MlaLogSumExpBytes(d);
  if (saves == MlaCoreSaves::kCheckpointInputs) saved = MlaQkvBytes(d);
  if (saves == MlaCoreSaves::kReplay) saved = d.Bytes(d.tokens, OutWidth(d)) + MlaLogSumExpBytes(d);
  ops.push_back(MakeAttention(OpName::kFlashAttention, MlaFlashShape(d, false), saved));
  return ops;
}

void AppendMlaCoreBackward(const LayerDims& d, std::vector<Op>* ops) {
  if (d.cp > 1)
    ops->push_back(
        MakeCollective(OpName::kCpKvRegather, MlaCpKvGather(d, CollectiveKind::kAllGather)));
  ops->push_back(MakeAttention(OpName::kFlashAttentionGrad, MlaFlashShape(d, true)));
  if (d.cp > 1) {
    ops->push_back(MakeCollective(OpName::kCpKvGradReduceScatter,
                                  MlaCpKvGather(d, CollectiveKind::kReduceScatter)));
  }
}

// RMSNorm over a latent of |width| per token on the rank's tokens_sp rows; keeps its input.
Op LatentNormOp(const LayerDims& d, OpName name, int64_t width) {
  const int64_t bytes = d.Bytes(d.tokens_sp, width);
  return MakeMemory(name, {bytes, bytes, MemoryAccess::kRowReduction}, bytes);
}
// Its backward reads dY and X, writes dX.
Op LatentNormGradOp(const LayerDims& d, OpName name, int64_t width) {
  const int64_t bytes = d.Bytes(d.tokens_sp, width);
  return MakeMemory(name, {2 * bytes, bytes, MemoryAccess::kRowReduction});
}

// Rotary embedding of the rope parts of q and of the shared k_pos_emb (Su et al. 2021), and the
// copies into contiguous Q, K and V; its backward moves the same bytes the other way.
Op RotaryOp(const LayerDims& d, OpName name, bool backward) {
  const int64_t parts = d.Bytes(d.tokens, QUpWidth(d) + KvUpWidth(d) + d.qk_rope_dim);
  const int64_t qkv = MlaQkvBytes(d);
  return backward ? MakeMemory(name, {qkv, parts}) : MakeMemory(name, {parts, qkv});
}

// The q path, after the input norm. The down projection keeps the normed input, which the kv
// down projection also reads.
void AppendQueryForward(const LayerDims& d, std::vector<Op>* f) {
  if (d.q_lora_rank == 0) {
    AppendColumnInputForward(d, OpName::kAttentionInputAllGather, f);
    f->push_back(MakeGemm(OpName::kQProj, d.Gemm(d.tokens, QUpWidth(d), d.hidden),
                          ColumnInputSavedBytes(d)));
    return;
  }
  f->push_back(MakeGemm(OpName::kQDownProj, d.Gemm(d.tokens_sp, d.q_lora_rank, d.hidden),
                        d.Hidden(d.tokens_sp)));
  f->push_back(LatentNormOp(d, OpName::kQNorm, d.q_lora_rank));
  AppendColumnInputForward(d, OpName::kQUpInputAllGather, d.q_lora_rank, f);
  f->push_back(MakeGemm(OpName::kQUpProj, d.Gemm(d.tokens, QUpWidth(d), d.q_lora_rank),
                        d.Bytes(d.tokens_sp, d.q_lora_rank)));
}

void AppendKeyValueForward(const LayerDims& d, std::vector<Op>* f) {
  f->push_back(MakeGemm(OpName::kKvDownProj, d.Gemm(d.tokens_sp, KvDownWidth(d), d.hidden)));
  f->push_back(LatentNormOp(d, OpName::kKvNorm, d.kv_lora_rank));
  AppendColumnInputForward(d, OpName::kKRopeAllGather, d.qk_rope_dim, f);
  AppendColumnInputForward(d, OpName::kKvUpInputAllGather, d.kv_lora_rank, f);
  f->push_back(MakeGemm(OpName::kKvUpProj, d.Gemm(d.tokens, KvUpWidth(d), d.kv_lora_rank),
                        d.Bytes(d.tokens_sp, d.kv_lora_rank)));
}

void AppendKeyValueBackward(const LayerDims& d, std::vector<Op>* b) {
  AppendColumnInputForward(d, OpName::kKvUpInputRegather, d.kv_lora_rank, b);
  b->push_back(MakeGemm(OpName::kKvUpProjDgrad, d.Gemm(d.tokens, d.kv_lora_rank, KvUpWidth(d))));
  AppendColumnInputGradReduce(d, OpName::kKvUpInputGradReduce, d.kv_lora_rank, b);
  AppendColumnInputGradReduce(d, OpName::kKRopeGradReduce, d.qk_rope_dim, b);
  b->push_back(LatentNormGradOp(d, OpName::kKvNormGrad, d.kv_lora_rank));
}

void AppendQueryBackward(const LayerDims& d, std::vector<Op>* b) {
  if (d.q_lora_rank == 0) {
    AppendColumnInputRegather(d, OpName::kAttentionInputRegather, b);
    b->push_back(MakeGemm(OpName::kQProjDgrad, d.Gemm(d.tokens, d.hidden, QUpWidth(d))));
    AppendColumnInputGradReduce(d, OpName::kAttentionInputGradReduce, b);
    return;
  }
  AppendColumnInputForward(d, OpName::kQUpInputRegather, d.q_lora_rank, b);
  b->push_back(MakeGemm(OpName::kQUpProjDgrad, d.Gemm(d.tokens, d.q_lora_rank, QUpWidth(d))));
  AppendColumnInputGradReduce(d, OpName::kQUpInputGradReduce, d.q_lora_rank, b);
  b->push_back(LatentNormGradOp(d, OpName::kQNormGrad, d.q_lora_rank));
}

// The down projections' input gradients, on the rank's own tokens: no tp collective.
void AppendDownProjectionsBackward(const LayerDims& d, std::vector<Op>* b) {
  b->push_back(MakeGemm(OpName::kKvDownProjDgrad, d.Gemm(d.tokens_sp, d.hidden, KvDownWidth(d))));
  if (d.q_lora_rank > 0)
    b->push_back(MakeGemm(OpName::kQDownProjDgrad, d.Gemm(d.tokens_sp, d.hidden, d.q_lora_rank)));
}

void AppendWeightGrads(const LayerDims& d, std::vector<Op>* w) {
  w->push_back(MakeGemm(OpName::kOutProjWgrad, d.Gemm(OutWidth(d), d.hidden, d.tokens)));
  w->push_back(MakeGemm(OpName::kKvUpProjWgrad, d.Gemm(d.kv_lora_rank, KvUpWidth(d), d.tokens)));
  if (d.q_lora_rank == 0) {
    w->push_back(MakeGemm(OpName::kQProjWgrad, d.Gemm(d.hidden, QUpWidth(d), d.tokens)));
  } else {
    w->push_back(MakeGemm(OpName::kQUpProjWgrad, d.Gemm(d.q_lora_rank, QUpWidth(d), d.tokens)));
  }
  w->push_back(MakeGemm(OpName::kKvDownProjWgrad, d.Gemm(d.hidden, KvDownWidth(d), d.tokens_sp)));
  if (d.q_lora_rank > 0)
    w->push_back(MakeGemm(OpName::kQDownProjWgrad, d.Gemm(d.hidden, d.q_lora_rank, d.tokens_sp)));
}

}  // namespace

LayerOps LatentAttentionBlockOps(const LayerDims& d) {
  LayerOps ops;
  std::vector<Op>& f = ops.forward;
  f.push_back(NormOp(d, OpName::kInputNorm));
  AppendQueryForward(d, &f);
  AppendKeyValueForward(d, &f);
  f.push_back(RotaryOp(d, OpName::kRotary, /*backward=*/false));
  const bool selective = d.recompute == Recompute::kSelective;
  Append(MlaCoreForward(d, selective ? MlaCoreSaves::kCheckpointInputs : MlaCoreSaves::kAll), &f);
  if (selective) ops.recompute = MlaCoreForward(d, MlaCoreSaves::kReplay);
  f.push_back(MakeGemm(OpName::kOutProj, d.Gemm(d.tokens, d.hidden, OutWidth(d)),
                       d.Bytes(d.tokens, OutWidth(d))));
  AppendRowOutputForward(d, OpName::kAttentionOutputReduce, &f);
  f.push_back(ResidualOp(d, OpName::kAttentionResidual));

  std::vector<Op>& b = ops.backward_input;
  if (d.dropout) b.push_back(ResidualGradOp(d, OpName::kAttentionResidualGrad));
  AppendRowOutputBackward(d, OpName::kAttentionOutputGradAllGather, &b);
  b.push_back(MakeGemm(OpName::kOutProjDgrad, d.Gemm(d.tokens, OutWidth(d), d.hidden)));
  AppendMlaCoreBackward(d, &b);
  b.push_back(RotaryOp(d, OpName::kRotaryGrad, /*backward=*/true));
  AppendKeyValueBackward(d, &b);
  AppendQueryBackward(d, &b);
  AppendDownProjectionsBackward(d, &b);
  b.push_back(NormGradOp(d, OpName::kInputNormGrad));
  AppendWeightGrads(d, &ops.backward_weight);
  return ops;
}

}  // namespace loom
