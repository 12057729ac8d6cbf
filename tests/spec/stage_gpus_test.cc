#include "spec/stage_gpus.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec/strategy.h"

namespace loom {
namespace {

GpuSpec Gpu(const std::string& name, double bf16_tflops, std::optional<double> fp8_tflops) {
  GpuSpec gpu;
  gpu.name = name;
  gpu.file = "hardware/gpus/" + name + ".json";
  gpu.bf16_tflops = bf16_tflops;
  gpu.fp8_tflops = fp8_tflops;
  gpu.memory_bytes = int64_t{80} << 30;
  return gpu;
}

// 4 nodes of 8 H100s (ranks 0-31), then 4 of 8 A100s (ranks 32-63).
ClusterSpec Mixed() {
  ClusterSpec cluster;
  cluster.file = "hardware/clusters/mixed.json";
  cluster.gpus_per_node = 8;
  cluster.node_groups = {{Gpu("h100", 989, 1979), 4}, {Gpu("a100", 312, std::nullopt), 4}};
  cluster.gpu = cluster.node_groups[0].gpu;
  cluster.nodes = 8;
  return cluster;
}

// A dense model of 32 layers that every degree below splits.
ModelSpec Model() {
  ModelSpec model;
  model.name = "test-model";
  model.hidden_size = 4096;
  model.intermediate_size = 16384;
  model.num_layers = 32;
  model.num_heads = 32;
  model.num_kv_heads = 32;
  model.head_dim = 128;
  model.vocab_size = 32000;
  model.max_position_embeddings = 4096;
  model.hidden_act = "gelu";
  return model;
}

Strategy Degrees(int64_t tp, int64_t pp, int64_t dp) {
  Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.global_batch = dp * 8;
  s.seq_len = 2048;
  return s;
}

// pp is outermost: with tp 8 and dp 2 a stage is 16 consecutive ranks, two nodes.
TEST(StageGpus, StageSHoldsTheSthRunOfTpCpDpRanks) {
  const Strategy s = Degrees(8, 4, 2);
  EXPECT_EQ(StageRanks(s, 0).first, 0);
  EXPECT_EQ(StageRanks(s, 2).first, 32);
  EXPECT_EQ(StageRanks(s, 3).count, 16);
  const ClusterSpec cluster = Mixed();
  EXPECT_EQ(GpuOfStage(cluster, s, 1).name, "h100");
  EXPECT_EQ(GpuOfStage(cluster, s, 2).name, "a100");
  EXPECT_EQ(NodeGroupOfStage(cluster, s, 3), 1);
  EXPECT_TRUE(StagesSpanGroups(cluster, s));
  EXPECT_FALSE(StagesSpanGroups(cluster, Degrees(8, 1, 8)));
}

// The boundary is rank 32. Stages of 16 ranks (tp 8, dp 2) end on it, with pp 4 or with pp 3 on
// 48 of the GPUs; stages of 20 (tp 4, dp 5) put stage 1 on ranks 20-39, across it.
TEST(StageGpus, AStageAcrossTheGroupBoundaryIsRejectedNamingTheStageAndTheFix) {
  const ClusterSpec cluster = Mixed();
  EXPECT_EQ(StageAcrossGroups(cluster, Degrees(8, 4, 2)), std::nullopt);
  EXPECT_EQ(StageAcrossGroups(cluster, Degrees(8, 3, 2)), std::nullopt);
  const std::optional<StrategyViolation> v = StageAcrossGroups(cluster, Degrees(4, 3, 5));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->flag, "--pp");
  EXPECT_EQ(v->message,
            "--pp 3 with --tp 4 --cp 1 --dp 5: pipeline stage 1 holds GPU ranks 20-39 (tp * cp * "
            "dp = 20 a stage, pp outermost as in Megatron-LM), across the boundary at rank 32 "
            "between node group 0 (h100, 4 nodes) and group 1 (a100, 4 nodes) of "
            "hardware/clusters/mixed.json; a stage runs on one GPU type: use a pp whose stages of "
            "tp * cp * dp GPUs each divide 32, or node groups whose GPU counts are multiples of a "
            "stage's");
  // The rules report it under --pp.
  Strategy straddling = Degrees(4, 3, 5);
  straddling.global_batch = 40;
  std::vector<StrategyViolation> all = StrategyViolations(straddling, Model(), cluster);
  ASSERT_FALSE(all.empty());
  bool found = false;
  for (const StrategyViolation& violation : all) found = found || violation == *v;
  EXPECT_TRUE(found);
}

// fp8 runs on the H100 group, not on the A100 group: only a strategy with a stage there fails.
TEST(StageGpus, EveryStagesGpuMustHaveTheDtype) {
  const ClusterSpec cluster = Mixed();
  Strategy h100_only = Degrees(8, 1, 4);
  h100_only.dtype = Dtype::kFp8;
  EXPECT_TRUE(StrategyViolations(h100_only, Model(), cluster).empty());
  Strategy both = Degrees(8, 2, 4);
  both.dtype = Dtype::kFp8;
  const std::vector<StrategyViolation> v = StrategyViolations(both, Model(), cluster);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].flag, "--dtype");
  EXPECT_NE(v[0].message.find("--dtype fp8: a100 (hardware/gpus/a100.json) of "
                              "hardware/clusters/mixed.json lists no fp8 tensor-core peak"),
            std::string::npos)
      << v[0].message;
}

}  // namespace
}  // namespace loom
