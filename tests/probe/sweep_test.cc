#include "probe/sweep.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

int64_t Count(const std::vector<ProbePoint>& points, size_t alternative) {
  return std::count_if(points.begin(), points.end(), [&](const ProbePoint& p) { return p.index() == alternative; });
}

bool HasGemm(const std::vector<ProbePoint>& points, GemmShape want) {
  return std::any_of(points.begin(), points.end(), [&](const ProbePoint& p) {
    const GemmShape* g = std::get_if<GemmShape>(&p);
    return g && g->m == want.m && g->n == want.n && g->k == want.k && g->batch == want.batch && g->dtype == want.dtype;
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
  Result<ClusterSpec> cluster = LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json");
  ASSERT_TRUE(model.ok() && cluster.ok());
  SweepOptions o;
  o.kinds = {ProbeKind::kGemm, ProbeKind::kAttention};
  o.for_model = {&*model, &*cluster, 8192, {1, 2}, Dtype::kBf16};
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  // QKV of Llama-3-70B (hidden 8192, 64 query and 8 KV heads of 128): (8192 + 2 * 1024) / tp columns.
  for (int64_t tp : {1, 2, 4, 8}) {
    EXPECT_TRUE(HasGemm(*points, {8192, 10240 / tp, 8192, 1, Dtype::kBf16})) << "tp " << tp;
    EXPECT_TRUE(HasGemm(*points, {16384, 10240 / tp, 8192, 1, Dtype::kBf16})) << "tp " << tp << " mbs 2";
  }
  // Every shape once.
  std::set<std::string> keys;
  for (const ProbePoint& p : *points) keys.insert(PointKey(p, [](ProbeGroup) { return 1; }));
  EXPECT_EQ(keys.size(), points->size());
  EXPECT_GT(Count(*points, 1), 0);
  EXPECT_EQ(Count(*points, 2) + Count(*points, 3) + Count(*points, 4), 0);
}

TEST(PlanSweep, ForModelNeedsClusterAndSequence) {
  Result<ModelSpec> model = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-8b.json");
  ASSERT_TRUE(model.ok());
  SweepOptions o;
  o.for_model.model = &*model;
  o.for_model.seq_len = 4096;
  Result<std::vector<ProbePoint>> points = PlanSweep(o);
  ASSERT_FALSE(points.ok());
  EXPECT_NE(points.status().message().find("needs --cluster"), std::string::npos) << points.status().message();
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
