#include "spec/strategy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom {
namespace {

// GPT-3 175B (Brown et al. 2020, Table 2.1): learned positions up to 2048.
ModelSpec Gpt3() {
  ModelSpec model;
  model.name = "gpt3-175b";
  model.file = "models/gpt3-175b.json";
  model.hidden_size = 12288;
  model.intermediate_size = 4 * 12288;
  model.num_layers = 96;
  model.num_heads = 96;
  model.num_kv_heads = 96;
  model.head_dim = 128;
  model.vocab_size = 51200;
  model.max_position_embeddings = 2048;
  model.hidden_act = "gelu";
  model.mlp = MlpKind::kPlain;
  model.norm = NormKind::kLayerNorm;
  model.position = PositionKind::kLearnedAbsolute;
  return model;
}

// Mixtral 8x7B (its config.json): 8 experts, top-2, GQA with 8 KV heads, rotary positions.
ModelSpec Mixtral() {
  ModelSpec model;
  model.name = "mixtral-8x7b";
  model.file = "models/mixtral-8x7b.json";
  model.hidden_size = 4096;
  model.intermediate_size = 14336;
  model.num_layers = 32;
  model.num_heads = 32;
  model.num_kv_heads = 8;
  model.head_dim = 128;
  model.vocab_size = 32000;
  model.max_position_embeddings = 32768;
  model.hidden_act = "silu";
  model.mlp = MlpKind::kGated;
  model.position = PositionKind::kRotary;
  model.moe = MoeSpec{.num_experts = 8, .experts_per_token = 2, .expert_intermediate_size = 14336};
  return model;
}

// 128 nodes of 8 A100s (datasheet peaks; no fp8 tensor cores).
ClusterSpec A100Cluster() {
  ClusterSpec cluster;
  cluster.name = "a100-cluster";
  cluster.file = "hardware/clusters/a100-cluster.json";
  cluster.gpu.name = "A100-SXM4-80GB";
  cluster.gpu.file = "hardware/gpus/a100-sxm4-80gb.json";
  cluster.gpu.bf16_tflops = 312;
  cluster.gpu.fp16_tflops = 312;
  cluster.gpu.tf32_tflops = 156;
  cluster.gpu.fp32_tflops = 19.5;
  cluster.gpus_per_node = 8;
  cluster.nodes = 128;
  return cluster;
}

// GPT-3 as Narayanan et al. 2021 train it, scaled down: TP8 PP8 DP2, interleaved with 2 chunks.
Strategy Gpt3Baseline() {
  Strategy s;
  s.tp = 8;
  s.pp = 8;
  s.dp = 2;
  s.sp = true;
  s.vpp = 2;
  s.micro_batch = 1;
  s.global_batch = 1536;
  s.seq_len = 2048;
  s.schedule = ScheduleKind::kInterleaved;
  s.recompute = Recompute::kSelective;
  s.zero_stage = 1;
  return s;
}

// Mixtral on 64 GPUs: TP2 PP4 DP8 EP8 (tp * pp * dp = 64).
Strategy MixtralBaseline() {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 8;
  s.ep = 8;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 256;
  s.seq_len = 4096;
  return s;
}

// The flag a message leads with, as users typed it: "--tp 3: ..." -> "--tp".
std::string LeadingFlag(const std::string& message) {
  return message.substr(0, message.find_first_of(" :"));
}

// The messages of StrategyViolations; every violation's flag must be the one its message leads
// with, which is what the planner tallies rejections by.
std::vector<std::string> ViolationMessages(const Strategy& s, const ModelSpec& model,
                                           const ClusterSpec& cluster) {
  std::vector<std::string> messages;
  for (const StrategyViolation& v : StrategyViolations(s, model, cluster)) {
    EXPECT_EQ(v.flag, LeadingFlag(v.message)) << v.message;
    messages.push_back(v.message);
  }
  return messages;
}

std::vector<std::string> Gpt3Violations(const Strategy& s) {
  return ViolationMessages(s, Gpt3(), A100Cluster());
}

std::vector<std::string> MixtralViolations(const Strategy& s) {
  return ViolationMessages(s, Mixtral(), A100Cluster());
}

using Pieces = std::vector<std::string>;

// Success when |messages| holds one message per entry of |expected|, in order, the i-th
// containing every piece of expected[i].
::testing::AssertionResult MessagesContain(const std::vector<std::string>& messages,
                                           const std::vector<Pieces>& expected) {
  std::string all;
  for (const std::string& m : messages) all += "\n  " + m;
  if (messages.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "expected " << expected.size() << " messages, got " << messages.size() << ":" << all;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    for (const std::string& piece : expected[i]) {
      if (messages[i].find(piece) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message " << i << " lacks \"" << piece << "\":" << all;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

const std::vector<std::string> kNone;

TEST(Strategy, Gpt3BaselineIsValid) {
  EXPECT_EQ(Gpt3Violations(Gpt3Baseline()), kNone);
  EXPECT_TRUE(ValidateStrategy(Gpt3Baseline(), Gpt3(), A100Cluster()).ok());
}

TEST(Strategy, MixtralBaselineIsValid) { EXPECT_EQ(MixtralViolations(MixtralBaseline()), kNone); }

TEST(Strategy, DefaultStrategyIsValidForGpt3) { EXPECT_EQ(Gpt3Violations(Strategy{}), kNone); }

TEST(Strategy, WorldSizeAndMicroBatches) {
  const Strategy s = Gpt3Baseline();
  EXPECT_EQ(s.WorldSize(), 128);
  EXPECT_EQ(s.NumMicroBatches(), 768);
  Strategy c = s;
  c.cp = 2;
  c.micro_batch = 2;
  EXPECT_EQ(c.WorldSize(), 256);
  EXPECT_EQ(c.NumMicroBatches(), 384);
}

TEST(Strategy, RejectsNonPositiveDegrees) {
  Strategy s;
  s.tp = 0;
  s.global_batch = -4;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{
                "--tp 0: must be at least 1; use --tp 1 or more",
                "--global-batch -4: must be at least 1; use --global-batch 1 or more"}));
}

TEST(Strategy, RejectsZeroStageOutOfRange) {
  Strategy s;
  s.zero_stage = 4;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--zero 4", "use --zero 0, 1, 2 or 3"}}));
}

TEST(Strategy, ZeroOrNegativeValuesDoNotCrash) {
  for (int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    Strategy s = Gpt3Baseline();
    s.tp = s.pp = s.dp = s.cp = s.ep = s.vpp = bad;
    s.micro_batch = s.global_batch = s.seq_len = bad;
    s.zero_stage = -1;
    s.offload = Offload::kOptimizer;
    // Nine degrees, the ZeRO stage and the offload; every dependent rule is skipped.
    EXPECT_EQ(MixtralViolations(s).size(), 11u) << "value " << bad;
  }
}

TEST(Strategy, HugeValuesDoNotOverflow) {
  Strategy s = Gpt3Baseline();
  s.tp = s.pp = s.dp = s.cp = s.vpp = s.micro_batch = INT64_MAX / 2;
  s.sp = false;
  EXPECT_NE(Gpt3Violations(s), kNone);
}

TEST(Strategy, RejectsHeadsNotDivisibleByTp) {
  ModelSpec model = Gpt3();
  model.file = "models/x.json";
  model.num_heads = model.num_kv_heads = 64;
  Strategy s;
  s.tp = 3;
  const std::vector<std::string> violations = ViolationMessages(s, model, A100Cluster());
  ASSERT_EQ(violations.size(), 2u);
  EXPECT_EQ(violations[0],
            "--tp 3: num_attention_heads (64) of models/x.json is not divisible by it; use a tp "
            "that divides 64 (1, 2, 4, 8, 16, 32, 64)");
  EXPECT_NE(violations[1].find("num_key_value_heads (64)"), std::string::npos);
}

TEST(Strategy, RejectsKvHeadsNotDivisibleByTp) {
  Strategy s = MixtralBaseline();
  s.tp = 16;
  s.allow_cross_node_tp = true;
  s.dp = 1;
  s.ep = 1;
  s.global_batch = 4;
  EXPECT_TRUE(MessagesContain(
      MixtralViolations(s),
      {{"--tp 16: num_key_value_heads (8) of models/mixtral-8x7b.json is not divisible by it",
        "query groups", "use a tp that divides 8 (1, 2, 4, 8)"}}));
}

TEST(Strategy, RejectsIntermediateSizeNotDivisibleByTp) {
  ModelSpec model = Gpt3();
  model.intermediate_size = 49150;  // 2 * 5^2 * 983
  Strategy s;
  s.tp = 2;
  EXPECT_EQ(ViolationMessages(s, model, A100Cluster()), kNone);
  s.tp = 4;
  EXPECT_TRUE(MessagesContain(ViolationMessages(s, model, A100Cluster()),
                              {{"--tp 4: intermediate_size (49150)", "column-wise",
                                "use a tp that divides 49150 (1, 2, 5, 10, 25, 50, ...)"}}));
}

TEST(Strategy, RejectsExpertIntermediateSizeNotDivisibleByTp) {
  ModelSpec model = Mixtral();
  model.moe->expert_intermediate_size = 1402;  // 2 * 701
  Strategy s = MixtralBaseline();
  s.tp = 4;
  s.pp = 2;
  EXPECT_TRUE(MessagesContain(
      ViolationMessages(s, model, A100Cluster()),
      {{"--tp 4: the expert intermediate size (1402)", "use a tp that divides 1402 (1, 2, ...)"}}));
}

TEST(Strategy, RejectsTpAcrossNodesUnlessAllowed) {
  Strategy s = Gpt3Baseline();
  s.tp = 16;
  s.pp = 4;
  EXPECT_TRUE(MessagesContain(
      Gpt3Violations(s),
      {{"--tp 16: exceeds the 8 GPUs per node of hardware/clusters/a100-cluster.json",
        "rarely worth it", "use --tp 8 or less", "--allow-cross-node-tp"}}));
  s.allow_cross_node_tp = true;
  EXPECT_EQ(Gpt3Violations(s), kNone);
}

TEST(Strategy, RejectsSequenceParallelWithoutTp) {
  Strategy s;
  s.sp = true;
  EXPECT_TRUE(MessagesContain(
      Gpt3Violations(s), {{"--sp with --tp 1", "silently", "drop --sp or use --tp 2 or more"}}));
}

TEST(Strategy, RejectsSequenceParallelSeqNotDivisibleByTp) {
  Strategy s = Gpt3Baseline();
  s.seq_len = 2044;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{
                "--seq 2044 with --sp, --tp 8 and --cp 1: each tp rank holds seq / (cp * tp) "
                "tokens, and 2044 is not divisible by 8; use --seq 2040 or 2048"}));
}

// A stage's 12 layers over 5 chunks split 3, 3, 2, 2, 2 (Megatron-core's
// --pipeline-model-parallel-layout says it); 13 chunks would leave one empty.
TEST(Strategy, AcceptsUnevenChunksAndRejectsEmptyOnes) {
  Strategy s = Gpt3Baseline();
  s.vpp = 5;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  s.vpp = 13;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{"--pp 8 --vpp 13: num_hidden_layers (96) of "
                                      "models/gpt3-175b.json does not split evenly over 8 "
                                      "stages of 13 chunks each; use a pp that divides 96 (1, 2, "
                                      "3, 4, 6, 8, 12, 16, 24, 32, 48, 96) "
                                      "with at most 12 chunks a stage, give the first and last "
                                      "stage their own layer counts with "
                                      "--first-stage-layers and --last-stage-layers, or place "
                                      "every chunk with --pipeline-layout (there are fewer "
                                      "layers than pp * vpp)"}));
}

TEST(Strategy, RejectsInterleavedWithOneStageOrOneChunk) {
  Strategy s;
  s.schedule = ScheduleKind::kInterleaved;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s),
                              {{"--schedule interleaved with --pp 1", "use --pp 2 or more"},
                               {"--schedule interleaved with --vpp 1", "use --vpp 2 or more"}}));
}

// Megatron-LM's interleaved schedule needs at least pp micro-batches, in groups it accepts.
TEST(Strategy, RejectsInterleavedMicroBatchesBelowPpOrUngrouped) {
  Strategy s = Gpt3Baseline();
  s.global_batch = 12;  // 6 micro-batches per rank on 8 stages
  EXPECT_TRUE(MessagesContain(
      Gpt3Violations(s),
      {{"--schedule interleaved with --pp 8: the number of micro-batches (6 = --global-batch 12 "
        "/ (--micro-batch 1 * --dp 2)) is below pp",
        "use --global-batch 16 or more"}}));
  s.global_batch = 20;  // 10: groups of 8 would leave 2
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s),
                              {{"micro-batch groups of 8", "use --microbatch-group 10"}}));
  s.microbatch_group = 10;
  EXPECT_EQ(Gpt3Violations(s), kNone);
}

TEST(Strategy, VShapedSchedulesNeedTwoChunksAndTwoStages) {
  Strategy s = Gpt3Baseline();
  s.schedule = ScheduleKind::kZbV;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  s.vpp = 4;
  EXPECT_TRUE(
      MessagesContain(Gpt3Violations(s), {{"--schedule zb-v with --vpp 4", "use --vpp 2"}}));
  Strategy one_stage;
  one_stage.schedule = ScheduleKind::kDualPipeV;
  one_stage.vpp = 2;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(one_stage),
                              {{"--schedule dualpipev with --pp 1", "use --pp 2 or more"}}));
}

TEST(Strategy, RejectsVppWithSingleChunkSchedules) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    Strategy s = Gpt3Baseline();
    s.schedule = kind;
    const std::string flags = "--vpp 2 with --schedule " + std::string(kScheduleNames.Name(kind));
    EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{flags, "use --vpp 1"}}));
  }
}

TEST(Strategy, RejectsGlobalBatchNotDivisibleByMicroBatchTimesDp) {
  Strategy s;
  s.dp = 16;
  s.micro_batch = 2;
  s.global_batch = 1000;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{
                "--global-batch 1000: not divisible by --micro-batch 2 * --dp 16 (32); it would "
                "be 1000 / 32 = 31.25 micro-batches per data-parallel rank; use --global-batch "
                "992 or 1024"}));
}

TEST(Strategy, GlobalBatchBelowOneStepSuggestsOneStep) {
  Strategy s;
  s.dp = 16;
  s.global_batch = 8;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"8 / 16 = 0.50", "use --global-batch 16"}}));
}

TEST(Strategy, RejectsWorldLargerThanCluster) {
  Strategy s = Gpt3Baseline();
  s.dp = 16;  // 8 * 8 * 16 = 1024 fits exactly
  s.global_batch = 1024;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  s.dp = 20;
  s.global_batch = 1280;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{
                "--tp 8 --pp 8 --dp 20 --cp 1: tp * pp * dp * cp = 1280 GPUs, more than the 1024 "
                "of hardware/clusters/a100-cluster.json (128 nodes of 8 GPUs); use --nodes 160 or "
                "more, or use smaller parallel degrees"}));
}

TEST(Strategy, UnknownNodeCountSkipsWorldSizeRule) {
  ClusterSpec cluster = A100Cluster();
  cluster.nodes.reset();
  Strategy s = Gpt3Baseline();
  s.dp = 1000;
  s.global_batch = 16000;
  EXPECT_EQ(ViolationMessages(s, Gpt3(), cluster), kNone);
}

TEST(Strategy, RejectsSeqNotDivisibleByTwiceCp) {
  Strategy s = MixtralBaseline();
  s.sp = false;
  s.cp = 4;
  s.dp = 2;
  s.seq_len = 4100;
  EXPECT_EQ(MixtralViolations(s),
            (std::vector<std::string>{
                "--seq 4100 with --cp 4: load-balanced causal context parallelism splits the "
                "sequence into 2 * cp = 8 chunks, and 4100 is not divisible by 8; use --seq 4096 "
                "or 4104"}));
}

TEST(Strategy, RejectsSeqBeyondLearnedPositions) {
  Strategy s = Gpt3Baseline();
  s.seq_len = 4096;
  EXPECT_TRUE(MessagesContain(
      Gpt3Violations(s),
      {{"--seq 4096: exceeds max_position_embeddings (2048) of models/gpt3-175b.json",
        "use --seq 2048 or less"}}));
}

TEST(Strategy, RotaryPositionsHaveNoSeqLimit) {
  Strategy s = MixtralBaseline();
  s.seq_len = 131072;
  EXPECT_EQ(MixtralViolations(s), kNone);
}

TEST(Strategy, RejectsExpertParallelOnDenseModel) {
  Strategy s;
  s.dp = 2;
  s.global_batch = 2;
  s.ep = 2;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s),
                              {{"--ep 2: models/gpt3-175b.json is a dense model", "use --ep 1"}}));
}

TEST(Strategy, RejectsExpertsNotDivisibleByEp) {
  Strategy s = MixtralBaseline();
  s.dp = 6;
  s.pp = 2;
  s.global_batch = 240;
  s.ep = 3;
  EXPECT_EQ(MixtralViolations(s),
            (std::vector<std::string>{
                "--ep 3: num_experts (8) of models/mixtral-8x7b.json is not divisible by it; use "
                "an ep that divides 8 (1, 2, 4, 8)"}));
}

TEST(Strategy, RejectsEpNotDividingDpTimesCp) {
  Strategy s = MixtralBaseline();
  s.dp = 2;
  s.global_batch = 64;
  EXPECT_TRUE(MessagesContain(
      MixtralViolations(s),
      {{"--ep 8 with --dp 2 --cp 1: expert-parallel ranks are carved from the dp * cp = 2",
        "use an ep that divides 2 (1, 2), or raise --dp"}}));
  s.cp = 4;  // dp * cp = 8
  EXPECT_EQ(MixtralViolations(s), kNone);
}

TEST(Strategy, RejectsFp8OnGpuWithoutFp8) {
  Strategy s = Gpt3Baseline();
  s.dtype = Dtype::kFp8;
  EXPECT_EQ(Gpt3Violations(s),
            (std::vector<std::string>{
                "--dtype fp8: A100-SXM4-80GB (hardware/gpus/a100-sxm4-80gb.json) of "
                "hardware/clusters/a100-cluster.json lists no fp8 tensor-core peak (fp8_tflops); "
                "use a --dtype it has (bf16, fp16, tf32, fp32), or a cluster whose GPU has fp8"}));
  ClusterSpec h100 = A100Cluster();
  h100.gpu.fp8_tflops = 1979;
  EXPECT_EQ(ViolationMessages(s, Gpt3(), h100), kNone);
}

TEST(Strategy, Tf32NeedsAGpuPeak) {
  Strategy s = Gpt3Baseline();
  s.dtype = Dtype::kTf32;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  ClusterSpec cluster = A100Cluster();
  cluster.gpu.tf32_tflops.reset();
  EXPECT_TRUE(
      MessagesContain(ViolationMessages(s, Gpt3(), cluster), {{"--dtype tf32: A100-SXM4-80GB"}}));
}

TEST(Strategy, RecomputeLayersNeedFullRecomputeAndFitAStage) {
  Strategy s = Gpt3Baseline();  // pp 8, vpp 2: 6 layers per model chunk
  s.recompute_layers = 4;
  s.recompute = Recompute::kSelective;
  EXPECT_TRUE(MessagesContain(
      Gpt3Violations(s),
      {{"--recompute-layers 4 with --recompute selective", "use --recompute full"}}));
  s.recompute = Recompute::kFull;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  s.recompute_layers = 7;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--recompute-layers 7", "holds 6 layers",
                                                   "use --recompute-layers 6 or less"}}));
  s.recompute_layers = -1;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--recompute-layers -1: must be at least 0"}}));
}

TEST(Strategy, RejectsOptimizerOffloadWithoutZero) {
  Strategy s;
  s.offload = Offload::kOptimizer;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--offload optimizer with --zero 0",
                                                   "use --zero 1 or higher, or --offload none"}}));
  s.zero_stage = 1;
  EXPECT_EQ(Gpt3Violations(s), kNone);
}

TEST(Strategy, AcceptsZeroWithoutDataParallelism) {
  Strategy s;
  s.zero_stage = 3;
  ASSERT_EQ(s.dp, 1);
  EXPECT_EQ(Gpt3Violations(s), kNone);
}

TEST(Strategy, ReportsEveryViolationInOrder) {
  Strategy s = Gpt3Baseline();
  s.zero_stage = 7;
  s.tp = 5;
  s.global_batch = 1535;
  s.seq_len = 4096;
  s.dtype = Dtype::kFp8;
  s.ep = 2;
  const std::vector<std::string> violations = Gpt3Violations(s);
  EXPECT_TRUE(MessagesContain(violations, {{"--zero 7"},
                                           {"num_attention_heads"},
                                           {"num_key_value_heads"},
                                           {"intermediate_size"},
                                           {"--seq 4096 with --sp"},
                                           {"--global-batch 1535"},
                                           {"max_position_embeddings"},
                                           {"dense model"},
                                           {"--dtype fp8"}}));

  const Status status = ValidateStrategy(s, Gpt3(), A100Cluster());
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  std::string joined;
  for (const std::string& v : violations) joined += (joined.empty() ? "" : "\n") + v;
  EXPECT_EQ(status.message(), joined);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(StrategyIssue5, UnevenStagesSplitTheRestEvenly) {
  Strategy s = Gpt3Baseline();
  s.vpp = 1;
  s.schedule = ScheduleKind::k1F1B;
  s.first_stage_layers = 5;
  s.last_stage_layers = 7;  // 96 - 12 = 84 over 6 stages: 14 each
  EXPECT_EQ(Gpt3Violations(s), kNone);
  EXPECT_EQ(LayersPerVirtualStage(s, 96), (std::vector<int64_t>{5, 14, 14, 14, 14, 14, 14, 7}));
  s.last_stage_layers = 8;  // 83 does not split over 6
  EXPECT_TRUE(
      MessagesContain(Gpt3Violations(s), {{"--first-stage-layers 5", "83", "6 other stages"}}));
}

TEST(StrategyIssue5, UnevenStagesSplitOverTheirChunks) {
  Strategy s = Gpt3Baseline();  // pp 8, vpp 2
  s.first_stage_layers = 6;
  s.last_stage_layers = 6;  // 84 / 6 = 14 per middle stage, 7 per chunk
  EXPECT_EQ(Gpt3Violations(s), kNone);
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, 96);
  ASSERT_EQ(layers.size(), 16u);
  EXPECT_EQ(layers[0], 3);
  EXPECT_EQ(layers[1], 7);
  EXPECT_EQ(layers[7], 3);
  EXPECT_EQ(layers[8], 3);
  // A 5-layer first stage splits 2 (beside the embedding) and 3, a 7-layer last 4 and 3 (beside
  // the loss): Megatron-core takes that as --pipeline-model-parallel-layout (issue 21).
  s.first_stage_layers = 5;
  s.last_stage_layers = 7;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  const std::vector<int64_t> uneven = LayersPerVirtualStage(s, 96);
  EXPECT_EQ(uneven[0], 2);
  EXPECT_EQ(uneven[8], 3);
  EXPECT_EQ(uneven[7], 4);
  EXPECT_EQ(uneven[15], 3);
  // 1 layer over 2 chunks: the embedding's chunk may be empty; over 3 chunks a second one would be.
  s.first_stage_layers = 1;
  s.last_stage_layers = 11;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  s.vpp = 3;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--vpp 3 with stages of 1, 14 and 11 layers",
                                                   "holds at least one layer", "--vpp 2"}}));
}

TEST(StrategyIssue5, ZeroTwoAndThreeRefusePipelines) {
  Strategy s = Gpt3Baseline();
  s.zero_stage = 3;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--zero 3 with --pp 8", "DeepSpeed"}}));
  s.zero_stage = 2;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--zero 2 with --pp 8"}}));
  s.zero_stage = 1;
  EXPECT_EQ(Gpt3Violations(s), kNone);
}

TEST(StrategyIssue5, OffloadAndOverlapSwitchesNeedWhatMegatronNeeds) {
  Strategy s = Gpt3Baseline();
  s.zero_stage = 0;
  s.offload = Offload::kOptimizerAndParams;
  s.overlap_param_gather = true;
  s.grad_reduce_in_bf16 = true;
  s.dtype = Dtype::kFp16;
  EXPECT_TRUE(
      MessagesContain(Gpt3Violations(s), {{"--offload optimizer+params with --zero 0", "--zero 3"},
                                          {"--overlap-param-gather with --zero 0"},
                                          {"--overlap-param-gather without --overlap-grad-reduce"},
                                          {"--grad-reduce-in-bf16 with --dtype fp16"}}));
  s = Gpt3Baseline();
  s.sp = false;
  s.tp_comm_overlap = true;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--tp-comm-overlap with --tp 8 and no --sp"}}));
}

TEST(StrategyIssue5, ExpertTensorParallelMustTileTheStage) {
  Strategy s = MixtralBaseline();  // tp 2, dp 8: 16 ranks per stage
  s.etp = 1;
  EXPECT_EQ(MixtralViolations(s), kNone);
  s.ep = 8;
  s.etp = 4;  // 32 does not divide 16
  EXPECT_TRUE(MessagesContain(MixtralViolations(s), {{"--ep 8 --etp 4", "not divisible by 32"}}));
  s.etp = 3;
  EXPECT_TRUE(MessagesContain(
      MixtralViolations(s), {{"--etp 3", "expert intermediate size (14336)"}, {"--ep 8 --etp 3"}}));
  s = Gpt3Baseline();
  s.etp = 4;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"--etp 4", "dense model"}}));
}

TEST(StrategyIssue5, RoutingKnobsNeedExpertsAndSaneValues) {
  Strategy s = MixtralBaseline();
  s.moe_imbalance = 0.5;
  s.moe_capacity_factor = -1;
  EXPECT_TRUE(MessagesContain(MixtralViolations(s),
                              {{"--moe-capacity-factor -1"}, {"--moe-imbalance 0.5"}}));
  s = Gpt3Baseline();
  s.moe_capacity_factor = 1.25;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s), {{"dense model with no router"}}));
}

// Issue 18: production fp8 runs reduce their (bf16) gradients in bf16; autograd accumulation has
// no contiguous gradient buffer for a sharded optimizer to reduce.
TEST(StrategyIssue18, Fp8MayReduceInBf16AndAutogradNeedsNoZero) {
  ClusterSpec h100 = A100Cluster();
  h100.gpu.fp8_tflops = 1979;
  Strategy s = Gpt3Baseline();
  s.dtype = Dtype::kFp8;
  s.grad_reduce_in_bf16 = true;
  EXPECT_EQ(ViolationMessages(s, Gpt3(), h100), kNone);
  s.dtype = Dtype::kFp32;
  EXPECT_TRUE(MessagesContain(ViolationMessages(s, Gpt3(), h100),
                              {{"--grad-reduce-in-bf16 with --dtype fp32", "bf16 and fp8"}}));
  s = Gpt3Baseline();  // zero_stage 1
  s.grad_accumulation = GradAccumulation::kAutograd;
  EXPECT_TRUE(MessagesContain(Gpt3Violations(s),
                              {{"--grad-accumulation autograd with --zero 1", "--zero 0"}}));
  s.zero_stage = 0;
  EXPECT_EQ(Gpt3Violations(s), kNone);
  EXPECT_EQ(kGradAccumulationNames.Parse("add"), GradAccumulation::kAdd);
  EXPECT_EQ(kGradAccumulationNames.Name(GradAccumulation::kFused), "fused");
}

// The planner tallies rejections by |flag|: the setting each message leads with, also where the
// message names several ("--sp with --tp 1", "--moe-capacity-factor / --moe-imbalance").
TEST(StrategyViolation, EachCarriesTheFlagOfTheSettingItLeadsWith) {
  Strategy s = Gpt3Baseline();
  s.zero_stage = 7;
  s.tp = 1;
  s.dp = 16;
  s.moe_capacity_factor = 1.25;
  s.grad_accumulation = GradAccumulation::kAutograd;
  std::vector<std::string> flags;
  for (const StrategyViolation& v : StrategyViolations(s, Gpt3(), A100Cluster())) {
    flags.push_back(v.flag);
  }
  EXPECT_EQ(flags, (std::vector<std::string>{"--zero", "--sp", "--moe-capacity-factor",
                                             "--grad-accumulation"}));
}

// The split rules alone, for callers that build layers of strategies they made up: not the
// cluster's, the pipeline's or the optimizer's.
TEST(LayerSplitViolations, AreTheRulesOnHowALayerSplits) {
  Strategy s = MixtralBaseline();
  s.tp = 16;
  s.sp = true;
  s.ep = 3;
  s.zero_stage = 2;
  s.dtype = Dtype::kFp8;
  std::vector<std::string> all, split;
  for (const StrategyViolation& v : StrategyViolations(s, Mixtral(), A100Cluster())) {
    all.push_back(v.flag);
  }
  for (const StrategyViolation& v : LayerSplitViolations(s, Mixtral())) split.push_back(v.flag);
  EXPECT_EQ(all, (std::vector<std::string>{"--tp", "--tp", "--ep", "--ep", "--dtype", "--zero"}));
  EXPECT_EQ(split, (std::vector<std::string>{"--tp", "--ep", "--ep"}));
  EXPECT_TRUE(LayerSplitViolations(MixtralBaseline(), Mixtral()).empty());
}

}  // namespace
}  // namespace loom
