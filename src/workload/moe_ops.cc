// The mixture-of-experts block of a transformer layer as Megatron-core runs it with its all-to-all
// token dispatcher (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher):
// permute -> all-to-all (ep) -> all-gather (etp) -> sort by local expert -> grouped expert GEMMs ->
// unsort -> reduce-scatter (etp) -> all-to-all (ep) -> unpermute, with each expert's MLP split over
// the expert tensor-parallel group (--expert-tensor-parallel-size, tp by default; the dispatcher's
// tp group is that group). The ops are those of the rank holding the busiest expert, which sets
// the time: its rows follow BusiestRankLoad (workload/moe_routing.h), which spreads tokens evenly
// over the experts for a balanced router (Fedus et al. 2022, "Switch Transformers", Section 2.2).

#include <algorithm>
#include <vector>

#include "workload/blocks.h"
#include "workload/moe_routing.h"

namespace loom {
namespace {

constexpr int64_t kFp32 = 4;

// Rows this rank routes: its own (sequence-parallel) tokens, top_k times each.
int64_t RoutedRows(const LayerDims& d) { return d.tokens_sp * d.top_k; }
int64_t ExpertUpWidth(const LayerDims& d) { return d.gated ? 2 * d.expert_ffn : d.expert_ffn; }
bool SortsChunks(const LayerDims& d) { return d.local_experts > 1 && d.ep * d.etp > 1; }

ExpertLoad LoadOf(const LayerDims& d) {
  MoeRouting r;
  r.experts = d.experts;
  r.top_k = d.top_k;
  r.local_experts = d.local_experts;
  r.ep = d.ep;
  r.etp = d.etp;
  r.routed_rows = RoutedRows(d);
  r.capacity_factor = d.capacity_factor;
  r.imbalance = d.imbalance;
  return BusiestRankLoad(r);
}

// Bytes of the rows this rank keeps after the capacity: what it permutes and unpermutes.
int64_t KeptBytes(const LayerDims& d, const ExpertLoad& load) { return d.Hidden(load.sent_rows); }
// Bytes of the all-to-all on this rank: it sends its kept rows and receives its experts' rows;
// the larger sets its time (the exchange ends when its busiest member has received).
int64_t AllToAllBytes(const LayerDims& d, const ExpertLoad& load) {
  return d.Hidden(std::max(load.sent_rows, load.received_rows));
}
// Bytes of the rows the local experts process, after the etp all-gather.
int64_t GatheredBytes(const LayerDims& d, const ExpertLoad& load) { return d.Hidden(load.rows); }

// One grouped GEMM over the local experts, as one batched GEMM per group of experts with equal
// rows. |shape_of| gives the GEMM of one expert with the given rows; |saved_per_row| the bytes
// kept per row.
template <typename ShapeOf>
void AppendGrouped(const ExpertLoad& load, OpName name, ShapeOf shape_of, int64_t saved_per_row,
                   std::vector<Op>* ops) {
  for (const ExpertRowGroup& group : load.groups) {
    if (group.experts == 0 || group.rows == 0) continue;
    GemmShape g = shape_of(group.rows);
    g.batch = group.experts;
    ops->push_back(MakeGemm(name, g, group.experts * group.rows * saved_per_row));
  }
}

void AppendEp(const LayerDims& d, OpName name, int64_t bytes, std::vector<Op>* ops) {
  if (d.ep > 1)
    ops->push_back(MakeCollective(name, {CollectiveKind::kAllToAll, CommGroup::kEp, bytes}));
}
void AppendEtp(const LayerDims& d, OpName name, CollectiveKind kind, int64_t bytes,
               std::vector<Op>* ops) {
  if (d.etp > 1) ops->push_back(MakeCollective(name, {kind, CommGroup::kEtp, bytes}));
}

Op Copy(OpName name, int64_t bytes) { return MakeMemory(name, {bytes, bytes}); }

void AppendDispatch(const LayerDims& d, const ExpertLoad& load, std::vector<Op>* f) {
  const int64_t gathered = GatheredBytes(d, load);
  // Router logits, then softmax (or sigmoid) and top-k; keeps the fp32 scores for their backward.
  const int64_t scores = d.tokens_sp * d.experts * kFp32;
  f->push_back(
      MakeGemm(OpName::kRouter, d.Gemm(d.tokens_sp, d.experts, d.hidden), d.Hidden(d.tokens_sp)));
  f->push_back(MakeMemory(OpName::kRouterTopK,
                          {d.Bytes(d.tokens_sp, d.experts), scores + RoutedRows(d) * kFp32},
                          scores));
  f->push_back(MakeMemory(OpName::kMoePermute, {d.Hidden(d.tokens_sp), KeptBytes(d, load)}));
  AppendEp(d, OpName::kMoeDispatch, AllToAllBytes(d, load), f);
  AppendEtp(d, OpName::kMoeDispatchAllGather, CollectiveKind::kAllGather, gathered, f);
  if (SortsChunks(d)) f->push_back(Copy(OpName::kMoeSortChunks, gathered));
}

void AppendExpertsForward(const LayerDims& d, const ExpertLoad& load, std::vector<Op>* f) {
  const int64_t up = ExpertUpWidth(d);
  const int64_t rows = load.rows;
  AppendGrouped(
      load, OpName::kExpertUp, [&](int64_t m) { return d.Gemm(m, up, d.hidden); }, d.Hidden(1), f);
  f->push_back(MakeMemory(OpName::kExpertActivation,
                          {d.Bytes(rows, up), d.Bytes(rows, d.expert_ffn)}, d.Bytes(rows, up)));
  AppendGrouped(
      load, OpName::kExpertDown, [&](int64_t m) { return d.Gemm(m, d.hidden, d.expert_ffn); },
      d.Bytes(1, d.expert_ffn), f);
}

void AppendCombine(const LayerDims& d, const ExpertLoad& load, std::vector<Op>* f) {
  const int64_t kept = KeptBytes(d, load);
  const int64_t gathered = GatheredBytes(d, load);
  if (SortsChunks(d)) f->push_back(Copy(OpName::kMoeUnsortChunks, gathered));
  AppendEtp(d, OpName::kMoeCombineReduceScatter, CollectiveKind::kReduceScatter, gathered, f);
  AppendEp(d, OpName::kMoeCombine, AllToAllBytes(d, load), f);
  // Weights each expert output by its routing probability and sums a token's top_k outputs; keeps
  // both for the probabilities' gradient.
  const int64_t probs = RoutedRows(d) * kFp32;
  f->push_back(
      MakeMemory(OpName::kMoeUnpermute, {kept + probs, d.Hidden(d.tokens_sp)}, kept + probs));
}

void AppendExpertsBackward(const LayerDims& d, const ExpertLoad& load, std::vector<Op>* b) {
  const int64_t up = ExpertUpWidth(d);
  const int64_t rows = load.rows;
  AppendGrouped(
      load, OpName::kExpertDownDgrad, [&](int64_t m) { return d.Gemm(m, d.expert_ffn, d.hidden); },
      0, b);
  b->push_back(MakeMemory(OpName::kExpertActivationGrad,
                          {d.Bytes(rows, d.expert_ffn + up), d.Bytes(rows, up)}));
  AppendGrouped(
      load, OpName::kExpertUpDgrad, [&](int64_t m) { return d.Gemm(m, d.hidden, up); }, 0, b);
}

void AppendBackward(const LayerDims& d, const ExpertLoad& load, std::vector<Op>* b) {
  const int64_t kept = KeptBytes(d, load);
  const int64_t gathered = GatheredBytes(d, load);
  const int64_t a2a = AllToAllBytes(d, load);
  const int64_t probs = RoutedRows(d) * kFp32;
  b->push_back(
      MakeMemory(OpName::kMoeUnpermuteGrad, {d.Hidden(d.tokens_sp) + kept + probs, kept + probs}));
  AppendEp(d, OpName::kMoeCombineGrad, a2a, b);
  AppendEtp(d, OpName::kMoeCombineGradAllGather, CollectiveKind::kAllGather, gathered, b);
  if (SortsChunks(d)) b->push_back(Copy(OpName::kMoeUnsortChunksGrad, gathered));
  AppendExpertsBackward(d, load, b);
  if (SortsChunks(d)) b->push_back(Copy(OpName::kMoeSortChunksGrad, gathered));
  AppendEtp(d, OpName::kMoeDispatchGradReduceScatter, CollectiveKind::kReduceScatter, gathered, b);
  AppendEp(d, OpName::kMoeDispatchGrad, a2a, b);
  b->push_back(MakeMemory(OpName::kMoePermuteGrad, {kept, d.Hidden(d.tokens_sp)}));
  const int64_t scores = d.tokens_sp * d.experts * kFp32;
  b->push_back(MakeMemory(OpName::kRouterTopKGrad, {2 * scores, d.Bytes(d.tokens_sp, d.experts)}));
  b->push_back(MakeGemm(OpName::kRouterDgrad, d.Gemm(d.tokens_sp, d.hidden, d.experts)));
}

}  // namespace

LayerOps MoeMlpOps(const LayerDims& d) {
  const ExpertLoad load = LoadOf(d);
  LayerOps ops;
  std::vector<Op>& f = ops.forward;
  f.push_back(NormOp(d, OpName::kPostAttentionNorm));
  AppendDispatch(d, load, &f);
  AppendExpertsForward(d, load, &f);
  AppendCombine(d, load, &f);
  // Shared experts (DeepSeekMoE, Dai et al. 2024) run as a dense tp MLP on the same norm output,
  // which the router keeps already.
  const bool shared = d.shared_ffn > 0;
  if (shared) AppendMlpForward(d, d.shared_ffn, /*keeps_input=*/false, &f);
  f.push_back(ResidualOp(d, OpName::kMlpResidual));

  std::vector<Op>& b = ops.backward_input;
  if (d.dropout) b.push_back(ResidualGradOp(d, OpName::kMlpResidualGrad));
  if (shared) AppendMlpBackward(d, d.shared_ffn, &b);
  AppendBackward(d, load, &b);
  b.push_back(NormGradOp(d, OpName::kPostAttentionNormGrad));

  std::vector<Op>& w = ops.backward_weight;
  if (shared) AppendMlpWeightGrads(d, d.shared_ffn, &w);
  const int64_t up = ExpertUpWidth(d);
  AppendGrouped(
      load, OpName::kExpertDownWgrad, [&](int64_t k) { return d.Gemm(d.expert_ffn, d.hidden, k); },
      0, &w);
  AppendGrouped(
      load, OpName::kExpertUpWgrad, [&](int64_t k) { return d.Gemm(d.hidden, up, k); }, 0, &w);
  w.push_back(MakeGemm(OpName::kRouterWgrad, d.Gemm(d.hidden, d.experts, d.tokens_sp)));
  return ops;
}

}  // namespace loom
