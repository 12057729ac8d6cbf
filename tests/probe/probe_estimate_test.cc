#include "probe/probe_estimate.h"

#include <cstdio>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

const std::string kSource = LOOM_SOURCE_DIR;

ClusterSpec DgxH100(std::optional<int64_t> nodes = std::nullopt) {
  Result<ClusterSpec> cluster =
      LoadClusterSpec(kSource + "/hardware/clusters/dgx-h100.json", nodes);
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  return *cluster;
}

double Total(const SweepOptions& sweep, const BenchSettings& settings, const ClusterSpec& cluster) {
  Result<std::vector<ProbePoint>> points = PlanSweep(sweep);
  EXPECT_TRUE(points.ok()) << points.status().message();
  Result<ProbeDurationEstimate> estimate = EstimateProbeDuration(*points, settings, cluster);
  EXPECT_TRUE(estimate.ok()) << estimate.status().message();
  return estimate.ok() ? estimate->total_s : 0;
}

// Stage 1 of tools/gpu_validate on 2026-11-27: four --for-model probes into one profile (seq 2048,
// micro-batch 4, bf16, on dgx-h100's TP degrees), the first with memory-bound and host points; a
// resumed point is measured once, so the sweep is the union of the four.
std::vector<ProbePoint> ValidationStage1(const ClusterSpec& cluster) {
  std::vector<ProbePoint> all;
  std::set<std::string> seen;
  bool first = true;
  for (const char* name : {"gpt3-125m", "gpt3-350m", "llama3.2-1b", "gpt3-1.3b"}) {
    Result<ModelSpec> model = LoadModelSpec(kSource + "/models/" + name + ".json");
    EXPECT_TRUE(model.ok()) << model.status().message();
    if (!model.ok()) continue;
    SweepOptions sweep;
    sweep.kinds = {ProbeKind::kGemm, ProbeKind::kAttention};
    if (first)
      sweep.kinds = {ProbeKind::kGemm, ProbeKind::kAttention, ProbeKind::kMemory, ProbeKind::kHost};
    first = false;
    sweep.for_model = {&*model, &cluster, 2048, {4}, Dtype::kBf16};
    Result<std::vector<ProbePoint>> points = PlanSweep(sweep);
    EXPECT_TRUE(points.ok()) << points.status().message();
    if (!points.ok()) continue;
    for (const ProbePoint& p : *points) {
      if (seen.insert(PointKey(p, nullptr)).second) all.push_back(p);
    }
  }
  return all;
}

TEST(EstimateProbeDuration, ReproducesTheMeasuredH100RunsWithinOneAndAHalf) {
  const ClusterSpec cluster = DgxH100();
  const BenchSettings settings;  // the defaults both runs used: 5 warm-up, 20 timed, rotated inputs
  const std::vector<ProbePoint> stage1 = ValidationStage1(cluster);
  ASSERT_EQ(stage1.size(), 278u);  // what probe.log says the four runs measured
  Result<ProbeDurationEstimate> one = EstimateProbeDuration(stage1, settings, cluster);
  ASSERT_TRUE(one.ok()) << one.status().message();
  SweepOptions grid;
  grid.kinds = {ProbeKind::kGemm, ProbeKind::kAttention};
  grid.gemm_dtypes = {Dtype::kBf16};
  Result<std::vector<ProbePoint>> stage3 = PlanSweep(grid);
  ASSERT_TRUE(stage3.ok());
  ASSERT_EQ(stage3->size(), 106u + 192u);
  Result<ProbeDurationEstimate> three = EstimateProbeDuration(*stage3, settings, cluster);
  ASSERT_TRUE(three.ok()) << three.status().message();
  // Measured: 14 s and 37 s (hardware/validation/README.md).
  EXPECT_GT(one->total_s, 14 / 1.5);
  EXPECT_LT(one->total_s, 14 * 1.5);
  EXPECT_GT(three->total_s, 37 / 1.5);
  EXPECT_LT(three->total_s, 37 * 1.5);
  RecordProperty("stage1_s", std::to_string(one->total_s));
  RecordProperty("stage3_s", std::to_string(three->total_s));
  std::printf("stage 1: %.1f s (measured 14 s), stage 3: %.1f s (measured 37 s)\n", one->total_s,
              three->total_s);
}

TEST(EstimateProbeDuration, SumsTheClassesAndCountsTheirPoints) {
  SweepOptions sweep;
  sweep.gemm_dtypes = {Dtype::kBf16};
  Result<std::vector<ProbePoint>> points = PlanSweep(sweep);
  ASSERT_TRUE(points.ok());
  Result<ProbeDurationEstimate> e = EstimateProbeDuration(*points, BenchSettings{}, DgxH100());
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind_points[0], 106);
  EXPECT_EQ(e->kind_points[1], 192);
  EXPECT_EQ(e->kind_points[4], 0);
  double sum = 0;
  for (double s : e->kind_s) sum += s;
  EXPECT_NEAR(sum, e->total_s, 1e-9 * e->total_s);
  // Every kernel point pays at least its set-up; attention also its cuDNN graph.
  EXPECT_GE(e->kind_s[0], 106 * kPointSetupS);
  EXPECT_GE(e->kind_s[1], 192 * (kPointSetupS + kAttentionGraphBuildS));
}

TEST(EstimateProbeDuration, GrowsWithRepeatsByTheModelledRuns) {
  SweepOptions sweep;
  sweep.kinds = {ProbeKind::kGemm};
  sweep.gemm_dtypes = {Dtype::kBf16};
  const ClusterSpec cluster = DgxH100();
  BenchSettings twenty, forty;
  forty.repeats = 40;
  const double base = Total(sweep, twenty, cluster);
  const double more = Total(sweep, forty, cluster);
  EXPECT_GT(more, base);
  // 20 more runs of every GEMM: more than 20 runs of the largest square (2 * 16384^3 FLOPs at under
  // the H100's dense 989 TFLOP/s peak: over 8.9 ms each).
  EXPECT_GT(more - base, 20 * 2 * 16384.0 * 16384 * 16384 / 989e12);
}

TEST(EstimateProbeDuration, GrowsWithDtypes) {
  SweepOptions one, two;
  one.kinds = two.kinds = {ProbeKind::kGemm};
  one.gemm_dtypes = {Dtype::kBf16};
  two.gemm_dtypes = {Dtype::kBf16, Dtype::kTf32};
  const ClusterSpec cluster = DgxH100();
  // tf32 runs at half the bf16 peak: the second dtype costs more than the first.
  EXPECT_GT(Total(two, BenchSettings{}, cluster), 2 * Total(one, BenchSettings{}, cluster));
}

TEST(EstimateProbeDuration, CollectivesGrowWithTheLargestSizeAndNeedTheNodeCount) {
  SweepOptions small, large;
  small.kinds = large.kinds = {ProbeKind::kCollectives};
  small.groups = large.groups = {ProbeGroup::kWorld, ProbeGroup::kIntraNode, ProbeGroup::kRails};
  small.max_collective_bytes = int64_t{1} << 30;
  large.max_collective_bytes = int64_t{8} << 30;
  const ClusterSpec two_nodes = DgxH100(2);
  const double to_1g = Total(small, BenchSettings{}, two_nodes);
  const double to_8g = Total(large, BenchSettings{}, two_nodes);
  // The 2, 4 and 8 GiB sizes of six collectives over three groups: at least one all-reduce of
  // 8 GiB over 16 GPUs, 25 times out of and in place, at under the 450 GB/s of NVLink.
  EXPECT_GT(to_8g - to_1g, 2 * 25 * 8.0 * (1 << 30) / 450e9);
  Result<std::vector<ProbePoint>> points = PlanSweep(small);
  ASSERT_TRUE(points.ok());
  Result<ProbeDurationEstimate> no_nodes =
      EstimateProbeDuration(*points, BenchSettings{}, DgxH100());
  ASSERT_FALSE(no_nodes.ok());
  EXPECT_NE(no_nodes.status().message().find("dgx-h100.json"), std::string::npos);
  EXPECT_NE(no_nodes.status().message().find("\"nodes\""), std::string::npos);
}

}  // namespace
}  // namespace loom
