#ifndef LOOM_PROGRAM_PLAN_WORKLOAD_H_
#define LOOM_PROGRAM_PLAN_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/sim_time.h"
#include "core/status.h"
#include "op/op.h"
#include "program/step_graph.h"
#include "workload/chunk_blocks.h"

namespace loom {

// What the communication and optimizer tasks of a step move or touch, beside the times the step
// graph predicts for them: what an executor of real kernels runs for them (src/exec). Collective
// sizes follow nccl-tests' size column, as CollectiveShape::bytes does.
struct StepPayloads {
  int64_t p2p_bytes = 0;  // one activation (or gradient) send between neighbouring stages
  // Gradient buckets: all-reduced, or reduce-scattered under ZeRO >= 1.
  CollectiveKind grad_reduce = CollectiveKind::kAllReduce;
  // Per virtual stage: one bucket's dense gradients (over the dp * cp ranks) and routed experts'
  // gradients (over the expert-data-parallel ranks).
  std::vector<int64_t> bucket_bytes, expert_bucket_bytes;
  std::vector<MemoryShape> optimizer;  // per stage: the HBM traffic of the optimizer step
  // Per stage: the all-gather of the updated weights (ZeRO 1 and 2), dense and expert.
  std::vector<int64_t> param_gather_bytes, expert_param_gather_bytes;
};

// The predicted time of each op of a block, list by list (parallel to LayerOps' lists).
struct BlockTimes {
  std::vector<SimTime> forward, backward_input, backward_weight, recompute;
};

// What the tasks of a plan run, for an executor of real kernels (`loom validate --backend cuda`):
// the ops of every virtual stage's passes, each with its predicted time, and the bytes of the
// communication and optimizer tasks. A task's TaskWork (StepGraph::work) says which of these it is.
struct PlanWorkload {
  ChunkBlocks chunks;                 // the blocks and which virtual stage runs which
  std::vector<BlockTimes> predicted;  // parallel to chunks.blocks
  StepPayloads payloads;
};

// The ops one pass task runs, in order, with their predicted times: part |work.part| of
// |work.parts| of the pass. Forward runs the virtual stage's blocks in model order; B runs each
// block's recompute replay, then its input gradients, in reverse order; W the weight gradients in
// reverse order; BW is B then W. A part takes the ops from op ceil(i * n / parts) up to the next
// part's first, so every op runs in exactly one part.
struct PassOps {
  std::vector<const Op*> ops;
  std::vector<SimTime> predicted;
};
// REQUIRES: work.kind == WorkKind::kPass and work.index a virtual stage of |workload|.
PassOps OpsOfPass(const PlanWorkload& workload, const TaskWork& work);

// The whole pass (part 0 of 1, kind kPass) that |work| - a pass part, its collectives, a ring send
// - belongs to, for OpsOfPass.
TaskWork WholePass(TaskWork work);

// The "workload" object of a plan file:
//   {"blocks": [{"forward": [op], "backward_input": [op], "backward_weight": [op], "recompute":
//   [op]}],
//    "chunks": [[[block, count], ...] per virtual stage], "layers": [per virtual stage],
//    "payloads": {"p2p_bytes", "grad_reduce", "bucket_bytes", "expert_bucket_bytes", "optimizer":
//                 [{"bytes_read", "bytes_written"}], "param_gather_bytes",
//                 "expert_param_gather_bytes"}}
// where an op is {"name": "qkv_proj", "kind": "gemm", "shape": {...}, "saved_bytes",
// "predicted_ns"} and its shape holds the fields of GemmShape, AttentionShape, MemoryShape or
// CollectiveShape.
nlohmann::ordered_json WorkloadJson(const PlanWorkload& workload);

// Reads it back. Errors name |file|, the key ("workload.blocks[2].forward[7].shape.m") and say to
// write the plan again; unknown keys are errors.
Result<PlanWorkload> ParseWorkload(const nlohmann::json& json, const std::string& file);

// Checks that |work| (one per task of |step|) fits |workload|: every pass names a virtual stage it
// has, every part is below its parts. InvalidArgument naming |file| and the task.
Status CheckWorkFits(const StepGraph& step, const PlanWorkload& workload, const std::string& file);

}  // namespace loom

#endif  // LOOM_PROGRAM_PLAN_WORKLOAD_H_
