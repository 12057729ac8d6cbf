#ifndef LOOM_SIM_MEMORY_BREAKDOWN_H_
#define LOOM_SIM_MEMORY_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/sim_time.h"
#include "program/step_graph.h"
#include "schedule/schedule.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"

namespace loom {

// What holds a rank's memory: the pools of the step graph (program/step_graph.h) by what they hold.
enum class MemoryItem : uint8_t {
  kWeights,               // the weights the kernels read (ZeRO-3: this rank's shard)
  kGradients,             // gradient buffers (fp32 main_grad by default; ZeRO-2/3: a shard)
  kOptimizerStates,       // fp32 master weights and optimizer moments (ZeRO >= 1: a shard;
                          // none with optimizer offload)
  kStashedActivations,    // what each forward keeps until its backward, the logits excepted
  kRecomputeBuffers,      // a backward's replay of its layer's forward (recompute)
  kLogits,                // what the loss keeps for its backward: the fp32 softmax of the
                          // logits and the targets (the last virtual stage only)
  kCommunicationBuffers,  // ZeRO-3's gathered weights of the layers in flight
  kModelStates,           // weights, gradients and optimizer states as one pool (plan files
                          // written before they were split)
  kOther,                 // any other pool of the graph
};

inline constexpr EnumNames<MemoryItem, 9> kMemoryItemNames({{
    {MemoryItem::kWeights, "weights"},
    {MemoryItem::kGradients, "gradients"},
    {MemoryItem::kOptimizerStates, "optimizer_states"},
    {MemoryItem::kStashedActivations, "stashed_activations"},
    {MemoryItem::kRecomputeBuffers, "recompute_buffers"},
    {MemoryItem::kLogits, "logits"},
    {MemoryItem::kCommunicationBuffers, "communication_buffers"},
    {MemoryItem::kModelStates, "model_states"},
    {MemoryItem::kOther, "other"},
}});

struct MemoryItemBytes {
  MemoryItem item = MemoryItem::kOther;
  int64_t bytes = 0;
};

// The task whose memory change set a rank's peak (the one running when the peak is reached).
struct PeakTask {
  TaskId task = -1;
  std::string name;    // the task's name in the graph: "F v3" is the forward of virtual stage 3
  std::string stream;  // the stream it runs on: "compute", "tp", "param gather", ...
  WorkKind kind = WorkKind::kNone;
  Pass pass = Pass::kF;        // for kind kPass
  int32_t virtual_stage = -1;  // -1: not a pass's task
  int32_t chunk = -1;          // the model chunk of the stage that holds |virtual_stage|
  int32_t micro_batch = -1;    // -1: not a pass's task, or not known (StepGraph::micro_batch)
  SimTime start, end;
};

// What one rank holds at its peak, item by item.
struct MemoryBreakdown {
  int32_t stage = 0;
  int32_t rank = 0;
  int64_t peak_bytes = 0;  // the sum of |items|, exactly
  SimTime peak_time;       // the first instant the peak was reached
  // Every item the step's graph holds memory in (one per pool kind it has, zeros included), in
  // MemoryItem order.
  std::vector<MemoryItemBytes> items;
  // The forward passes (micro-batch, chunk) whose activations are held at the peak; with one
  // chunk per stage, the micro-batches stashed (1F1B: stage s of p stashes p - s).
  int32_t stashed_micro_batches = 0;
  PeakTask peak_task;

  // The bytes of |item| (0 if the step holds none).
  int64_t Bytes(MemoryItem item) const;
};

// The breakdown of each stage's peak (ranks 0 .. step.stages - 1: the first replica), indexed by
// stage. The items are the pools of |memory|'s peaks (TrackMemory), so they sum to each rank's
// peak exactly. |schedule| places each virtual stage on its stage and chunk.
// REQUIRES: |memory| and |timeline| came from |step|'s graph, whose passes |schedule| ordered.
std::vector<MemoryBreakdown> BreakDownMemory(const StepGraph& step, const StepTimeline& timeline,
                                             const MemoryReport& memory,
                                             const PipelineSchedule& schedule);

// "F of micro-batch 5, chunk 1 (virtual stage 17)" or "param all-gather (param gather stream)":
// the peak task as a reader names it.
std::string DescribePeakTask(const PeakTask& task);

// The index of the breakdown with the highest peak (the first of equal ones); 0 when empty.
int32_t PeakStage(const std::vector<MemoryBreakdown>& stages);

}  // namespace loom

#endif  // LOOM_SIM_MEMORY_BREAKDOWN_H_
