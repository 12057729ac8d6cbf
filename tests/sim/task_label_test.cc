#include "sim/task_label.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/sim_test_support.h"
#include "sim/simulator.h"

namespace loom {
namespace {

// Llama 3 8B on one DGX H100: tp 2, pp 4, eight micro-batches of one sequence.
Strategy Pipeline(ScheduleKind schedule) {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.sp = true;
  s.schedule = schedule;
  s.vpp = schedule == ScheduleKind::kInterleaved || schedule == ScheduleKind::kZbV ? 2 : 1;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return s;
}

struct Simulated {
  PreparedStep prepared;
  SimulationResult result;
};

Simulated MustSimulate(const Strategy& s) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Result<PreparedStep> prepared = PrepareTrainingStep(in.model, in.cluster, s);
  EXPECT_TRUE(prepared.ok()) << prepared.status().message();
  if (!prepared.ok()) return {};
  Result<SimulationResult> r = SimulatePreparedStep(in.model, in.cluster, *prepared);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return {*std::move(prepared), *std::move(r)};
}

// The first task of |kind| and |pass| on virtual stage |v| for micro-batch |mb|.
TaskId Find(const StepGraph& step, WorkKind kind, Pass pass, int32_t v, int32_t mb) {
  for (TaskId t = 0; t < step.graph.num_tasks(); ++t) {
    const TaskWork& w = step.work[t];
    if (w.kind == kind && w.pass == pass && w.index == v && step.micro_batch[t] == mb) return t;
  }
  return -1;
}

TEST(TaskLabel, NamesThePassMicroBatchAndChunk) {
  const Simulated sim = MustSimulate(Pipeline(ScheduleKind::kInterleaved));
  const StepGraph& step = sim.result.step;
  const std::vector<int32_t> chunk_of = ChunkOfVirtualStages(sim.prepared.schedule);
  EXPECT_EQ(chunk_of, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  const TaskId forward = Find(step, WorkKind::kPass, Pass::kF, 5, 3);
  ASSERT_GE(forward, 0);
  const TaskPlace place = PlaceOfTask(step, chunk_of, step.micro_batch, forward);
  EXPECT_EQ(place.micro_batch, 3);
  EXPECT_EQ(place.virtual_stage, 5);
  EXPECT_EQ(place.chunk, 1);
  EXPECT_EQ(TaskLabel(step, place, forward), "F mb3 c1");
  const TaskId send = Find(step, WorkKind::kTransfer, Pass::kBW, 6, 2);
  ASSERT_GE(send, 0);
  EXPECT_EQ(TaskLabel(step, PlaceOfTask(step, chunk_of, step.micro_batch, send), send),
            "send BW mb2 c1");
}

TEST(TaskLabel, GradientBucketsAndOptimizerHaveNoMicroBatch) {
  const Simulated sim = MustSimulate(Pipeline(ScheduleKind::k1F1B));
  const StepGraph& step = sim.result.step;
  const std::vector<int32_t> chunk_of = ChunkOfVirtualStages(sim.prepared.schedule);
  int32_t buckets = 0;
  for (TaskId t = 0; t < step.graph.num_tasks(); ++t) {
    const TaskPlace place = PlaceOfTask(step, chunk_of, step.micro_batch, t);
    if (place.kind == WorkKind::kGradReduce) {
      ++buckets;
      EXPECT_EQ(place.micro_batch, -1);
      EXPECT_EQ(place.chunk, 0);
      EXPECT_EQ(TaskLabel(step, place, t).substr(0, 15), "grad reduce c0 ")
          << TaskLabel(step, place, t);
    }
    if (place.kind == WorkKind::kOptimizer) {
      EXPECT_EQ(TaskLabel(step, place, t), "optimizer");
    }
  }
  EXPECT_GT(buckets, 4);
}

// With --tp-comm-overlap each pass starts at a zero-length marker that has no work of its own
// ("F v5" in the graph): it is named and placed as the pass it starts, read off a plan file too.
TEST(TaskLabel, PassMarkersAreNamedAsThePassTheyStart) {
  Strategy s = Pipeline(ScheduleKind::kInterleaved);
  s.tp_comm_overlap = true;
  const Simulated sim = MustSimulate(s);
  StepGraph step = sim.result.step;
  const std::vector<int32_t> chunk_of = ChunkOfVirtualStages(sim.prepared.schedule);
  const std::vector<int32_t> recorded = step.micro_batch;
  step.micro_batch.clear();
  const std::vector<int32_t> counted = MicroBatchesOf(step);
  int32_t markers = 0;
  for (TaskId t = 0; t < step.graph.num_tasks(); ++t) {
    if (step.work[t].kind != WorkKind::kNone) continue;
    ++markers;
    TaskId pass = t + 1;
    while (step.graph.task(pass).stream != step.graph.task(t).stream) ++pass;
    ASSERT_EQ(step.work[pass].kind, WorkKind::kPass);
    for (const std::vector<int32_t>* micro_batches : {&recorded, &counted}) {
      const TaskPlace place = PlaceOfTask(step, chunk_of, *micro_batches, t);
      EXPECT_EQ(place.kind, WorkKind::kPass);
      EXPECT_EQ(place.micro_batch, recorded[pass]);
      EXPECT_EQ(place.virtual_stage, step.work[pass].index);
      EXPECT_EQ(TaskLabel(step, place, t), std::string(kPassNames.Name(step.work[pass].pass)) +
                                               " mb" + std::to_string(recorded[pass]) + " c" +
                                               std::to_string(chunk_of[step.work[pass].index]));
    }
  }
  EXPECT_GE(markers,
            8 * 4 * 2 * 2);  // at least every F and BW of 8 micro-batches on 8 virtual stages
}

// A plan file carries neither the schedule nor the micro-batches: both read off the graph agree
// with what the builder recorded, for every schedule.
TEST(TaskLabel, ChunksAndMicroBatchesReadOffTheGraphMatchTheBuilders) {
  for (ScheduleKind kind :
       {ScheduleKind::k1F1B, ScheduleKind::kInterleaved, ScheduleKind::kZbV, ScheduleKind::kZbH1}) {
    SCOPED_TRACE(std::string(kScheduleNames.Name(kind)));
    const Simulated sim = MustSimulate(Pipeline(kind));
    StepGraph step = sim.result.step;
    EXPECT_EQ(ChunkOfVirtualStages(step), ChunkOfVirtualStages(sim.prepared.schedule));
    const std::vector<int32_t> recorded = step.micro_batch;
    step.micro_batch.clear();
    const std::vector<int32_t> counted = MicroBatchesOf(step);
    ASSERT_EQ(counted.size(), recorded.size());
    int32_t known = 0;
    for (TaskId t = 0; t < step.graph.num_tasks(); ++t) {
      if (counted[t] < 0) continue;
      ++known;
      EXPECT_EQ(counted[t], recorded[t]) << step.graph.DescribeTask(t);
    }
    // Every pass's kernels and sends are counted.
    for (TaskId t = 0; t < step.graph.num_tasks(); ++t) {
      const WorkKind k = step.work[t].kind;
      if (k == WorkKind::kPass || k == WorkKind::kTransfer) {
        EXPECT_GE(counted[t], 0) << step.graph.DescribeTask(t);
      }
    }
    EXPECT_GT(known, 8 * 4 * 2);
  }
}

}  // namespace
}  // namespace loom
