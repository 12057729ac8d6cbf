#include "workload/data_parallel_plan.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/checked.h"
#include "workload/shipped_model.h"

namespace loom {
namespace {

// Data parallelism over 8 ranks, one sequence of 1,024 tokens per micro-batch, one micro-batch
// per rank and step, under ZeRO |zero|.
Strategy Dp8(int64_t zero) {
  Strategy s;
  s.dp = 8;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 1024;
  s.zero_stage = zero;
  return s;
}

DataParallelPlan Plan(const ModelSpec& model, const Strategy& s) {
  Result<PipelineSchedule> schedule = BuildSchedule(
      s.schedule, static_cast<int32_t>(s.pp), static_cast<int32_t>(s.NumMicroBatches()),
      static_cast<int32_t>(s.vpp), static_cast<int32_t>(s.microbatch_group));
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  if (!schedule.ok()) return {};
  Result<DataParallelPlan> plan =
      PlanDataParallel(model, s, LayersPerVirtualStage(s, model.num_layers), *schedule);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : DataParallelPlan();
}

TEST(DataParallelPlan, BucketsHoldMegatronsDefaultOfFortyMillionParametersOrOneMillionPerRank) {
  EXPECT_EQ(BucketParams(8), 40'000'000);
  EXPECT_EQ(BucketParams(40), 40'000'000);
  EXPECT_EQ(BucketParams(64), 64'000'000);
}

// Llama 3 8B whole on every rank (pp = tp = 1): its 8.03B parameters in ceil(P / 40M) buckets of
// equal size, all dense; plain data parallelism all-reduces them and updates every parameter.
TEST(DataParallelPlan, OneStageSplitsTheWholeModelIntoEqualBuckets) {
  const ModelSpec model = Shipped("llama3-8b");
  Result<ParameterCount> count = CountParameters(model);
  ASSERT_TRUE(count.ok());
  const int64_t p = count->total;
  const DataParallelPlan plan = Plan(model, Dp8(0));
  ASSERT_EQ(plan.buckets.size(), 1u);
  const int64_t buckets = CeilDiv(p, int64_t{40'000'000});
  EXPECT_EQ(buckets, 201);
  EXPECT_EQ(plan.buckets[0], buckets);
  EXPECT_EQ(plan.bucket_params[0].dense, CeilDiv(p, buckets));
  EXPECT_EQ(plan.bucket_params[0].expert, 0);
  EXPECT_EQ(plan.grad_reduce, CollectiveKind::kAllReduce);
  EXPECT_FALSE(plan.reduce_every_micro_batch);
  ASSERT_EQ(plan.updated_params.size(), 1u);
  EXPECT_EQ(plan.updated_params[0], p);
  EXPECT_EQ(plan.param_gather[0].Total(), 0);
  EXPECT_EQ(plan.layer_gathers, 0);
  // fp32 gradient buffers and bf16 weights, Megatron-LM's defaults for bf16.
  EXPECT_EQ(plan.bytes.gradient, 4);
  EXPECT_EQ(plan.bytes.weight, 2);
}

// ZeRO's stages (Rajbhandari et al. 2020, Section 5): 1 and 2 reduce-scatter and all-gather the
// updated weights; 2 and 3 reduce after every micro-batch; 3 gathers layer by layer instead, one
// bucket per layer; every stage updates only its shard of 1/8.
TEST(DataParallelPlan, ZeroStagesChooseTheCollectivesAndShardTheUpdate) {
  const ModelSpec model = Shipped("llama3-8b");
  const int64_t p = CountParameters(model)->total;
  for (int64_t zero : {1, 2, 3}) {
    SCOPED_TRACE(zero);
    const DataParallelPlan plan = Plan(model, Dp8(zero));
    EXPECT_EQ(plan.grad_reduce, CollectiveKind::kReduceScatter);
    EXPECT_EQ(plan.reduce_every_micro_batch, zero >= 2);
    EXPECT_EQ(plan.updated_params[0], CeilDiv(p, int64_t{8}));
    EXPECT_EQ(plan.param_gather[0].dense, zero == 3 ? 0 : p);
    EXPECT_EQ(plan.layer_gathers, zero == 3 ? 32 : 0);
    if (zero == 3) {
      EXPECT_EQ(plan.buckets[0], 32);
      EXPECT_EQ(plan.layer_params.dense, CeilDiv(p, int64_t{32}));
      EXPECT_EQ(plan.bucket_params[0].dense, CeilDiv(p, int64_t{32}));
    }
  }
}

// ZeRO-Offload runs the optimizer on the host over the rank's shard; with the parameters offloaded
// too (ZeRO-3), each layer's shard comes from the host before its gather.
TEST(DataParallelPlan, OffloadMovesTheShardAndEachLayersPartOfIt) {
  const ModelSpec model = Shipped("llama3-8b");
  const int64_t shard = CeilDiv(CountParameters(model)->total, int64_t{8});
  Strategy s = Dp8(3);
  s.offload = Offload::kOptimizerAndParams;
  const DataParallelPlan plan = Plan(model, s);
  ASSERT_EQ(plan.updated_params.size(), 1u);
  EXPECT_EQ(plan.updated_params[0], shard);
  EXPECT_EQ(plan.layer_shard_params, CeilDiv(shard, int64_t{32}));
  s.offload = Offload::kOptimizer;
  const DataParallelPlan optimizer_only = Plan(model, s);
  EXPECT_EQ(optimizer_only.updated_params, plan.updated_params);
  EXPECT_EQ(optimizer_only.layer_shard_params, 0);
}

// Interleaving (pp = 2, vpp = 2: 4 chunks of 8 layers): stage 0 holds chunks 0 and 2, which hold
// equal layers, so each gets half of the stage's parameters, the embedding included.
TEST(DataParallelPlan, EqualChunksOfAStageShareItsParametersEqually) {
  const ModelSpec model = Shipped("llama3-8b");
  Strategy s = Dp8(1);
  s.pp = 2;
  s.vpp = 2;
  s.schedule = ScheduleKind::kInterleaved;
  s.global_batch = 16;
  Result<RankParameters> stage0 = ParametersPerRank(model, s, 0);
  ASSERT_TRUE(stage0.ok());
  const DataParallelPlan plan = Plan(model, s);
  ASSERT_EQ(plan.buckets.size(), 4u);
  const int64_t chunk = CeilDiv(stage0->dense, int64_t{2});
  for (size_t v : {size_t{0}, size_t{2}}) {
    SCOPED_TRACE(v);
    const int64_t buckets = CeilDiv(chunk, int64_t{40'000'000});
    EXPECT_EQ(plan.buckets[v], buckets);
    EXPECT_EQ(plan.bucket_params[v].dense, CeilDiv(chunk, buckets));
  }
  EXPECT_EQ(plan.updated_params[0], CeilDiv(stage0->dense, int64_t{8}));
}

// Mixtral 8x7B with its experts over ep = 8 of the 8 data-parallel ranks: each rank holds one
// expert per layer, which no other rank holds (ExpertDp = 1), so its gradients form their own
// group, reduced over one rank, and ZeRO shards only the dense parameters.
TEST(DataParallelPlan, RoutedExpertsAreTheirOwnGroup) {
  const ModelSpec model = Shipped("mixtral-8x7b");
  Strategy s = Dp8(1);
  s.ep = 8;
  ASSERT_EQ(s.ExpertDp(), 1);
  Result<RankParameters> rank = ParametersPerRank(model, s, 0);
  ASSERT_TRUE(rank.ok());
  ASSERT_GT(rank->expert, 0);
  const DataParallelPlan plan = Plan(model, s);
  const int64_t buckets = CeilDiv(rank->Total(), int64_t{40'000'000});
  EXPECT_EQ(plan.buckets[0], buckets);
  EXPECT_EQ(plan.bucket_params[0].dense, CeilDiv(rank->dense, buckets));
  EXPECT_EQ(plan.bucket_params[0].expert, CeilDiv(rank->expert, buckets));
  EXPECT_EQ(plan.updated_params[0], CeilDiv(rank->dense, int64_t{8}) + rank->expert);
  EXPECT_EQ(plan.param_gather[0].expert, rank->expert);
}

}  // namespace
}  // namespace loom
