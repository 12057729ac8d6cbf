#ifndef LOOM_SIM_TASK_LABEL_H_
#define LOOM_SIM_TASK_LABEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "program/step_graph.h"
#include "schedule/schedule.h"

namespace loom {

// Where a task of a step sits in the pipeline: what it runs, for which micro-batch and on which
// model chunk. The one naming of tasks that the memory breakdown, the trace and the report share.
struct TaskPlace {
  WorkKind kind = WorkKind::kNone;
  Pass pass = Pass::kF;
  int32_t micro_batch = -1;    // -1: not a micro-batch's task (gradient reduction, optimizer, ...)
  int32_t virtual_stage = -1;  // -1: the task's work names no virtual stage
  int32_t chunk = -1;          // the model chunk of its stage that holds |virtual_stage|
};

// Whether tasks of |kind| are part of a pass (its kernels, its tp/cp/ep collectives, its ring
// sends, its issue on the host), rather than something done with the pass's output.
bool IsPassWork(WorkKind kind);

// Per virtual stage: the chunk of its stage that holds it (schedule.Place(v).chunk).
std::vector<int32_t> ChunkOfVirtualStages(const PipelineSchedule& schedule);

// The same read off a step's graph when the schedule is not at hand (a plan file): a stage's
// chunks are the virtual stages its compute stream runs passes of, in model order, which is how
// every schedule of schedule.h places them (interleaved: c * p + s; V-shaped: s, then 2p - 1 - s).
std::vector<int32_t> ChunkOfVirtualStages(const StepGraph& step);

// Per task: its micro-batch. step.micro_batch when the builder recorded it; for a graph read from
// a plan file (which does not carry it), counted: on each stream the tasks of one (name, kind,
// pass, virtual stage, part) come once per micro-batch, in micro-batch order, because every
// schedule runs a chunk's micro-batches of one pass in order. Tasks of work that no micro-batch
// owns (gradient buckets, optimizer, weight gathers) get -1.
std::vector<int32_t> MicroBatchesOf(const StepGraph& step);

// The place of |task|. |chunk_of| is ChunkOfVirtualStages' answer, |micro_batches| MicroBatchesOf's
// (or step.micro_batch); an index outside either gives -1. The zero-length marker that starts a
// pass with hidden tp collectives is placed as that pass ("F mb3 c1", not its graph name "F v5").
// REQUIRES: 0 <= task < step.graph.num_tasks().
TaskPlace PlaceOfTask(const StepGraph& step, const std::vector<int32_t>& chunk_of,
                      const std::vector<int32_t>& micro_batches, TaskId task);

// A short name for a task's slice in a trace or a Gantt chart: "F mb3 c1" (the forward of
// micro-batch 3 on chunk 1; its tp collectives and host issue are named the same, on their own
// streams), "send B mb3 c1" (a pipeline send of that backward's input gradients), "kv ring send
// mb3 c1", "grad reduce c1 2/4" (bucket 2 of 4), "param all-gather 1/4"; any other task keeps its
// graph name, with " mb<m>" when it has a micro-batch.
std::string TaskLabel(const StepGraph& step, const TaskPlace& place, TaskId task);

}  // namespace loom

#endif  // LOOM_SIM_TASK_LABEL_H_
