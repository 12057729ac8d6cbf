#include "schedule/schedule.h"

#include <cassert>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "core/formatted.h"
#include "schedule/builders.h"

namespace loom {
namespace {

// The most passes one schedule may list: far above any real step (pp 128 with 8 chunks and 4096
// micro-batches is 12.6M), and it keeps the lists in memory and every index inside int32_t.
constexpr int64_t kMaxPasses = int64_t{1} << 26;

// How the number of micro-batches is set on the command line, for the fixes in messages.
constexpr const char* kMicroBatchSource = "--global-batch / (--micro-batch * --dp)";

Status CheckChunks(ScheduleKind kind, int32_t chunks) {
  const std::string_view name = kScheduleNames.Name(kind);
  if (kind == ScheduleKind::kInterleaved) {
    if (chunks >= 2) return Status::Ok();
    return Status::InvalidArgument(
        StrCat("--vpp ", chunks,
               " with --schedule interleaved: the interleaved schedule runs at "
               "least 2 model chunks per stage; use --vpp 2 or more, or --schedule 1f1b"));
  }
  if (IsVShapedSchedule(kind)) {
    if (chunks == 2) return Status::Ok();
    return Status::InvalidArgument(
        StrCat("--vpp ", chunks, " with --schedule ", name,
               ": a V-shaped schedule places exactly 2 model chunks on each stage; use --vpp 2"));
  }
  if (chunks == 1) return Status::Ok();
  return Status::InvalidArgument(
      StrCat("--vpp ", chunks, " with --schedule ", name,
             ": this schedule runs exactly 1 model chunk per stage; use --vpp 1, or --schedule "
             "interleaved, zb-v or dualpipev for several chunks"));
}

// Megatron-LM's interleaved schedule walks the micro-batches in groups of pp
// (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving).
// Megatron-LM's interleaved schedule runs micro-batches in groups
// (microbatch_group_size_per_vp_stage, pp by default): pp <= group <= micro-batches, and the last
// group whole or of at least pp (forward_backward_pipelining_with_interleaving,
// megatron/core/pipeline_parallel/schedules.py at NVIDIA/Megatron-LM d98e8a64, the same since
// core_r0.12.0).
Status CheckInterleavedMicroBatches(int32_t stages, int32_t micro_batches, int32_t group) {
  const int32_t rest = group > 0 ? micro_batches % group : 0;
  if (group >= stages && group <= micro_batches && (rest == 0 || rest >= stages))
    return Status::Ok();
  return Status::InvalidArgument(
      StrCat("--schedule interleaved with --pp ", stages, ": ", micro_batches,
             " micro-batches in groups of ", group,
             "; Megatron-LM's interleaved schedule needs groups of pp to "
             "all the micro-batches, the last whole "
             "or of at least pp (--microbatch-group; ",
             kMicroBatchSource, ")"));
}

// DualPipeV's reference implementation (deepseek-ai/DualPipe, dualpipev.py) accepts only
// micro_batches >= 2 * pp: each arm of the V must be full before the steady state starts.
Status CheckDualPipeVMicroBatches(int32_t stages, int32_t micro_batches) {
  if (micro_batches >= 2 * int64_t{stages}) return Status::Ok();
  std::string fix =
      StrCat("use at least ", 2 * int64_t{stages}, " micro-batches (", kMicroBatchSource, ")");
  if (micro_batches >= 2) fix += StrCat(", or --pp ", micro_batches / 2, " or less");
  return Status::InvalidArgument(
      StrCat("--schedule dualpipev with --pp ", stages, ": ", micro_batches,
             " micro-batches, fewer than the 2 * pp = ", 2 * int64_t{stages},
             " that DualPipeV needs to fill both arms of its V; ", fix));
}

Status CheckArguments(ScheduleKind kind, int32_t stages, int32_t micro_batches, int32_t chunks,
                      int32_t group) {
  const std::string_view name = kScheduleNames.Name(kind);
  if (stages < 1) {
    return Status::InvalidArgument(StrCat("--pp ", stages, " with --schedule ", name,
                                          ": a pipeline has at least 1 stage; use --pp 1 or more"));
  }
  if (micro_batches < 1) {
    return Status::InvalidArgument(
        StrCat("--schedule ", name, ": the number of micro-batches (", micro_batches,
               ") is less than 1; use 1 or more micro-batches (", kMicroBatchSource, ")"));
  }
  LOOM_RETURN_IF_ERROR(CheckChunks(kind, chunks));
  const int64_t passes = int64_t{3} * stages * chunks * micro_batches;
  if (passes > kMaxPasses) {
    return Status::InvalidArgument(StrCat(
        "--schedule ", name, " with --pp ", stages, " --vpp ", chunks, " and ", micro_batches,
        " micro-batches: the step has up to ", passes, " passes, more than loom schedules (",
        kMaxPasses, "); use fewer micro-batches or a smaller --pp"));
  }
  if (kind == ScheduleKind::kInterleaved) {
    return CheckInterleavedMicroBatches(stages, micro_batches, group);
  }
  if (kind == ScheduleKind::kDualPipeV) return CheckDualPipeVMicroBatches(stages, micro_batches);
  return Status::Ok();
}

schedule_internal::StageOrders Orders(ScheduleKind kind, int32_t stages, int32_t micro_batches,
                                      int32_t chunks, int32_t group, const PassTimes& times) {
  using namespace schedule_internal;
  switch (kind) {
    case ScheduleKind::kGpipe:
      return GpipeOrder(stages, micro_batches);
    case ScheduleKind::k1F1B:
      return OneFOneBOrder(stages, micro_batches);
    case ScheduleKind::kInterleaved:
      return InterleavedOrder(stages, micro_batches, chunks, group);
    case ScheduleKind::kZbH1:
      return ZbH1Order(stages, micro_batches);
    case ScheduleKind::kZbV:
      return ZbVOrder(stages, micro_batches, times);
    case ScheduleKind::kDualPipeV:
      return DualPipeVOrder(stages, micro_batches);
  }
  return {};
}

}  // namespace

bool IsVShapedSchedule(ScheduleKind schedule) {
  return schedule == ScheduleKind::kZbV || schedule == ScheduleKind::kDualPipeV;
}

int64_t VirtualStageOf(int64_t pp, ScheduleKind schedule, int64_t stage, int64_t chunk) {
  if (IsVShapedSchedule(schedule) && chunk == 1) return 2 * pp - 1 - stage;
  return chunk * pp + stage;
}

int64_t StageOfVirtualStage(int64_t pp, ScheduleKind schedule, int64_t v) {
  if (IsVShapedSchedule(schedule) && v >= pp) return 2 * pp - 1 - v;
  return v % pp;
}

int32_t PipelineSchedule::VirtualStage(int32_t stage, int32_t chunk) const {
  assert(stage >= 0 && stage < stages && chunk >= 0 && chunk < chunks);
  return static_cast<int32_t>(VirtualStageOf(stages, kind, stage, chunk));
}

StageChunk PipelineSchedule::Place(int32_t virtual_stage) const {
  assert(virtual_stage >= 0 && virtual_stage < VirtualStages());
  const int32_t stage = static_cast<int32_t>(StageOfVirtualStage(stages, kind, virtual_stage));
  const int32_t chunk = IsVShapedSchedule(kind) ? (virtual_stage >= stages ? 1 : 0)
                                                : virtual_stage / stages;
  return {stage, chunk};
}

Result<PipelineSchedule> BuildSchedule(ScheduleKind kind, int32_t stages, int32_t micro_batches,
                                       int32_t chunks, int32_t group, const PassTimes& times) {
  if (group == 0) group = stages;
  if (kind != ScheduleKind::kInterleaved && group != stages) {
    return Status::InvalidArgument(
        StrCat("--microbatch-group ", group,
               ": micro-batch groups belong to the interleaved schedule; drop it"));
  }
  LOOM_RETURN_IF_ERROR(CheckArguments(kind, stages, micro_batches, chunks, group));
  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.stages = stages;
  schedule.chunks = chunks;
  schedule.micro_batches = micro_batches;
  schedule.order = Orders(kind, stages, micro_batches, chunks, group, times);
  return schedule;
}

}  // namespace loom
