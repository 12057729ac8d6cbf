#ifndef LOOM_SCHEDULE_BUILDERS_H_
#define LOOM_SCHEDULE_BUILDERS_H_

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

// The per-schedule constructions behind BuildSchedule. Each returns order[stage] for the layout
// that PipelineSchedule::VirtualStage describes for its kind.
// REQUIRES (all): the arguments passed BuildSchedule's checks for that kind.
namespace loom::schedule_internal {

using StageOrders = std::vector<std::vector<PipelineItem>>;

StageOrders GpipeOrder(int32_t stages, int32_t micro_batches);
StageOrders OneFOneBOrder(int32_t stages, int32_t micro_batches);
StageOrders ZbH1Order(int32_t stages, int32_t micro_batches);
StageOrders InterleavedOrder(int32_t stages, int32_t micro_batches, int32_t chunks, int32_t group);
// REQUIRES: every time of |times| >= 1 but comm >= 0.
StageOrders ZbVOrder(int32_t stages, int32_t micro_batches, const PassTimes& times);
StageOrders DualPipeVOrder(int32_t stages, int32_t micro_batches);

}  // namespace loom::schedule_internal

#endif  // LOOM_SCHEDULE_BUILDERS_H_
