// `loom plan` on a heterogeneous cluster (issue 25): stages on different GPUs take balanced
// layouts, which the Megatron-LM arguments carry as --pipeline-model-parallel-layout.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "plan/megatron_args.h"
#include "plan/planner.h"
#include "plan_test_support.h"
#include "sim/simulator.h"

namespace loom {
namespace {

// Llama 3 8B on the shipped mixed cluster: 32 H100s (ranks 0-31), then 32 A100s.
Inputs Mixed() {
  Result<ModelSpec> m = LoadModelSpec(Shipped("models/llama3-8b.json"));
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("hardware/clusters/mixed-h100-a100.json"));
  EXPECT_TRUE(c.ok()) << c.status().message();
  return {m.ok() ? *m : ModelSpec(), c.ok() ? *c : ClusterSpec()};
}

// tp 8, pp 2, dp 4: stage 0 on the H100 group, stage 1 on the A100 group.
SearchRequest TwoStages() {
  SearchRequest request = Request(64, 64, 4096);
  Result<Constraints> fixed =
      ParseConstraints("tp=8,pp=2,dp=4,micro_batch=1,schedule=1f1b,recompute=none", "--fix");
  EXPECT_TRUE(fixed.ok()) << fixed.status().message();
  if (fixed.ok()) request.fixed = *fixed;
  return request;
}

TEST(HeteroPlan, StagesOnTheFasterGroupTakeMoreLayersAndAShorterStep) {
  const Inputs in = Mixed();
  PlanOptions options;
  options.top_k = 1;
  options.threads = 2;
  Result<PlanReport> report = Plan(in.model, in.cluster, TwoStages(), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->ranked.size(), 1u);
  const Strategy& best = report->ranked[0].strategy;
  ASSERT_EQ(best.layout.size(), 2u);
  EXPECT_EQ(std::accumulate(best.layout.begin(), best.layout.end(), int64_t{0}), 32);
  // An H100 has 3.2 times an A100's bf16 peak and 1.6 times its HBM bandwidth: a layer takes
  // between 1.6 and 3.2 times as long on the A100, so the H100 stage takes at least 1.6 times the
  // layers (20 of 32 and more).
  EXPECT_GE(best.layout[0], 20);
  EXPECT_LE(best.layout[1], 12);
  // The even split of the same strategy is slower.
  Strategy even = best;
  even.layout.clear();
  Result<SimulationResult> split = SimulateTrainingStep(in.model, in.cluster, even);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_LT(report->ranked[0].step_time_s, split->step_time_s);
  // Megatron-LM runs it as a layout.
  Result<std::vector<std::string>> args = MegatronArguments(in.model, best);
  ASSERT_TRUE(args.ok()) << args.status().message();
  const auto flag = std::find(args->begin(), args->end(), "--pipeline-model-parallel-layout");
  ASSERT_NE(flag, args->end());
  EXPECT_EQ(*(flag + 1),
            "Et*" + std::to_string(best.layout[0]) + "|t*" + std::to_string(best.layout[1]) + "L");
}

// Without pipelining one stage holds all 64 ranks, across the boundary at rank 32: data-parallel
// replicas split over the two GPU types are not modelled, and the rules reject them under --pp.
TEST(HeteroPlan, AStageAcrossBothGroupsIsRejectedUnderPp) {
  const Inputs in = Mixed();
  SearchRequest request = Request(64, 64, 4096);
  Result<Constraints> fixed =
      ParseConstraints("tp=8,micro_batch=1,schedule=1f1b,recompute=none", "--fix");
  ASSERT_TRUE(fixed.ok());
  request.fixed = *fixed;
  PlanOptions options;
  options.top_k = 3;
  options.threads = 2;
  Result<PlanReport> report = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const auto pp = std::find_if(report->rejections.begin(), report->rejections.end(),
                               [](const Rejection& r) { return r.rule == "--pp"; });
  ASSERT_NE(pp, report->rejections.end());
  EXPECT_NE(pp->example.find("pipeline stage 0 holds GPU ranks 0-63"), std::string::npos)
      << pp->example;
  ASSERT_FALSE(report->ranked.empty());
  for (const RankedPlan& plan : report->ranked) EXPECT_GE(plan.strategy.pp, 2);
}

}  // namespace
}  // namespace loom
