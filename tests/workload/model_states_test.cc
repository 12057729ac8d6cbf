#include "workload/model_states.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/checked.h"
#include "workload/shipped_model.h"

namespace loom {
namespace {

TEST(BytesPerParameter, Bf16KeepsFp32GradientsAsMegatronDoes) {
  // Megatron-LM accumulates bf16 gradients in fp32 (docs/source/api-guide/dist_optimizer.md:
  // "bf16 param, fp32 grads" = 18 bytes): 2 + 4 + 12.
  StateBytesPerParam b = BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, false);
  EXPECT_EQ(b.weight, 2);
  EXPECT_EQ(b.gradient, 4);
  EXPECT_EQ(b.optimizer, 12);
  EXPECT_EQ(b.Total(), 18);
  // --grad-reduce-in-bf16 keeps 2-byte gradients.
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, true).gradient, 2);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, true).Total(), 16);
  // fp8 runs on top of bf16: the same states, gradients included.
  EXPECT_EQ(BytesPerParameter(Dtype::kFp8, Optimizer::kAdam, false).gradient, 4);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp8, Optimizer::kAdam, false).Total(), 18);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp8, Optimizer::kAdam, true).Total(), 16);
}

TEST(BytesPerParameter, Fp16IsTwoPlusTwoPlusTwelveWhateverTheBf16Flag) {
  // ZeRO (Rajbhandari et al. 2020), Section 3.1: 2 + 2 + K with K = 12.
  for (bool bf16_reduce : {false, true}) {
    StateBytesPerParam b = BytesPerParameter(Dtype::kFp16, Optimizer::kAdam, bf16_reduce);
    EXPECT_EQ(b.weight, 2);
    EXPECT_EQ(b.gradient, 2);
    EXPECT_EQ(b.optimizer, 12);
  }
  // fp32: 4 + 4 + 8, Megatron-LM's "fp32 param, fp32 grads" = 16; the flag does not apply.
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kAdam, true).gradient, 4);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kAdam, false).Total(), 16);
}

TEST(BytesPerParameter, EachOptimizerHoldsItsStates) {
  // K: Adam 12 (master, m, v), SGD with momentum 8 (master, momentum), Adafactor with beta1 = 0
  // 4 (master; factored second moment not counted); fp32 training has no master copy.
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kSgd, false).optimizer, 8);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kSgd, false).Total(), 14);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdafactor, false).optimizer, 4);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdafactor, false).Total(), 10);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp16, Optimizer::kSgd, false).Total(), 12);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp16, Optimizer::kAdafactor, false).Total(), 8);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kSgd, false).Total(), 12);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kAdafactor, false).Total(), 8);
}

TEST(BytesPerParameter, StrategyOverloadReadsTheRecipe) {
  Strategy s;
  s.dtype = Dtype::kBf16;
  s.optimizer = Optimizer::kSgd;
  EXPECT_EQ(BytesPerParameter(s).gradient, 4);
  EXPECT_EQ(BytesPerParameter(s).optimizer, 8);
  s.grad_reduce_in_bf16 = true;
  EXPECT_EQ(BytesPerParameter(s).gradient, 2);
}

// Values Adafactor's factored second moment keeps for a Llama-shaped model (gated MLP, no biases,
// untied embeddings): r + c per r x c matrix, and a full vector for each norm weight (Shazeer &
// Stern 2018, Section 3; vectors are not factored).
int64_t FactoredSecondMomentValues(const ModelSpec& m) {
  const int64_t h = m.hidden_size, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  const int64_t f = m.intermediate_size;
  const int64_t attention = (h + q) + 2 * (h + kv) + (q + h);
  const int64_t mlp = 3 * (h + f);
  const int64_t norms = 2 * h;
  return m.num_layers * (attention + mlp + norms) + h + 2 * (m.vocab_size + h);
}

TEST(OptimizerStepTraffic, Bf16AdamIsFortyTwoBytesPerParameter) {
  // Norm r4; FusedAdam r16 w12; master to model copy r4 w2; zeroing the fp32 gradients w4.
  MemoryShape t = OptimizerStepTraffic(1000, Dtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(t.bytes_read, 24'000);
  EXPECT_EQ(t.bytes_written, 18'000);
  EXPECT_EQ(OptimizerStepTraffic(1000, Dtype::kFp8, Optimizer::kAdam).bytes_read, 24'000);
}

TEST(OptimizerStepTraffic, Fp16AddsTheGradientCopyAndTheLossScaleCheck) {
  // bf16 + copy to fp32 (r2 w4) + unscale in place (r4 w4), and a 2-byte gradient buffer to zero.
  MemoryShape t = OptimizerStepTraffic(1000, Dtype::kFp16, Optimizer::kAdam);
  EXPECT_EQ(t.bytes_read, 30'000);
  EXPECT_EQ(t.bytes_written, 24'000);
}

TEST(OptimizerStepTraffic, Fp32HasNoMasterCopyAndLighterOptimizersMoveLess) {
  MemoryShape fp32 = OptimizerStepTraffic(1000, Dtype::kFp32, Optimizer::kAdam);
  EXPECT_EQ(fp32.bytes_read, 20'000);
  EXPECT_EQ(fp32.bytes_written, 16'000);
  const MemoryShape adam = OptimizerStepTraffic(1000, Dtype::kBf16, Optimizer::kAdam);
  const MemoryShape sgd = OptimizerStepTraffic(1000, Dtype::kBf16, Optimizer::kSgd);
  const MemoryShape adafactor = OptimizerStepTraffic(1000, Dtype::kBf16, Optimizer::kAdafactor);
  EXPECT_LT(sgd.bytes_read + sgd.bytes_written, adam.bytes_read + adam.bytes_written);
  EXPECT_LT(adafactor.bytes_read + adafactor.bytes_written, sgd.bytes_read + sgd.bytes_written);
}

TEST(OptimizerStepTraffic, EveryOptimizerAndRecipeMovesItsExactBytes) {
  // Per parameter: norm r4; a 2-byte gradient buffer adds its copy to fp32 (r2 w4), fp16 also the
  // unscale (r4 w4); update Adam r16 w12, SGD r12 w8, Adafactor r12 w4; mixed precision copies the
  // master to the model weight (r4 w2); zeroing the gradient buffer w4 (fp32) or w2.
  struct Case {
    Dtype dtype;
    bool bf16_reduce;
    Optimizer optimizer;
    int64_t read, written;
  };
  const Case cases[] = {
      {Dtype::kBf16, false, Optimizer::kAdam, 24, 18},
      {Dtype::kBf16, false, Optimizer::kSgd, 20, 14},
      {Dtype::kBf16, false, Optimizer::kAdafactor, 20, 10},
      {Dtype::kBf16, true, Optimizer::kAdam, 26, 20},
      {Dtype::kBf16, true, Optimizer::kSgd, 22, 16},
      {Dtype::kBf16, true, Optimizer::kAdafactor, 22, 12},
      {Dtype::kFp8, false, Optimizer::kAdam, 24, 18},
      {Dtype::kFp8, true, Optimizer::kSgd, 22, 16},
      {Dtype::kFp16, false, Optimizer::kAdam, 30, 24},
      {Dtype::kFp16, true, Optimizer::kSgd, 26, 20},
      {Dtype::kFp16, false, Optimizer::kAdafactor, 26, 16},
      {Dtype::kFp32, true, Optimizer::kAdam, 20, 16},
      {Dtype::kFp32, false, Optimizer::kSgd, 16, 12},
      {Dtype::kFp32, false, Optimizer::kAdafactor, 16, 8},
  };
  for (const Case& c : cases) {
    const MemoryShape t = OptimizerStepTraffic(1000, c.dtype, c.optimizer, c.bf16_reduce);
    EXPECT_EQ(t.bytes_read, 1000 * c.read)
        << kDtypeNames.Name(c.dtype) << " " << kOptimizerNames.Name(c.optimizer)
        << (c.bf16_reduce ? " bf16 reduce" : "");
    EXPECT_EQ(t.bytes_written, 1000 * c.written)
        << kDtypeNames.Name(c.dtype) << " " << kOptimizerNames.Name(c.optimizer)
        << (c.bf16_reduce ? " bf16 reduce" : "");
  }
}

TEST(OptimizerStepTraffic, HugeCountsSaturateInsteadOfOverflowing) {
  MemoryShape t = OptimizerStepTraffic(int64_t{1} << 61, Dtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(t.bytes_read, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.bytes_written, std::numeric_limits<int64_t>::max());
}

TEST(ModelStates, ScalesWithParameters) {
  // bf16 gradients are 4 bytes (Megatron-LM's fp32 gradient buffer): 2 + 4 + 12 per parameter.
  Result<ModelStateBytes> s = ModelStates(70'553'706'496, Dtype::kBf16, Optimizer::kAdam);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->weights, 141'107'412'992);
  EXPECT_EQ(s->gradients, 282'214'825'984);
  EXPECT_EQ(s->optimizer, 846'644'477'952);
  EXPECT_EQ(s->Total(), 1'269'966'716'928);
  Result<ModelStateBytes> bf16_reduce =
      ModelStates(70'553'706'496, Dtype::kBf16, Optimizer::kAdam, true);
  ASSERT_TRUE(bf16_reduce.ok());
  EXPECT_EQ(bf16_reduce->gradients, 141'107'412'992);
}

TEST(ModelStates, OverflowIsAnError) {
  Result<ModelStateBytes> s = ModelStates(int64_t{1} << 61, Dtype::kBf16, Optimizer::kAdam);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("overflow 64-bit"), std::string::npos);
}

TEST(MinGpusForModelStates, RoundsUp) {
  ModelStateBytes s{10, 10, 60};
  EXPECT_EQ(MinGpusForModelStates(s, 80), 1);
  EXPECT_EQ(MinGpusForModelStates(s, 79), 2);
  EXPECT_EQ(MinGpusForModelStates(s, 8), 10);
}

Strategy Parallel(int64_t tp, int64_t pp, int64_t dp, int64_t zero) {
  Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.zero_stage = zero;
  return s;
}

RankModelStates StatesOf(const ModelSpec& m, const Strategy& s, int64_t stage) {
  Result<RankModelStates> states = ModelStatesPerRank(m, s, stage);
  EXPECT_TRUE(states.ok()) << (states.ok() ? "" : states.status().message());
  return states.ok() ? *states : RankModelStates{};
}

// Llama 3 70B on tp 8, pp 4 (20 layers per stage), dp 8. Per layer and tp rank:
// attention 8192 * (8192 + 2 * 1024) / 8 + 8192 / 8 * 8192 = 18874368, MLP 3 * 8192 * 28672 / 8
// = 88080384, two RMSNorms 16384 (replicated): 106971136. The vocabulary 128256 pads to 129024,
// 16128 rows of 8192 per rank: 132120576.
constexpr int64_t kLlama70bStageLayers = 20 * 106'971'136LL;
constexpr int64_t kLlama70bVocabShard = 132'120'576;

TEST(ParametersPerRank, Llama70bStagesHoldTheirLayersAndVocabularyShards) {
  const ModelSpec m = Shipped("llama3-70b");
  const Strategy s = Parallel(8, 4, 8, 0);
  EXPECT_EQ(StatesOf(m, s, 0).parameters.dense, kLlama70bStageLayers + kLlama70bVocabShard);
  EXPECT_EQ(StatesOf(m, s, 1).parameters.dense, kLlama70bStageLayers);
  EXPECT_EQ(StatesOf(m, s, 3).parameters.dense, kLlama70bStageLayers + 8192 + kLlama70bVocabShard);
  EXPECT_EQ(StatesOf(m, s, 3).parameters.expert, 0);
}

TEST(ModelStatesPerRank, Bf16IsEighteenBytesOrSixPlusTwelveOverDAsInMegatron) {
  // Megatron-LM, docs/source/api-guide/dist_optimizer.md: bf16 params with fp32 grads hold 18
  // bytes per parameter, 6 + 12/d with the distributed optimizer (ZeRO-1). ZeRO-2 and -3 shard
  // the 4-byte gradients and then the 2-byte weights too (Rajbhandari et al. 2020, Section 5).
  const ModelSpec m = Shipped("llama3-70b");
  const int64_t params = kLlama70bStageLayers + kLlama70bVocabShard;  // 2271543296
  const int64_t shard = params / 8;                                   // 283942912, exact
  RankModelStates z0 = StatesOf(m, Parallel(8, 4, 8, 0), 0);
  EXPECT_EQ(z0.gpu.weights, 2 * params);
  EXPECT_EQ(z0.gpu.gradients, 4 * params);
  EXPECT_EQ(z0.gpu.optimizer, 12 * params);
  EXPECT_EQ(z0.gpu.Total(), 18 * params);
  EXPECT_EQ(z0.gpu.Total(), 40'887'779'328);
  RankModelStates z1 = StatesOf(m, Parallel(8, 4, 8, 1), 0);
  EXPECT_EQ(z1.gpu.weights, 2 * params);
  EXPECT_EQ(z1.gpu.gradients, 4 * params);
  EXPECT_EQ(z1.gpu.optimizer, 12 * shard);
  EXPECT_EQ(z1.gpu.Total(), 17'036'574'720);  // 6 * params + 12 * params / 8
  RankModelStates z2 = StatesOf(m, Parallel(8, 4, 8, 2), 0);
  EXPECT_EQ(z2.gpu.gradients, 4 * shard);
  EXPECT_EQ(z2.gpu.Total(), 9'086'173'184);  // 2 * params + 16 * params / 8
  RankModelStates z3 = StatesOf(m, Parallel(8, 4, 8, 3), 0);
  EXPECT_EQ(z3.gpu.Total(), 18 * shard);
  EXPECT_EQ(z3.host.Total(), 0);
}

// Llama 3 8B: 8030261248 parameters (CountParameters), all on one rank with tp = pp = 1.
constexpr int64_t kLlama8bParams = 8'030'261'248;

Strategy Fp16DataParallel(int64_t dp, int64_t zero) {
  Strategy s = Parallel(1, 1, dp, zero);
  s.dtype = Dtype::kFp16;
  return s;
}

TEST(ModelStatesPerRank, Fp16ZeroStagesMatchTheZeroPaper) {
  // Rajbhandari et al. 2020, Figure 1, with K = 12 over N_d = 64: P_os 2Ψ + 2Ψ + KΨ/N_d,
  // P_os+g 2Ψ + (2 + K)Ψ/N_d, P_os+g+p (2 + 2 + K)Ψ/N_d. 64 divides Ψ: Ψ/64 = 125472832.
  const ModelSpec m = Shipped("llama3-8b");
  constexpr int64_t psi = kLlama8bParams, nd = 64, k = 12;
  ASSERT_EQ(psi % nd, 0);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 0), 0).gpu.Total(), (2 + 2 + k) * psi);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 1), 0).gpu.Total(), 2 * psi + 2 * psi + k * psi / nd);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 2), 0).gpu.Total(), 2 * psi + (2 + k) * psi / nd);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 3), 0).gpu.Total(), (2 + 2 + k) * psi / nd);
  // The same in bytes: 128.5 GB unsharded, 33.6, 17.8 and 2.0 GB (the paper's 7.5B example has
  // 120, 31.4, 16.6 and 1.9 GB).
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 0), 0).gpu.Total(), 128'484'179'968);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 1), 0).gpu.Total(), 33'626'718'976);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 2), 0).gpu.Total(), 17'817'142'144);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(nd, 3), 0).gpu.Total(), 2'007'565'312);
}

TEST(ModelStatesPerRank, ZeroShardsRoundUpToWholeParameters) {
  // 96 does not divide Ψ: each shard holds ceil(Ψ / 96) = 83648555 parameters (Ψ / 96 =
  // 83648554.67).
  const ModelSpec m = Shipped("llama3-8b");
  constexpr int64_t psi = kLlama8bParams, shard = 83'648'555;
  ASSERT_EQ(CeilDiv(psi, 96), shard);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(96, 1), 0).gpu.Total(), 4 * psi + 12 * shard);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(96, 2), 0).gpu.Total(), 2 * psi + 14 * shard);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(96, 3), 0).gpu.Total(), 16 * shard);
  EXPECT_EQ(StatesOf(m, Fp16DataParallel(96, 3), 0).gpu.Total(), 1'338'376'880);
  // Megatron bf16 with the distributed optimizer: 6Ψ + 12 * ceil(Ψ/d).
  EXPECT_EQ(StatesOf(m, Parallel(1, 1, 96, 1), 0).gpu.Total(), 49'185'350'148);
  EXPECT_EQ(StatesOf(m, Parallel(1, 1, 96, 1), 0).gpu.Total(), 6 * psi + 12 * shard);
}

TEST(ModelStatesPerRank, Bf16GradientReductionHalvesTheGradientBuffer) {
  Strategy s = Parallel(1, 1, 64, 1);
  s.grad_reduce_in_bf16 = true;
  RankModelStates states = StatesOf(Shipped("llama3-8b"), s, 0);
  EXPECT_EQ(states.gpu.gradients, 2 * kLlama8bParams);
  EXPECT_EQ(states.gpu.Total(), 4 * kLlama8bParams + 12 * (kLlama8bParams / 64));
}

TEST(Adafactor, FactoredSecondMomentIsUnderATenthOfAPercentOfTheParameters) {
  // Why BytesPerParameter leaves it out. Llama 3 8B per layer: q 4096 + 4096, k and v 4096 + 1024,
  // o 4096 + 4096, gate, up and down 4096 + 14336 each: 81920; norms 2 * 4096; 32 layers, the
  // final norm, embedding and head 128256 + 4096 each: 3152384 values, 0.039% of 8030261248.
  const ModelSpec m8 = Shipped("llama3-8b");
  ASSERT_EQ(m8.mlp, MlpKind::kGated);
  ASSERT_FALSE(m8.tie_word_embeddings);
  EXPECT_EQ(FactoredSecondMomentValues(m8), 3'152'384);
  for (const char* name : {"llama3-8b", "llama3-70b", "llama3-405b"}) {
    const ModelSpec m = Shipped(name);
    Result<ParameterCount> count = CountParameters(m);
    ASSERT_TRUE(count.ok());
    EXPECT_LT(FactoredSecondMomentValues(m) * 1000, count->total) << name;
  }
}

TEST(ModelStatesPerRank, OptimizerOffloadMovesTheShardToTheHost) {
  Strategy s = Parallel(8, 4, 8, 1);
  s.offload = Offload::kOptimizer;
  RankModelStates states = StatesOf(Shipped("llama3-70b"), s, 0);
  EXPECT_EQ(states.gpu.optimizer, 0);
  EXPECT_EQ(states.host.optimizer, 12 * 283'942'912LL);
  EXPECT_EQ(states.host.weights + states.host.gradients, 0);
}

TEST(ModelStatesPerRank, ParameterOffloadMovesTheWeightShardToo) {
  Strategy s = Parallel(8, 4, 8, 3);
  s.offload = Offload::kOptimizerAndParams;
  RankModelStates states = StatesOf(Shipped("llama3-70b"), s, 0);
  EXPECT_EQ(states.gpu.weights, 0);
  EXPECT_EQ(states.gpu.optimizer, 0);
  EXPECT_EQ(states.gpu.gradients, 4 * 283'942'912LL);
  EXPECT_EQ(states.host.weights, 2 * 283'942'912LL);
  EXPECT_EQ(states.host.optimizer, 12 * 283'942'912LL);
}

TEST(ParametersPerRank, OneRankHoldsExactlyTheCountedModel) {
  for (const char* name :
       {"llama3-70b", "llama3-8b", "megatron-22b", "gpt3-175b", "mixtral-8x7b"}) {
    const ModelSpec m = Shipped(name);
    Result<ParameterCount> count = CountParameters(m);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(StatesOf(m, Parallel(1, 1, 1, 0), 0).parameters.Total(), count->total) << name;
  }
}

TEST(ParametersPerRank, TiedEmbeddingsAreCopiedToTheLastStage) {
  // Megatron 22B: 48 layers, tied vocabulary of 51200 x 6144, learned positions 2048 x 6144.
  const ModelSpec m = Shipped("megatron-22b");
  const int64_t vocab = 51200LL * 6144;
  const int64_t positions = 2048LL * 6144;
  const int64_t final_norm = 2 * 6144;
  RankParameters first = StatesOf(m, Parallel(1, 2, 1, 0), 0).parameters;
  RankParameters last = StatesOf(m, Parallel(1, 2, 1, 0), 1).parameters;
  Result<ParameterCount> count = CountParameters(m);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(first.dense + last.dense, count->total + vocab);
  EXPECT_EQ(first.dense - vocab - positions, last.dense - vocab - final_norm);
}

TEST(ParametersPerRank, ExpertsSplitOverEpAndShardOverExpertDataParallelRanks) {
  // Mixtral 8x7B: 32 MoE layers of 8 experts, each 3 * 4096 * 14336 = 176160768 parameters.
  const ModelSpec m = Shipped("mixtral-8x7b");
  Strategy s = Parallel(1, 1, 8, 1);
  s.ep = 8;
  RankModelStates states = StatesOf(m, s, 0);
  EXPECT_EQ(states.parameters.expert, 32 * 176'160'768LL);
  // dp 8 / ep 8 leaves one rank per expert: its optimizer states are not sharded.
  const int64_t dense_shard = (states.parameters.dense + 7) / 8;
  EXPECT_EQ(states.gpu.optimizer, 12 * (dense_shard + states.parameters.expert));
}

TEST(ModelStatesPerRank, UnsupportedOrUnsplittableInputsAreErrors) {
  Result<RankModelStates> stage =
      ModelStatesPerRank(Shipped("llama3-70b"), Parallel(8, 4, 8, 0), 4);
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.status().message().find("pipeline stage 4 does not exist with --pp 4"),
            std::string::npos);
  Strategy s = Parallel(1, 1, 6, 0);
  s.ep = 4;
  Result<RankModelStates> ep = ModelStatesPerRank(Shipped("mixtral-8x7b"), s, 0);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(ep.status().message().find("multiple of --ep 4"), std::string::npos);
}

// On the V-shaped schedules stage 0 holds the first and the last virtual stage, so the output
// layer's weights are there, beside the embedding, and not on the last stage (issue 42: the
// memory of the zero-bubble V and DualPipeV runs put them on the wrong GPU).
TEST(ParametersPerRankInAV, TheOutputLayerSitsWithTheEmbeddingOnStageZero) {
  const ModelSpec m = Shipped("llama3-8b");  // untied: the head is its own 128256 x 4096
  ASSERT_FALSE(m.tie_word_embeddings);
  Strategy line;
  line.pp = 4;
  line.vpp = 2;
  line.schedule = ScheduleKind::kInterleaved;
  Strategy v = line;
  v.schedule = ScheduleKind::kZbV;
  const int64_t vocab = m.vocab_size * m.hidden_size;
  std::vector<int64_t> by_stage;
  int64_t line_sum = 0, v_sum = 0;
  for (int64_t stage = 0; stage < 4; ++stage) {
    Result<RankParameters> a = ParametersPerRank(m, line, stage);
    Result<RankParameters> b = ParametersPerRank(m, v, stage);
    ASSERT_TRUE(a.ok() && b.ok());
    line_sum += a->Total();
    v_sum += b->Total();
    by_stage.push_back(b->Total());
    if (stage == 0) {
      EXPECT_EQ(b->Total(), a->Total() + vocab + m.hidden_size) << "stage 0";
    }
    if (stage == 3) {
      EXPECT_EQ(b->Total(), a->Total() - vocab - m.hidden_size) << "stage 3";
    }
  }
  EXPECT_EQ(v_sum, line_sum);
  EXPECT_EQ(by_stage[1], by_stage[3]);  // the V's middle stages hold layers only
}

}  // namespace
}  // namespace loom
