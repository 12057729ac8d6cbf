#include "program/plan_workload.h"

#include <map>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "program/plan_file.h"
#include "sim/sim_test_support.h"
#include "sim/simulated_plan.h"

namespace loom {
namespace {

// Llama 3 8B on one DGX H100 node, pp = 2, dp = 2, ZeRO-1, with selective or full recompute.
PlanFile MakePlan(Recompute recompute, ScheduleKind schedule = ScheduleKind::k1F1B) {
  Strategy s = PipelineStrategy(2, 2, 4, schedule);
  s.recompute = recompute;
  return Llama8bPlan(s);
}

// What the workload says a pass runs is what the simulator timed: the predicted times of a pass
// task's ops add up to the task's duration (the kernels of the pass; tp = 1, so no collectives),
// to within the nanosecond each slice of a cut pass may lose.
TEST(PlanWorkload, OpsOfEveryPassTaskAddUpToItsPredictedDuration) {
  for (Recompute recompute : {Recompute::kSelective, Recompute::kFull}) {
    for (ScheduleKind schedule : {ScheduleKind::k1F1B, ScheduleKind::kZbV}) {
      const PlanFile plan = MakePlan(recompute, schedule);
      ASSERT_EQ(plan.step.work.size(), static_cast<size_t>(plan.step.graph.num_tasks()));
      int64_t passes = 0;
      for (TaskId id = 0; id < plan.step.graph.num_tasks(); ++id) {
        const TaskWork& work = plan.step.work[id];
        if (work.kind != WorkKind::kPass) continue;
        const PassOps ops = OpsOfPass(plan.workload, work);
        SimTime sum;
        for (SimTime t : ops.predicted) sum += t;
        // A part of a cut pass is predicted as an equal share of it, but runs whole ops.
        if (work.parts == 1) {
          ASSERT_FALSE(ops.ops.empty()) << plan.step.graph.DescribeTask(id);
          EXPECT_NEAR(sum.nanos(), plan.step.graph.task(id).duration.nanos(), 1)
              << plan.step.graph.DescribeTask(id);
        }
        ++passes;
      }
      EXPECT_GT(passes, 0);
    }
  }
}

// The parts of a cut pass run every op of the whole pass once, in order.
TEST(PlanWorkload, PartsOfAPassRunEachOpOnce) {
  const PlanFile plan = MakePlan(Recompute::kSelective);
  for (Pass pass : {Pass::kF, Pass::kB, Pass::kW, Pass::kBW}) {
    const PassOps whole = OpsOfPass(plan.workload, {WorkKind::kPass, pass, 1});
    for (int32_t parts : {2, 3, 7}) {
      std::vector<const Op*> joined;
      for (int32_t part = 0; part < parts; ++part) {
        const PassOps slice = OpsOfPass(plan.workload, {WorkKind::kPass, pass, 1, part, parts});
        joined.insert(joined.end(), slice.ops.begin(), slice.ops.end());
      }
      EXPECT_EQ(joined, whole.ops) << kPassNames.Name(pass) << " in " << parts;
    }
  }
}

// Forward runs the embedding, every layer, then the head; B replays each layer's recompute before
// its input gradients, last layer first; BW is B then W.
TEST(PlanWorkload, PassesRunTheirBlocksInModelOrderForwardAndReversedBackward) {
  const PlanFile plan = MakePlan(Recompute::kFull);
  const ChunkBlocks& chunks = plan.workload.chunks;
  ASSERT_EQ(chunks.chunks.size(), 2u);
  const PassOps f0 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kF, 0});
  EXPECT_EQ(f0.ops.front()->name, OpName::kEmbedding);
  const PassOps f1 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kF, 1});
  EXPECT_EQ(f1.ops.back()->name, OpName::kCrossEntropyLoss);
  const PassOps b1 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kB, 1});
  // The head has no recompute list, so B of the last stage starts with the loss's gradient.
  EXPECT_EQ(b1.ops.front()->name, OpName::kCrossEntropyGrad);
  const PassOps b0 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kB, 0});
  // Full recompute: the last layer of stage 0 replays its forward (input norm first) before its
  // backward; the embedding, first in the forward, comes last.
  int64_t layer_ops = 0;
  for (const BlockRun& run : chunks.chunks[0]) {
    if (run.block != chunks.chunks[0].front().block) layer_ops += run.count;
  }
  EXPECT_EQ(layer_ops, chunks.layers[0]);
  EXPECT_EQ(b0.ops.front()->name, OpName::kInputNorm);
  const PassOps w0 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kW, 0});
  const PassOps bw0 = OpsOfPass(plan.workload, {WorkKind::kPass, Pass::kBW, 0});
  ASSERT_EQ(bw0.ops.size(), b0.ops.size() + w0.ops.size());
  EXPECT_TRUE(std::equal(b0.ops.begin(), b0.ops.end(), bw0.ops.begin()));
  EXPECT_TRUE(std::equal(w0.ops.begin(), w0.ops.end(),
                         bw0.ops.begin() + static_cast<int64_t>(b0.ops.size())));
}

// The payloads are those of the strategy: one micro-batch of activations per send, ZeRO-1
// reduce-scatters gradient buckets and all-gathers the weights.
TEST(PlanWorkload, PayloadsFollowTheStrategy) {
  const PlanFile plan = MakePlan(Recompute::kSelective);
  const StepPayloads& p = plan.workload.payloads;
  EXPECT_EQ(p.p2p_bytes, int64_t{1} * 1024 * 4096 * 2);  // b * s * h in bf16
  EXPECT_EQ(p.grad_reduce, CollectiveKind::kReduceScatter);
  ASSERT_EQ(p.optimizer.size(), 2u);
  ASSERT_EQ(p.param_gather_bytes.size(), 2u);
  EXPECT_GT(p.param_gather_bytes[0], int64_t{1} << 30);  // about half of 8B bf16 weights per stage
  for (int64_t bytes : p.bucket_bytes) EXPECT_GT(bytes, 0);
}

std::string WorkloadParseError(const nlohmann::json& json) {
  Result<PlanWorkload> parsed = ParseWorkload(json, "plan.json");
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(PlanWorkload, RoundTripsAndBadValuesAreErrorsAtTheirKey) {
  const PlanFile plan = MakePlan(Recompute::kSelective);
  const nlohmann::json json = nlohmann::json::parse(WorkloadJson(plan.workload).dump());
  Result<PlanWorkload> back = ParseWorkload(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(WorkloadJson(*back), WorkloadJson(plan.workload));

  nlohmann::json bad = json;
  bad["blocks"][1]["forward"][2]["shape"]["m"] = -4;
  EXPECT_NE(WorkloadParseError(bad).find("plan.json: workload.blocks[1].forward[2].shape.m"),
            std::string::npos)
      << WorkloadParseError(bad);
  bad = json;
  bad["blocks"][1]["forward"][0]["name"] = "qkv_projection";
  EXPECT_NE(WorkloadParseError(bad).find(
                "workload.blocks[1].forward[0].name: is \"qkv_projection\", which is no op"),
            std::string::npos)
      << WorkloadParseError(bad);
  bad = json;
  bad["chunks"][0][0] = {99, 1};
  EXPECT_NE(WorkloadParseError(bad).find("workload.chunks[0][0] is [99,1]"), std::string::npos)
      << WorkloadParseError(bad);
  bad = json;
  bad["payloads"]["bucket_bytes"] = {1};
  EXPECT_NE(WorkloadParseError(bad).find("workload.payloads.bucket_bytes has 1 entries, not 2"),
            std::string::npos)
      << WorkloadParseError(bad);
  bad = json;
  bad["blocks"][0]["forward"][0]["shape"]["colour"] = 1;
  EXPECT_NE(WorkloadParseError(bad).find("colour"), std::string::npos) << WorkloadParseError(bad);
}

// A task naming a virtual stage the workload does not have is refused when the plan is read.
TEST(PlanWorkload, WorkBeyondTheWorkloadIsRefused) {
  PlanFile plan = MakePlan(Recompute::kSelective);
  plan.workload.chunks.chunks.pop_back();
  Status fits = CheckWorkFits(plan.step, plan.workload, "plan.json");
  ASSERT_FALSE(fits.ok());
  EXPECT_NE(fits.message().find("of virtual stage 1, but the workload has 1"), std::string::npos)
      << fits.message();
}

}  // namespace
}  // namespace loom
