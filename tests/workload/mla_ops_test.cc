// Multi-head latent attention (DeepSeek-V2 Section 2.1) as Megatron-core's MLASelfAttention runs
// it, checked on DeepSeek-V3 (models/deepseek-v3.json): hidden 7168, 128 heads, q_lora_rank 1536,
// kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op/op.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"

namespace loom {
namespace {

ModelSpec DeepSeekV3() {
  Result<ModelSpec> spec = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/deepseek-v3.json");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? *spec : ModelSpec();
}

Strategy MlaTp(int64_t tp, bool sp, int64_t seq = 4096) {
  Strategy s;
  s.tp = tp;
  s.sp = sp;
  s.seq_len = seq;
  return s;
}

LayerOps BuildMla(const ModelSpec& m, const Strategy& s, LayerOpsOptions o = {}) {
  Result<LayerOps> ops = BuildTransformerLayerOps(m, s, o);
  EXPECT_TRUE(ops.ok()) << (ops.ok() ? "" : ops.status().message());
  return ops.ok() ? *ops : LayerOps();
}

const Op& FindOp(const std::vector<Op>& ops, OpName name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << OpNameString(name);
  static const Op kMissing;
  return kMissing;
}

void ExpectGemm(const std::vector<Op>& ops, OpName name, int64_t m, int64_t n, int64_t k) {
  const auto* g = std::get_if<GemmShape>(&FindOp(ops, name).shape);
  ASSERT_NE(g, nullptr) << OpNameString(name);
  EXPECT_EQ(g->m, m) << OpNameString(name);
  EXPECT_EQ(g->n, n) << OpNameString(name);
  EXPECT_EQ(g->k, k) << OpNameString(name);
}

// "all_gather tp 12582912, ..." for every collective of |ops|, in order.
std::string CollectiveNames(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kCollective) continue;
    const auto& c = std::get<CollectiveShape>(op.shape);
    out += (out.empty() ? "" : ", ") + std::string(kCollectiveKindNames.Name(c.kind)) + " " +
           std::string(kCommGroupNames.Name(c.group)) + " " + std::to_string(c.bytes);
  }
  return out;
}

std::vector<std::string> NamesOf(const std::vector<Op>& ops) {
  std::vector<std::string> names;
  for (const Op& op : ops) names.emplace_back(OpNameString(op.name));
  return names;
}

// Forward FLOPs of the attention block: the layer's minus its dense MLP's.
int64_t AttentionFlops(const LayerOps& ops) {
  return TotalFlops(ops.forward) - OpFlops(FindOp(ops.forward, OpName::kMlpUp)) -
         OpFlops(FindOp(ops.forward, OpName::kMlpDown));
}

// ModelFlopsPerToken's forward FLOPs per token of one dense layer of |m|'s attention: a one-layer
// dense copy's count minus a layer-less copy's, minus the dense MLP's 2 * 3 * h * ffn.
double AttentionFlopsPerToken(ModelSpec m, int64_t seq) {
  m.moe.reset();
  m.num_layers = 1;
  const double one_layer = ModelFlopsPerToken(m, seq).forward;
  m.num_layers = 0;
  const double mlp = 2.0 * 3 * m.hidden_size * m.intermediate_size;
  return one_layer - ModelFlopsPerToken(m, seq).forward - mlp;
}

TEST(LatentAttentionOps, DeepSeekV3GemmShapesAreExactForTheTpShard) {
  // tp 2 with sp, one sequence of 4096: 2048 tokens per rank for the replicated down projections,
  // 4096 gathered rows and 64 heads for the up projections, the core and linear_proj.
  LayerOps ops = BuildMla(DeepSeekV3(), MlaTp(2, true));
  ExpectGemm(ops.forward, OpName::kQDownProj, 2048, 1536, 7168);
  ExpectGemm(ops.forward, OpName::kKvDownProj, 2048, 512 + 64, 7168);
  ExpectGemm(ops.forward, OpName::kQUpProj, 4096, 64 * (128 + 64), 1536);
  ExpectGemm(ops.forward, OpName::kKvUpProj, 4096, 64 * (128 + 128), 512);
  ExpectGemm(ops.forward, OpName::kOutProj, 4096, 7168, 64 * 128);
  ExpectGemm(ops.backward_input, OpName::kQDownProjDgrad, 2048, 7168, 1536);
  ExpectGemm(ops.backward_input, OpName::kKvDownProjDgrad, 2048, 7168, 576);
  ExpectGemm(ops.backward_input, OpName::kQUpProjDgrad, 4096, 1536, 12288);
  ExpectGemm(ops.backward_input, OpName::kKvUpProjDgrad, 4096, 512, 16384);
  ExpectGemm(ops.backward_input, OpName::kOutProjDgrad, 4096, 8192, 7168);
  ExpectGemm(ops.backward_weight, OpName::kQDownProjWgrad, 7168, 1536, 2048);
  ExpectGemm(ops.backward_weight, OpName::kKvDownProjWgrad, 7168, 576, 2048);
  ExpectGemm(ops.backward_weight, OpName::kQUpProjWgrad, 1536, 12288, 4096);
  ExpectGemm(ops.backward_weight, OpName::kKvUpProjWgrad, 512, 16384, 4096);
  ExpectGemm(ops.backward_weight, OpName::kOutProjWgrad, 8192, 7168, 4096);
  const auto& a = std::get<AttentionShape>(FindOp(ops.forward, OpName::kFlashAttention).shape);
  EXPECT_EQ(a.heads, 64);
  EXPECT_EQ(a.kv_heads, 64);
  EXPECT_EQ(a.seq_q, 4096);
  EXPECT_EQ(a.seq_kv, 4096);
  EXPECT_EQ(a.head_dim_qk, 192);
  EXPECT_EQ(a.head_dim_v, 128);
  EXPECT_TRUE(a.causal);
  // Layer 0 is dense: no QKV projection, no router.
  for (const Op& op : ops.forward) EXPECT_NE(op.name, OpName::kQkvProj);
}

TEST(LatentAttentionOps, TpHalvesTheUpProjectionsAndKeepsTheDownProjectionsWhole) {
  // Without sp every rank projects all 4096 tokens down, whatever tp.
  LayerOps one = BuildMla(DeepSeekV3(), MlaTp(1, false));
  LayerOps two = BuildMla(DeepSeekV3(), MlaTp(2, false));
  ExpectGemm(one.forward, OpName::kQDownProj, 4096, 1536, 7168);
  ExpectGemm(two.forward, OpName::kQDownProj, 4096, 1536, 7168);
  ExpectGemm(one.forward, OpName::kKvDownProj, 4096, 576, 7168);
  ExpectGemm(two.forward, OpName::kKvDownProj, 4096, 576, 7168);
  ExpectGemm(one.forward, OpName::kQUpProj, 4096, 128 * 192, 1536);
  ExpectGemm(two.forward, OpName::kQUpProj, 4096, 64 * 192, 1536);
  ExpectGemm(one.forward, OpName::kKvUpProj, 4096, 128 * 256, 512);
  ExpectGemm(two.forward, OpName::kKvUpProj, 4096, 64 * 256, 512);
  ExpectGemm(one.forward, OpName::kOutProj, 4096, 7168, 128 * 128);
  ExpectGemm(two.forward, OpName::kOutProj, 4096, 7168, 64 * 128);
}

TEST(LatentAttentionOps, FlopsSummedOverTpRanksAreTheModelFlops) {
  // Per token: 2 * (7168 * 1536 + 1536 * 24576 + 7168 * 576 + 512 * 32768 + 16384 * 7168) for the
  // 187105280 projection weights, and 2 * 4096 * 128 * (192 + 128) for Q K^T and P V.
  const double per_token = 2.0 * 187'105'280 + 2.0 * 4096 * 128 * 320;
  ASSERT_DOUBLE_EQ(AttentionFlopsPerToken(DeepSeekV3(), 4096), per_token);
  for (int64_t tp : {1, 2, 8}) {
    LayerOps ops = BuildMla(DeepSeekV3(), MlaTp(tp, tp > 1));
    EXPECT_DOUBLE_EQ(static_cast<double>(tp * AttentionFlops(ops)), 4096 * per_token)
        << "tp " << tp;
    EXPECT_EQ(TotalFlops(ops.backward_input) + TotalFlops(ops.backward_weight),
              2 * TotalFlops(ops.forward));
  }
  // Without sp the replicated down projections run on every rank: tp - 1 extra copies.
  LayerOps no_sp = BuildMla(DeepSeekV3(), MlaTp(2, false));
  EXPECT_EQ(2 * AttentionFlops(no_sp) - static_cast<int64_t>(4096 * per_token),
            2LL * 4096 * 7168 * (1536 + 576));
}

TEST(LatentAttentionOps, DirectQueryProjectionWithoutQueryCompression) {
  // q_lora_rank 0 (DeepSeek-V2-Lite): linear_q_proj is column parallel on the gathered hidden
  // state.
  ModelSpec m = DeepSeekV3();
  m.mla->q_lora_rank = 0;
  LayerOps ops = BuildMla(m, MlaTp(2, true));
  ExpectGemm(ops.forward, OpName::kQProj, 4096, 64 * 192, 7168);
  ExpectGemm(ops.backward_weight, OpName::kQProjWgrad, 7168, 64 * 192, 4096);
  for (const Op& op : ops.forward) EXPECT_NE(op.name, OpName::kQDownProj);
  EXPECT_DOUBLE_EQ(static_cast<double>(2 * AttentionFlops(ops)),
                   4096 * AttentionFlopsPerToken(m, 4096));
  const std::string hidden = std::to_string(4096LL * 7168 * 2);
  EXPECT_EQ(
      CollectiveNames(ops.forward).rfind("all_gather tp " + hidden + ", all_gather tp 524288", 0),
      0u)
      << CollectiveNames(ops.forward);
}

TEST(LatentAttentionOps, SequenceParallelGathersTheNormedLatentsNotTheHiddenState) {
  // tp 2: q latent 4096 x 1536, k_pos_emb 4096 x 64, kv latent 4096 x 512, hidden 4096 x 7168, in
  // bf16; then the dense MLP's own gather and reduce-scatter.
  LayerOps ops = BuildMla(DeepSeekV3(), MlaTp(2, true));
  const std::string q = " tp 12582912", rope = " tp 524288", kv = " tp 4194304", h = " tp 58720256";
  EXPECT_EQ(CollectiveNames(ops.forward), "all_gather" + q + ", all_gather" + rope +
                                              ", all_gather" + kv + ", reduce_scatter" + h +
                                              ", all_gather" + h + ", reduce_scatter" + h);
  // MLP first, then: output gradient, kv regather and dX, k_pos_emb's dX, q regather and dX.
  EXPECT_EQ(CollectiveNames(ops.backward_input),
            "all_gather" + h + ", all_gather" + h + ", reduce_scatter" + h + ", all_gather" + h +
                ", all_gather" + kv + ", reduce_scatter" + kv + ", reduce_scatter" + rope +
                ", all_gather" + q + ", reduce_scatter" + q);
  // Without sp: the f and g all-reduces, and those of the latents' gradients.
  LayerOps no_sp = BuildMla(DeepSeekV3(), MlaTp(2, false));
  EXPECT_EQ(CollectiveNames(no_sp.forward), "all_reduce" + h + ", all_reduce" + h);
  EXPECT_EQ(CollectiveNames(no_sp.backward_input),
            "all_reduce" + h + ", all_reduce" + kv + ", all_reduce" + rope + ", all_reduce" + q);
  EXPECT_EQ(CollectiveNames(BuildMla(DeepSeekV3(), MlaTp(1, false)).forward), "");
}

TEST(LatentAttentionOps, SavedBytesAreTheTensorsBackwardReads) {
  LayerOps ops = BuildMla(DeepSeekV3(), MlaTp(2, true));
  const std::vector<Op>& f = ops.forward;
  // Sequence-sharded: the norm inputs and the down and up projections' inputs.
  EXPECT_EQ(FindOp(f, OpName::kInputNorm).saved_bytes, 2048LL * 7168 * 2);
  EXPECT_EQ(FindOp(f, OpName::kQDownProj).saved_bytes, 2048LL * 7168 * 2);
  EXPECT_EQ(FindOp(f, OpName::kKvDownProj).saved_bytes, 0);  // the same input as q_down_proj
  EXPECT_EQ(FindOp(f, OpName::kQNorm).saved_bytes, 2048LL * 1536 * 2);
  EXPECT_EQ(FindOp(f, OpName::kQUpProj).saved_bytes, 2048LL * 1536 * 2);
  EXPECT_EQ(FindOp(f, OpName::kKvNorm).saved_bytes, 2048LL * 512 * 2);
  EXPECT_EQ(FindOp(f, OpName::kKvUpProj).saved_bytes, 2048LL * 512 * 2);
  // Contiguous Q and K (64 heads of 192) and V (64 of 128), and the fp32 log-sum-exp.
  EXPECT_EQ(FindOp(f, OpName::kFlashAttention).saved_bytes, 4096LL * 64 * 512 * 2 + 64 * 4096 * 4);
  EXPECT_EQ(FindOp(f, OpName::kOutProj).saved_bytes, 4096LL * 64 * 128 * 2);
  EXPECT_EQ(FindOp(f, OpName::kRotary).saved_bytes, 0);
  const auto& rotary = std::get<MemoryShape>(FindOp(f, OpName::kRotary).shape);
  EXPECT_EQ(rotary.bytes_read, 4096LL * (12288 + 16384 + 64) * 2);
  EXPECT_EQ(rotary.bytes_written, 4096LL * 64 * 512 * 2);
}

TEST(LatentAttentionOps, SelectiveRecomputeReplaysTheFusedCore) {
  Strategy s = MlaTp(2, true);
  s.recompute = Recompute::kSelective;
  LayerOps ops = BuildMla(DeepSeekV3(), s);
  EXPECT_EQ(NamesOf(ops.recompute), std::vector<std::string>{"flash_attention"});
  EXPECT_EQ(FindOp(ops.forward, OpName::kFlashAttention).saved_bytes, 4096LL * 64 * 512 * 2);
  EXPECT_EQ(ops.recompute.front().saved_bytes, 4096LL * 64 * 128 * 2 + 64 * 4096 * 4);
  s.recompute = Recompute::kFull;
  LayerOps full = BuildMla(DeepSeekV3(), s);
  EXPECT_EQ(NamesOf(full.recompute), NamesOf(full.forward));
  EXPECT_EQ(TotalSavedBytes(full.forward), 2048LL * 7168 * 2);  // the layer's input
}

TEST(LatentAttentionOps, ContextParallelGathersTheLatentAttentionsKeysAndValues) {
  Strategy s = MlaTp(1, false, 8192);
  s.cp = 2;
  LayerOps ops = BuildMla(DeepSeekV3(), s);
  const auto& a = std::get<AttentionShape>(FindOp(ops.forward, OpName::kFlashAttention).shape);
  EXPECT_EQ(a.seq_q, 4096);
  EXPECT_EQ(a.seq_kv, 8192);
  // K of 128 heads of 192 and V of 128 heads of 128 over the whole sequence of 8192, in bf16.
  const std::string kv = "cp " + std::to_string(8192LL * 128 * 320 * 2);
  EXPECT_EQ(CollectiveNames(ops.forward), "all_gather " + kv);
  EXPECT_EQ(CollectiveNames(ops.backward_input), "all_gather " + kv + ", reduce_scatter " + kv);
}

TEST(LatentAttentionOps, UnfusedKernelAndBadLatentSizesAreErrors) {
  LayerOpsOptions unfused;
  unfused.attention = AttentionKernel::kUnfused;
  Result<LayerOps> ops = BuildTransformerLayerOps(DeepSeekV3(), MlaTp(2, true), unfused);
  ASSERT_FALSE(ops.ok());
  EXPECT_EQ(ops.status().code(), Status::Code::kUnimplemented);
  EXPECT_NE(
      ops.status().message().find("unfused attention kernel is not modelled for multi-head latent"),
      std::string::npos)
      << ops.status().message();
  ModelSpec m = DeepSeekV3();
  m.mla->kv_lora_rank = 0;
  Result<LayerOps> bad = BuildTransformerLayerOps(m, MlaTp(2, true));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            std::string(LOOM_SOURCE_DIR) +
                "/models/deepseek-v3.json: kv_lora_rank (0) must be at least 1");
  m.mla->kv_lora_rank = int64_t{1} << 40;
  Result<LayerOps> huge = BuildTransformerLayerOps(m, MlaTp(2, true));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("latent attention's FLOP or byte counts overflow 64 bits"),
            std::string::npos)
      << huge.status().message();
}

Strategy Pipeline(int64_t tp) {
  Strategy s;
  s.tp = tp;
  s.pp = 16;
  s.first_stage_layers = 4;  // 4 + 14 * 4 + 1 = 61 layers
  s.last_stage_layers = 1;
  return s;
}

TEST(LatentAttentionParameters, DeepSeekV3StagesSumToThe671bModel) {
  // 3 dense layers of 187107328 attention (norms of 1536 and 512 included) + 14336 norms +
  // 396361728 MLP; 58 MoE layers of the same attention and norms, a 256 x 7168 router and 257
  // experts of 44040192; embedding and head of 129280 x 7168; the final norm: 671026404352.
  const ModelSpec m = DeepSeekV3();
  Result<ParameterCount> count = CountParameters(m);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->total, 671'026'404'352);
  // DeepSeek-V3 technical report (abstract): 671B total, rounded to 1B, so within 0.5B; the 685B of
  // the Hugging Face checkpoint add the multi-token prediction module, which loom does not count.
  EXPECT_NEAR(static_cast<double>(count->total), 671e9, 0.5e9);
  int64_t sum = 0;
  for (int64_t stage = 0; stage < 16; ++stage) {
    Result<RankParameters> rank = ParametersPerRank(m, Pipeline(1), stage);
    ASSERT_TRUE(rank.ok()) << rank.status().message();
    sum += rank->Total();
  }
  EXPECT_EQ(sum, count->total);
}

TEST(LatentAttentionParameters, TpReplicatesTheDownProjectionsAndTheirNorms) {
  // A dense copy, so that only attention, norms, MLP and vocabulary remain. With tp 2 each rank
  // holds half of the split weights and all of the replicated ones: per layer q_down_proj
  // 7168 x 1536, q_layernorm 1536, kv_down_proj 7168 x 576, kv_layernorm 512 and the two hidden
  // norms; and the final norm. The vocabulary, 129280 = 505 * 256, needs no padding for tp 2.
  ModelSpec m = DeepSeekV3();
  m.moe.reset();
  Strategy one = Pipeline(1), two = Pipeline(2);
  int64_t sum_one = 0, sum_two = 0;
  for (int64_t stage = 0; stage < 16; ++stage) {
    Result<RankParameters> a = ParametersPerRank(m, one, stage);
    Result<RankParameters> b = ParametersPerRank(m, two, stage);
    ASSERT_TRUE(a.ok() && b.ok());
    sum_one += a->Total();
    sum_two += b->Total();
  }
  const int64_t replicated = 61LL * (7168 * 1536 + 1536 + 7168 * 576 + 512 + 2 * 7168) + 7168;
  EXPECT_EQ(2 * sum_two - sum_one, replicated);
  Result<ParameterCount> count = CountParameters(m);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(sum_one, count->total);
  Result<RankParameters> three = ParametersPerRank(m, Pipeline(3), 0);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("num_attention_heads (128)"), std::string::npos);
}

}  // namespace
}  // namespace loom
