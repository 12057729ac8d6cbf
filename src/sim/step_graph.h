#ifndef LOOM_SIM_STEP_GRAPH_H_
#define LOOM_SIM_STEP_GRAPH_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "schedule/schedule.h"
#include "sim/pass_costs.h"
#include "sim/task_graph.h"

namespace loom {

// What the step graph needs beyond the schedule and the per-chunk pass costs.
struct StepGraphConfig {
  // Data-parallel replicas simulated, each a full pipeline. 1 is the symmetric default: one
  // replica, its gradient collectives timed for the whole group. More simulate every replica, with
  // the collectives as rendezvous among them; both give the same step on symmetric inputs.
  int32_t replicas = 1;
  // One activation (forward) or gradient (backward) transfer between neighbouring stages.
  SimTime p2p_time;
  // Gradient reduction per virtual stage (indexed like the chunk costs): the chunk's gradients go
  // in |buckets| equal buckets, each reduced in |bucket_time| on the data-parallel stream as soon
  // as the last backward of the chunk has produced it (Megatron-LM's overlapped, bucketed
  // gradient reduction). Empty: no gradient reduction.
  std::vector<int32_t> buckets;
  std::vector<SimTime> bucket_time;
  // Per stage: the optimizer step after every gradient of the stage is reduced, then (ZeRO >= 1)
  // the all-gather of the updated weights.
  std::vector<SimTime> optimizer_time;
  std::vector<SimTime> param_gather_time;
};

// The task graph of one step and how to read it.
struct StepGraph {
  TaskGraph graph;
  int32_t stages = 0;
  int32_t replicas = 0;
  // Rank r is stage r % stages of replica r / stages. Streams of rank r: compute, tp, pp, dp.
  std::vector<StreamId> compute_stream;  // indexed by rank
  PoolId model_states = kDefaultPool;  // weights, gradients, optimizer states (a baseline)
  PoolId activations = kDefaultPool;
  PoolId recompute = kDefaultPool;
  // Task categories: kernels of a pass, its tensor-parallel collectives, pipeline transfers,
  // data-parallel collectives, the optimizer step.
  NameId compute_category = kEmptyName, tp_category = kEmptyName, pp_category = kEmptyName,
         dp_category = kEmptyName, optimizer_category = kEmptyName;
};

// Builds the step: every stage runs |schedule|'s order on its compute stream, each pass's
// tensor-parallel collectives after its kernels on the tp stream, with the true dependencies of
// schedule.h; a transfer between stages is a task on the sender's pp stream that
// holds the link to the receiver; activations are allocated when F starts and freed when the
// micro-batch's W (or BW) ends; a recompute buffer lives for each B. The last backward of each
// chunk is cut into its gradient buckets, so that the reduction of a bucket overlaps the rest of
// the backward.
// REQUIRES: chunk_costs.size() == schedule.VirtualStages(); config vectors sized as documented.
StepGraph BuildStepGraph(const PipelineSchedule& schedule, const std::vector<ChunkCost>& chunk_costs,
                         const StepGraphConfig& config);

}  // namespace loom

#endif  // LOOM_SIM_STEP_GRAPH_H_
