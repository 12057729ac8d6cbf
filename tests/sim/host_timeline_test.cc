// The host thread that issues each rank's work (issue 19): hand-worked timelines of short and long
// ops, the lead a pass waits for, the synchronisation points that stop the host running ahead,
// CUDA graphs, and the host track of the trace.

#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "sim/engine.h"
#include "sim/pass_costs.h"
#include "sim/simulator.h"
#include "sim/step_builder.h"
#include "sim/step_utilization.h"
#include "sim/trace.h"
#include "sim_test_support.h"

namespace loom {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;

SimTime UsOf(int64_t us) { return SimTime::FromNanos(us * kUs); }

// Every kernel takes |kernel| and every collective |kernel| too: op times the test can count.
class EveryOpTakes : public ComputeModel, public CommModel {
 public:
  explicit EveryOpTakes(SimTime kernel) : kernel_(kernel) {}
  SimTime Gemm(const GemmShape&) const override { return kernel_; }
  SimTime Attention(const AttentionShape&) const override { return kernel_; }
  SimTime MemoryBound(const MemoryShape&) const override { return kernel_; }
  SimTime Collective(CollectiveKind, int64_t, GroupPlacement) const override { return kernel_; }
  SimTime PointToPoint(int64_t, bool) const override { return kernel_; }

 private:
  SimTime kernel_;
};

Strategy OneGpu() {
  Strategy s;
  s.micro_batch = 1;
  s.global_batch = 1;
  s.seq_len = 1024;
  return s;
}

// The forward ops of the one virtual stage of |s| (embedding, layers, head).
int64_t ForwardOps(const ModelSpec& model, const Strategy& s) {
  Result<ChunkBlocks> blocks = BuildChunkBlocks(model, s);
  EXPECT_TRUE(blocks.ok()) << blocks.status().message();
  int64_t ops = 0;
  for (const BlockRun& run : blocks->chunks[0])
    ops += run.count * static_cast<int64_t>(blocks->blocks[run.block].forward.size());
  return ops;
}

ChunkCost CostOneStage(const ModelSpec& model, const Strategy& s, SimTime kernel,
                       const HostCosts& host) {
  const EveryOpTakes models(kernel);
  const ClusterSpec cluster =
      Load("models/gpt3-125m.json", "hardware/clusters/dgx-h100.json", 1).cluster;
  Result<std::vector<ChunkCost>> costs =
      CostChunks(model, s, models, models, PlaceStrategy(s, cluster), {}, &host);
  EXPECT_TRUE(costs.ok()) << costs.status().message();
  return costs.ok() ? costs->front() : ChunkCost{};
}

TEST(HostPass, AChainOfTinyKernelsCostsTheHostsTimeNotTheKernels) {
  const ModelSpec model = Load("models/gpt3-125m.json", "hardware/clusters/dgx-h100.json", 1).model;
  const Strategy s = OneGpu();
  const int64_t n = ForwardOps(model, s);
  ASSERT_GT(n, 100);
  // 1 us kernels issued at 10 us each: the GPU waits for every one, so the pass ends one kernel
  // after the host has issued the last: n * 10 us + 1 us from the host's start.
  const ChunkCost c =
      CostOneStage(model, s, UsOf(1), {.forward_op = UsOf(10), .backward_op = UsOf(20)});
  EXPECT_EQ(c.forward.time, UsOf(n));
  EXPECT_EQ(c.forward.host, UsOf(10 * n));
  EXPECT_EQ(c.forward.host_lead + c.forward.time, UsOf(10 * n + 1));
}

TEST(HostPass, AChainOfLongKernelsWaitsOnlyForTheFirstIssue) {
  const ModelSpec model = Load("models/gpt3-125m.json", "hardware/clusters/dgx-h100.json", 1).model;
  const Strategy s = OneGpu();
  const int64_t n = ForwardOps(model, s);
  // 1 ms kernels issued at 10 us: the host runs ahead after the first, the kernels run back to
  // back.
  const ChunkCost c = CostOneStage(model, s, SimTime::FromNanos(kMs),
                                   {.forward_op = UsOf(10), .backward_op = UsOf(20)});
  EXPECT_EQ(c.forward.time, SimTime::FromNanos(n * kMs));
  EXPECT_EQ(c.forward.host, UsOf(10 * n));
  EXPECT_EQ(c.forward.host_lead, UsOf(10));
}

TEST(HostPass, CudaGraphLayersLeaveOnlyTheEagerEmbeddingAndHead) {
  const ModelSpec model = Load("models/gpt3-125m.json", "hardware/clusters/dgx-h100.json", 1).model;
  const Strategy s = OneGpu();
  Result<ChunkBlocks> blocks = BuildChunkBlocks(model, s);
  ASSERT_TRUE(blocks.ok());
  const int64_t eager_ops = static_cast<int64_t>(blocks->blocks.front().forward.size() +
                                                 blocks->blocks.back().forward.size());
  const HostCosts eager{.forward_op = UsOf(10), .backward_op = UsOf(20)};
  HostCosts graphs = eager;
  graphs.graph_layers = true;
  graphs.graph_launch = UsOf(4);
  const ChunkCost e = CostOneStage(model, s, UsOf(1), eager);
  const ChunkCost g = CostOneStage(model, s, UsOf(1), graphs);
  // One launch per layer instead of its ops: the floor of many short kernels goes.
  EXPECT_EQ(g.forward.host, UsOf(10 * eager_ops + 4 * model.num_layers));
  EXPECT_LT(g.forward.host.nanos() * 5, e.forward.host.nanos());
  EXPECT_EQ(g.forward.time, e.forward.time);
}

TEST(HostPass, ASliceKeepsTheLeadOfARepeatedLayer) {
  // Four equal host-bound layers: 4 ms of host over 2 ms of GPU, a lead of 2 ms + 0.1 ms.
  PassCost pass;
  pass.time = SimTime::FromNanos(2 * kMs);
  pass.host = SimTime::FromNanos(4 * kMs);
  pass.host_lead = SimTime::FromNanos(2 * kMs + 100 * kUs);
  const PassCost half = SlicePass(pass, 2, 0);
  EXPECT_EQ(half.host, SimTime::FromNanos(2 * kMs));
  EXPECT_EQ(half.host_lead, SimTime::FromNanos(1 * kMs + 100 * kUs));
  // The two halves in a row give the whole pass back.
  const PassCost both = CombinePasses(half, SlicePass(pass, 2, 1));
  EXPECT_EQ(both.host, pass.host);
  EXPECT_EQ(both.host_lead, pass.host_lead);
}

// One rank, one micro-batch: F then B, with host times worked by hand.
TEST(HostTimeline, ThePassWaitsForItsLeadAndTheHostIssuesInOrder) {
  ChunkCost c;
  c.forward.time = SimTime::FromNanos(1 * kMs);
  c.forward.host = SimTime::FromNanos(5 * kMs);
  c.forward.host_lead = UsOf(4500);
  c.backward_input.time = SimTime::FromNanos(2 * kMs);
  c.backward_input.host = SimTime::FromNanos(1 * kMs);
  c.backward_input.host_lead = UsOf(100);
  StepGraphConfig config;
  config.dp.optimizer_time = {UsOf(300)};
  config.dp.param_gather_time = {SimTime()};
  config.host.enabled = true;
  config.host.sync_before_optimizer = true;
  config.host.optimizer_lead = {UsOf(50)};
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 1, 1, 1);
  ASSERT_TRUE(schedule.ok());
  const StepGraph step = BuildStepGraph(*schedule, {c}, config);
  Result<StepTimeline> t = Simulate(step.graph);
  ASSERT_TRUE(t.ok()) << t.status().message();
  // Host: F's lead [0, 4.5], F's rest [4.5, 5], B's lead [5, 5.1], B's rest [5.1, 6]; the
  // optimizer's lead waits for B to end (the .item() before the step) [7.5, 7.55].
  // GPU: F [4.5, 5.5]; B waits for F [5.5, 7.5]; the optimizer [7.55, 7.85].
  std::vector<std::pair<std::string, TaskId>> gpu;
  for (TaskId id = 0; id < step.graph.num_tasks(); ++id) {
    if (step.work[id].kind == WorkKind::kPass || step.work[id].kind == WorkKind::kOptimizer) {
      gpu.push_back({std::string(kWorkKindNames.Name(step.work[id].kind)), id});
    }
  }
  ASSERT_EQ(gpu.size(), 3u);
  EXPECT_EQ(t->start[gpu[0].second], UsOf(4500));
  EXPECT_EQ(t->end[gpu[0].second], UsOf(5500));
  EXPECT_EQ(t->start[gpu[1].second], UsOf(5500));
  EXPECT_EQ(t->end[gpu[1].second], UsOf(7500));
  EXPECT_EQ(t->start[gpu[2].second], UsOf(7550));
  EXPECT_EQ(t->makespan, UsOf(7850));
  // The host stream was busy for both passes' host times and the optimizer's lead.
  EXPECT_EQ(t->stream_busy[step.host_stream[0]], UsOf(5000 + 1000 + 50));
  // The GPU waited for the host before F (4.5 ms, in the span) and before the optimizer (0.05 ms,
  // after it); B waited for F, not for its lead.
  const StepUtilization u = MeasureUtilization(step, *t);
  EXPECT_NEAR(u.host_wait_s[0], 4.5e-3, 1e-12);
  EXPECT_NEAR(u.host_wait_after_s[0], 0.05e-3, 1e-12);
  EXPECT_NEAR(u.comm_wait_s[0], 0.0, 1e-12);  // one stage: idle that is not the host's is comm's
}

// A chunk of 1 ms forwards and 2 ms backwards, each issued by the host in 0.1 ms.
ChunkCost ShortlyIssuedPasses() {
  ChunkCost c;
  c.forward.time = SimTime::FromNanos(kMs);
  c.backward_input.time = SimTime::FromNanos(2 * kMs);
  for (PassCost* p : {&c.forward, &c.backward_input}) {
    p->host = UsOf(100);
    p->host_lead = UsOf(100);
  }
  return c;
}

// One rank, two micro-batches (F0 B0 F1 B1) of 1 and 2 ms passes issued in 0.1 ms, with 0.5 ms of
// the training script's host work before each forward (FrameworkProfile::microbatch), worked by
// hand with and without its synchronisation.
TEST(HostTimeline, TheScriptsWorkPerMicroBatchPrecedesEachForwardAndMaySynchronise) {
  const ChunkCost c = ShortlyIssuedPasses();
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 1, 2, 1);
  ASSERT_TRUE(schedule.ok());
  const auto run = [&](std::vector<SimTime> microbatch_lead, bool sync) {
    StepGraphConfig config;
    config.dp.optimizer_time = {SimTime()};
    config.dp.param_gather_time = {SimTime()};
    config.host.enabled = true;
    config.host.optimizer_lead = {SimTime()};
    config.host.microbatch_lead = std::move(microbatch_lead);
    config.host.sync_per_micro_batch = sync;
    const StepGraph step = BuildStepGraph(*schedule, {c}, config);
    Result<StepTimeline> t = Simulate(step.graph);
    EXPECT_TRUE(t.ok()) << t.status().message();
    int batches = 0;
    for (TaskId id = 0; id < step.graph.num_tasks(); ++id) {
      if (step.work[id].kind == WorkKind::kHost && step.work[id].pass == Pass::kF &&
          step.graph.DescribeTask(id).find("micro-batch input") != std::string::npos) {
        ++batches;
      }
    }
    return std::make_tuple(t.ok() ? t->makespan : SimTime(), batches,
                           t.ok() ? MeasureUtilization(step, *t).host_wait_s[0] : 0.0);
  };
  // Nothing per micro-batch: host 0.2 ms ahead; GPU F0 [0.1, 1.1], B0 [1.1, 3.1], F1 [3.1, 4.1],
  // B1 [4.1, 6.1].
  const auto [plain, plain_batches, plain_wait] = run({}, false);
  EXPECT_EQ(plain, UsOf(6100));
  EXPECT_EQ(plain_batches, 0);
  // 0.5 ms per micro-batch, no sync: the host issues [0, 0.5] batch, [0.5, 0.6] F0, [0.6, 0.7] B0,
  // [0.7, 1.2] batch, [1.2, 1.3] F1, [1.3, 1.4] B1, far ahead of the GPU: F0 [0.6, 1.6], B0
  // [1.6, 3.6], F1 [3.6, 4.6], B1 [4.6, 6.6].
  const auto [ahead, ahead_batches, ahead_wait] = run({UsOf(500)}, false);
  EXPECT_EQ(ahead, UsOf(6600));
  EXPECT_EQ(ahead_batches, 2);
  EXPECT_NEAR(ahead_wait, 0.6e-3, 1e-12);
  // With the sync the second batch waits for B0 to end at 3.6: batch [3.6, 4.1], F1's lead
  // [4.1, 4.2], F1 [4.2, 5.2], B1 [5.2, 7.2]; the GPU waited 0.6 ms for the host twice.
  const auto [synced, synced_batches, synced_wait] = run({UsOf(500)}, true);
  EXPECT_EQ(synced, UsOf(7200));
  EXPECT_EQ(synced_batches, 2);
  EXPECT_NEAR(synced_wait, 1.2e-3, 1e-12);
  // A sync with no work of its own still stops the host running ahead: F1's lead [3.1, 3.2].
  const auto [sync_only, sync_only_batches, sync_only_wait] = run({}, true);
  EXPECT_EQ(sync_only, UsOf(6200));
  EXPECT_EQ(sync_only_batches, 2);
  EXPECT_NEAR(sync_only_wait, 0.2e-3, 1e-12);
}

// Two stages, two micro-batches of 1 ms passes issued at 0.1 ms: where the host may run ahead.
struct TwoStages {
  StepGraph step;
  StepTimeline timeline;
};

TwoStages RunTwoStages(bool sync_after_p2p) {
  const ChunkCost c = ShortlyIssuedPasses();
  StepGraphConfig config;
  config.dp.optimizer_time = {SimTime(), SimTime()};
  config.dp.param_gather_time = {SimTime(), SimTime()};
  config.pipeline.p2p_time = UsOf(200);
  config.host.enabled = true;
  config.host.sync_after_p2p = sync_after_p2p;
  config.host.optimizer_lead = {SimTime(), SimTime()};
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 2, 2, 1);
  EXPECT_TRUE(schedule.ok());
  TwoStages run{BuildStepGraph(*schedule, {c, c}, config), {}};
  Result<StepTimeline> t = Simulate(run.step.graph);
  EXPECT_TRUE(t.ok()) << t.status().message();
  run.timeline = *t;
  return run;
}

TEST(HostTimeline, TheHostRunsAheadUntilASyncPointStopsIt) {
  for (bool sync : {false, true}) {
    const TwoStages run = RunTwoStages(sync);
    const TaskGraph& g = run.step.graph;
    // Every host issue that follows a transfer on its rank, and the transfer it follows.
    int checked = 0;
    for (TaskId transfer = 0; transfer < g.num_tasks(); ++transfer) {
      if (run.step.work[transfer].kind != WorkKind::kTransfer) continue;
      for (const Dependency& d : g.dependencies()) {
        if (d.before != transfer || run.step.work[d.after].kind != WorkKind::kPass) continue;
        // The host's lead of the pass the transfer feeds: on the pass's rank, just before it.
        for (const Dependency& h : g.dependencies()) {
          if (h.after != d.after || run.step.work[h.before].kind != WorkKind::kHost) continue;
          ++checked;
          if (sync) {
            EXPECT_GE(run.timeline.start[h.before], run.timeline.end[transfer])
                << g.DescribeTask(h.before);
          }
        }
      }
    }
    EXPECT_GT(checked, 0);
    // Stage 0's host issues its second forward while its first is still on the GPU unless it
    // must wait for the first's send.
    std::vector<TaskId> stage0_forwards, stage0_leads;
    for (TaskId id = 0; id < g.num_tasks(); ++id) {
      if (g.rank_of(id) != 0 || run.step.work[id].pass != Pass::kF) continue;
      if (run.step.work[id].kind == WorkKind::kPass) stage0_forwards.push_back(id);
      if (run.step.work[id].kind == WorkKind::kHost) stage0_leads.push_back(id);
    }
    ASSERT_EQ(stage0_forwards.size(), 2u);
    ASSERT_EQ(stage0_leads.size(), 2u);
    if (sync) {
      EXPECT_GT(run.timeline.start[stage0_leads[1]], run.timeline.end[stage0_forwards[0]]);
    } else {
      EXPECT_LT(run.timeline.start[stage0_leads[1]], run.timeline.end[stage0_forwards[0]]);
    }
  }
}

TEST(HostTimeline, TheTraceHasAHostTrackPerRank) {
  const TwoStages run = RunTwoStages(true);
  const std::string trace = ChromeTraceJson(run.step.graph, run.timeline);
  EXPECT_NE(trace.find("\"name\":\"host\""), std::string::npos);
  ASSERT_EQ(run.step.host_stream.size(), 2u);
  EXPECT_GT(run.timeline.stream_busy[run.step.host_stream[1]], SimTime());
}

// The shipped megatron-core profile on whole steps: a small model at micro-batch 1 waits for the
// host, a large one does not.
TEST(HostTimeline, SmallModelsWaitForTheHostLargeOnesBarelyMove) {
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(Shipped("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  // Without the host: the same framework issuing in no time, so that only the host differs (its
  // tensor-parallel overlap stays).
  FrameworkProfile instant = *megatron;
  instant.forward_us_per_op = instant.backward_us_per_op = 0;
  instant.optimizer_us_per_layer = instant.optimizer_us_fixed = 0;
  instant.sync_after_p2p = instant.sync_before_optimizer = false;
  const auto step_time = [&](const Inputs& in, const Strategy& s, bool host) {
    SimulationOptions options;
    options.framework = host ? *megatron : instant;
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->step_time_s : 0.0;
  };
  const Inputs small = Load("models/gpt3-125m.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s = OneGpu();
  s.global_batch = 8;
  EXPECT_GT(step_time(small, s, true), 2 * step_time(small, s, false));
  SimulationOptions megatron_host;
  megatron_host.framework = *megatron;
  Result<SimulationResult> r = SimulateTrainingStep(small.model, small.cluster, s, megatron_host);
  ASSERT_TRUE(r.ok());
  // The breakdown says where the step went: mostly waiting for the host, not communication.
  EXPECT_GT(r->breakdown.host_s, 0.5 * r->step_time_s);
  EXPECT_LT(r->breakdown.exposed_comm_s, 0.01 * r->step_time_s);
  EXPECT_NEAR(r->breakdown.compute_s + r->breakdown.exposed_comm_s + r->breakdown.bubble_s +
                  r->breakdown.optimizer_s + r->breakdown.host_s,
              r->step_time_s, 0.01 * r->step_time_s);
  const Inputs large = Load("models/llama3-70b.json", "hardware/clusters/dgx-h100.json", 8);
  Strategy l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 1;
  l.sp = true;
  l.micro_batch = 1;
  l.global_batch = 32;
  l.seq_len = 4096;
  l.recompute = Recompute::kSelective;
  const double with_host = step_time(large, l, true), without = step_time(large, l, false);
  EXPECT_GT(with_host, without);
  EXPECT_LT(with_host, 1.03 * without);
}

}  // namespace
}  // namespace loom
