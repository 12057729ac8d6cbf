#include "probe/sweep.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cost/profile.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

int64_t Count(const std::vector<ProbePoint>& points, size_t alternative) {
  return std::count_if(points.begin(), points.end(),
                       [&](const ProbePoint& p) { return p.index() == alternative; });
}

bool HasGemm(const std::vector<ProbePoint>& points, GemmShape want) {
  return std::any_of(points.begin(), points.end(), [&](const ProbePoint& p) {
    const GemmShape* g = std::get_if<GemmShape>(&p);
    return g && g->m == want.m && g->n == want.n && g->k == want.k && g->batch == want.batch &&
           g->dtype == want.dtype;
  });
}

TEST(PlanSweep, GenericSweepCountsEachKind) {
  SweepOptions o;
  o.groups = {ProbeGroup::kWorld};
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  // GEMMs per dtype: 6 squares + 5 hidden sizes x 5 token counts x 4 layer GEMMs = 106; 4 dtypes.
  EXPECT_EQ(Count(*points, 0), 4 * 106);
  // Attention: 2 directions x 2 masks x 2 head dims x 2 head counts x 2 KV layouts x 6 sequences.
  EXPECT_EQ(Count(*points, 1), 192);
  EXPECT_EQ(Count(*points, 2), 3 * 13);      // 3 kernels, 1 MiB .. 4 GiB
  EXPECT_EQ(Count(*points, 3), 1 + 2 * 11);  // launch; 1 MiB .. 1 GiB both ways
  EXPECT_EQ(Count(*points, 4), 6 * 31);      // 6 collectives, 8 B .. 8 GiB
  EXPECT_TRUE(HasGemm(*points, {16384, 16384, 16384, 1, Dtype::kTf32}));
  EXPECT_TRUE(HasGemm(*points, {4096, 4 * 5120, 5120, 1, Dtype::kFp8}));
}

TEST(PlanSweep, CollectivesDoubleFromMinToMaxOverEachGroup) {
  SweepOptions o;
  o.kinds = {ProbeKind::kCollectives};
  o.collectives = {ProfiledCollective::kAllReduce};
  o.groups = {ProbeGroup::kIntraNode, ProbeGroup::kRails};
  o.min_collective_bytes = 1024;
  o.max_collective_bytes = 4096;
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 6u);
  const CollectivePoint& last = std::get<CollectivePoint>(points->back());
  EXPECT_EQ(last.group, ProbeGroup::kRails);
  EXPECT_EQ(last.size_bytes, 4096);
  EXPECT_EQ(std::get<CollectivePoint>((*points)[1]).size_bytes, 2048);
  o.min_collective_bytes = 4;
  EXPECT_FALSE(PlanSweep(o).ok());
}

TEST(PlanSweep, ForModelMeasuresTheLayerShapesOfEveryTensorParallelDegree) {
  Result<ModelSpec> model = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-70b.json");
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json");
  ASSERT_TRUE(model.ok() && cluster.ok());
  SweepOptions o;
  o.kinds = {ProbeKind::kGemm, ProbeKind::kAttention};
  o.for_model = {&*model, &*cluster, 8192, {1, 2}, Dtype::kBf16};
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  // QKV of Llama-3-70B (hidden 8192, 64 query and 8 KV heads of 128): (8192 + 2 * 1024) / tp
  // columns.
  for (int64_t tp : {1, 2, 4, 8}) {
    EXPECT_TRUE(HasGemm(*points, {8192, 10240 / tp, 8192, 1, Dtype::kBf16})) << "tp " << tp;
    EXPECT_TRUE(HasGemm(*points, {16384, 10240 / tp, 8192, 1, Dtype::kBf16}))
        << "tp " << tp << " mbs 2";
  }
  // Every shape once.
  std::set<std::string> keys;
  for (const ProbePoint& p : *points) keys.insert(PointKey(p, [](ProbeGroup) { return 1; }));
  EXPECT_EQ(keys.size(), points->size());
  EXPECT_GT(Count(*points, 1), 0);
  EXPECT_EQ(Count(*points, 2) + Count(*points, 3) + Count(*points, 4), 0);
}

TEST(PlanSweep, ForModelMeasuresEachWgradGemmAccumulatingIntoFp32AndPlain) {
  Result<ModelSpec> model = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-70b.json");
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json");
  ASSERT_TRUE(model.ok() && cluster.ok());
  SweepOptions o;
  o.kinds = {ProbeKind::kGemm};
  o.for_model = {&*model, &*cluster, 8192, {1}, Dtype::kBf16};
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  // The QKV weight gradient at tp 8: [8192, tokens] x [tokens, 1280], into main_grad.
  GemmShape qkv_wgrad{8192, 10240 / 8, 8192, 1, Dtype::kBf16};
  qkv_wgrad.accumulate_fp32 = true;
  int64_t accumulating = 0;
  for (const ProbePoint& p : *points) {
    const GemmShape* g = std::get_if<GemmShape>(&p);
    if (g == nullptr || !g->accumulate_fp32) continue;
    ++accumulating;
    GemmShape plain = *g;
    plain.accumulate_fp32 = false;
    EXPECT_TRUE(HasGemm(*points, plain)) << DescribeShape(*g);
    if (g->m == qkv_wgrad.m && g->n == qkv_wgrad.n && g->k == qkv_wgrad.k)
      qkv_wgrad.batch = 0;  // found
  }
  EXPECT_EQ(qkv_wgrad.batch, 0) << "no accumulating QKV weight-gradient point";
  EXPECT_GT(accumulating, 0);
  EXPECT_EQ(PointKey(qkv_wgrad = GemmShape{8192, 1280, 8192, 1, Dtype::kBf16, true}, nullptr),
            "gemm 8192x1280x8192 bf16 +=fp32 [cublasLt]");
}

TEST(ProfileSample, AccumulateFp32RoundTripsAndIsAbsentWhenFalse) {
  ProfileSample sample;
  GemmShape g{4096, 1024, 8192, 1, Dtype::kBf16};
  sample.shape = g;
  sample.median_us = 100;
  sample.repeats = 10;
  EXPECT_FALSE(ProfileSampleJson(sample).contains("accumulate_fp32"));
  g.accumulate_fp32 = true;
  sample.shape = g;
  const nlohmann::ordered_json j = ProfileSampleJson(sample);
  EXPECT_EQ(j.at("accumulate_fp32"), true);
  nlohmann::json profile = nlohmann::json::parse(R"({
    "schema": "loom.profile/1", "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132},
    "driver_version": "550.54.15", "cuda_version": "12.4", "library_versions": {"cublaslt": "12.4.5"},
    "date": "2026-11-25"})");
  profile["samples"] = nlohmann::json::array({nlohmann::json::parse(j.dump())});
  Result<Profile> parsed = ParseProfile(profile, "p.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE(std::get<GemmShape>(parsed->samples[0].shape).accumulate_fp32);
}

TEST(PlanSweep, ForModelNeedsClusterAndSequence) {
  Result<ModelSpec> model = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-8b.json");
  ASSERT_TRUE(model.ok());
  SweepOptions o;
  o.for_model.model = &*model;
  o.for_model.seq_len = 4096;
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_FALSE(points.ok());
  EXPECT_NE(points.status().message().find("needs --cluster"), std::string::npos)
      << points.status().message();
}

TEST(PointKey, MemoryKernelsOfEqualTrafficDifferByLabel) {
  auto ranks = [](ProbeGroup) { return int64_t{8}; };
  const std::string copy = PointKey(MemoryPoint{MemoryKernel::kCopy, 1 << 20}, ranks);
  const std::string norm = PointKey(MemoryPoint{MemoryKernel::kRmsNorm, 1 << 20}, ranks);
  EXPECT_EQ(copy, "memory 1 MiB read, 1 MiB written [copy]");
  EXPECT_NE(copy, norm);
  EXPECT_EQ(PointKey(CollectivePoint{ProfiledCollective::kAllGather, ProbeGroup::kRails, 8}, ranks),
            "all_gather rails 8 ranks 8 B");
  EXPECT_EQ(PointKey(HostPoint{HostMeasure::kHostToDevice, 64 << 20}, ranks), "h2d 64 MiB");
}

}  // namespace
}  // namespace loom
