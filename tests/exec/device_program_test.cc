#include "exec/device_program.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "exec/op_operands.h"
#include "program/unfold.h"
#include "sim/engine.h"
#include "sim/sim_test_support.h"
#include "sim/simulator.h"
#include "single_gpu_plan.h"

namespace loom {
namespace {

// Llama 3 8B on one DGX H100 node with pp = 4 and |dp| replicas, ZeRO-1, 4 micro-batches per
// replica, unfolded to its GPUs as validate runs it. Bandwidth sharing is off, so every task takes
// its predicted duration whatever runs beside it, as the replay below assumes.
PlanFile MakePlan(ScheduleKind schedule, int64_t dp, int64_t tp = 1) {
  Strategy s = PipelineStrategy(4, dp, 4, schedule);
  s.tp = tp;
  s.sp = tp > 1;
  SimulationOptions options;
  options.share_bandwidth = false;
  Result<PlanFile> unfolded = UnfoldPlan(Llama8bPlan(s, options));
  EXPECT_TRUE(unfolded.ok()) << unfolded.status().message();
  return unfolded.ok() ? std::move(unfolded).value() : PlanFile();
}

std::vector<DeviceProgram> Programs(const PlanFile& plan, const ExecPlan& exec) {
  std::vector<DeviceProgram> programs;
  for (int32_t r = 0; r < plan.step.graph.num_ranks(); ++r) {
    Result<DeviceProgram> p = BuildDeviceProgram(plan, exec, r);
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (p.ok()) programs.push_back(std::move(p).value());
  }
  return programs;
}

// Runs every rank's program as GPUs would, with CUDA's and NCCL's rules and each task taking its
// predicted time: a stream runs its items in enqueue order; an event wait holds the stream until
// the task it names has ended; a send and its receive start together once both are at the head of
// their streams; a collective's members start together once all are at their heads. Returns each
// task's end, or an empty vector when the streams stop with work left (a deadlock).
std::vector<SimTime> Replay(const PlanFile& plan, const std::vector<DeviceProgram>& programs) {
  const TaskGraph& g = plan.step.graph;
  struct Item {
    int32_t task = -1;     // a DeviceTask (index in its program), or
    int32_t receive = -1;  // a receive
  };
  // Per (rank, stream): its items; per rank: when each stream is free.
  std::vector<std::vector<std::deque<Item>>> queues(programs.size());
  std::vector<std::vector<SimTime>> free_at(programs.size());
  for (size_t r = 0; r < programs.size(); ++r) {
    queues[r].resize(programs[r].streams.size());
    free_at[r].resize(programs[r].streams.size());
    for (size_t i = 0; i < programs[r].receives.size(); ++i) {
      queues[r][programs[r].receives[i].stream].push_back({-1, static_cast<int32_t>(i)});
    }
    for (size_t i = 0; i < programs[r].tasks.size(); ++i) {
      queues[r][programs[r].tasks[i].stream].push_back({static_cast<int32_t>(i), -1});
    }
  }
  std::vector<SimTime> end(static_cast<size_t>(g.num_tasks()), SimTime::FromNanos(-1));
  std::map<TaskId, SimTime> received;  // send task -> when its receive ended
  // When the head item of (r, s) may start as far as its own rank can tell, or nullopt.
  const auto ready = [&](size_t r, size_t s) -> std::optional<SimTime> {
    if (queues[r][s].empty()) return std::nullopt;
    const Item item = queues[r][s].front();
    SimTime at = free_at[r][s];
    if (item.receive >= 0) return at;
    const DeviceTask& d = programs[r].tasks[item.task];
    for (int32_t w : d.waits) {
      const SimTime e = end[programs[r].tasks[w].task];
      if (e < SimTime()) return std::nullopt;
      at = Max(at, e);
    }
    for (int32_t rec : d.receives) {
      auto it = received.find(programs[r].receives[rec].send_task);
      if (it == received.end()) return std::nullopt;
      at = Max(at, it->second);
    }
    return at;
  };
  // Where task |t|'s DeviceTask or |send|'s receive sits: (rank, stream).
  const auto head_of_task = [&](TaskId t) -> std::optional<std::pair<size_t, size_t>> {
    const size_t r = static_cast<size_t>(g.rank_of(t));
    for (size_t s = 0; s < queues[r].size(); ++s) {
      if (!queues[r][s].empty() && queues[r][s].front().task >= 0 &&
          programs[r].tasks[queues[r][s].front().task].task == t) {
        return std::pair(r, s);
      }
    }
    return std::nullopt;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < programs.size(); ++r) {
      for (size_t s = 0; s < queues[r].size(); ++s) {
        const std::optional<SimTime> at = ready(r, s);
        if (!at || queues[r][s].front().receive >= 0) continue;  // receives start with their send
        const DeviceTask& d = programs[r].tasks[queues[r][s].front().task];
        const SimTime duration = g.task(d.task).duration;
        if (d.work == DeviceWork::kSend) {
          // The receive must be at the head of its stream on the peer.
          const DeviceProgram& peer = programs[d.peer];
          size_t ps = 0;
          int32_t receive = -1;
          for (; ps < queues[d.peer].size(); ++ps) {
            const auto& q = queues[d.peer][ps];
            if (!q.empty() && q.front().receive >= 0 &&
                peer.receives[q.front().receive].send_task == d.task) {
              receive = q.front().receive;
              break;
            }
          }
          if (receive < 0) continue;
          const SimTime start = Max(*at, free_at[d.peer][ps]);
          end[d.task] = start + duration;
          received[d.task] = end[d.task];
          free_at[r][s] = free_at[d.peer][ps] = end[d.task];
          queues[r][s].pop_front();
          queues[d.peer][ps].pop_front();
          progress = true;
        } else if (d.work == DeviceWork::kCollective) {
          const GroupId group = g.group_of(d.task);
          SimTime start = *at, longest;
          std::vector<std::pair<size_t, size_t>> heads;
          for (TaskId member : g.group_members(group)) {
            const auto head = head_of_task(member);
            const std::optional<SimTime> member_at =
                head ? ready(head->first, head->second) : std::nullopt;
            if (!member_at) break;
            heads.push_back(*head);
            start = Max(start, *member_at);
            longest = Max(longest, g.task(member).duration);
          }
          if (heads.size() != g.group_members(group).size()) continue;
          for (const auto& [hr, hs] : heads) {
            end[programs[hr].tasks[queues[hr][hs].front().task].task] = start + longest;
            free_at[hr][hs] = start + longest;
            queues[hr][hs].pop_front();
          }
          progress = true;
        } else {
          end[d.task] = *at + duration;
          free_at[r][s] = end[d.task];
          queues[r][s].pop_front();
          progress = true;
        }
      }
    }
  }
  for (const auto& rank : queues) {
    for (const auto& q : rank) {
      if (!q.empty()) return {};
    }
  }
  return end;
}

// Enqueued as the programs say, the streams run the whole step without a deadlock and end it
// when the simulator predicted: the events, receives and collective orders are the step graph's.
TEST(DeviceProgram, ReplayedOnStreamsEndsTheStepWhenPredicted) {
  for (ScheduleKind schedule :
       {ScheduleKind::k1F1B, ScheduleKind::kInterleaved, ScheduleKind::kZbV}) {
    for (int64_t dp : {1, 2}) {
      const PlanFile plan = MakePlan(schedule, dp);
      Result<ExecPlan> exec = PlanExecution(plan.step.graph, plan.step.graph.num_ranks());
      ASSERT_TRUE(exec.ok()) << exec.status().message();
      const std::vector<DeviceProgram> programs = Programs(plan, *exec);
      ASSERT_EQ(programs.size(), static_cast<size_t>(plan.step.graph.num_ranks()));
      const std::vector<SimTime> end = Replay(plan, programs);
      ASSERT_FALSE(end.empty()) << "deadlock: " << kScheduleNames.Name(schedule) << " dp " << dp;
      const SimTime makespan = *std::max_element(end.begin(), end.end());
      Result<StepTimeline> predicted = Simulate(plan.step.graph);
      ASSERT_TRUE(predicted.ok());
      EXPECT_EQ(makespan, predicted->makespan) << kScheduleNames.Name(schedule) << " dp " << dp;
      for (TaskId t = 0; t < plan.step.graph.num_tasks(); ++t) {
        ASSERT_EQ(end[t], predicted->end[t]) << plan.step.graph.DescribeTask(t);
      }
    }
  }
}

// What a middle stage of 1F1B runs: its passes' ops, a send per micro-batch each way, a receive
// per micro-batch from each neighbour on a stream of its own, the optimizer's traffic, and no
// collective with one replica.
TEST(DeviceProgram, MiddleStageReceivesFromBothNeighboursInTheirSendOrder) {
  const PlanFile plan = MakePlan(ScheduleKind::k1F1B, 1);
  Result<ExecPlan> exec = PlanExecution(plan.step.graph, 4);
  ASSERT_TRUE(exec.ok());
  const std::vector<DeviceProgram> programs = Programs(plan, *exec);
  const DeviceProgram& p = programs[1];
  EXPECT_EQ(p.streams.size(), exec->ranks()[1].streams.size() + 2);
  ASSERT_EQ(p.receives.size(), 8u);
  std::map<int32_t, int32_t> from;
  for (const DeviceReceive& r : p.receives) ++from[r.from_rank];
  EXPECT_EQ(from, (std::map<int32_t, int32_t>{{0, 4}, {2, 4}}));
  int64_t sends = 0, ops = 0, optimizer = 0, collectives = 0;
  std::map<PoolId, int64_t> balance;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const DeviceTask& d = p.tasks[i];
    for (int32_t w : d.waits)
      EXPECT_LT(w, static_cast<int32_t>(i)) << "an event is waited for before it is recorded";
    sends += d.work == DeviceWork::kSend;
    ops += d.work == DeviceWork::kOps;
    collectives += d.work == DeviceWork::kCollective;
    if (d.work == DeviceWork::kOptimizer) {
      ++optimizer;
      EXPECT_EQ(d.traffic.bytes_read, plan.workload.payloads.optimizer[1].bytes_read);
    }
    for (const auto& [pool, bytes] : d.alloc_at_start) balance[pool] += bytes;
    for (const auto& [pool, bytes] : d.free_at_end) balance[pool] -= bytes;
  }
  EXPECT_EQ(sends, 8);
  for (const Op& op : p.ops) EXPECT_EQ(kDeviceClasses[OpClass(op)], kOpKindNames.Name(op.kind));
  EXPECT_EQ(optimizer, 1);
  EXPECT_EQ(collectives, 0);
  EXPECT_GE(ops, 8);
  for (const auto& [pool, bytes] : balance)
    EXPECT_EQ(bytes, 0) << "pool " << pool << " does not free what it takes";
  int64_t rank_baseline = 0;  // weights, gradients and optimizer states of rank 1
  for (const MemoryBaseline& b : plan.baselines) rank_baseline += b.rank == 1 ? b.bytes : 0;
  EXPECT_EQ(p.baseline_bytes, rank_baseline);
  EXPECT_FALSE(p.ops.empty());
  // Every rank lists the same edges.
  for (const DeviceProgram& other : programs) EXPECT_EQ(other.edges, p.edges);
}

// With two replicas the gradient buckets and weight gathers are NCCL collectives of their bytes.
TEST(DeviceProgram, ReplicasReduceBucketsAndGatherWeightsAsCollectives) {
  const PlanFile plan = MakePlan(ScheduleKind::k1F1B, 2);
  Result<ExecPlan> exec = PlanExecution(plan.step.graph, 8);
  ASSERT_TRUE(exec.ok());
  Result<DeviceProgram> p = BuildDeviceProgram(plan, *exec, 5);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int64_t reduced = 0, gathered = 0;
  for (const DeviceTask& d : p->tasks) {
    if (d.work != DeviceWork::kCollective) continue;
    EXPECT_EQ(exec->communicators()[d.communicator].ranks, (std::vector<int32_t>{1, 5}));
    EXPECT_EQ(kDeviceClasses[TaskClass(d)], kCollectiveKindNames.Name(d.collective));
    if (d.collective == CollectiveKind::kReduceScatter) reduced += d.bytes;
    if (d.collective == CollectiveKind::kAllGather) gathered += d.bytes;
  }
  EXPECT_GT(reduced, 0);
  EXPECT_EQ(gathered, plan.workload.payloads.param_gather_bytes[1]);
}

// A single-GPU plan (what the GPU validation runs): every pass is ops, nothing crosses ranks, and
// the operand arena the op runner allocates beside the plan's memory (the largest op's operands:
// the output head's GEMMs and the cross entropy over the logits) fits on the GPU with it.
TEST(DeviceProgram, SingleGpuPlanRunsOpsOnlyAndItsArenaFitsTheReserve) {
  for (const char* model : {"models/gpt3-125m.json", "models/llama3.2-1b.json"}) {
    SingleGpuPlan single;
    ASSERT_NO_FATAL_FAILURE(MakeSingleGpuPlan(model, &single));
    const DeviceProgram& p = single.program;
    EXPECT_TRUE(p.receives.empty() && p.edges.empty());
    std::map<int32_t, int64_t> classes;
    for (const Op& op : p.ops) ++classes[OpClass(op)];
    EXPECT_GT(classes[0], 0) << model;  // GEMMs
    EXPECT_GT(classes[1], 0) << model;  // attention, forward and backward
    EXPECT_GT(classes[2], 0) << model;  // memory-bound
    EXPECT_LT(single.plan.prediction.peak_memory_bytes + ArenaBytes(p.ops),
              single.in.cluster.gpu.memory_bytes)
        << model;
  }
}

TEST(DeviceProgram, TensorParallelPlansAreRefusedNamingWhatIsMissing) {
  const PlanFile plan = MakePlan(ScheduleKind::k1F1B, 1, 2);
  Result<ExecPlan> exec = PlanExecution(plan.step.graph, 8);
  ASSERT_TRUE(exec.ok());
  Result<DeviceProgram> p = BuildDeviceProgram(plan, *exec, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kUnimplemented);
  EXPECT_NE(p.status().message().find("tp = cp = ep = 1"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("--backend host"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace loom
