#ifndef LOOM_WORKLOAD_LAYER_OPS_H_
#define LOOM_WORKLOAD_LAYER_OPS_H_

#include <cstdint>
#include <span>

#include "core/status.h"
#include "op/op.h"
#include "spec/model.h"
#include "spec/module_kernels.h"
#include "spec/strategy.h"

namespace loom {

// How the attention core (softmax(Q K^T / sqrt(d)) V) runs.
enum class AttentionKernel {
  // One fused FlashAttention kernel (Dao et al. 2022; Dao 2023): keeps Q, K, V and the fp32
  // log-sum-exp per query row and head for backward, never the seq x seq probabilities;
  // attention dropout, if any, is regenerated from the RNG state instead of stored as a mask.
  kFused,
  // Megatron-LM's own layers, those of Korthikanti et al. 2022 Section 4.1 and of Megatron-LM
  // without Transformer Engine: the unfused core attention, a batched GEMM Q K^T, the fused causal
  // scale-mask-softmax (which reads only the causal half of the scores), dropout, a batched GEMM
  // with V and a copy back to the [s, b, h] layout; it keeps the probabilities (2 bytes), the
  // dropout mask (1 byte) and the dropped probabilities (2 bytes) per score: the 5as/h term of
  // Table 2. Its linear layers add the QKV bias and reduce every bias gradient in kernels of their
  // own (ColumnBiasOp, BiasGradOp in workload/layer_dims.h). MHA without context parallelism, with
  // the shapes the softmax kernel takes, only.
  kUnfused,
};

struct LayerOpsOptions {
  AttentionKernel attention = AttentionKernel::kFused;
  // With kFused: whose kernel runs it (core/attention_family.h), which sets its rate; the framework
  // chooses it (FrameworkProfile::FusedAttentionFamily).
  AttentionFamily fused_family = AttentionFamily::kFlashAttention2;
  // Dropout after the attention and MLP blocks, after the embedding and on the attention
  // probabilities, with 1-byte masks kept for backward (Megatron-LM's default 0.1, as for GPT-3);
  // Llama-family training uses none.
  bool dropout = false;
  // Causal masking of the attention (decoder language models); false: every query attends to every
  // key, as in encoders and the FlashAttention papers' kernel benchmarks.
  bool causal = true;
  // 0-based index of the layer in the model (MoE models mix dense and MoE layers).
  int64_t layer = 0;
  // Whether the framework issues the backward collectives of column-parallel linears beside a
  // GEMM of the same linear (FrameworkProfile::tp_backward_overlap; TpBackwardPartner says
  // which). The ops are the same either way; costing reads it.
  bool tp_backward_overlap = false;
  // Kernels the framework's modules launch around the layer (FrameworkProfile::layer_kernels):
  // bias-gradient reductions, the QKV split's gradient copy, the unpadding around the attention.
  ModuleKernels modules{};
};

// The GEMM a collective of the backward runs beside when the framework overlaps them
// (LayerOpsOptions::tp_backward_overlap), as Megatron-LM's column-parallel linear issues them
// (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication.
// backward, at d98e8a64; since NVIDIA/Megatron-LM cf7efd4f): the sequence-parallel re-gather of
// the linear's input is issued asynchronously before the input gradient's GEMM, which runs
// meanwhile; the input gradient's all-reduce (reduce-scatter with sequence parallelism) is issued
// asynchronously before the weight gradient's GEMM. Both wait before the backward returns. The
// candidates are the partners of |collective| in the layer kinds that have it (dense QKV or
// latent attention's query projection); a list holds one of them. Empty for a collective that
// blocks (the row-parallel linears' all-gathers of the output gradient, the latent rope's
// reduce, the expert and context-parallel collectives).
std::span<const OpName> TpBackwardPartners(OpName collective);

// The ops of one transformer layer on one tensor-parallel rank for one micro-batch of
// |strategy.micro_batch| sequences of |strategy.seq_len / strategy.cp| tokens each: pre-norm
// attention (MHA or GQA, Ainslie et al. 2023) and a dense MLP (2-matrix GeLU or 3-matrix SwiGLU),
// as Megatron-LM runs them:
// - Column-parallel QKV and MLP-up (gate and up fused), row-parallel output projection and
//   MLP-down (Shoeybi et al. 2019, Section 3).
// - Without sequence parallelism: one all-reduce of b*s*h elements after each block in forward
//   and after each block's first GEMM's input gradient in backward (the f and g operators).
// - With sequence parallelism (Korthikanti et al. 2022, Section 4.2.2): norms, dropout and
//   residuals work on s/tp tokens; an all-gather before QKV and MLP-up, a reduce-scatter after the
//   output projection and MLP-down; in backward their conjugates, plus an all-gather of the saved
//   sequence-sharded input of QKV and MLP-up, issued before their dX GEMM, which the W GEMM of the
//   same linear reads.
// - With context parallelism: K and V of the other cp ranks' chunks are all-gathered before the
//   attention (Llama 3, Dubey et al. 2024, Section 3.3.2; Megatron's ring exchange moves the same
//   bytes), their gradients reduce-scattered after it.
// - A mixture-of-experts layer (moe, from moe.first_dense_layers on) replaces the MLP with
//   Megatron-core's all-to-all token dispatcher: router GEMM on the s/tp tokens of the rank and
//   top-k; permute; all-to-all over ep of tokens_sp * top_k rows; all-gather over the expert
//   tensor-parallel group (etp, tp by default); the num_experts / ep local experts as batched
//   GEMMs, their MLP split over etp; then the way back, and the shared experts as a dense tp MLP.
//   The ops are those of the rank holding the busiest expert, whose rows follow BusiestRankLoad
//   (workload/moe_routing.h) for the strategy's moe_imbalance and moe_capacity_factor: tokens *
//   top_k / local experts rows each for a balanced, dropless router. Requires sp when tp > 1, as
//   Megatron-LM does.
// - Multi-head latent attention (DeepSeek-V2 Section 2.1; models with kv_lora_rank) replaces the
//   QKV projection with Megatron-core's MLASelfAttention: replicated q and kv down projections on
//   the rank's s/tp tokens, their RMSNorms, column-parallel up projections whose latent inputs are
//   all-gathered with sp, rotary on the shared rope part, the fused core with head dims
//   qk_nope + qk_rope and v_head_dim (workload/mla_ops.cc).
// |strategy.recompute| decides the saved bytes of the forward ops and the recompute list, and
// |strategy.grad_accumulation| how the W list accumulates the layer's weight gradients
// (AppendGradAccumulation, workload/grad_accumulation.h, over LayerParametersPerRank).
// Activations are kept in 2-byte bf16 with fp8, whose GEMMs alone are fp8 (Transformer Engine),
// each linear's with Transformer Engine's casts of its input and its output gradient around them
// (AppendFp8Casts, workload/fp8_casts.h; also its weight's per micro-batch with
// ModuleKernels::fp8_weight_cast_every_microbatch).
// Errors: InvalidArgument for model sizes below 1 or that overflow, for MoE with tp > 1 without
// sp, and for latent attention sizes below 1; Unimplemented for the unfused kernel with GQA, cp > 1
// or multi-head latent attention. REQUIRES (and of the builders below):
// LayerSplitViolations(strategy, model) is empty (spec/strategy.h).
Result<LayerOps> BuildTransformerLayerOps(const ModelSpec& model, const Strategy& strategy,
                                          const LayerOpsOptions& options = {});

// Whether Megatron-LM's fused causal softmax takes the attention scores of |strategy| (16-bit
// scores, 16 < seq <= 4096, seq a multiple of 4, micro-batch * heads per rank a multiple of its
// batches per block); else the unfused kernel (AttentionKernel::kUnfused) runs PyTorch's softmax
// in its place (workload/attention_ops.cc).
bool FusedSoftmaxTakes(const ModelSpec& model, const Strategy& strategy);

// Megatron-LM pads the vocabulary to a multiple of 128 * tp so that every rank holds an equal
// shard (megatron/training/tokenizer: _vocab_size_with_padding, --make-vocab-size-divisible-by).
int64_t PaddedVocabSize(int64_t vocab_size, int64_t tp);

// The input stage of the first pipeline stage: Megatron's VocabParallelEmbedding (each rank looks
// up the tokens of its vocabulary shard, zeros elsewhere) then an all-reduce over tp; with
// sequence parallelism and no learned positions a reduce-scatter instead, with learned positions
// an all-reduce followed by a local split (megatron/core/models/common/embeddings/
// language_model_embedding.py). The embedding table's gradient is W, and its accumulation
// (AppendGradAccumulation over the table's shard and the learned positions).
Result<LayerOps> BuildEmbeddingOps(const ModelSpec& model, const Strategy& strategy,
                                   const LayerOpsOptions& options = {});

// The output stage of the last pipeline stage: final norm, the column-parallel head GEMM to
// V/tp logits, and Megatron's vocab_parallel_cross_entropy in fp32 with its three all-reduces of
// one fp32 per token (max, predicted logit, sum of exponentials), which keeps the fp32 softmax
// for backward (megatron/core/tensor_parallel/cross_entropy.py). W ends with the accumulation of
// the head's and the final norm's gradients (AppendGradAccumulation).
Result<LayerOps> BuildOutputOps(const ModelSpec& model, const Strategy& strategy,
                                const LayerOpsOptions& options = {});

}  // namespace loom

#endif  // LOOM_WORKLOAD_LAYER_OPS_H_
