#ifndef LOOM_SCHEDULE_SCHEDULE_H_
#define LOOM_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"

namespace loom {

// Pipeline schedules as data: for every stage, the order in which its compute stream runs the
// passes of one training step. A schedule fixes only that order. When a pass runs, and so where
// the bubbles fall, comes from executing the order against the true dependencies below with real
// pass durations (the simulator does that); nothing here models time.
//
// Model order. The model is cut into V = stages * chunks consecutive pieces ("virtual stages"),
// and stage s holds |chunks| of them; PipelineSchedule::VirtualStage says which. Micro-batch mb
// flows forward through virtual stages 0, 1, ..., V-1, and backward through V-1, ..., 0.
//
// True dependencies. With v = VirtualStage(stage, chunk), an executor enforces exactly these:
//   F(mb, v)       after F(mb, v-1)                     (v > 0; needs the activations from v-1)
//   B or BW(mb, v) after F(mb, v)                       (its own forward)
//                  and after B or BW(mb, v+1)           (v < V-1; needs the gradient from v+1)
//   W(mb, v)       after B(mb, v), on the same stage    (the weight gradient uses B's outputs)
// A schedule is valid when every stage can run its whole list in order under these dependencies,
// whatever the pass durations: the per-stage orders plus the dependencies form no cycle.
//
// Activation memory. The activations of (mb, chunk) stay on the stage from its F until its W or
// BW finishes, so "F done minus W/BW done" on a stage counts the activation sets it holds.

// The pipeline schedules loom builds: the one enum of the strategy (Strategy::schedule), the
// builders below and the emitters.
enum class ScheduleKind { kGpipe, k1F1B, kInterleaved, kZbH1, kZbV, kDualPipeV };

// The names users type after --schedule and in scenario and plan files.
inline constexpr EnumNames<ScheduleKind, 6> kScheduleNames({{
    {ScheduleKind::kGpipe, "gpipe"},
    {ScheduleKind::k1F1B, "1f1b"},
    {ScheduleKind::kInterleaved, "interleaved"},
    {ScheduleKind::kZbH1, "zb-h1"},
    {ScheduleKind::kZbV, "zb-v"},
    {ScheduleKind::kDualPipeV, "dualpipev"},
}});

// One kind of pass over one model chunk for one micro-batch.
//   kF:  forward.
//   kB:  backward for the inputs only (activation gradient); its W comes later.
//   kW:  backward for the weights only (weight gradient) — the split of Qi et al. 2024,
//        "Zero Bubble Pipeline Parallelism".
//   kBW: the full backward (B and W fused), for schedules and passes that do not split W.
enum class Pass : uint8_t { kF, kB, kW, kBW };

inline constexpr EnumNames<Pass, 4> kPassNames({{
    {Pass::kF, "F"},
    {Pass::kB, "B"},
    {Pass::kW, "W"},
    {Pass::kBW, "BW"},
}});

struct PipelineItem {
  Pass pass = Pass::kF;
  int32_t micro_batch = 0;  // 0 .. micro_batches-1
  int32_t chunk = 0;        // index of the model chunk on this stage, 0 .. chunks-1
  // True on a forward that runs overlapped with the next item of its stage, a backward of the
  // other chunk: DualPipe's forward+backward pairs, whose communication hides behind each other's
  // computation (DeepSeek-V3 report, §3.2.1). An executor that does not model the overlap may
  // run the pair one after the other; the order stays valid either way.
  bool overlaps_next = false;

  friend bool operator==(const PipelineItem&, const PipelineItem&) = default;
};

// Where a virtual stage lives.
struct StageChunk {
  int32_t stage = 0;
  int32_t chunk = 0;

  friend bool operator==(const StageChunk&, const StageChunk&) = default;
};

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int32_t stages = 1;
  int32_t chunks = 1;
  int32_t micro_batches = 1;
  // order[stage]: what that stage's compute stream runs, in order. Every stage lists F once for
  // each (micro-batch, chunk) it holds, and either BW once or B and W once each.
  std::vector<std::vector<PipelineItem>> order;

  // Returns the number of model pieces, stages * chunks.
  int32_t VirtualStages() const { return stages * chunks; }

  // Returns the position in model order (0 .. VirtualStages()-1) of |chunk| held by |stage|.
  //   Interleaved: chunk * stages + stage (Narayanan et al. 2021, §2.2.2).
  //   V-shaped (zb-v, dualpipev): chunk 0 -> stage, chunk 1 -> 2 * stages - 1 - stage, so the
  //     last stage holds the two middle pieces and the first stage the first and the last.
  //   Others: stage.
  // REQUIRES: 0 <= stage < stages, 0 <= chunk < chunks.
  int32_t VirtualStage(int32_t stage, int32_t chunk) const;

  // Returns the stage and chunk that hold |virtual_stage|; the inverse of VirtualStage.
  // REQUIRES: 0 <= virtual_stage < VirtualStages().
  StageChunk Place(int32_t virtual_stage) const;
};

// Whether |schedule| places its two chunks of a stage in a V (zb-v, dualpipev).
bool IsVShapedSchedule(ScheduleKind schedule);

// The virtual stage (the position of a model chunk along the model: LayersPerVirtualStage's and
// --pipeline-layout's order) that chunk |chunk| of pipeline stage |stage| holds with |pp| stages:
// chunk * pp + stage, except on the V-shaped schedules, whose first chunks go down the stages and
// whose second chunks come back up (ZB-V: sail-sg/zero-bubble-pipeline-parallelism 425b42e5,
// megatron/model/transformer.py get_offset, chunk_index = 2 * pp - stage - 1; DualPipeV likewise):
// stage 0 holds the first and the last virtual stage. PipelineSchedule::VirtualStage for a built
// schedule. REQUIRES: 0 <= stage < pp, 0 <= chunk (< 2 for a V).
int64_t VirtualStageOf(int64_t pp, ScheduleKind schedule, int64_t stage, int64_t chunk);

// The pipeline stage that runs virtual stage |v| (VirtualStageOf's stage). REQUIRES: 0 <= v.
int64_t StageOfVirtualStage(int64_t pp, ScheduleKind schedule, int64_t v);

// The pass times a schedule that is built from them takes (ZB-V), in any one unit (ns, say): one
// chunk's forward, input-backward and weight-backward, and a pipeline transfer between stages.
struct PassTimes {
  int64_t f = 1, b = 1, w = 1, comm = 0;
};

// Returns the schedule |kind| for |stages| pipeline stages (--pp), |micro_batches| micro-batches
// per step and |chunks| model chunks per stage (--vpp). Returns InvalidArgument, with a message
// that names the flag and the fix, when the combination is not one the schedule defines:
//   stages < 1 or micro_batches < 1;
//   gpipe, 1f1b, zb-h1: chunks != 1;
//   interleaved: chunks < 2, or micro-batches that Megatron-LM cannot group: |group| (its
//     microbatch_group_size_per_vp_stage; 0 means stages) outside [stages, micro_batches], or a
//     last, partial group of fewer than |stages| micro-batches;
//   any kind but interleaved: a |group| other than 0 or stages;
//   zb-v, dualpipev: chunks != 2;
//   dualpipev: micro_batches < 2 * stages (the rule of the reference implementation,
//     deepseek-ai/DualPipe, dualpipev.py);
//   any kind: more than 2^26 passes in the step (a guard against typos such as --pp 100000).
// The passes listed: F and BW for gpipe, 1f1b and interleaved; F, B and W for zb-h1
// and zb-v; for dualpipev, BW in its overlapped pairs and B with W elsewhere. The same arguments
// always give the same schedule. |times| matter to zb-v alone, which the zero-bubble repository
// builds from the profiled times of its passes (ZbVOrder); the others are fixed orders.
Result<PipelineSchedule> BuildSchedule(ScheduleKind kind, int32_t stages, int32_t micro_batches,
                                       int32_t chunks, int32_t group = 0,
                                       const PassTimes& times = {});

}  // namespace loom

#endif  // LOOM_SCHEDULE_SCHEDULE_H_
