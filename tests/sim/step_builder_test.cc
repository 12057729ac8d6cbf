// The step graph executed by the engine against the closed forms of pipeline parallelism, with
// equal stage times and free communication: the bubbles must emerge from the timing.

#include "sim/step_builder.h"

#include <algorithm>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim/memory_tracker.h"

namespace loom {
namespace {

constexpr int64_t kOneMsNanos = 1'000'000;

// Every virtual stage costs |f| forward, |b| input-backward and |w| weight-backward (ms), and
// keeps one byte of activations per micro-batch.
std::vector<ChunkCost> EqualCosts(int32_t virtual_stages, int64_t f, int64_t b, int64_t w) {
  ChunkCost c;
  c.forward.time = SimTime::FromNanos(f * kOneMsNanos);
  c.backward_input.time = SimTime::FromNanos(b * kOneMsNanos);
  c.backward_weight.time = SimTime::FromNanos(w * kOneMsNanos);
  c.kept_activation_bytes = 1;
  return std::vector<ChunkCost>(static_cast<size_t>(virtual_stages), c);
}

StepGraphConfig FreeCommunication(int32_t stages) {
  StepGraphConfig config;
  config.dp.optimizer_time.assign(static_cast<size_t>(stages), SimTime());
  config.dp.param_gather_time.assign(static_cast<size_t>(stages), SimTime());
  return config;
}

struct PipelineRun {
  StepGraph step;
  StepTimeline timeline;
};

PipelineRun BuildAndRun(ScheduleKind kind, int32_t p, int32_t m, int32_t chunks,
                        const std::vector<ChunkCost>& costs, const StepGraphConfig& config) {
  Result<PipelineSchedule> schedule = BuildSchedule(kind, p, m, chunks);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  PipelineRun run{BuildStepGraph(*schedule, costs, config), {}};
  Result<StepTimeline> timeline = Simulate(run.step.graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().message();
  run.timeline = *timeline;
  return run;
}

// 1 - busy / (stages * makespan) over the compute streams.
double BubbleFraction(const PipelineRun& run) {
  double busy = 0;
  for (int32_t s = 0; s < run.step.stages; ++s)
    busy += run.timeline.stream_busy[run.step.compute_stream[s]].ToSeconds();
  return 1.0 - busy / (run.step.stages * run.timeline.makespan.ToSeconds());
}

TEST(StepGraph, GpipeAnd1F1BBubbleIsPMinusOneOverMPlusPMinusOne) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B}) {
    for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{3, 1}}) {
      PipelineRun run = BuildAndRun(kind, p, m, 1, EqualCosts(p, 1, 1, 1), FreeCommunication(p));
      EXPECT_NEAR(BubbleFraction(run), double(p - 1) / (m + p - 1), 1e-9)
          << "p " << p << " m " << m;
      EXPECT_EQ(run.timeline.makespan.nanos(), (m + p - 1) * 3 * kOneMsNanos);
    }
  }
}

TEST(StepGraph, InterleavingDividesTheBubbleTimeByTheChunkCount) {
  const int32_t p = 4, m = 8;
  PipelineRun plain =
      BuildAndRun(ScheduleKind::k1F1B, p, m, 1, EqualCosts(p, 4, 4, 4), FreeCommunication(p));
  for (int32_t v : {2, 4}) {
    // The same model in v chunks per stage: each chunk does 1/v of the work.
    PipelineRun inter = BuildAndRun(ScheduleKind::kInterleaved, p, m, v,
                                    EqualCosts(p * v, 4 / v, 4 / v, 4 / v), FreeCommunication(p));
    const int64_t busy = int64_t{m} * 12 * kOneMsNanos;
    EXPECT_EQ(inter.timeline.makespan.nanos() - busy, (plain.timeline.makespan.nanos() - busy) / v)
        << "v " << v;
  }
}

TEST(StepGraph, ZeroBubbleH1HasAThirdOf1F1BsBubble) {
  const int32_t p = 8, m = 32;
  PipelineRun one_f_one_b =
      BuildAndRun(ScheduleKind::k1F1B, p, m, 1, EqualCosts(p, 1, 1, 1), FreeCommunication(p));
  PipelineRun zb =
      BuildAndRun(ScheduleKind::kZbH1, p, m, 1, EqualCosts(p, 1, 1, 1), FreeCommunication(p));
  const int64_t busy = int64_t{m} * 3 * kOneMsNanos;
  const double ratio = double(zb.timeline.makespan.nanos() - busy) /
                       double(one_f_one_b.timeline.makespan.nanos() - busy);
  // Qi et al. 2024: (p-1)(T_F + T_B - T_W) versus (p-1)(T_F + T_B + T_W).
  EXPECT_NEAR(ratio, 1.0 / 3.0, 1e-9);
}

// ZB-V is built from the pass times, as the zero-bubble repository builds it from its profiled
// ones (update_schedule, zb_schedules.py at 425b42e5): with Qi et al.'s 6.2B model on 16 GPUs at
// 128 micro-batches (a chunk's F 13 ms, B 14 ms, W 10 ms, transfers 0.33 ms) the order built in
// unit time idles 15 % of the step, the one built from the times 10 %; in unit time both are the
// same.
TEST(StepGraph, ZeroBubbleVIsBuiltFromThePassTimes) {
  const int32_t p = 16, m = 128;
  ChunkCost c;
  c.forward.time = SimTime::FromNanos(13 * kOneMsNanos);
  c.backward_input.time = SimTime::FromNanos(14 * kOneMsNanos);
  c.backward_weight.time = SimTime::FromNanos(10 * kOneMsNanos);
  c.kept_activation_bytes = 1;
  const std::vector<ChunkCost> costs(static_cast<size_t>(2 * p), c);
  StepGraphConfig config = FreeCommunication(p);
  config.pipeline.p2p_time = SimTime::FromNanos(330'000);
  const auto run = [&](const PassTimes& times) {
    Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::kZbV, p, m, 2, 0, times);
    EXPECT_TRUE(schedule.ok()) << schedule.status().message();
    Result<StepTimeline> timeline = Simulate(BuildStepGraph(*schedule, costs, config).graph);
    EXPECT_TRUE(timeline.ok()) << timeline.status().message();
    return timeline.ok() ? timeline->makespan.ToSeconds() : 0.0;
  };
  const double busy = m * 2 * 37e-3;
  const double unit = run(PassTimes{});
  const double timed =
      run(PassTimes{13 * kOneMsNanos, 14 * kOneMsNanos, 10 * kOneMsNanos, 330'000});
  EXPECT_GT(1 - busy / unit, 0.13);
  EXPECT_LT(1 - busy / timed, 0.06);
  EXPECT_LT(timed, 0.9 * unit);
  // Equal times give the unit order back.
  Result<PipelineSchedule> a = BuildSchedule(ScheduleKind::kZbV, 4, 8, 2);
  Result<PipelineSchedule> b = BuildSchedule(ScheduleKind::kZbV, 4, 8, 2, 0, {5, 5, 5, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->order, b->order);
}

int64_t PeakActivations(const PipelineRun& run, int32_t rank) {
  Result<MemoryReport> memory = TrackMemory(run.step.graph, run.timeline, {});
  EXPECT_TRUE(memory.ok());
  return memory->ranks[rank].peak_bytes_by_pool[run.step.activations];
}

TEST(StepGraph, OneFOneBStageHoldsPMinusIMicroBatchesGpipeHoldsAll) {
  const int32_t p = 4;
  for (int32_t m : {2, 8}) {
    PipelineRun run =
        BuildAndRun(ScheduleKind::k1F1B, p, m, 1, EqualCosts(p, 1, 1, 1), FreeCommunication(p));
    PipelineRun gpipe =
        BuildAndRun(ScheduleKind::kGpipe, p, m, 1, EqualCosts(p, 1, 1, 1), FreeCommunication(p));
    for (int32_t stage = 0; stage < p; ++stage) {
      EXPECT_EQ(PeakActivations(run, stage), std::min(p - stage, m))
          << "m " << m << " stage " << stage;
      EXPECT_EQ(PeakActivations(gpipe, stage), m);
    }
  }
}

TEST(StepGraph, FullReplicasGiveTheSymmetricStepTime) {
  const int32_t p = 4, m = 8;
  StepGraphConfig config = FreeCommunication(p);
  config.pipeline.p2p_time = SimTime::FromMicros(300);
  config.dp.buckets.assign(p, 3);
  config.dp.bucket_time.assign(p, SimTime::FromMicros(700));
  config.dp.optimizer_time.assign(p, SimTime::FromMicros(500));
  config.dp.param_gather_time.assign(p, SimTime::FromMicros(200));
  PipelineRun one = BuildAndRun(ScheduleKind::k1F1B, p, m, 1, EqualCosts(p, 2, 2, 2), config);
  config.replicas = 4;
  PipelineRun all = BuildAndRun(ScheduleKind::k1F1B, p, m, 1, EqualCosts(p, 2, 2, 2), config);
  EXPECT_EQ(all.step.graph.num_ranks(), 16);
  EXPECT_EQ(all.timeline.makespan, one.timeline.makespan);
  // The gradient buckets overlap the last backward: only the last bucket, the optimizer and the
  // weight gather come after the pipeline's last pass.
  SimTime pipeline_end;
  for (TaskId id = 0; id < one.step.graph.num_tasks(); ++id) {
    if (one.step.graph.task(id).category == one.step.compute_category)
      pipeline_end = Max(pipeline_end, one.timeline.end[id]);
  }
  EXPECT_EQ((one.timeline.makespan - pipeline_end).nanos(), 700'000 + 500'000 + 200'000);
}

// The tasks of |category| in the order they were added.
std::vector<TaskId> TasksOf(const StepGraph& step, NameId category) {
  std::vector<TaskId> ids;
  for (TaskId id = 0; id < step.graph.num_tasks(); ++id) {
    if (step.graph.task(id).category == category) ids.push_back(id);
  }
  return ids;
}

// Two stages, one micro-batch, 1F1B: stage 1's BW ends at 4.3 ms, and both the gradient it sends
// back to stage 0 (300 us alone) and its gradient bucket (700 us alone) leave through its NIC.
TEST(StepGraph, SendAndGradientBucketOnOneNicShareItsBandwidth) {
  StepGraphConfig config = FreeCommunication(2);
  config.pipeline.p2p_time = SimTime::FromMicros(300);
  config.dp.buckets.assign(2, 1);
  config.dp.bucket_time.assign(2, SimTime::FromMicros(700));
  const std::vector<ChunkCost> costs = EqualCosts(2, 1, 1, 1);
  PipelineRun alone = BuildAndRun(ScheduleKind::k1F1B, 2, 1, 1, costs, config);
  config.fabrics.pp = Fabric::kInterNode;
  config.fabrics.dp = Fabric::kInterNode;
  PipelineRun shared = BuildAndRun(ScheduleKind::k1F1B, 2, 1, 1, costs, config);

  const std::vector<TaskId> sends = TasksOf(shared.step, shared.step.pp_category);
  const std::vector<TaskId> buckets = TasksOf(shared.step, shared.step.dp_category);
  ASSERT_EQ(sends.size(), 2u);
  ASSERT_EQ(buckets.size(), 2u);
  const StepTimeline& t = shared.timeline;
  // The forward send has the NICs to itself.
  EXPECT_EQ(t.end[sends[0]] - t.start[sends[0]], SimTime::FromMicros(300));
  // Half of rank 1's NIC each until the send's 300 us are done; then the bucket's last 400 alone.
  const TaskId back = sends[1];
  const TaskId bucket0 = buckets[0], bucket1 = buckets[1];  // added stage by stage
  ASSERT_EQ(shared.step.graph.rank_of(bucket1), 1);
  EXPECT_EQ(t.start[back].nanos(), 4'300'000);
  EXPECT_EQ(t.end[back].nanos(), 4'900'000);
  EXPECT_EQ(t.start[bucket1].nanos(), 4'300'000);
  EXPECT_EQ(t.end[bucket1].nanos(), 5'300'000);
  // Stage 0's backward waits for the slowed send; its own bucket runs alone.
  EXPECT_EQ(t.end[bucket0] - t.start[bucket0], SimTime::FromMicros(700));
  EXPECT_EQ(t.makespan.nanos(), 7'600'000);
  EXPECT_EQ(alone.timeline.makespan.nanos(), 7'300'000);
  EXPECT_EQ(t.channel_shared[shared.step.inter_node_port[1].tx].nanos(), 600'000);
  EXPECT_EQ(t.channel_shared[shared.step.inter_node_port[1].rx].nanos(), 0);

  // Every replica simulated: each bucket is a collective over the replicas' NICs, sharing as the
  // one symmetric replica did.
  config.replicas = 3;
  PipelineRun all = BuildAndRun(ScheduleKind::k1F1B, 2, 1, 1, costs, config);
  EXPECT_EQ(all.timeline.makespan, t.makespan);
}

// One stage: the last BW is cut into two gradient buckets, each slice 800 us of kernels then
// 200 us of tp collectives. Bucket 0 (1 ms alone, inside the node) starts at 2.0 ms and still has
// 200 us left when slice 1's tp collectives start at 2.8 ms on the same NVLink port.
TEST(StepGraph, TensorParallelCollectivesShareNvlinkWithAnIntraNodeBucket) {
  std::vector<ChunkCost> costs = EqualCosts(1, 1, 2, 0);
  costs[0].backward_input.tp_comm = SimTime::FromMicros(400);
  StepGraphConfig config = FreeCommunication(1);
  config.dp.buckets.assign(1, 2);
  config.dp.bucket_time.assign(1, SimTime::FromMicros(1000));
  PipelineRun alone = BuildAndRun(ScheduleKind::k1F1B, 1, 1, 1, costs, config);
  config.fabrics.tp = Fabric::kIntraNode;
  config.fabrics.dp = Fabric::kIntraNode;
  PipelineRun shared = BuildAndRun(ScheduleKind::k1F1B, 1, 1, 1, costs, config);

  const std::vector<TaskId> tp = TasksOf(shared.step, shared.step.tp_category);
  const std::vector<TaskId> buckets = TasksOf(shared.step, shared.step.dp_category);
  ASSERT_EQ(tp.size(), 2u);
  ASSERT_EQ(buckets.size(), 2u);
  const StepTimeline& t = shared.timeline;
  EXPECT_EQ(t.start[tp[1]].nanos(), 2'800'000);
  EXPECT_EQ(t.end[tp[1]].nanos(), 3'200'000);  // 200 us of work at half speed
  EXPECT_EQ(t.end[buckets[0]].nanos(), 3'200'000);
  EXPECT_EQ(t.start[buckets[1]].nanos(), 3'200'000);
  EXPECT_EQ(t.makespan.nanos(), 4'200'000);
  EXPECT_EQ(alone.timeline.makespan.nanos(), 4'000'000);
  EXPECT_TRUE(shared.step.inter_node_port.empty());
}

// Shared ports only stretch transfers, and a step without links is monotone in its task times
// (every start is a max of ends), so no task may end earlier than with every transfer alone.
TEST(StepGraph, SharedPortsNeverMakeAnyScheduleFaster) {
  struct Case {
    ScheduleKind kind;
    int32_t chunks;
  };
  int32_t slower = 0;
  for (Case c : {Case{ScheduleKind::k1F1B, 1}, Case{ScheduleKind::kInterleaved, 2},
                 Case{ScheduleKind::kZbH1, 1}, Case{ScheduleKind::kZbV, 2},
                 Case{ScheduleKind::kDualPipeV, 2}}) {
    for (int32_t p : {2, 4}) {
      for (int32_t m : {4, 8}) {
        Result<PipelineSchedule> schedule = BuildSchedule(c.kind, p, m, c.chunks);
        if (!schedule.ok()) continue;
        std::vector<ChunkCost> costs = EqualCosts(p * c.chunks, 3, 2, 1);
        for (ChunkCost& cost : costs) cost.backward_input.tp_comm = SimTime::FromMicros(500);
        StepGraphConfig config = FreeCommunication(p);
        config.pipeline.p2p_time = SimTime::FromMicros(400);
        config.dp.buckets.assign(static_cast<size_t>(p * c.chunks), 3);
        config.dp.bucket_time.assign(static_cast<size_t>(p * c.chunks), SimTime::FromMicros(900));
        config.dp.param_gather_time.assign(static_cast<size_t>(p), SimTime::FromMicros(300));
        const StepGraph alone = BuildStepGraph(*schedule, costs, config);
        config.fabrics.pp = Fabric::kInterNode;
        config.fabrics.dp = Fabric::kInterNode;
        config.fabrics.tp = Fabric::kIntraNode;
        const StepGraph shared = BuildStepGraph(*schedule, costs, config);
        ASSERT_EQ(shared.graph.num_tasks(), alone.graph.num_tasks());
        ASSERT_TRUE(shared.graph.Validate().ok());
        Result<StepTimeline> a = Simulate(alone.graph);
        Result<StepTimeline> b = Simulate(shared.graph);
        ASSERT_TRUE(a.ok() && b.ok()) << b.status().message();
        for (TaskId id = 0; id < shared.graph.num_tasks(); ++id) {
          ASSERT_GE(b->end[id], a->end[id])
              << kScheduleNames.Name(c.kind) << " p " << p << " m " << m;
        }
        slower += b->makespan > a->makespan;
      }
    }
  }
  EXPECT_GT(slower, 0);
}

// Start times of the compute tasks of |rank|, in stream order.
std::vector<int64_t> ComputeStarts(const PipelineRun& run, int32_t rank) {
  std::vector<int64_t> starts;
  for (TaskId id = 0; id < run.step.graph.num_tasks(); ++id) {
    if (run.step.graph.task(id).stream == run.step.compute_stream[rank])
      starts.push_back(run.timeline.start[id].nanos());
  }
  return starts;
}

TEST(StepGraph, BlockingSendHoldsBackTheSendersNextPass) {
  // GPipe, 2 stages, 2 micro-batches, 1 ms per pass and per send: stage 0 runs F0, sends it
  // (1-2 ms) and only then F1, as Megatron-LM waits on its send requests.
  StepGraphConfig config = FreeCommunication(2);
  config.pipeline.p2p_time = SimTime::FromNanos(kOneMsNanos);
  PipelineRun blocking = BuildAndRun(ScheduleKind::kGpipe, 2, 2, 1, EqualCosts(2, 1, 1, 1), config);
  ASSERT_GE(ComputeStarts(blocking, 0).size(), 2u);
  EXPECT_EQ(ComputeStarts(blocking, 0)[1], 2 * kOneMsNanos);
  config.pipeline.blocking_sends = false;
  PipelineRun overlapped =
      BuildAndRun(ScheduleKind::kGpipe, 2, 2, 1, EqualCosts(2, 1, 1, 1), config);
  EXPECT_EQ(ComputeStarts(overlapped, 0)[1], 1 * kOneMsNanos);
  EXPECT_GT(blocking.timeline.makespan, overlapped.timeline.makespan);
}

TEST(StepGraph, EveryScheduleRunsEveryTaskOnceInDependencyOrder) {
  struct Case {
    ScheduleKind kind;
    int32_t chunks;
  };
  for (Case c : {Case{ScheduleKind::kGpipe, 1}, Case{ScheduleKind::k1F1B, 1},
                 Case{ScheduleKind::kInterleaved, 2}, Case{ScheduleKind::kInterleaved, 3},
                 Case{ScheduleKind::kInterleaved, 4}, Case{ScheduleKind::kZbH1, 1},
                 Case{ScheduleKind::kZbV, 2}, Case{ScheduleKind::kDualPipeV, 2}}) {
    for (int32_t p = 1; p <= 16; ++p) {
      for (int32_t m = 1; m <= 64; ++m) {
        Result<PipelineSchedule> schedule = BuildSchedule(c.kind, p, m, c.chunks);
        if (!schedule.ok()) continue;  // a combination the schedule rejects, with a message
        StepGraphConfig config = FreeCommunication(p);
        config.pipeline.p2p_time = SimTime::FromMicros(50);
        StepGraph step = BuildStepGraph(*schedule, EqualCosts(p * c.chunks, 3, 2, 1), config);
        ASSERT_TRUE(step.graph.Validate().ok())
            << kScheduleNames.Name(c.kind) << " p " << p << " m " << m;
        Result<StepTimeline> t = Simulate(step.graph);
        ASSERT_TRUE(t.ok()) << t.status().message();
        for (const Dependency& d : step.graph.dependencies()) {
          ASSERT_LE(t->end[d.before], t->start[d.after]);
        }
        // F of every (micro-batch, virtual stage) once, and its backward once: BW, or B then W.
        int64_t f = 0, b = 0, w = 0, bw = 0;
        for (const Task& task : step.graph.tasks()) {
          if (task.category != step.compute_category) continue;
          const std::string_view name = step.graph.Name(task.name);
          f += name.starts_with("F ");
          b += name.starts_with("B ");
          w += name.starts_with("W ");
          bw += name.starts_with("BW ");
        }
        const int64_t per_pass = int64_t{m} * p * c.chunks;
        EXPECT_EQ(f, per_pass) << kScheduleNames.Name(c.kind) << " p " << p << " m " << m;
        EXPECT_EQ(b + bw, per_pass) << kScheduleNames.Name(c.kind) << " p " << p << " m " << m;
        EXPECT_EQ(w, b);
      }
    }
  }
}

// ZB-V built from pass times (ZbVOrder's timed and round constructions) is a valid order for every
// pipeline and any times: every pass once, each after what it waits for.
TEST(StepGraph, ZeroBubbleVFromAnyPassTimesRunsEveryTaskOnce) {
  const PassTimes kTimes[] = {{13, 14, 10, 1}, {5, 20, 3, 7}, {30, 10, 10, 0}, {2, 3, 9, 40}};
  for (const PassTimes& times : kTimes) {
    for (int32_t p = 2; p <= 12; ++p) {
      for (int32_t m = 1; m <= 40; m += (m < 8 ? 1 : 7)) {
        Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::kZbV, p, m, 2, 0, times);
        ASSERT_TRUE(schedule.ok()) << schedule.status().message();
        StepGraphConfig config = FreeCommunication(p);
        config.pipeline.p2p_time = SimTime::FromNanos(times.comm * kOneMsNanos);
        StepGraph step =
            BuildStepGraph(*schedule, EqualCosts(2 * p, times.f, times.b, times.w), config);
        ASSERT_TRUE(step.graph.Validate().ok()) << "p " << p << " m " << m;
        Result<StepTimeline> t = Simulate(step.graph);
        ASSERT_TRUE(t.ok()) << "p " << p << " m " << m << ": " << t.status().message();
        int64_t passes = 0;
        for (const std::vector<PipelineItem>& list : schedule->order) {
          passes += static_cast<int64_t>(list.size());
        }
        EXPECT_EQ(passes, int64_t{6} * p * m) << "p " << p << " m " << m;
      }
    }
  }
}

// Every task says what it runs, in the terms an executor of real kernels needs: a compute task
// is a part of one pass of one virtual stage (its name says which), a send carries what its
// sender's pass produced, a bucket is one of its chunk's buckets.
TEST(StepGraph, EveryTaskSaysWhatItRuns) {
  const int32_t p = 2, m = 4, chunks = 2;
  StepGraphConfig config = FreeCommunication(p);
  config.replicas = 2;
  config.pipeline.p2p_time = SimTime::FromMicros(50);
  config.dp.buckets.assign(p * chunks, 3);
  config.dp.bucket_time.assign(p * chunks, SimTime::FromMicros(70));
  config.dp.optimizer_time.assign(p, SimTime::FromMicros(90));
  config.dp.param_gather_time.assign(p, SimTime::FromMicros(20));
  PipelineRun run = BuildAndRun(ScheduleKind::kInterleaved, p, m, chunks,
                                EqualCosts(p * chunks, 3, 2, 1), config);
  const StepGraph& step = run.step;
  ASSERT_EQ(step.work.size(), static_cast<size_t>(step.graph.num_tasks()));
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>>
      bucket_parts;  // (rank, v) -> parts seen
  for (TaskId id = 0; id < step.graph.num_tasks(); ++id) {
    const Task& task = step.graph.task(id);
    const TaskWork& work = step.work[id];
    const int32_t stage = step.graph.rank_of(id) % p;
    if (task.category == step.compute_category) {
      ASSERT_EQ(work.kind, WorkKind::kPass);
      const std::string expected =
          std::string(kPassNames.Name(work.pass)) + " v" + std::to_string(work.index);
      EXPECT_EQ(step.graph.Name(task.name), expected);
      EXPECT_EQ(work.index % p, stage);  // interleaved: virtual stage v sits on stage v % p
      EXPECT_LT(work.part, work.parts);
    } else if (task.category == step.pp_category) {
      ASSERT_EQ(work.kind, WorkKind::kTransfer);
      EXPECT_EQ(work.index % p, stage);  // the sender's virtual stage
    } else if (step.graph.Name(task.name) == "grad reduce") {
      ASSERT_EQ(work.kind, WorkKind::kGradReduce);
      EXPECT_EQ(work.parts, 3);
      bucket_parts[{step.graph.rank_of(id), work.index}].push_back(work.part);
    } else if (task.category == step.optimizer_category) {
      EXPECT_EQ(work, (TaskWork{WorkKind::kOptimizer, Pass::kW, stage}));
    } else if (step.graph.Name(task.name) == "param all-gather") {
      EXPECT_EQ(work, (TaskWork{WorkKind::kParamGather, Pass::kF, stage}));
    } else {
      ADD_FAILURE() << "unexpected task " << step.graph.DescribeTask(id);
    }
  }
  // Each rank reduces buckets 0, 1, 2 of each of its two chunks, in order.
  EXPECT_EQ(bucket_parts.size(), size_t{8});  // 2 replicas x 2 stages x 2 chunks
  for (const auto& [key, parts] : bucket_parts) {
    EXPECT_EQ(parts, (std::vector<int32_t>{0, 1, 2}))
        << "rank " << key.first << " v " << key.second;
  }
}

}  // namespace
}  // namespace loom
