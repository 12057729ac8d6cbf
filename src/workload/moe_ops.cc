// The mixture-of-experts block of a transformer layer as Megatron-core runs it with its all-to-all
// token dispatcher (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher):
// permute -> all-to-all (ep) -> all-gather (tp) -> sort by local expert -> grouped expert GEMMs ->
// unsort -> reduce-scatter (tp) -> all-to-all (ep) -> unpermute, with each expert's MLP split over
// tp (Megatron's default expert-tensor-parallel size) and tokens assumed spread evenly over the
// experts (a balanced router; Fedus et al. 2022, "Switch Transformers", Section 2.2).

#include <utility>
#include <vector>

#include "workload/blocks.h"

namespace loom {
namespace {

constexpr int64_t kFp32 = 4;

// Rows each rank's local experts process together: its tp group's tokens, top_k times each
// (ep ranks send tokens / ep of them to each rank's E / ep experts on average).
int64_t ExpertRows(const LayerDims& d) { return d.tokens * d.top_k; }
// Rows this rank routes: its own (sequence-parallel) tokens, top_k times each.
int64_t RoutedRows(const LayerDims& d) { return d.tokens_sp * d.top_k; }
int64_t ExpertUpWidth(const LayerDims& d) { return d.gated ? 2 * d.expert_ffn : d.expert_ffn; }
bool SortsChunks(const LayerDims& d) { return d.local_experts > 1 && d.ep * d.tp > 1; }

// One grouped GEMM over the local experts, as batched GEMMs of equal shape: the expert rows spread
// evenly, the first rows % experts experts one row more. |shape_of| gives the GEMM of one expert
// with the given rows; |saved_per_row| the bytes kept per row.
template <typename ShapeOf>
void AppendGrouped(const LayerDims& d, OpName name, ShapeOf shape_of, int64_t saved_per_row,
                   std::vector<Op>* ops) {
  const int64_t q = ExpertRows(d) / d.local_experts;
  const int64_t r = ExpertRows(d) % d.local_experts;
  for (auto [experts, rows] : {std::pair{r, q + 1}, std::pair{d.local_experts - r, q}}) {
    if (experts == 0 || rows == 0) continue;
    GemmShape g = shape_of(rows);
    g.batch = experts;
    ops->push_back(MakeGemm(name, g, experts * rows * saved_per_row));
  }
}

Op Copy(OpName name, int64_t bytes) { return MakeMemory(name, {bytes, bytes}); }

void AppendDispatch(const LayerDims& d, std::vector<Op>* f) {
  const int64_t routed = d.Hidden(RoutedRows(d));
  const int64_t gathered = d.Hidden(ExpertRows(d));
  // Router logits, then softmax (or sigmoid) and top-k; keeps the fp32 scores for their backward.
  const int64_t scores = d.tokens_sp * d.experts * kFp32;
  f->push_back(MakeGemm(OpName::kRouter, d.Gemm(d.tokens_sp, d.experts, d.hidden), d.Hidden(d.tokens_sp)));
  f->push_back(MakeMemory(OpName::kRouterTopK,
                          {d.Bytes(d.tokens_sp, d.experts), scores + RoutedRows(d) * kFp32}, scores));
  f->push_back(MakeMemory(OpName::kMoePermute, {d.Hidden(d.tokens_sp), routed}));
  if (d.ep > 1)
    f->push_back(MakeCollective(OpName::kMoeDispatch, {CollectiveKind::kAllToAll, CommGroup::kEp, routed}));
  if (d.tp > 1) {
    f->push_back(MakeCollective(OpName::kMoeDispatchAllGather,
                                {CollectiveKind::kAllGather, CommGroup::kTp, gathered}));
  }
  if (SortsChunks(d)) f->push_back(Copy(OpName::kMoeSortChunks, gathered));
}

void AppendExpertsForward(const LayerDims& d, std::vector<Op>* f) {
  const int64_t up = ExpertUpWidth(d);
  const int64_t rows = ExpertRows(d);
  AppendGrouped(
      d, OpName::kExpertUp, [&](int64_t m) { return d.Gemm(m, up, d.hidden); }, d.Hidden(1), f);
  f->push_back(MakeMemory(OpName::kExpertActivation, {d.Bytes(rows, up), d.Bytes(rows, d.expert_ffn)},
                          d.Bytes(rows, up)));
  AppendGrouped(
      d, OpName::kExpertDown, [&](int64_t m) { return d.Gemm(m, d.hidden, d.expert_ffn); },
      d.Bytes(1, d.expert_ffn), f);
}

void AppendCombine(const LayerDims& d, std::vector<Op>* f) {
  const int64_t routed = d.Hidden(RoutedRows(d));
  const int64_t gathered = d.Hidden(ExpertRows(d));
  if (SortsChunks(d)) f->push_back(Copy(OpName::kMoeUnsortChunks, gathered));
  if (d.tp > 1) {
    f->push_back(MakeCollective(OpName::kMoeCombineReduceScatter,
                                {CollectiveKind::kReduceScatter, CommGroup::kTp, gathered}));
  }
  if (d.ep > 1)
    f->push_back(MakeCollective(OpName::kMoeCombine, {CollectiveKind::kAllToAll, CommGroup::kEp, routed}));
  // Weights each expert output by its routing probability and sums a token's top_k outputs; keeps
  // both for the probabilities' gradient.
  const int64_t probs = RoutedRows(d) * kFp32;
  f->push_back(MakeMemory(OpName::kMoeUnpermute, {routed + probs, d.Hidden(d.tokens_sp)}, routed + probs));
}

void AppendBackward(const LayerDims& d, std::vector<Op>* b) {
  const int64_t routed = d.Hidden(RoutedRows(d));
  const int64_t gathered = d.Hidden(ExpertRows(d));
  const int64_t probs = RoutedRows(d) * kFp32;
  const int64_t up = ExpertUpWidth(d);
  const int64_t rows = ExpertRows(d);
  b->push_back(
      MakeMemory(OpName::kMoeUnpermuteGrad, {d.Hidden(d.tokens_sp) + routed + probs, routed + probs}));
  if (d.ep > 1)
    b->push_back(
        MakeCollective(OpName::kMoeCombineGrad, {CollectiveKind::kAllToAll, CommGroup::kEp, routed}));
  if (d.tp > 1) {
    b->push_back(MakeCollective(OpName::kMoeCombineGradAllGather,
                                {CollectiveKind::kAllGather, CommGroup::kTp, gathered}));
  }
  if (SortsChunks(d)) b->push_back(Copy(OpName::kMoeUnsortChunksGrad, gathered));
  AppendGrouped(
      d, OpName::kExpertDownDgrad, [&](int64_t m) { return d.Gemm(m, d.expert_ffn, d.hidden); }, 0, b);
  b->push_back(
      MakeMemory(OpName::kExpertActivationGrad, {d.Bytes(rows, d.expert_ffn + up), d.Bytes(rows, up)}));
  AppendGrouped(
      d, OpName::kExpertUpDgrad, [&](int64_t m) { return d.Gemm(m, d.hidden, up); }, 0, b);
  if (SortsChunks(d)) b->push_back(Copy(OpName::kMoeSortChunksGrad, gathered));
  if (d.tp > 1) {
    b->push_back(MakeCollective(OpName::kMoeDispatchGradReduceScatter,
                                {CollectiveKind::kReduceScatter, CommGroup::kTp, gathered}));
  }
  if (d.ep > 1)
    b->push_back(
        MakeCollective(OpName::kMoeDispatchGrad, {CollectiveKind::kAllToAll, CommGroup::kEp, routed}));
  b->push_back(MakeMemory(OpName::kMoePermuteGrad, {routed, d.Hidden(d.tokens_sp)}));
  const int64_t scores = d.tokens_sp * d.experts * kFp32;
  b->push_back(MakeMemory(OpName::kRouterTopKGrad, {2 * scores, d.Bytes(d.tokens_sp, d.experts)}));
  b->push_back(MakeGemm(OpName::kRouterDgrad, d.Gemm(d.tokens_sp, d.hidden, d.experts)));
}

}  // namespace

LayerOps MoeMlpOps(const LayerDims& d) {
  LayerOps ops;
  std::vector<Op>& f = ops.forward;
  f.push_back(NormOp(d, OpName::kPostAttentionNorm));
  AppendDispatch(d, &f);
  AppendExpertsForward(d, &f);
  AppendCombine(d, &f);
  // Shared experts (DeepSeekMoE, Dai et al. 2024) run as a dense tp MLP on the same norm output,
  // which the router keeps already.
  const bool shared = d.shared_ffn > 0;
  if (shared) AppendMlpForward(d, d.shared_ffn, /*keeps_input=*/false, &f);
  f.push_back(ResidualOp(d, OpName::kMlpResidual));

  std::vector<Op>& b = ops.backward_input;
  if (d.dropout) b.push_back(ResidualGradOp(d, OpName::kMlpResidualGrad));
  if (shared) AppendMlpBackward(d, d.shared_ffn, &b);
  AppendBackward(d, &b);
  b.push_back(NormGradOp(d, OpName::kPostAttentionNormGrad));

  std::vector<Op>& w = ops.backward_weight;
  if (shared) AppendMlpWeightGrads(d, d.shared_ffn, &w);
  const int64_t up = ExpertUpWidth(d);
  AppendGrouped(
      d, OpName::kExpertDownWgrad, [&](int64_t k) { return d.Gemm(d.expert_ffn, d.hidden, k); }, 0, &w);
  AppendGrouped(
      d, OpName::kExpertUpWgrad, [&](int64_t k) { return d.Gemm(d.hidden, up, k); }, 0, &w);
  w.push_back(MakeGemm(OpName::kRouterWgrad, d.Gemm(d.hidden, d.experts, d.tokens_sp)));
  return ops;
}

}  // namespace loom
