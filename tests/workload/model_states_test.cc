#include "workload/model_states.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace loom {
namespace {

TEST(BytesPerParameter, MixedPrecisionAdamIsSixteenBytes) {
  // ZeRO (Rajbhandari et al. 2020), Section 3.1: 2 + 2 + K with K = 12.
  StateBytesPerParam b = BytesPerParameter(Dtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(b.weight, 2);
  EXPECT_EQ(b.gradient, 2);
  EXPECT_EQ(b.optimizer, 12);
  EXPECT_EQ(b.Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp16, Optimizer::kAdam).Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp8, Optimizer::kAdam).Total(), 16);
}

TEST(BytesPerParameter, SmallerOptimizersHoldLess) {
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kSgd).Total(), 12);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdafactor).Total(), 8);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kAdam).Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kSgd).Total(), 12);
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

TEST(OptimizerStepTraffic, HugeCountsSaturateInsteadOfOverflowing) {
  MemoryShape t = OptimizerStepTraffic(int64_t{1} << 61, Dtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(t.bytes_read, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.bytes_written, std::numeric_limits<int64_t>::max());
}

TEST(ModelStates, ScalesWithParameters) {
  Result<ModelStateBytes> s = ModelStates(70'553'706'496, Dtype::kBf16, Optimizer::kAdam);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->weights, 141'107'412'992);
  EXPECT_EQ(s->gradients, 141'107'412'992);
  EXPECT_EQ(s->optimizer, 846'644'477'952);
  EXPECT_EQ(s->Total(), 1'128'859'303'936);
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

ModelSpec Shipped(const std::string& name) {
  Result<ModelSpec> spec = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/" + name + ".json");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.status().message());
  return spec.ok() ? *spec : ModelSpec();
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

TEST(ModelStatesPerRank, ZeroStagesShardOptimizerThenGradientsThenWeights) {
  // Rajbhandari et al. 2020, Section 5: P_os, P_os+g, P_os+g+p over N_d = 8 ranks.
  const ModelSpec m = Shipped("llama3-70b");
  const int64_t params = kLlama70bStageLayers + kLlama70bVocabShard;  // 2271543296
  const int64_t shard = params / 8;                                   // 283942912, exact
  RankModelStates z0 = StatesOf(m, Parallel(8, 4, 8, 0), 0);
  EXPECT_EQ(z0.gpu.weights, 2 * params);
  EXPECT_EQ(z0.gpu.gradients, 2 * params);
  EXPECT_EQ(z0.gpu.optimizer, 12 * params);
  EXPECT_EQ(z0.gpu.Total(), 36'344'692'736);
  RankModelStates z1 = StatesOf(m, Parallel(8, 4, 8, 1), 0);
  EXPECT_EQ(z1.gpu.weights, 2 * params);
  EXPECT_EQ(z1.gpu.gradients, 2 * params);
  EXPECT_EQ(z1.gpu.optimizer, 12 * shard);
  EXPECT_EQ(z1.gpu.Total(), 12'493'488'128);
  RankModelStates z2 = StatesOf(m, Parallel(8, 4, 8, 2), 0);
  EXPECT_EQ(z2.gpu.gradients, 2 * shard);
  EXPECT_EQ(z2.gpu.Total(), 8'518'287'360);
  RankModelStates z3 = StatesOf(m, Parallel(8, 4, 8, 3), 0);
  EXPECT_EQ(z3.gpu.Total(), 16 * shard);
  EXPECT_EQ(z3.host.Total(), 0);
}

TEST(ModelStatesPerRank, OptimizerOffloadMovesTheShardToTheHost) {
  Strategy s = Parallel(8, 4, 8, 1);
  s.offload = Offload::kOptimizer;
  RankModelStates states = StatesOf(Shipped("llama3-70b"), s, 0);
  EXPECT_EQ(states.gpu.optimizer, 0);
  EXPECT_EQ(states.host.optimizer, 12 * 283'942'912LL);
  EXPECT_EQ(states.host.weights + states.host.gradients, 0);
}

TEST(ParametersPerRank, OneRankHoldsExactlyTheCountedModel) {
  for (const char* name : {"llama3-70b", "llama3-8b", "megatron-22b", "gpt3-175b", "mixtral-8x7b"}) {
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
  Result<RankModelStates> mla = ModelStatesPerRank(Shipped("deepseek-v3"), Parallel(8, 1, 1, 0), 0);
  ASSERT_FALSE(mla.ok());
  EXPECT_EQ(mla.status().code(), Status::Code::kUnimplemented);
  Result<RankModelStates> stage = ModelStatesPerRank(Shipped("llama3-70b"), Parallel(8, 4, 8, 0), 4);
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.status().message().find("pipeline stage 4 does not exist with --pp 4"), std::string::npos);
  Strategy s = Parallel(1, 1, 6, 0);
  s.ep = 4;
  Result<RankModelStates> ep = ModelStatesPerRank(Shipped("mixtral-8x7b"), s, 0);
  ASSERT_FALSE(ep.ok());
  EXPECT_NE(ep.status().message().find("multiple of --ep 4"), std::string::npos);
}

}  // namespace
}  // namespace loom
