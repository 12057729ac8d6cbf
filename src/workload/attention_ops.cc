// The attention block of a transformer layer: norm, QKV projection, the attention core, output
// projection, residual; Megatron-LM's layout (megatron/core/transformer/attention.py).

#include <vector>

#include "workload/blocks.h"

namespace loom {
namespace {

// What the core's forward ops keep for backward.
enum class CoreSaves {
  kAll,               // no recompute: everything its backward reads
  kCheckpointInputs,  // selective recompute: only Q, K and V, the checkpoint's inputs
  kReplay,            // the recompute replay: what it allocates beyond the kept Q, K and V
};

int64_t QkvBytes(const LayerDims& d) { return d.Bytes(d.tokens, d.q_width + 2 * d.kv_width); }

// FlashAttention-2 keeps one fp32 log-sum-exp per query row and head (Dao 2023, Algorithm 1;
// FlashAttention-1 kept two, the row max and sum).
int64_t LogSumExpBytes(const LayerDims& d) { return d.batch * d.heads * d.seq * 4; }

// K and V of the whole sequence, the all-gather output of context parallelism.
CollectiveShape CpKvGather(const LayerDims& d, CollectiveKind kind) {
  return {kind, CommGroup::kCp, 2 * d.Bytes(d.batch * d.seq_kv, d.kv_width)};
}

AttentionShape FlashShape(const LayerDims& d, bool backward) {
  return {d.batch,    d.heads,  d.kv_heads, d.seq,       d.seq_kv,       d.head_dim,
          d.head_dim, d.causal, backward,   d.act_dtype, d.fused_family, d.window};
}

std::vector<Op> FusedCoreForward(const LayerDims& d, CoreSaves saves) {
  std::vector<Op> ops;
  if (d.cp > 1)
    ops.push_back(
        MakeCollective(OpName::kCpKvAllGather, CpKvGather(d, CollectiveKind::kAllGather)));
  // It also reads its output O in backward; O is the output projection's saved input, and in a
  // replay a new O that the replayed kernel keeps.
  const int64_t saved = saves == CoreSaves::kReplay
                            ? d.Bytes(d.tokens, d.q_width) + LogSumExpBytes(d)
                            : QkvBytes(d) + LogSumExpBytes(d);
  ops.push_back(MakeAttention(OpName::kFlashAttention, FlashShape(d, false), saved));
  return ops;
}

// Bytes of the causal part of the scores, the (seq + 1) / 2 keys at or before each query: what
// Megatron-LM's fused causal softmax reads. Its forward loads only those of each row and writes
// the whole row (zeros past them); its backward loads the output gradient and the output of those
// and writes the whole row (scaled_upper_triang_masked_softmax_warp_forward and _backward, loops
// bounded by local_seq = row + 1: megatron/fused_kernels/scaled_upper_triang_masked_softmax.h at
// NVIDIA/Megatron-LM 6985e589, the kernel of Narayanan et al. 2021 and of Korthikanti et al. 2022).
// Without causal masking (scaled_softmax and scaled_masked_softmax) every score of a row is read.
int64_t CausalScoreBytes(const LayerDims& d) {
  if (!d.causal) return d.batch * d.heads * d.seq * d.seq_kv * d.act_bytes;
  return d.batch * d.heads * (d.seq * (d.seq + 1) / 2) * d.act_bytes;
}

// PyTorch's softmax where Megatron-LM's fused kernel does not take the shape (LayerDims::
// torch_softmax), as FusedScaleMaskSoftmax.forward_torch_softmax runs it (megatron/core/fusions/
// fused_softmax.py at NVIDIA/Megatron-LM d98e8a64, megatron/model/fused_softmax.py at
// microsoft/Megatron-DeepSpeed 4822c87e): 16-bit scores are cast to fp32 (softmax_in_fp32, on by
// default in Megatron-core and forced on by query-key layer scaling), multiplied by the layer
// number with query-key layer scaling, the causal mask filled in place (masked_fill_; the mask is
// one s x s tensor every head and sequence reads, which stays in L2), the softmax in fp32 along
// each row, and the probabilities cast back. Every kernel reads and writes every score. The
// softmax keeps its fp32 output for backward (4 bytes a score, where the fused kernel keeps its
// 16-bit output); the probabilities the product with V reads are the cast's output.
std::vector<Op> TorchSoftmaxForward(const LayerDims& d, int64_t scores) {
  const int64_t fp32 = scores * 4;
  const bool casts = d.act_bytes != 4;
  std::vector<Op> ops;
  if (casts)
    ops.push_back(MakeMemory(OpName::kAttentionSoftmaxUpcast, {scores * d.act_bytes, fp32}));
  if (d.modules.query_key_layer_scaling)
    ops.push_back(MakeMemory(OpName::kAttentionScale, {fp32, fp32}));
  if (d.causal) ops.push_back(MakeMemory(OpName::kAttentionMaskFill, {fp32, fp32}));
  ops.push_back(
      MakeMemory(OpName::kAttentionSoftmax, {fp32, fp32, MemoryAccess::kRowReduction}, fp32));
  if (casts)
    ops.push_back(MakeMemory(OpName::kAttentionSoftmaxDowncast, {fp32, scores * d.act_bytes}));
  return ops;
}

// Their backward, in autograd's order: the cast back's gradient to fp32, the softmax's (its
// output and the gradient read), the mask's (the gradient zeroed where the mask was filled), the
// scale's and the cast's back to 16 bits.
void AppendTorchSoftmaxBackward(const LayerDims& d, int64_t scores, std::vector<Op>* ops) {
  const int64_t fp32 = scores * 4;
  const bool casts = d.act_bytes != 4;
  if (casts)
    ops->push_back(MakeMemory(OpName::kAttentionSoftmaxDowncastGrad, {scores * d.act_bytes, fp32}));
  ops->push_back(
      MakeMemory(OpName::kAttentionSoftmaxGrad, {2 * fp32, fp32, MemoryAccess::kRowReduction}));
  if (d.causal) ops->push_back(MakeMemory(OpName::kAttentionMaskFillGrad, {fp32, fp32}));
  if (d.modules.query_key_layer_scaling)
    ops->push_back(MakeMemory(OpName::kAttentionScaleGrad, {fp32, fp32}));
  if (casts)
    ops->push_back(MakeMemory(OpName::kAttentionSoftmaxUpcastGrad, {fp32, scores * d.act_bytes}));
}

// Korthikanti et al. 2022, Section 4.1: Q K^T keeps Q and K (4sbh), softmax its output (2as^2b),
// dropout its mask (as^2b), the product with V keeps the dropped probabilities (2as^2b) and V.
// The product with V is [b * heads, s, head_dim]; Megatron-LM permutes it back to [s, b, heads *
// head_dim] with a copy (context.permute(2, 0, 1, 3).contiguous(): megatron/model/transformer.py at
// 6985e589, megatron/core/transformer/dot_product_attention.py at d98e8a64); the backward's view of
// the gradient needs none (cuBLAS takes its strides).
std::vector<Op> UnfusedCoreForward(const LayerDims& d, CoreSaves saves) {
  const bool replay = saves == CoreSaves::kReplay;
  const int64_t scores = d.batch * d.heads * d.seq * d.seq_kv;
  const int64_t probs = scores * d.act_bytes;
  const int64_t mask = d.dropout ? scores : 0;
  // Without dropout the product with V reads the softmax's output: the fused kernel's, which the
  // softmax keeps already, or the torch fallback's 16-bit cast, which it does not.
  const int64_t dropped = d.dropout || d.torch_softmax ? probs : 0;
  const int64_t batch = d.batch * d.heads;
  std::vector<Op> ops;
  ops.push_back(MakeGemm(OpName::kAttentionScores,
                         {d.seq, d.seq_kv, d.head_dim, batch, d.gemm_dtype},
                         replay ? 0 : d.Bytes(d.tokens, d.q_width + d.kv_width)));
  if (d.torch_softmax) {
    const std::vector<Op> softmax = TorchSoftmaxForward(d, scores);
    ops.insert(ops.end(), softmax.begin(), softmax.end());
  } else {
    ops.push_back(MakeMemory(OpName::kAttentionSoftmax,
                             {CausalScoreBytes(d), probs, MemoryAccess::kRowReduction}, probs));
  }
  if (d.dropout) ops.push_back(MakeMemory(OpName::kAttentionDropout, {probs, probs + mask}, mask));
  ops.push_back(MakeGemm(OpName::kAttentionContext,
                         {d.seq, d.head_dim, d.seq_kv, batch, d.gemm_dtype},
                         dropped + (replay ? 0 : d.Bytes(d.tokens, d.kv_width))));
  const int64_t context = d.Bytes(d.tokens, d.q_width);
  ops.push_back(MakeMemory(OpName::kAttentionContextCopy, {context, context}));
  return ops;
}

std::vector<Op> CoreForward(const LayerDims& d, CoreSaves saves) {
  std::vector<Op> ops = d.unfused ? UnfusedCoreForward(d, saves) : FusedCoreForward(d, saves);
  if (saves == CoreSaves::kCheckpointInputs) {
    for (Op& op : ops) op.saved_bytes = 0;
    // The first kernel of the core (not the K/V all-gather) holds the checkpoint's inputs.
    Op& first = ops.front().kind == OpKind::kCollective ? ops[1] : ops.front();
    first.saved_bytes = QkvBytes(d);
  }
  return ops;
}

void AppendCoreBackward(const LayerDims& d, std::vector<Op>* ops) {
  if (!d.unfused) {
    if (d.cp > 1)
      ops->push_back(
          MakeCollective(OpName::kCpKvRegather, CpKvGather(d, CollectiveKind::kAllGather)));
    ops->push_back(MakeAttention(OpName::kFlashAttentionGrad, FlashShape(d, true)));
    if (d.cp > 1) {
      ops->push_back(MakeCollective(OpName::kCpKvGradReduceScatter,
                                    CpKvGather(d, CollectiveKind::kReduceScatter)));
    }
    return;
  }
  const int64_t probs = d.batch * d.heads * d.seq * d.seq_kv * d.act_bytes;
  const int64_t batch = d.batch * d.heads;
  const Dtype t = d.gemm_dtype;
  // dP = dO V^T and dV = P^T dO; dS = softmax'(dP); dQ = dS K and dK = dS^T Q.
  ops->push_back(
      MakeGemm(OpName::kAttentionContextDgradProbs, {d.seq, d.seq_kv, d.head_dim, batch, t}));
  ops->push_back(
      MakeGemm(OpName::kAttentionContextDgradValues, {d.seq_kv, d.head_dim, d.seq, batch, t}));
  if (d.dropout) {
    const int64_t mask = probs / d.act_bytes;
    ops->push_back(MakeMemory(OpName::kAttentionDropoutGrad, {probs + mask, probs}));
  }
  if (d.torch_softmax) {
    AppendTorchSoftmaxBackward(d, probs / d.act_bytes, ops);
  } else {
    ops->push_back(MakeMemory(OpName::kAttentionSoftmaxGrad,
                              {2 * CausalScoreBytes(d), probs, MemoryAccess::kRowReduction}));
  }
  ops->push_back(
      MakeGemm(OpName::kAttentionScoresDgradQuery, {d.seq, d.head_dim, d.seq_kv, batch, t}));
  ops->push_back(
      MakeGemm(OpName::kAttentionScoresDgradKey, {d.seq_kv, d.head_dim, d.seq, batch, t}));
}

// Rotary embedding of q and k in place (Su et al. 2021); its backward rotates the gradients back.
Op RotaryOp(const LayerDims& d, OpName name) {
  const int64_t bytes = d.Bytes(d.tokens, d.q_width + d.kv_width);
  return MakeMemory(name, {bytes, bytes});
}

}  // namespace

LayerOps AttentionBlockOps(const LayerDims& d) {
  const int64_t qkv_width = d.q_width + 2 * d.kv_width;
  LayerOps ops;
  std::vector<Op>& f = ops.forward;
  f.push_back(NormOp(d, OpName::kInputNorm));
  AppendColumnInputForward(d, OpName::kAttentionInputAllGather, &f);
  f.push_back(
      MakeGemm(OpName::kQkvProj, d.Gemm(d.tokens, qkv_width, d.hidden), ColumnInputSavedBytes(d)));
  if (d.unfused && d.attention_bias) f.push_back(ColumnBiasOp(d, OpName::kQkvBias, qkv_width));
  if (d.rope) f.push_back(RotaryOp(d, OpName::kRotary));
  // FlashAttention's variable-length kernel on unpadded rows (ModuleKernels::attention_unpad):
  // q, k and v each gathered to the kept rows, which the kernel keeps for backward in place of
  // the views; the int64 row indices kept for the scatters of backward.
  const bool unpad = !d.unfused && d.modules.attention_unpad;
  const int64_t qkv_bytes = QkvBytes(d);
  const int64_t context = d.Bytes(d.tokens, d.q_width);
  if (unpad) {
    f.push_back(
        MakeMemory(OpName::kAttentionUnpad, {qkv_bytes, qkv_bytes}, d.tokens * kIndexBytes));
  }
  const bool selective = d.recompute == Recompute::kSelective;
  Append(CoreForward(d, selective ? CoreSaves::kCheckpointInputs : CoreSaves::kAll), &f);
  if (selective) ops.recompute = CoreForward(d, CoreSaves::kReplay);
  // The output scattered back into a zeroed padded tensor, which the output projection keeps; the
  // kernel keeps its own unpadded output for its backward.
  if (unpad) f.push_back(MakeMemory(OpName::kAttentionPad, {context, 2 * context}, context));
  f.push_back(MakeGemm(OpName::kOutProj, d.Gemm(d.tokens, d.hidden, d.q_width), context));
  AppendRowOutputForward(d, OpName::kAttentionOutputReduce, &f);
  f.push_back(ResidualOp(d, OpName::kAttentionResidual));

  std::vector<Op>& b = ops.backward_input;
  if (d.dropout) b.push_back(ResidualGradOp(d, OpName::kAttentionResidualGrad));
  AppendRowOutputBackward(d, OpName::kAttentionOutputGradAllGather, &b);
  b.push_back(MakeGemm(OpName::kOutProjDgrad, d.Gemm(d.tokens, d.q_width, d.hidden)));
  // The output gradient gathered to the unpadded rows; after the kernel, q's, k's and v's
  // gradients each scattered into a zeroed padded tensor.
  if (unpad) b.push_back(MakeMemory(OpName::kAttentionPadGrad, {context, context}));
  AppendCoreBackward(d, &b);
  if (unpad) b.push_back(MakeMemory(OpName::kAttentionUnpadGrad, {qkv_bytes, 2 * qkv_bytes}));
  if (d.rope) b.push_back(RotaryOp(d, OpName::kRotaryGrad));
  // The split into q, k and v views: its backward concatenates their gradients.
  if (d.modules.qkv_split_grad_copy)
    b.push_back(MakeMemory(OpName::kQkvSplitGrad, {qkv_bytes, qkv_bytes}));
  AppendColumnInputRegather(d, OpName::kAttentionInputRegather, &b);
  b.push_back(MakeGemm(OpName::kQkvProjDgrad, d.Gemm(d.tokens, d.hidden, qkv_width)));
  AppendColumnInputGradReduce(d, OpName::kAttentionInputGradReduce, &b);
  b.push_back(NormGradOp(d, OpName::kInputNormGrad));

  ops.backward_weight.push_back(
      MakeGemm(OpName::kOutProjWgrad, d.Gemm(d.q_width, d.hidden, d.tokens)));
  ops.backward_weight.push_back(
      MakeGemm(OpName::kQkvProjWgrad, d.Gemm(d.hidden, qkv_width, d.tokens)));
  if (d.BiasGradKernels() && d.attention_output_bias) {
    ops.backward_weight.push_back(BiasGradOp(d, OpName::kOutProjBgrad, d.tokens_sp, d.hidden));
  }
  if (d.BiasGradKernels() && d.attention_bias) {
    ops.backward_weight.push_back(BiasGradOp(d, OpName::kQkvProjBgrad, d.tokens, qkv_width));
  }
  return ops;
}

}  // namespace loom
