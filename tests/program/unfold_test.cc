#include "program/unfold.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "sim/sim_test_support.h"
#include "sim/simulated_plan.h"

namespace loom {
namespace {

// The plan file of |s| for |model| on |nodes| DGX H100 nodes, one replica (the file's form) or
// every replica (--full).
PlanFile PlanOf(const std::string& model, int64_t nodes, const Strategy& s, bool full) {
  const Inputs in = Load(model, "hardware/clusters/dgx-h100.json", nodes);
  SimulationOptions options;
  options.full = full;
  Result<PlanFile> plan = MakePlanFile(in.model, in.cluster, s, options, {});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PlanFile();
}

Strategy Base(int64_t tp, int64_t pp, int64_t dp, int64_t micro_batches) {
  Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.sp = tp > 1;
  s.micro_batch = 1;
  s.global_batch = micro_batches * dp;
  s.seq_len = 2048;
  s.zero_stage = 1;
  return s;
}

// The three plans the issue names, each on 8 GPUs.
Strategy TpPpDp() { return Base(2, 2, 2, 4); }

Strategy CpRing() {
  Strategy s = Base(1, 2, 2, 4);
  s.cp = 2;
  s.cp_comm = CpComm::kP2p;
  s.seq_len = 8192;
  return s;
}

Strategy Ep4Moe() {
  Strategy s = Base(1, 2, 4, 4);
  s.ep = 4;
  s.etp = 1;
  return s;
}

// The group a task of |unfolded| is a member of, as its TaskWork says, checked against what it
// runs: a pass's collectives task runs collectives of that group; a data-parallel task's experts
// share exists only where the stage has expert gradients or weights.
UnfoldedGroup ExpectedGroup(const PlanFile& unfolded, TaskId task) {
  const TaskWork& work = unfolded.step.work[task];
  EXPECT_GE(work.group, 0) << unfolded.step.graph.DescribeTask(task);
  const auto group = static_cast<UnfoldedGroup>(std::max(work.group, 0));
  if (work.kind == WorkKind::kTpComm) {
    const PassOps ops = OpsOfPass(unfolded.workload, WholePass(work));
    bool runs = false;
    for (const Op* op : ops.ops) {
      runs = runs || (op->kind == OpKind::kCollective &&
                      UnfoldedGroupOf(std::get<CollectiveShape>(op->shape).group) == group);
    }
    EXPECT_TRUE(runs) << unfolded.step.graph.DescribeTask(task) << " runs no "
                      << UnfoldedGroupName(group) << " collective";
  } else if (work.kind == WorkKind::kGradReduce || work.kind == WorkKind::kParamGather) {
    const StepPayloads& p = unfolded.workload.payloads;
    const bool grads = work.kind == WorkKind::kGradReduce;
    const auto& bytes = group == UnfoldedGroup::kEdp
                            ? (grads ? p.expert_bucket_bytes : p.expert_param_gather_bytes)
                            : (grads ? p.bucket_bytes : p.param_gather_bytes);
    EXPECT_TRUE(group == UnfoldedGroup::kDp || group == UnfoldedGroup::kEdp);
    if (group == UnfoldedGroup::kEdp) {
      EXPECT_GT(bytes.at(static_cast<size_t>(work.index)), 0);
    }
  } else {
    EXPECT_EQ(work.kind, WorkKind::kLayerGather) << unfolded.step.graph.DescribeTask(task);
  }
  return group;
}

// Every collective of |unfolded| has exactly the GPUs of its group: the group its work says, of
// the rank of its first member. Returns how many collectives of each kind there are.
std::vector<int32_t> CheckMembers(const PlanFile& unfolded) {
  const TaskGraph& g = unfolded.step.graph;
  std::vector<int32_t> kinds(kUnfoldedGroups, 0);
  for (GroupId group = 0; group < g.num_groups(); ++group) {
    const auto members = g.group_members(group);
    const UnfoldedGroup kind = ExpectedGroup(unfolded, members[0]);
    ++kinds[static_cast<size_t>(kind)];
    std::vector<int32_t> ranks;
    for (TaskId m : members) {
      ranks.push_back(g.rank_of(m));
      EXPECT_EQ(unfolded.step.work[m], unfolded.step.work[members[0]]) << g.DescribeTask(m);
      EXPECT_EQ(ExpectedGroup(unfolded, m), kind) << g.DescribeTask(m);
    }
    std::sort(ranks.begin(), ranks.end());
    EXPECT_EQ(ranks, GroupRanks(unfolded.gpus, unfolded.step.stages, ranks[0], kind))
        << UnfoldedGroupName(kind) << " collective of " << g.DescribeTask(members[0]);
    EXPECT_EQ(static_cast<int32_t>(ranks.size()), GroupSize(unfolded.gpus, kind));
  }
  // And no task that should be one is left out of a collective.
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const WorkKind kind = unfolded.step.work[t].kind;
    const bool collective = kind == WorkKind::kTpComm || kind == WorkKind::kGradReduce ||
                            kind == WorkKind::kParamGather;
    if (collective && GroupSize(unfolded.gpus, static_cast<UnfoldedGroup>(
                                                   unfolded.step.work[t].group)) > 1) {
      EXPECT_NE(g.group_of(t), kNoGroup) << g.DescribeTask(t);
    }
  }
  return kinds;
}

SimTime StepTime(const StepGraph& step) {
  Result<StepTimeline> timeline = Simulate(step.graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().message();
  return timeline.ok() ? timeline->makespan : SimTime();
}

// Unfolds the one-replica and the every-replica plan of |s| and checks both against the folded
// prediction, to the nanosecond, and every collective's members.
std::vector<int32_t> CheckUnfolds(const std::string& model, const Strategy& s) {
  std::vector<int32_t> kinds;
  for (bool full : {false, true}) {
    SCOPED_TRACE(full ? "every replica in the file" : "one replica in the file");
    const PlanFile folded = PlanOf(model, 1, s, full);
    EXPECT_EQ(folded.step.replicas, full ? s.dp : 1);
    Result<PlanFile> unfolded = UnfoldPlan(folded);
    EXPECT_TRUE(unfolded.ok()) << unfolded.status().message();
    if (!unfolded.ok()) return kinds;
    const TaskGraph& g = unfolded->step.graph;
    EXPECT_EQ(g.num_ranks(), s.tp * s.cp * s.dp * s.pp);
    EXPECT_TRUE(g.Validate().ok()) << g.Validate().message();
    EXPECT_EQ(StepTime(unfolded->step), StepTime(folded.step));
    EXPECT_EQ(unfolded->baselines.size(),
              folded.baselines.size() * static_cast<size_t>(g.num_ranks() /
                                                            folded.step.graph.num_ranks()));
    kinds = CheckMembers(*unfolded);
  }
  return kinds;
}

int32_t Count(const std::vector<int32_t>& kinds, UnfoldedGroup kind) {
  return kinds.empty() ? 0 : kinds[static_cast<size_t>(kind)];
}

TEST(UnfoldTest, TensorPipelineDataParallelMatchesTheFoldedStep) {
  const std::vector<int32_t> kinds = CheckUnfolds("models/llama3-8b.json", TpPpDp());
  EXPECT_GT(Count(kinds, UnfoldedGroup::kTp), 0);
  EXPECT_GT(Count(kinds, UnfoldedGroup::kDp), 0);
  EXPECT_EQ(Count(kinds, UnfoldedGroup::kCp), 0);
  EXPECT_EQ(Count(kinds, UnfoldedGroup::kEp), 0);
}

TEST(UnfoldTest, RingAttentionSendsGoToTheNextContextRank) {
  const Strategy s = CpRing();
  const std::vector<int32_t> kinds = CheckUnfolds("models/llama3-8b.json", s);
  // Ring attention moves K/V as sends, not cp collectives; gradients reduce over dp x cp.
  EXPECT_EQ(Count(kinds, UnfoldedGroup::kCp), 0);
  EXPECT_GT(Count(kinds, UnfoldedGroup::kDp), 0);
  Result<PlanFile> unfolded = UnfoldPlan(PlanOf("models/llama3-8b.json", 1, s, false));
  ASSERT_TRUE(unfolded.ok()) << unfolded.status().message();
  const TaskGraph& g = unfolded->step.graph;
  int32_t sends = 0;
  for (const Dependency& d : g.dependencies()) {
    if (unfolded->step.work[d.before].kind != WorkKind::kRingSend) continue;
    if (unfolded->step.work[d.after].kind != WorkKind::kPass) continue;
    ++sends;
    const GpuCoordinates from = CoordinatesOf(unfolded->gpus, 2, g.rank_of(d.before));
    const GpuCoordinates to = CoordinatesOf(unfolded->gpus, 2, g.rank_of(d.after));
    EXPECT_EQ(to.c, (from.c + 1) % 2);
    EXPECT_EQ(to.stage, from.stage);
    EXPECT_EQ(to.t, from.t);
    EXPECT_EQ(to.r, from.r);
  }
  EXPECT_GT(sends, 0);
}

TEST(UnfoldTest, ExpertAllToAllsJoinGpusOfDifferentReplicas) {
  const std::vector<int32_t> kinds = CheckUnfolds("models/mixtral-8x7b.json", Ep4Moe());
  EXPECT_GT(Count(kinds, UnfoldedGroup::kEp), 0);
  // ep 4 of dp 4: every expert has one copy, so expert gradients need no reduction.
  EXPECT_EQ(Count(kinds, UnfoldedGroup::kEdp), 0);
  EXPECT_GT(Count(kinds, UnfoldedGroup::kDp), 0);
}

TEST(UnfoldTest, ExpertDataParallelGroupsReduceTheExperts) {
  Strategy s = Ep4Moe();
  s.ep = 2;  // dp 4 / ep 2: each expert on two GPUs
  const std::vector<int32_t> kinds = CheckUnfolds("models/mixtral-8x7b.json", s);
  EXPECT_GT(Count(kinds, UnfoldedGroup::kEp), 0);
  EXPECT_GT(Count(kinds, UnfoldedGroup::kEdp), 0);
}

TEST(UnfoldTest, SplitCollectivesTakeExactlyTheFoldedTime) {
  const PlanFile folded = PlanOf("models/llama3-8b.json", 1, TpPpDp(), false);
  Result<PlanFile> unfolded = UnfoldPlan(folded);
  ASSERT_TRUE(unfolded.ok()) << unfolded.status().message();
  // Rank 0 of the folded step and rank 0 of the unfolded one (its tp rank 0) spend the same
  // time on every stream.
  const auto busy = [](const TaskGraph& g, int32_t rank) {
    int64_t total = 0;
    for (TaskId t = 0; t < g.num_tasks(); ++t) {
      if (g.rank_of(t) == rank) total += g.task(t).duration.nanos();
    }
    return total;
  };
  EXPECT_EQ(busy(unfolded->step.graph, 0), busy(folded.step.graph, 0));
  // 8 GPUs, 4 per folded rank, each with a copy of its rank's tasks: the passes' collectives are
  // all on the tp group and the gradients all dense, so no task splits.
  EXPECT_EQ(unfolded->step.graph.num_tasks(), 4 * folded.step.graph.num_tasks());
}

TEST(UnfoldTest, RefusesGroupsThatDoNotTileTheGpus) {
  PlanFile folded = PlanOf("models/llama3-8b.json", 1, TpPpDp(), false);
  folded.file = "plan.json";
  folded.gpus.ep = 3;
  folded.gpus.etp = 1;
  Result<PlanFile> unfolded = UnfoldPlan(folded);
  ASSERT_FALSE(unfolded.ok());
  EXPECT_NE(unfolded.status().message().find("plan.json: gpus: the expert groups do not tile"),
            std::string::npos)
      << unfolded.status().message();
  EXPECT_NE(unfolded.status().message().find("ep x etp = 3"), std::string::npos);

  folded.gpus.ep = 1;
  folded.gpus.dp = 3;
  folded.step.replicas = 2;
  unfolded = UnfoldPlan(folded);
  ASSERT_FALSE(unfolded.ok());
  EXPECT_NE(unfolded.status().message().find("step.replicas is 2 but gpus.dp is 3"),
            std::string::npos)
      << unfolded.status().message();
}

// One GPU of the tp 2 x pp 2 x dp 2 plan alone: its own tasks, same durations and work, no
// collective and nothing from another GPU; its model states; and its step runs.
TEST(UnfoldTest, OneGpuPlanKeepsThatGpusTasksAlone) {
  Result<PlanFile> unfolded = UnfoldPlan(PlanOf("models/llama3-8b.json", 1, TpPpDp(), false));
  ASSERT_TRUE(unfolded.ok()) << unfolded.status().message();
  const TaskGraph& all = unfolded->step.graph;
  Result<PlanFile> one = OneGpuPlan(*unfolded, 3);
  ASSERT_TRUE(one.ok()) << one.status().message();
  const TaskGraph& g = one->step.graph;
  EXPECT_EQ(g.num_ranks(), 1);
  EXPECT_EQ(g.num_groups(), 0);
  std::vector<TaskId> mine;
  for (TaskId t = 0; t < all.num_tasks(); ++t) {
    if (all.rank_of(t) == 3) mine.push_back(t);
  }
  ASSERT_EQ(g.num_tasks(), static_cast<int32_t>(mine.size()));
  for (size_t i = 0; i < mine.size(); ++i) {
    const TaskId t = static_cast<TaskId>(i);
    EXPECT_EQ(g.task(t).duration, all.task(mine[i]).duration) << g.DescribeTask(t);
    EXPECT_EQ(one->step.work[t], unfolded->step.work[mine[i]]) << g.DescribeTask(t);
    EXPECT_EQ(g.Name(g.stream_name(g.task(t).stream)),
              all.Name(all.stream_name(all.task(mine[i]).stream)));
  }
  int64_t states = 0, expected = 0;
  for (const MemoryBaseline& b : one->baselines) states += b.rank == 0 ? b.bytes : -1;
  for (const MemoryBaseline& b : unfolded->baselines) expected += b.rank == 3 ? b.bytes : 0;
  EXPECT_EQ(states, expected);
  EXPECT_GT(StepTime(one->step), SimTime());
  // Alone, it waits for no other GPU: its step is no longer than the whole step.
  EXPECT_LE(StepTime(one->step), StepTime(unfolded->step));

  Result<PlanFile> none = OneGpuPlan(*unfolded, 8);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("GPU 8 is not one of its 8 GPUs"), std::string::npos)
      << none.status().message();
}

// A layout of 131,072 GPUs would unfold to about 23 M tasks in every validate process: refused,
// naming the file and the fix, before anything is copied.
TEST(UnfoldTest, RefusesAStepTooLargeToUnfold) {
  PlanFile folded = PlanOf("models/llama3-8b.json", 1, TpPpDp(), false);
  folded.file = "plan.json";
  folded.gpus.dp = 32768;
  Result<PlanFile> unfolded = UnfoldPlan(folded);
  ASSERT_FALSE(unfolded.ok());
  EXPECT_NE(unfolded.status().message().find("plan.json: its 131072 GPUs would run"),
            std::string::npos)
      << unfolded.status().message();
  EXPECT_NE(unfolded.status().message().find("validate a plan of fewer GPUs"), std::string::npos);
}

TEST(UnfoldTest, CoordinatesFollowMegatronOrder) {
  const GpuLayout layout{.tp = 2, .cp = 2, .dp = 2, .ep = 2, .etp = 1};
  // Graph rank u = stage + 2 * lane; Megatron rank = stage * 8 + lane, lane = t + 2 (c + 2 r).
  const GpuCoordinates at = CoordinatesOf(layout, 2, 1 + 2 * 5);
  EXPECT_EQ(at.stage, 1);
  EXPECT_EQ(at.lane, 5);
  EXPECT_EQ(at.t, 1);
  EXPECT_EQ(at.c, 0);
  EXPECT_EQ(at.r, 1);
  EXPECT_EQ(at.et, 0);
  EXPECT_EQ(at.e, 1);
  EXPECT_EQ(at.ed, 2);
  EXPECT_EQ(GpuOfRank(layout, 2, 1 + 2 * 5), 13);
  // The tensor group of lane 5 is lanes 4 and 5; its dense data-parallel group every lane with
  // t = 1 (c and r vary); its expert group lanes 4 and 5 (e = lane mod 2 varies); its expert
  // data-parallel group every lane with e = 1.
  EXPECT_EQ(GroupRanks(layout, 2, 11, UnfoldedGroup::kTp), (std::vector<int32_t>{9, 11}));
  EXPECT_EQ(GroupRanks(layout, 2, 11, UnfoldedGroup::kDp),
            (std::vector<int32_t>{3, 7, 11, 15}));
  EXPECT_EQ(GroupRanks(layout, 2, 11, UnfoldedGroup::kEp), (std::vector<int32_t>{9, 11}));
  EXPECT_EQ(GroupRanks(layout, 2, 11, UnfoldedGroup::kEdp),
            (std::vector<int32_t>{3, 7, 11, 15}));
}

}  // namespace
}  // namespace loom
