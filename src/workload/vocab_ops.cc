// The vocabulary-parallel ends of the model: the input embedding of the first pipeline stage and
// the output head with cross entropy of the last (Shoeybi et al. 2019, Section 3: the embedding
// and output matrices are split along the vocabulary).

#include <cstdint>
#include <vector>

#include "core/checked.h"
#include "workload/fp8_casts.h"
#include "workload/grad_accumulation.h"
#include "workload/layer_dims.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

constexpr int64_t kFp32Bytes = 4;

// The embedding reads each token's row and keeps the token ids for the scatter-add of W.
void AppendEmbeddingForward(const LayerDims& d, std::vector<Op>* f) {
  const int64_t ids = d.tokens * kIndexBytes;
  const int64_t rows = d.Hidden(d.tokens);
  f->push_back(MakeMemory(OpName::kEmbedding, {ids + rows, rows}, ids));
  if (d.tp > 1) {
    const bool scatter = d.sp && !d.learned_positions;
    const CollectiveKind kind =
        scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    f->push_back(MakeCollective(OpName::kEmbeddingReduce, {kind, CommGroup::kTp, rows}));
  }
  // Learned positions are added after the all-reduce, before the sequence-parallel split.
  if (d.learned_positions)
    f->push_back(MakeMemory(OpName::kPositionEmbedding, {2 * rows + ids, rows}, ids));
  if (d.dropout) {
    const int64_t mask = d.tokens_sp * d.hidden;
    f->push_back(MakeMemory(OpName::kEmbeddingDropout,
                            {d.Hidden(d.tokens_sp), d.Hidden(d.tokens_sp) + mask}, mask));
  }
}

}  // namespace

int64_t PaddedVocabSize(int64_t vocab_size, int64_t tp) {
  const int64_t multiple = 128 * tp;
  return CeilDiv(vocab_size, multiple) * multiple;
}

Result<LayerOps> BuildEmbeddingOps(const ModelSpec& model, const Strategy& strategy,
                                   const LayerOpsOptions& options) {
  LOOM_ASSIGN_OR_RETURN(const LayerDims d, ComputeLayerDims(model, strategy, options));
  LayerOps ops;
  AppendEmbeddingForward(d, &ops.forward);
  if (d.dropout) {
    const int64_t bytes = d.Hidden(d.tokens_sp);
    ops.backward_input.push_back(
        MakeMemory(OpName::kEmbeddingDropoutGrad, {bytes + d.tokens_sp * d.hidden, bytes}));
  }
  // The conjugate of the reduce-scatter, or of the split after the all-reduce, is an all-gather;
  // that of the all-reduce alone is the identity.
  if (d.tp > 1 && d.sp) {
    ops.backward_input.push_back(
        MakeCollective(OpName::kEmbeddingGradAllGather,
                       {CollectiveKind::kAllGather, CommGroup::kTp, d.Hidden(d.tokens)}));
  }
  const int64_t ids = d.tokens * kIndexBytes;
  const int64_t rows = d.Hidden(d.tokens);
  if (d.learned_positions) {
    ops.backward_weight.push_back(MakeMemory(OpName::kPositionEmbeddingWgrad, {rows + ids, rows}));
  }
  ops.backward_weight.push_back(MakeMemory(OpName::kEmbeddingWgrad, {rows + ids, rows}));
  CheckedInt params = CheckedInt(d.vocab) * d.hidden;
  if (d.learned_positions) params += CheckedInt(model.max_position_embeddings) * d.hidden;
  AppendGradAccumulation(strategy, params.get().value_or(INT64_MAX), &ops);
  return ops;
}

Result<LayerOps> BuildOutputOps(const ModelSpec& model, const Strategy& strategy,
                                const LayerOpsOptions& options) {
  LOOM_ASSIGN_OR_RETURN(const LayerDims d, ComputeLayerDims(model, strategy, options));
  const int64_t logits32 = d.tokens * d.vocab * kFp32Bytes;
  const int64_t per_token = d.tokens * kFp32Bytes;
  const bool cast =
      d.act_bytes != kFp32Bytes;  // .float() copies unless the logits are fp32 already
  LayerOps ops;
  std::vector<Op>& f = ops.forward;
  f.push_back(NormOp(d, OpName::kFinalNorm));
  AppendColumnInputForward(d, OpName::kHeadInputAllGather, &f);
  f.push_back(
      MakeGemm(OpName::kOutputHead, d.Gemm(d.tokens, d.vocab, d.hidden), ColumnInputSavedBytes(d)));
  f.push_back(MakeMemory(OpName::kCrossEntropyMax,
                         {d.Bytes(d.tokens, d.vocab), (cast ? logits32 : 0) + per_token,
                          MemoryAccess::kRowReduction}));
  const CollectiveShape one_per_token{CollectiveKind::kAllReduce, CommGroup::kTp, per_token};
  if (d.tp > 1) f.push_back(MakeCollective(OpName::kCrossEntropyMaxAllReduce, one_per_token));
  f.push_back(
      MakeMemory(OpName::kCrossEntropyExp,
                 {logits32 + per_token, logits32 + 2 * per_token, MemoryAccess::kRowReduction}));
  if (d.tp > 1) {
    f.push_back(MakeCollective(OpName::kCrossEntropyPredictedAllReduce, one_per_token));
    f.push_back(MakeCollective(OpName::kCrossEntropySumAllReduce, one_per_token));
  }
  // Keeps the fp32 softmax, the bool target mask and the int64 masked targets.
  const int64_t ce_saved = logits32 + d.tokens * (1 + kIndexBytes);
  f.push_back(MakeMemory(OpName::kCrossEntropyLoss,
                         {logits32 + 2 * per_token, logits32 + per_token}, ce_saved));

  std::vector<Op>& b = ops.backward_input;
  b.push_back(
      MakeMemory(OpName::kCrossEntropyGrad,
                 {logits32 * (cast ? 2 : 1), logits32 + (cast ? d.Bytes(d.tokens, d.vocab) : 0)}));
  AppendColumnInputRegather(d, OpName::kHeadInputRegather, &b);
  b.push_back(MakeGemm(OpName::kOutputHeadDgrad, d.Gemm(d.tokens, d.hidden, d.vocab)));
  AppendColumnInputGradReduce(d, OpName::kHeadInputGradReduce, &b);
  b.push_back(NormGradOp(d, OpName::kFinalNormGrad));
  ops.backward_weight.push_back(
      MakeGemm(OpName::kOutputHeadWgrad, d.Gemm(d.hidden, d.vocab, d.tokens)));
  // The final norm and the head's weight shard. With tied embeddings and one pipeline stage the
  // head's weight is the embedding table, whose two gradients per micro-batch each count here and
  // in BuildEmbeddingOps.
  const int64_t norm = model.norm == NormKind::kLayerNorm ? 2 * d.hidden : d.hidden;
  const CheckedInt params = CheckedInt(d.vocab) * d.hidden + norm;
  AppendGradAccumulation(strategy, params.get().value_or(INT64_MAX), &ops);
  // The head's GEMMs run at loom's fp8 like the layers' linears, with their casts.
  if (d.gemm_dtype == Dtype::kFp8) AppendFp8Casts(d.modules.fp8_weight_cast_every_microbatch, &ops);
  return ops;
}

}  // namespace loom
