#include "workload/layer_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "op/op.h"
#include "workload/shipped_model.h"

namespace loom {
namespace {

Strategy Tp(int64_t tp, bool sp, int64_t micro_batch = 1, int64_t seq = 2048) {
  Strategy s;
  s.tp = tp;
  s.sp = sp;
  s.micro_batch = micro_batch;
  s.seq_len = seq;
  s.dtype = Dtype::kBf16;
  return s;
}

LayerOps Build(const ModelSpec& m, const Strategy& s, LayerOpsOptions o = {}) {
  Result<LayerOps> ops = BuildTransformerLayerOps(m, s, o);
  EXPECT_TRUE(ops.ok()) << (ops.ok() ? "" : ops.status().message());
  return ops.ok() ? *ops : LayerOps();
}

const Op& Find(const std::vector<Op>& ops, OpName name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << OpNameString(name);
  static const Op kMissing;
  return kMissing;
}

GemmShape GemmOf(const std::vector<Op>& ops, OpName name) {
  const Op& op = Find(ops, name);
  EXPECT_EQ(op.kind, OpKind::kGemm);
  const auto* shape = std::get_if<GemmShape>(&op.shape);
  return shape ? *shape : GemmShape{};
}

void ExpectGemm(const GemmShape& g, int64_t m, int64_t n, int64_t k) {
  EXPECT_EQ(g.m, m);
  EXPECT_EQ(g.n, n);
  EXPECT_EQ(g.k, k);
}

int64_t GemmFlopsOf(const std::vector<Op>& ops) {
  int64_t total = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kGemm) total += OpFlops(op);
  }
  return total;
}

// "all_reduce tp 8388608, ..." for every collective of |ops|, in order.
std::string Collectives(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kCollective) continue;
    const auto& c = std::get<CollectiveShape>(op.shape);
    out += (out.empty() ? "" : ", ") + std::string(kCollectiveKindNames.Name(c.kind)) + " " +
           std::string(kCommGroupNames.Name(c.group)) + " " + std::to_string(c.bytes);
  }
  return out;
}

std::vector<std::string> Names(const std::vector<Op>& ops) {
  std::vector<std::string> names;
  for (const Op& op : ops) names.emplace_back(OpNameString(op.name));
  return names;
}

std::string ErrorOf(const Result<LayerOps>& ops) { return ops.ok() ? "" : ops.status().message(); }

TEST(TransformerLayerOps, Gpt3GemmShapesAreExactForTheTpShard) {
  // GPT-3 175B: h 12288, 96 heads, ffn 4h; tp 8, one sequence of 2048 tokens.
  LayerOps ops = Build(Shipped("gpt3-175b"), Tp(8, false));
  ExpectGemm(GemmOf(ops.forward, OpName::kQkvProj), 2048, 3 * 12288 / 8, 12288);
  ExpectGemm(GemmOf(ops.forward, OpName::kOutProj), 2048, 12288, 12288 / 8);
  ExpectGemm(GemmOf(ops.forward, OpName::kMlpUp), 2048, 4 * 12288 / 8, 12288);
  ExpectGemm(GemmOf(ops.forward, OpName::kMlpDown), 2048, 12288, 4 * 12288 / 8);
  // dX = dY W^T: [tokens, out] x [out, in]; dW = X^T dY: [in, tokens] x [tokens, out].
  ExpectGemm(GemmOf(ops.backward_input, OpName::kQkvProjDgrad), 2048, 12288, 4608);
  ExpectGemm(GemmOf(ops.backward_input, OpName::kOutProjDgrad), 2048, 1536, 12288);
  ExpectGemm(GemmOf(ops.backward_input, OpName::kMlpUpDgrad), 2048, 12288, 6144);
  ExpectGemm(GemmOf(ops.backward_input, OpName::kMlpDownDgrad), 2048, 6144, 12288);
  ExpectGemm(GemmOf(ops.backward_weight, OpName::kQkvProjWgrad), 12288, 4608, 2048);
  ExpectGemm(GemmOf(ops.backward_weight, OpName::kOutProjWgrad), 1536, 12288, 2048);
  ExpectGemm(GemmOf(ops.backward_weight, OpName::kMlpUpWgrad), 12288, 6144, 2048);
  ExpectGemm(GemmOf(ops.backward_weight, OpName::kMlpDownWgrad), 6144, 12288, 2048);
  // The four GEMMs, then the add of the biases' and norms' gradients into the fp32 main_grad
  // (Megatron-LM's default fused accumulation, GradAccumulation::kFused).
  EXPECT_EQ(ops.backward_weight.size(), 5u);
  EXPECT_EQ(ops.backward_weight.back().name, OpName::kGradAccumulate);
  const Op& attention = Find(ops.forward, OpName::kFlashAttention);
  const auto& a = std::get<AttentionShape>(attention.shape);
  EXPECT_EQ(a.heads, 12);
  EXPECT_EQ(a.kv_heads, 12);
  EXPECT_EQ(a.seq_q, 2048);
  EXPECT_EQ(a.seq_kv, 2048);
  EXPECT_EQ(a.head_dim_qk, 128);
  EXPECT_TRUE(a.causal);
  EXPECT_FALSE(a.backward);
}

TEST(TransformerLayerOps, Gpt3ForwardFlopsMatchNarayananPerTpRank) {
  // Narayanan et al. 2021, eq. 3 per layer: 24 b s h^2 + 4 b s^2 h, split over t ranks.
  const int64_t b = 2, s = 2048, h = 12288, t = 8;
  const int64_t gemm = 24 * b * s * h * h / t;
  const int64_t attention = 4 * b * s * s * h / t;
  LayerOps fused = Build(Shipped("gpt3-175b"), Tp(t, false, b));
  EXPECT_EQ(GemmFlopsOf(fused.forward), gemm);
  EXPECT_EQ(TotalFlops(fused.forward), gemm + attention);
  LayerOpsOptions unfused_options;
  unfused_options.attention = AttentionKernel::kUnfused;
  LayerOps unfused = Build(Shipped("gpt3-175b"), Tp(t, false, b), unfused_options);
  // The unfused core attention is two batched GEMMs: Q K^T and P V.
  EXPECT_EQ(GemmFlopsOf(unfused.forward), gemm + attention);
  EXPECT_EQ(GemmOf(unfused.forward, OpName::kAttentionScores).batch, b * 96 / t);
}

TEST(TransformerLayerOps, BackwardHasTwiceTheForwardFlops) {
  for (AttentionKernel kernel : {AttentionKernel::kFused, AttentionKernel::kUnfused}) {
    LayerOpsOptions options;
    options.attention = kernel;
    options.dropout = true;
    LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, true, 4), options);
    const int64_t forward = TotalFlops(ops.forward);
    EXPECT_EQ(TotalFlops(ops.backward_input) + TotalFlops(ops.backward_weight), 2 * forward);
    // W holds one GEMM per weight GEMM of the forward, with the same FLOPs.
    EXPECT_EQ(TotalFlops(ops.backward_weight), 24LL * 4 * 2048 * 6144 * 6144 / 8);
  }
}

TEST(TransformerLayerOps, TensorParallelAllReducesHiddenStatesWithoutSp) {
  LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, false, 4));
  const std::string ar = "all_reduce tp " + std::to_string(4LL * 2048 * 6144 * 2);
  EXPECT_EQ(Collectives(ops.forward), ar + ", " + ar);
  EXPECT_EQ(Collectives(ops.backward_input), ar + ", " + ar);
  EXPECT_EQ(Collectives(ops.backward_weight), "");
  EXPECT_EQ(Find(ops.forward, OpName::kAttentionOutputReduce).kind, OpKind::kCollective);
  EXPECT_EQ(Find(ops.backward_input, OpName::kAttentionInputGradReduce).kind, OpKind::kCollective);
}

TEST(TransformerLayerOps, SequenceParallelGathersAndScattersHiddenStates) {
  LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, true, 4));
  const std::string bytes = " tp " + std::to_string(4LL * 2048 * 6144 * 2);
  const std::string ag = "all_gather" + bytes, rs = "reduce_scatter" + bytes;
  EXPECT_EQ(Collectives(ops.forward), ag + ", " + rs + ", " + ag + ", " + rs);
  // Per block: gather the output gradient; around the first GEMM's dX, re-gather its saved
  // sequence-sharded input (for W) before it and reduce-scatter dX after it.
  EXPECT_EQ(Collectives(ops.backward_input),
            ag + ", " + ag + ", " + rs + ", " + ag + ", " + ag + ", " + rs);
  // Norms work on s/t tokens.
  const auto& norm = std::get<MemoryShape>(Find(ops.forward, OpName::kInputNorm).shape);
  EXPECT_EQ(norm.bytes_read, 4LL * 2048 / 8 * 6144 * 2);
  // A norm reduces each token's row (core/memory_access.h), forward and backward; a residual
  // add streams.
  EXPECT_EQ(norm.access, MemoryAccess::kRowReduction);
  const auto& grad =
      std::get<MemoryShape>(Find(ops.backward_input, OpName::kPostAttentionNormGrad).shape);
  EXPECT_EQ(grad.access, MemoryAccess::kRowReduction);
  EXPECT_EQ(std::get<MemoryShape>(Find(ops.forward, OpName::kMlpResidual).shape).access,
            MemoryAccess::kStreaming);
}

TEST(TransformerLayerOps, OneRankHasNoCollectives) {
  LayerOps ops = Build(Shipped("llama3-8b"), Tp(1, false));
  EXPECT_EQ(Collectives(ops.forward) + Collectives(ops.backward_input), "");
}

TEST(TransformerLayerOps, LlamaGqaSplitsQueryAndKeyValueHeadsOverTp) {
  // Llama 3 70B: 64 query heads, 8 key/value heads of 128, SwiGLU with ffn 28672; tp 8.
  LayerOps ops = Build(Shipped("llama3-70b"), Tp(8, true, 1, 8192));
  ExpectGemm(GemmOf(ops.forward, OpName::kQkvProj), 8192, (64 + 2 * 8) * 128 / 8, 8192);
  ExpectGemm(GemmOf(ops.forward, OpName::kOutProj), 8192, 8192, 64 * 128 / 8);
  ExpectGemm(GemmOf(ops.forward, OpName::kMlpUp), 8192, 2 * 28672 / 8, 8192);
  ExpectGemm(GemmOf(ops.forward, OpName::kMlpDown), 8192, 8192, 28672 / 8);
  const auto& a = std::get<AttentionShape>(Find(ops.forward, OpName::kFlashAttention).shape);
  EXPECT_EQ(a.heads, 8);
  EXPECT_EQ(a.kv_heads, 1);
  // SwiGLU reads gate and up, writes their product.
  const auto& act = std::get<MemoryShape>(Find(ops.forward, OpName::kMlpActivation).shape);
  EXPECT_EQ(act.bytes_read, 8192LL * 2 * 3584 * 2);
  EXPECT_EQ(act.bytes_written, 8192LL * 3584 * 2);
  EXPECT_EQ(Find(ops.forward, OpName::kRotary).kind, OpKind::kMemoryBound);
}

TEST(TransformerLayerOps, ContextParallelGathersKeysAndValues) {
  Strategy s = Tp(8, true, 1, 8192);
  s.cp = 2;
  LayerOps ops = Build(Shipped("llama3-70b"), s);
  ExpectGemm(GemmOf(ops.forward, OpName::kQkvProj), 4096, 1280, 8192);
  const auto& a = std::get<AttentionShape>(Find(ops.forward, OpName::kFlashAttention).shape);
  EXPECT_EQ(a.seq_q, 4096);
  EXPECT_EQ(a.seq_kv, 8192);
  // K and V of one kv head per tp rank over the whole sequence.
  const auto& gather = std::get<CollectiveShape>(Find(ops.forward, OpName::kCpKvAllGather).shape);
  EXPECT_EQ(gather.group, CommGroup::kCp);
  EXPECT_EQ(gather.bytes, 2LL * 8192 * 128 * 2);
  const auto& scatter =
      std::get<CollectiveShape>(Find(ops.backward_input, OpName::kCpKvGradReduceScatter).shape);
  EXPECT_EQ(scatter.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(scatter.bytes, gather.bytes);
}

TEST(TransformerLayerOps, SelectiveRecomputeReplaysTheAttentionCore) {
  Strategy s = Tp(8, true, 4);
  s.recompute = Recompute::kSelective;
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  unfused.dropout = true;
  EXPECT_EQ(Names(Build(Shipped("megatron-22b"), s, unfused).recompute),
            (std::vector<std::string>{"attn_scores", "attn_softmax", "attn_dropout", "attn_context",
                                      "attn_context_copy"}));
  EXPECT_EQ(Names(Build(Shipped("megatron-22b"), s).recompute),
            std::vector<std::string>{"flash_attention"});
  s.recompute = Recompute::kNone;
  EXPECT_TRUE(Build(Shipped("megatron-22b"), s).recompute.empty());
}

// Without causal masking (LayerOpsOptions::causal false: encoders, the FlashAttention papers'
// benchmarks) the unfused softmax reads every score of a row, and the fused kernel is not causal.
TEST(TransformerLayerOps, AttentionWithoutCausalMaskingReadsEveryScore) {
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  unfused.causal = false;
  LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, false, 4), unfused);
  const int64_t all = 32LL * 2048 * 2048 * 2;
  const auto& forward = std::get<MemoryShape>(Find(ops.forward, OpName::kAttentionSoftmax).shape);
  EXPECT_EQ(forward.bytes_read, all);
  EXPECT_EQ(forward.bytes_written, all);
  const auto& backward =
      std::get<MemoryShape>(Find(ops.backward_input, OpName::kAttentionSoftmaxGrad).shape);
  EXPECT_EQ(backward.bytes_read, 2 * all);
  LayerOpsOptions fused;
  fused.causal = false;
  LayerOps flash = Build(Shipped("megatron-22b"), Tp(8, false, 4), fused);
  EXPECT_FALSE(std::get<AttentionShape>(Find(flash.forward, OpName::kFlashAttention).shape).causal);
  EXPECT_TRUE(std::get<AttentionShape>(Find(Build(Shipped("megatron-22b"), Tp(8, false, 4)).forward,
                                            OpName::kFlashAttention)
                                           .shape)
                  .causal);
}

TEST(TransformerLayerOps, UnfusedCausalSoftmaxReadsOnlyTheKeysAtOrBeforeEachQuery) {
  // 22B, tp 8, micro-batch 4: 4 * 64 / 8 = 32 score matrices of 2048 x 2048 in 2 bytes. The
  // forward reads 2048 * 2049 / 2 scores of each and writes all of them; the backward reads the
  // gradient and the output of those and writes all.
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, false, 4), unfused);
  const int64_t causal = 32LL * (2048 * 2049 / 2) * 2, all = 32LL * 2048 * 2048 * 2;
  const auto& forward = std::get<MemoryShape>(Find(ops.forward, OpName::kAttentionSoftmax).shape);
  EXPECT_EQ(forward.bytes_read, causal);
  EXPECT_EQ(forward.bytes_written, all);
  EXPECT_EQ(Find(ops.forward, OpName::kAttentionSoftmax).saved_bytes, all);  // the probabilities
  const auto& backward =
      std::get<MemoryShape>(Find(ops.backward_input, OpName::kAttentionSoftmaxGrad).shape);
  EXPECT_EQ(backward.bytes_read, 2 * causal);
  EXPECT_EQ(backward.bytes_written, all);
  // The context goes back to [s, b, h / tp] through a copy: 4 * 2048 * 768 elements each way.
  const auto& copy = std::get<MemoryShape>(Find(ops.forward, OpName::kAttentionContextCopy).shape);
  EXPECT_EQ(copy.bytes_read, 4LL * 2048 * 768 * 2);
  EXPECT_EQ(copy.bytes_written, copy.bytes_read);
  // The softmax reduces each row of scores; the dropout and the copy stream.
  EXPECT_EQ(forward.access, MemoryAccess::kRowReduction);
  EXPECT_EQ(backward.access, MemoryAccess::kRowReduction);
  EXPECT_EQ(copy.access, MemoryAccess::kStreaming);
}

TEST(TransformerLayerOps,
     MegatronOwnLinearsAddTheQkvBiasAndReduceBiasGradientsInKernelsOfTheirOwn) {
  // 22B (biases on attention and MLP), tp 8 with sp, micro-batch 4: 8192 tokens, 1024 per rank
  // after the sequence split; QKV 3 * 6144 / 8 = 2304 wide, MLP up 24576 / 8 = 3072.
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  LayerOps ops = Build(Shipped("megatron-22b"), Tp(8, true, 4), unfused);
  const auto& bias = std::get<MemoryShape>(Find(ops.forward, OpName::kQkvBias).shape);
  EXPECT_EQ(bias.bytes_read, 8192LL * 2304 * 2);
  EXPECT_EQ(bias.bytes_written, bias.bytes_read);
  const auto bytes_read = [&](OpName name) {
    return std::get<MemoryShape>(Find(ops.backward_weight, name).shape).bytes_read;
  };
  EXPECT_EQ(bytes_read(OpName::kQkvProjBgrad), 8192LL * 2304 * 2);
  EXPECT_EQ(bytes_read(OpName::kOutProjBgrad), 1024LL * 6144 * 2);  // added on the sequence shard
  EXPECT_EQ(bytes_read(OpName::kMlpUpBgrad), 8192LL * 3072 * 2);
  EXPECT_EQ(bytes_read(OpName::kMlpDownBgrad), 1024LL * 6144 * 2);
  // The bias kernels carry no FLOPs and keep nothing.
  EXPECT_EQ(TotalFlops(ops.backward_weight), 24LL * 4 * 2048 * 6144 * 6144 / 8);
  EXPECT_EQ(Find(ops.forward, OpName::kQkvBias).saved_bytes, 0);
  // Transformer Engine's fused path folds biases into GEMM epilogues; a model without biases has
  // none.
  const auto has = [](const LayerOps& l, std::string_view name) {
    std::vector<std::string> all;
    for (const std::vector<Op>* list : {&l.forward, &l.backward_input, &l.backward_weight}) {
      for (const Op& op : *list) all.emplace_back(OpNameString(op.name));
    }
    return std::find(all.begin(), all.end(), name) != all.end();
  };
  EXPECT_TRUE(has(ops, "mlp_up.bgrad"));
  EXPECT_FALSE(has(Build(Shipped("megatron-22b"), Tp(8, true, 4)), "qkv_bias"));
  EXPECT_FALSE(has(Build(Shipped("megatron-22b"), Tp(8, true, 4)), "qkv_proj.bgrad"));
  // Qwen2's layout: q, k and v biases without an output-projection bias.
  ModelSpec qkv_only = Shipped("megatron-22b");
  qkv_only.attention_output_bias = false;
  const LayerOps qwen = Build(qkv_only, Tp(8, true, 4), unfused);
  EXPECT_TRUE(has(qwen, "qkv_proj.bgrad"));
  EXPECT_FALSE(has(qwen, "out_proj.bgrad"));
  ModelSpec no_bias = Shipped("megatron-22b");
  no_bias.attention_bias = false;
  no_bias.attention_output_bias = false;
  no_bias.mlp_bias = false;
  const LayerOps plain = Build(no_bias, Tp(8, true, 4), unfused);
  EXPECT_FALSE(has(plain, "qkv_bias"));
  EXPECT_FALSE(has(plain, "out_proj.bgrad"));
  EXPECT_FALSE(has(plain, "mlp_down.bgrad"));
}

MemoryShape MemoryOf(const std::vector<Op>& ops, OpName name) {
  const Op& op = Find(ops, name);
  const auto* shape = std::get_if<MemoryShape>(&op.shape);
  return shape ? *shape : MemoryShape{};
}

TEST(TransformerLayerOps, EagerModulesLaunchTheirBiasGradientsSplitCopyAndUnpadding) {
  // GPT-3 1.3B (hidden 2048, biases), one GPU, micro-batch 2 of 2048: 4096 tokens; q, k and v
  // 3 * 2048 wide.
  const ModelSpec m = Shipped("gpt3-1.3b");
  const Strategy s = Tp(1, false, 2);
  const int64_t tokens = 4096, qkv = tokens * 3 * 2048 * 2, context = tokens * 2048 * 2;
  const LayerOps fused = Build(m, s);
  LayerOpsOptions eager;
  eager.modules = {.linear_bias_grads = true, .qkv_split_grad_copy = true, .attention_unpad = true};
  const LayerOps ops = Build(m, s, eager);
  // The fused layer's ops stay; the modules' kernels come in their places.
  EXPECT_EQ(Names(ops.forward),
            (std::vector<std::string>{"input_norm", "qkv_proj", "attn_unpad", "flash_attention",
                                      "attn_pad", "out_proj", "attn_residual", "post_attn_norm",
                                      "mlp_up", "mlp_act", "mlp_down", "mlp_residual"}));
  EXPECT_EQ(Names(ops.backward_input),
            (std::vector<std::string>{"mlp_down.dgrad", "mlp_act.grad", "mlp_up.dgrad",
                                      "post_attn_norm.grad", "out_proj.dgrad", "attn_pad.grad",
                                      "flash_attention.grad", "attn_unpad.grad", "qkv_split.grad",
                                      "qkv_proj.dgrad", "input_norm.grad"}));
  // Unpadding gathers q, k and v (reading and writing each once) and keeps the int64 row indices;
  // the pad zeroes the padded output and writes the rows into it, and keeps the kernel's own
  // unpadded output for its backward.
  EXPECT_EQ(MemoryOf(ops.forward, OpName::kAttentionUnpad).bytes_read, qkv);
  EXPECT_EQ(MemoryOf(ops.forward, OpName::kAttentionUnpad).bytes_written, qkv);
  EXPECT_EQ(Find(ops.forward, OpName::kAttentionUnpad).saved_bytes, tokens * 8);
  EXPECT_EQ(MemoryOf(ops.forward, OpName::kAttentionPad).bytes_written, 2 * context);
  EXPECT_EQ(Find(ops.forward, OpName::kAttentionPad).saved_bytes, context);
  // Backward: the output gradient gathered; q's, k's and v's gradients zeroed and scattered; the
  // split's cat.
  EXPECT_EQ(MemoryOf(ops.backward_input, OpName::kAttentionPadGrad).bytes_read, context);
  EXPECT_EQ(MemoryOf(ops.backward_input, OpName::kAttentionUnpadGrad).bytes_written, 2 * qkv);
  EXPECT_EQ(MemoryOf(ops.backward_input, OpName::kQkvSplitGrad).bytes_read, qkv);
  EXPECT_EQ(MemoryOf(ops.backward_input, OpName::kQkvSplitGrad).bytes_written, qkv);
  // Every linear's bias gradient is a reduction over the tokens; the fused layer has none.
  EXPECT_EQ(Names(fused.backward_weight).size() + 4, Names(ops.backward_weight).size());
  EXPECT_EQ(MemoryOf(ops.backward_weight, OpName::kQkvProjBgrad).bytes_read, qkv);
  EXPECT_EQ(MemoryOf(ops.backward_weight, OpName::kMlpUpBgrad).bytes_read, tokens * 8192 * 2);
  // The modules' kernels add no FLOPs, and the forward keeps the unpadded output besides.
  EXPECT_EQ(TotalFlops(ops.forward), TotalFlops(fused.forward));
  EXPECT_EQ(TotalFlops(ops.backward_weight), TotalFlops(fused.backward_weight));
  // Megatron's own unfused attention has no FlashAttention to unpad for; its bias gradients are
  // there either way.
  LayerOpsOptions unfused = eager;
  unfused.attention = AttentionKernel::kUnfused;
  const LayerOps own = Build(m, s, unfused);
  for (const std::string& name : Names(own.forward)) EXPECT_NE(name, "attn_unpad");
  for (const std::string& name : Names(own.backward_input)) EXPECT_NE(name, "attn_unpad.grad");
  // Each kernel comes with its own flag alone.
  LayerOpsOptions split_only;
  split_only.modules.qkv_split_grad_copy = true;
  const LayerOps split = Build(m, s, split_only);
  EXPECT_EQ(Names(split.forward), Names(fused.forward));
  EXPECT_EQ(Names(split.backward_input).size(), Names(fused.backward_input).size() + 1);
  EXPECT_EQ(Names(split.backward_weight), Names(fused.backward_weight));
}

// Where Megatron-LM's fused softmax does not take the scores (beyond 4096 keys, 32-bit scores, or
// micro-batch * heads per rank not a multiple of 4: GPT-3 175B at tp 32 has 3 heads a rank),
// FusedScaleMaskSoftmax runs PyTorch's softmax: the scores cast to fp32, scaled by the layer
// number with query-key layer scaling, the causal mask filled in, the softmax and the cast back,
// each reading and writing every score, with the fp32 probabilities kept for backward; and their
// gradients in autograd's order.
TEST(TransformerLayerOps, ShapesTheFusedSoftmaxCannotTakeRunPyTorchsSoftmax) {
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  unfused.dropout = true;
  const auto core = [](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const std::string& n : names) {
      if (n.rfind("attn_s", 0) == 0 || n.rfind("attn_mask", 0) == 0) out.push_back(n);
    }
    return out;
  };
  // The fused kernel takes 1 x 96 / 8 = 12 scores' batches a rank, not 3.
  EXPECT_EQ(core(Names(Build(Shipped("gpt3-175b"), Tp(8, false, 1), unfused).forward)),
            (std::vector<std::string>{"attn_scores", "attn_softmax"}));
  Strategy odd = Tp(32, false, 1);
  odd.allow_cross_node_tp = true;
  const LayerOps torch = Build(Shipped("gpt3-175b"), odd, unfused);
  EXPECT_EQ(core(Names(torch.forward)),
            (std::vector<std::string>{"attn_scores", "attn_softmax_upcast", "attn_mask_fill",
                                      "attn_softmax", "attn_softmax_downcast"}));
  EXPECT_EQ(core(Names(torch.backward_input)),
            (std::vector<std::string>{"attn_softmax_downcast.grad", "attn_softmax.grad",
                                      "attn_mask_fill.grad", "attn_softmax_upcast.grad",
                                      "attn_scores.dgrad_query", "attn_scores.dgrad_key"}));
  const int64_t scores = 1LL * 3 * 2048 * 2048;  // micro-batch, heads a rank, queries, keys
  EXPECT_EQ(MemoryOf(torch.forward, OpName::kAttentionSoftmaxUpcast).bytes_read, 2 * scores);
  EXPECT_EQ(MemoryOf(torch.forward, OpName::kAttentionSoftmaxUpcast).bytes_written, 4 * scores);
  EXPECT_EQ(MemoryOf(torch.forward, OpName::kAttentionSoftmax).bytes_read, 4 * scores);
  EXPECT_EQ(Find(torch.forward, OpName::kAttentionSoftmax).saved_bytes, 4 * scores);
  EXPECT_EQ(MemoryOf(torch.backward_input, OpName::kAttentionSoftmaxGrad).bytes_read, 8 * scores);
  // The fused kernel keeps its 16-bit output instead.
  odd.micro_batch = 4;
  const LayerOps fused = Build(Shipped("gpt3-175b"), odd, unfused);
  EXPECT_EQ(Find(fused.forward, OpName::kAttentionSoftmax).saved_bytes, 2 * 4 * scores);
  // With query-key layer scaling (Megatron-DeepSpeed's default) the scale is a kernel too.
  unfused.modules.query_key_layer_scaling = true;
  odd.micro_batch = 1;
  EXPECT_EQ(core(Names(Build(Shipped("gpt3-175b"), odd, unfused).forward)),
            (std::vector<std::string>{"attn_scores", "attn_softmax_upcast", "attn_scale",
                                      "attn_mask_fill", "attn_softmax", "attn_softmax_downcast"}));
  // Beyond 4096 keys too; 32-bit scores need no casts.
  EXPECT_EQ(
      core(Names(Build(Shipped("megatron-22b"), Tp(8, false, 1, 8192), unfused).forward)).size(),
      6u);
  Strategy fp32 = Tp(8, false, 1);
  fp32.dtype = Dtype::kFp32;
  EXPECT_EQ(
      core(Names(Build(Shipped("megatron-22b"), fp32, unfused).forward)),
      (std::vector<std::string>{"attn_scores", "attn_scale", "attn_mask_fill", "attn_softmax"}));
}

TEST(TransformerLayerOps, FullRecomputeReplaysTheWholeForward) {
  Strategy s = Tp(8, true, 4);
  s.recompute = Recompute::kFull;
  LayerOps ops = Build(Shipped("megatron-22b"), s);
  EXPECT_EQ(Names(ops.recompute), Names(ops.forward));
  EXPECT_EQ(Collectives(ops.recompute), Collectives(ops.forward));
}

// Transformer Engine casts each fp8 linear's bf16 input to fp8 with its transpose before the
// GEMM, and the output gradient likewise before the input-gradient GEMM; the weight too, in every
// micro-batch, only where the framework's linears are called without is_first_microbatch.
TEST(TransformerLayerOps, Fp8LinearsCastTheirInputsAndOutputGradients) {
  // Llama 3 8B (hidden 4096, q 4096 and kv 2 x 1024 wide, SwiGLU 2 x 14336), tp 1, micro-batch 1
  // of 2048 tokens.
  const ModelSpec m = Shipped("llama3-8b");
  Strategy s = Tp(1, false, 1);
  const int64_t tokens = 2048, h = 4096, qkv = 4096 + 2 * 1024, ffn = 14336;
  const LayerOps bf16 = Build(m, s);
  s.dtype = Dtype::kFp8;
  const LayerOps fp8 = Build(m, s);
  const auto casts = [](const std::vector<Op>& ops, OpName name) {
    std::vector<int64_t> read;
    for (const Op& op : ops) {
      if (op.name == name) read.push_back(std::get<MemoryShape>(op.shape).bytes_read);
    }
    return read;
  };
  // One cast before each of the four linears, of its input (2 bytes read and 2 written, the fp8
  // copy and its transpose), in the order the GEMMs run.
  EXPECT_EQ(
      casts(fp8.forward, OpName::kFp8Cast),
      (std::vector<int64_t>{tokens * h * 2, tokens * h * 2, tokens * h * 2, tokens * ffn * 2}));
  for (size_t i = 0; i + 1 < fp8.forward.size(); ++i) {
    if (fp8.forward[i].name == OpName::kFp8Cast) {
      EXPECT_EQ(fp8.forward[i + 1].kind, OpKind::kGemm);
    }
  }
  // Backward: the output gradient of each linear before its input-gradient GEMM (MLP down first).
  EXPECT_EQ(casts(fp8.backward_input, OpName::kFp8GradCast),
            (std::vector<int64_t>{tokens * h * 2, tokens * 2 * ffn * 2, tokens * h * 2,
                                  tokens * qkv * 2}));
  EXPECT_EQ(fp8.forward.size(), bf16.forward.size() + 4);
  EXPECT_EQ(fp8.backward_input.size(), bf16.backward_input.size() + 4);
  EXPECT_EQ(fp8.backward_weight.size(), bf16.backward_weight.size());
  EXPECT_TRUE(casts(fp8.forward, OpName::kFp8WeightCast).empty());
  // Called without is_first_microbatch, every micro-batch casts each weight too.
  LayerOpsOptions te_linear;
  te_linear.modules.fp8_weight_cast_every_microbatch = true;
  const LayerOps per_microbatch = Build(m, s, te_linear);
  EXPECT_EQ(casts(per_microbatch.forward, OpName::kFp8WeightCast),
            (std::vector<int64_t>{h * qkv * 2, h * h * 2, h * 2 * ffn * 2, ffn * h * 2}));
  // Full recompute replays the casts with the forward; bf16 has none.
  s.recompute = Recompute::kFull;
  const LayerOps replayed = Build(m, s);
  EXPECT_EQ(casts(replayed.recompute, OpName::kFp8Cast).size(), 4u);
  EXPECT_TRUE(casts(bf16.forward, OpName::kFp8Cast).empty());
  EXPECT_TRUE(casts(bf16.backward_input, OpName::kFp8GradCast).empty());
}

TEST(EmbeddingOps, VocabParallelLookupIsAllReducedOrReduceScattered) {
  const int64_t hidden_bytes = 2048LL * 8192 * 2;
  Result<LayerOps> plain = BuildEmbeddingOps(Shipped("llama3-70b"), Tp(8, false));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(Collectives(plain->forward), "all_reduce tp " + std::to_string(hidden_bytes));
  EXPECT_EQ(Collectives(plain->backward_input), "");
  EXPECT_EQ(Names(plain->backward_weight),
            (std::vector<std::string>{"embedding.wgrad", "grad_accumulate"}));
  Result<LayerOps> sp = BuildEmbeddingOps(Shipped("llama3-70b"), Tp(8, true));
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(Collectives(sp->forward), "reduce_scatter tp " + std::to_string(hidden_bytes));
  EXPECT_EQ(Collectives(sp->backward_input), "all_gather tp " + std::to_string(hidden_bytes));
  // Learned positions are added after a full all-reduce, then the sequence is split locally.
  Result<LayerOps> gpt = BuildEmbeddingOps(Shipped("gpt3-175b"), Tp(8, true));
  ASSERT_TRUE(gpt.ok());
  EXPECT_EQ(Collectives(gpt->forward), "all_reduce tp " + std::to_string(2048LL * 12288 * 2));
  EXPECT_EQ(
      Names(gpt->backward_weight),
      (std::vector<std::string>{"position_embedding.wgrad", "embedding.wgrad", "grad_accumulate"}));
}

TEST(OutputOps, HeadGemmCoversThePaddedVocabShard) {
  // 128256 is padded to a multiple of 128 * 8 = 1024: 129024, 16128 per rank.
  EXPECT_EQ(PaddedVocabSize(128256, 8), 129024);
  EXPECT_EQ(PaddedVocabSize(51200, 8), 51200);
  EXPECT_EQ(PaddedVocabSize(32000, 1), 32000);
  Result<LayerOps> ops = BuildOutputOps(Shipped("llama3-70b"), Tp(8, false, 2));
  ASSERT_TRUE(ops.ok()) << ops.status().message();
  ExpectGemm(GemmOf(ops->forward, OpName::kOutputHead), 4096, 16128, 8192);
  ExpectGemm(GemmOf(ops->backward_input, OpName::kOutputHeadDgrad), 4096, 8192, 16128);
  ExpectGemm(GemmOf(ops->backward_weight, OpName::kOutputHeadWgrad), 8192, 16128, 4096);
  // Megatron's cross entropy all-reduces the max, the predicted logit and the sum of
  // exponentials, one fp32 per token each; the head's input gradient is all-reduced.
  const std::string per_token = "all_reduce tp " + std::to_string(4096 * 4);
  EXPECT_EQ(Collectives(ops->forward), per_token + ", " + per_token + ", " + per_token);
  EXPECT_EQ(Collectives(ops->backward_input), "all_reduce tp " + std::to_string(4096LL * 8192 * 2));
  // It keeps the fp32 softmax of the shard, the target mask and the int64 targets.
  EXPECT_EQ(Find(ops->forward, OpName::kCrossEntropyLoss).saved_bytes,
            4096LL * 16128 * 4 + 4096 * 9);
}

TEST(TransformerLayerOps, UnsupportedLayersAreErrorsThatNameTheFeature) {
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  Result<LayerOps> gqa = BuildTransformerLayerOps(Shipped("llama3-70b"), Tp(8, false), unfused);
  EXPECT_EQ(gqa.ok() ? Status::Code::kOk : gqa.status().code(), Status::Code::kUnimplemented);
  // The vocabulary ends of an MoE model have no MoE parts.
  EXPECT_TRUE(BuildEmbeddingOps(Shipped("mixtral-8x7b"), Tp(8, true)).ok());
}

Strategy Moe(int64_t tp, int64_t ep, int64_t seq) {
  Strategy s = Tp(tp, tp > 1, 1, seq);
  s.ep = ep;
  return s;
}

TEST(MoeLayerOps, MixtralDispatchesTopTwoTokensOverExpertParallelRanks) {
  // Mixtral 8x7B, tp 1, ep 8: each rank routes its 4096 tokens twice and holds one expert, which
  // processes 4096 * 2 rows on average.
  LayerOps ops = Build(Shipped("mixtral-8x7b"), Moe(1, 8, 4096));
  ExpectGemm(GemmOf(ops.forward, OpName::kRouter), 4096, 8, 4096);
  const GemmShape up = GemmOf(ops.forward, OpName::kExpertUp);
  ExpectGemm(up, 8192, 2 * 14336, 4096);
  EXPECT_EQ(up.batch, 1);
  ExpectGemm(GemmOf(ops.forward, OpName::kExpertDown), 8192, 4096, 14336);
  const std::string a2a = "all_to_all ep " + std::to_string(4096LL * 2 * 4096 * 2);
  EXPECT_EQ(Collectives(ops.forward), a2a + ", " + a2a);
  EXPECT_EQ(Collectives(ops.backward_input), a2a + ", " + a2a);
  // The experts' forward FLOPs: 3 matrices of 4096 x 14336 for 8192 rows.
  EXPECT_EQ(GemmFlopsOf(ops.forward) - OpFlops(Find(ops.forward, OpName::kRouter)),
            2LL * 3 * 8192 * 4096 * 14336 + 2LL * 4096 * (4096 + 2 * 1024) * 4096 +
                2LL * 4096 * 4096 * 4096);
  EXPECT_EQ(TotalFlops(ops.backward_input) + TotalFlops(ops.backward_weight),
            2 * TotalFlops(ops.forward));
}

TEST(MoeLayerOps, ExpertTensorParallelGathersTokensAfterTheAllToAll) {
  // tp 2 with sp, ep 4: 2048 tokens per rank, 4096 routed rows, 8192 rows gathered over tp for
  // the 2 local experts, 4096 each, with 14336 / 2 columns per tp rank.
  LayerOps ops = Build(Shipped("mixtral-8x7b"), Moe(2, 4, 4096));
  const GemmShape up = GemmOf(ops.forward, OpName::kExpertUp);
  ExpectGemm(up, 4096, 14336, 4096);
  EXPECT_EQ(up.batch, 2);
  ExpectGemm(GemmOf(ops.forward, OpName::kRouter), 2048, 8, 4096);
  const std::string h = " tp " + std::to_string(4096LL * 4096 * 2);
  const std::string a2a = "all_to_all ep " + std::to_string(4096LL * 4096 * 2);
  const std::string gathered = std::to_string(8192LL * 4096 * 2);
  EXPECT_EQ(Collectives(ops.forward), "all_gather" + h + ", reduce_scatter" + h + ", " + a2a +
                                          ", all_gather etp " + gathered + ", reduce_scatter etp " +
                                          gathered + ", " + a2a);
  EXPECT_EQ(Find(ops.forward, OpName::kMoeSortChunks).kind, OpKind::kMemoryBound);
}

TEST(MoeLayerOps, UnevenRowsGiveSomeExpertsOneRowMore) {
  // 4097 tokens * top-2 = 8194 rows over 8 local experts: 2 experts of 1025 rows, 6 of 1024.
  LayerOps ops = Build(Shipped("mixtral-8x7b"), Moe(1, 1, 4097));
  std::vector<GemmShape> ups;
  for (const Op& op : ops.forward) {
    if (op.name == OpName::kExpertUp) ups.push_back(std::get<GemmShape>(op.shape));
  }
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[0].batch, 2);
  EXPECT_EQ(ups[0].m, 1025);
  EXPECT_EQ(ups[1].batch, 6);
  EXPECT_EQ(ups[1].m, 1024);
  EXPECT_EQ(Collectives(ops.forward), "");
}

TEST(MoeLayerOps, SharedExpertsRunAsADenseTensorParallelMlp) {
  ModelSpec m = Shipped("mixtral-8x7b");
  m.moe->num_shared_experts = 2;
  LayerOps ops = Build(m, Moe(2, 4, 4096));
  // Two shared experts of 14336, gated, split over tp 2: gate + up of 2 * 14336 columns.
  ExpectGemm(GemmOf(ops.forward, OpName::kMlpUp), 4096, 2 * 2 * 14336 / 2, 4096);
  EXPECT_EQ(Find(ops.forward, OpName::kMlpUp).saved_bytes, 0);  // the router keeps that input
  ExpectGemm(GemmOf(ops.backward_weight, OpName::kMlpDownWgrad), 14336, 4096, 4096);
}

TEST(MoeLayerOps, DenseLeadingLayersOfAnMoeModelHaveADenseMlp) {
  ModelSpec m = Shipped("mixtral-8x7b");
  m.moe->first_dense_layers = 1;
  LayerOps dense = Build(m, Moe(2, 4, 4096));
  ExpectGemm(GemmOf(dense.forward, OpName::kMlpUp), 4096, 14336, 4096);
  LayerOpsOptions second;
  second.layer = 1;
  LayerOps moe = Build(m, Moe(2, 4, 4096), second);
  EXPECT_EQ(Find(moe.forward, OpName::kRouter).kind, OpKind::kGemm);
}

TEST(MoeLayerOps, TensorParallelismWithoutSequenceParallelismIsAnError) {
  Strategy no_sp = Moe(2, 4, 4096);
  no_sp.sp = false;
  EXPECT_NE(ErrorOf(BuildTransformerLayerOps(Shipped("mixtral-8x7b"), no_sp)).find("add --sp"),
            std::string::npos);
}

// How the sizes split over tp, cp, ep and sp is a strategy rule (LayerSplitViolations, tested in
// tests/spec/strategy_test.cc); the builders refuse what the model itself lacks.
TEST(TransformerLayerOps, ALayerPastTheModelIsAnErrorWithTheFix) {
  LayerOpsOptions past_the_end;
  past_the_end.layer = 96;
  EXPECT_NE(ErrorOf(BuildTransformerLayerOps(Shipped("gpt3-175b"), Tp(8, false), past_the_end))
                .find("layer 96 does not exist"),
            std::string::npos);
}

TEST(TransformerLayerOps, AbsurdSizesOverflowIntoAnError) {
  ModelSpec m = Shipped("gpt3-175b");
  m.hidden_size = int64_t{1} << 40;
  EXPECT_NE(ErrorOf(BuildTransformerLayerOps(m, Tp(8, false))).find("overflow 64 bits"),
            std::string::npos);
}

TEST(AttentionFlops, ModelFlopsIgnoreTheMaskKernelFlopsDoNot) {
  AttentionShape a{1, 8, 8, 1024, 1024, 128, 128, true, false, Dtype::kBf16};
  EXPECT_EQ(AttentionModelFlops(a), 4LL * 8 * 1024 * 1024 * 128);
  EXPECT_DOUBLE_EQ(AttentionKernelFlops(a), 4.0 * 8 * 1024 * 1024 * 128 * 1025 / 2048);
  a.backward = true;
  EXPECT_EQ(AttentionModelFlops(a), 8LL * 8 * 1024 * 1024 * 128);
  EXPECT_DOUBLE_EQ(AttentionKernelFlops(a), 2.5 * 4.0 * 8 * 1024 * 1024 * 128 * 1025 / 2048);
}

TEST(OpNames, EveryNameIsItsTraceString) {
  EXPECT_EQ(OpNameString(OpName::kEmbedding), "embedding");
  EXPECT_EQ(OpNameString(OpName::kQkvProjDgrad), "qkv_proj.dgrad");
  EXPECT_EQ(OpNameString(OpName::kOutputHeadWgrad), "output_head.wgrad");
}

}  // namespace
}  // namespace loom
