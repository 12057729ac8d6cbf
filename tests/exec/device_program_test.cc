#include "exec/device_program.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
    ASSERT_EQ(d.collectives.size(), 1u);
    const CollectiveShape& c = d.collectives[0];
    EXPECT_EQ(kDeviceClasses[TaskClass(d)], kCollectiveKindNames.Name(c.kind));
    if (c.kind == CollectiveKind::kReduceScatter) reduced += c.bytes;
    if (c.kind == CollectiveKind::kAllGather) gathered += c.bytes;
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

// The unfolded plans of issue 26 on the 8 GPUs of a DGX H100 node, as validate builds them;
// bandwidth sharing off when |replayable|, so that a replay of the device programs can take each
// task's predicted duration.
PlanFile UnfoldedPlan(const std::string& model, const Strategy& s, bool replayable = false) {
  const Inputs in = Load(model, "hardware/clusters/dgx-h100.json", 1);
  SimulationOptions options;
  options.share_bandwidth = !replayable;
  Result<PlanFile> folded = MakePlanFile(in.model, in.cluster, s, options, {});
  EXPECT_TRUE(folded.ok()) << folded.status().message();
  if (!folded.ok()) return PlanFile();
  Result<PlanFile> unfolded = UnfoldPlan(*folded);
  EXPECT_TRUE(unfolded.ok()) << unfolded.status().message();
  return unfolded.ok() ? std::move(unfolded).value() : PlanFile();
}

Strategy EightGpus(int64_t tp, int64_t cp, int64_t ep, int64_t dp) {
  Strategy s = PipelineStrategy(2, dp, 4, ScheduleKind::k1F1B);
  s.tp = tp;
  s.sp = tp > 1;
  s.cp = cp;
  s.ep = ep;
  s.etp = 1;
  s.seq_len = cp > 1 ? 8192 : 2048;
  return s;
}

// Every GPU's program builds; returns them, with the plan's execution.
std::vector<DeviceProgram> AllPrograms(const PlanFile& plan, Result<ExecPlan>& exec) {
  exec = PlanExecution(plan.step.graph, plan.step.graph.num_ranks());
  EXPECT_TRUE(exec.ok()) << exec.status().message();
  if (!exec.ok()) return {};
  return Programs(plan, *exec);
}

// Enqueued as the programs say, the streams of the 8 GPUs of the tp 2 x pp 2 x dp 2, cp 2 ring,
// ep 4 MoE and tp 2 x dp 4 ZeRO-3 plans run the whole step without a deadlock and end every task
// when the simulator predicted: sends, receives, collective orders and events are the unfolded
// step's.
TEST(DeviceProgram, UnfoldedProgramsReplayedOnStreamsEndTheStepWhenPredicted) {
  Strategy zero3 = EightGpus(2, 1, 1, 4);  // tp 2 x dp 4, ZeRO-3's layer gathers over dp
  zero3.pp = 1;
  zero3.vpp = 1;
  zero3.zero_stage = 3;
  const std::vector<std::pair<std::string, Strategy>> plans = {
      {"models/llama3-8b.json", EightGpus(2, 1, 1, 2)},
      {"models/llama3-8b.json", EightGpus(1, 2, 1, 2)},
      {"models/qwen3-30b-a3b.json", EightGpus(1, 1, 4, 4)},
      {"models/llama3-8b.json", zero3}};
  for (const auto& [model, strategy] : plans) {
    SCOPED_TRACE(model + " tp " + std::to_string(strategy.tp) + " cp " +
                 std::to_string(strategy.cp) + " ep " + std::to_string(strategy.ep));
    const PlanFile plan = UnfoldedPlan(model, strategy, /*replayable=*/true);
    Result<ExecPlan> exec = Status::Internal("unset");
    const std::vector<DeviceProgram> programs = AllPrograms(plan, exec);
    ASSERT_EQ(programs.size(), 8u);
    const std::vector<SimTime> end = Replay(plan, programs);
    ASSERT_FALSE(end.empty()) << "deadlock";
    Result<StepTimeline> predicted = Simulate(plan.step.graph);
    ASSERT_TRUE(predicted.ok());
    for (TaskId t = 0; t < plan.step.graph.num_tasks(); ++t) {
      ASSERT_EQ(end[t], predicted->end[t]) << plan.step.graph.DescribeTask(t);
    }
    if (strategy.zero_stage == 3) {
      // Its layer gathers are all-gathers of the gathered weights over the 4 replicas.
      int32_t gathers = 0;
      for (const DeviceTask& d : programs[0].tasks) {
        if (plan.step.work[d.task].kind != WorkKind::kLayerGather) continue;
        ++gathers;
        ASSERT_EQ(d.work, DeviceWork::kCollective);
        EXPECT_EQ(exec->communicators()[d.communicator].ranks.size(), 4u);
        EXPECT_EQ(d.collectives.at(0).kind, CollectiveKind::kAllGather);
        EXPECT_EQ(d.collectives.at(0).bytes, plan.step.graph.task(d.task).alloc_at_start_bytes);
        EXPECT_EQ(d.alloc_at_start.size(), 1u);
      }
      EXPECT_GT(gathers, 0);
    }
  }
}

// tp 2: each pass's tensor-parallel collectives run on the communicator of its two GPUs, as the
// pass's all-gathers and reduce-scatters of sequence parallelism, and the pass's own ops hold no
// collective.
TEST(DeviceProgram, TensorParallelCollectivesRunOnTheirPairOfGpus) {
  const PlanFile plan = UnfoldedPlan("models/llama3-8b.json", EightGpus(2, 1, 1, 2));
  Result<ExecPlan> exec = Status::Internal("unset");
  const std::vector<DeviceProgram> programs = AllPrograms(plan, exec);
  ASSERT_EQ(programs.size(), 8u);
  for (const DeviceProgram& p : programs) {
    int32_t tp_tasks = 0;
    for (const DeviceTask& d : p.tasks) {
      for (const Op* op : d.ops.ops) EXPECT_NE(op->kind, OpKind::kCollective);
      if (d.work != DeviceWork::kCollective || kDeviceClasses[TaskClass(d)] != "tp_collectives") {
        continue;
      }
      ++tp_tasks;
      EXPECT_EQ(exec->communicators()[d.communicator].ranks,
                GroupRanks(plan.gpus, 2, p.rank, UnfoldedGroup::kTp));
      for (const CollectiveShape& c : d.collectives) {
        EXPECT_EQ(c.group, CommGroup::kTp);
        EXPECT_GT(c.bytes, 0);
      }
    }
    EXPECT_GT(tp_tasks, 0) << "rank " << p.rank;
  }
}

// cp 2 with ring attention: each K/V block goes to the other context rank of the same stage and
// replica, as a send of its bytes that the receiver's next attention block waits for.
TEST(DeviceProgram, RingAttentionSendsKvBlocksToTheNextContextRank) {
  const PlanFile plan = UnfoldedPlan("models/llama3-8b.json", EightGpus(1, 2, 1, 2));
  Result<ExecPlan> exec = Status::Internal("unset");
  const std::vector<DeviceProgram> programs = AllPrograms(plan, exec);
  ASSERT_EQ(programs.size(), 8u);
  for (const DeviceProgram& p : programs) {
    int32_t ring_sends = 0;
    for (const DeviceTask& d : p.tasks) {
      if (plan.step.work[d.task].kind != WorkKind::kRingSend) continue;
      ++ring_sends;
      EXPECT_EQ(d.work, DeviceWork::kSend);
      EXPECT_GT(d.bytes, 0);
      const GpuCoordinates from = CoordinatesOf(plan.gpus, 2, p.rank);
      const GpuCoordinates to = CoordinatesOf(plan.gpus, 2, d.peer);
      EXPECT_EQ(to.c, 1 - from.c);
      EXPECT_EQ(to.stage, from.stage);
      EXPECT_EQ(to.r, from.r);
    }
    EXPECT_GT(ring_sends, 0);
    // A receive for each ring send of the other context rank.
    int32_t ring_receives = 0;
    for (const DeviceReceive& r : p.receives) {
      ring_receives += plan.step.work[r.send_task].kind == WorkKind::kRingSend ? 1 : 0;
    }
    EXPECT_EQ(ring_receives, ring_sends);
  }
}

// ep 4 of a MoE model: expert dispatch and combine are all-to-alls on the communicator of the four
// GPUs of a stage (one from each replica); with ep 2 the experts' gradients reduce over their own
// data-parallel pairs, the dense ones over all four replicas.
TEST(DeviceProgram, ExpertAllToAllsAndExpertGradientsRunOnTheirGroups) {
  for (int64_t ep : {4, 2}) {
    const PlanFile plan = UnfoldedPlan("models/qwen3-30b-a3b.json", EightGpus(1, 1, ep, 4));
    Result<ExecPlan> exec = Status::Internal("unset");
    const std::vector<DeviceProgram> programs = AllPrograms(plan, exec);
    ASSERT_EQ(programs.size(), 8u);
    const DeviceProgram& p = programs[2];
    int32_t all_to_alls = 0;
    int64_t expert_reduced = 0;
    for (const DeviceTask& d : p.tasks) {
      if (d.work != DeviceWork::kCollective) continue;
      const std::vector<int32_t>& ranks = exec->communicators()[d.communicator].ranks;
      const TaskWork& work = plan.step.work[d.task];
      for (const CollectiveShape& c : d.collectives) {
        if (c.kind != CollectiveKind::kAllToAll) continue;
        ++all_to_alls;
        EXPECT_EQ(ranks, GroupRanks(plan.gpus, 2, p.rank, UnfoldedGroup::kEp));
      }
      if (work.group == static_cast<int32_t>(UnfoldedGroup::kEdp)) {
        EXPECT_EQ(ranks, GroupRanks(plan.gpus, 2, p.rank, UnfoldedGroup::kEdp));
        expert_reduced += d.collectives.at(0).bytes;
      }
      if (work.kind == WorkKind::kGradReduce &&
          work.group == static_cast<int32_t>(UnfoldedGroup::kDp)) {
        EXPECT_EQ(ranks.size(), 4u);
      }
    }
    EXPECT_GT(all_to_alls, 0) << "ep " << ep;
    if (ep == 2) {
      EXPECT_GT(expert_reduced, 0);
    } else {
      EXPECT_EQ(expert_reduced, 0) << "ep 4 of 4 GPUs: each expert lives on one GPU";
    }
  }
}

// One GPU of a tp 2 plan alone (validate --one-gpu): its passes run their kernels, and every
// send and collective is a stand-in of its predicted time; nothing needs another GPU.
TEST(DeviceProgram, OneGpuStandsInForItsCommunication) {
  const PlanFile plan = UnfoldedPlan("models/llama3-8b.json", EightGpus(2, 1, 1, 2));
  Result<PlanFile> one = OneGpuPlan(plan, 5);
  ASSERT_TRUE(one.ok()) << one.status().message();
  Result<ExecPlan> exec = PlanExecution(one->step.graph, 1);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  Result<DeviceProgram> p = BuildDeviceProgram(*one, *exec, 0, /*stand_ins=*/true);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->receives.empty());
  EXPECT_TRUE(p->edges.empty());
  int32_t stand_ins = 0, passes = 0;
  for (const DeviceTask& d : p->tasks) {
    EXPECT_NE(d.work, DeviceWork::kSend);
    EXPECT_NE(d.work, DeviceWork::kCollective);
    const WorkKind kind = one->step.work[d.task].kind;
    if (d.work == DeviceWork::kStandIn) {
      ++stand_ins;
      EXPECT_EQ(d.stand_in, one->step.graph.task(d.task).duration);
      EXPECT_EQ(kDeviceClasses[TaskClass(d)], "stand_in");
      EXPECT_TRUE(kind == WorkKind::kTpComm || kind == WorkKind::kTransfer ||
                  kind == WorkKind::kGradReduce || kind == WorkKind::kParamGather)
          << kWorkKindNames.Name(kind);
    }
    passes += d.work == DeviceWork::kOps ? 1 : 0;
  }
  EXPECT_GT(stand_ins, 0);
  EXPECT_GT(passes, 0);
  // Without stand-ins, the lone GPU's sends have nowhere to go.
  EXPECT_FALSE(BuildDeviceProgram(*one, *exec, 0).ok());
}

// A plan that was not unfolded (its ranks are tp groups) is refused naming what is missing.
TEST(DeviceProgram, FoldedTensorParallelPlansAreRefusedNamingWhatIsMissing) {
  Strategy s = PipelineStrategy(4, 1, 4, ScheduleKind::k1F1B);
  s.tp = 2;
  s.sp = true;
  const PlanFile plan = Llama8bPlan(s);
  Result<ExecPlan> exec = PlanExecution(plan.step.graph, 4);
  ASSERT_TRUE(exec.ok());
  Result<DeviceProgram> p = BuildDeviceProgram(plan, *exec, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kUnimplemented);
  EXPECT_NE(p.status().message().find("not unfolded to its GPUs"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("--backend host"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace loom
