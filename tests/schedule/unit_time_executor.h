#ifndef LOOM_TESTS_SCHEDULE_UNIT_TIME_EXECUTOR_H_
#define LOOM_TESTS_SCHEDULE_UNIT_TIME_EXECUTOR_H_

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

// A small executor for schedules, independent of the simulator, used as the oracle that the
// schedules (and later the simulator) are checked against. No communication time, no overlap.
namespace loom::schedule_oracle {

// Integer durations of one pass over one model chunk. BW takes backward + weight.
struct PassTimes {
  int64_t forward = 1;
  int64_t backward = 1;  // B: the input-gradient part
  int64_t weight = 1;    // W: the weight-gradient part
};

struct Execution {
  // False when some stage could not run its whole list: the orders and the true dependencies
  // form a cycle (a deadlock).
  bool completed = false;
  int64_t makespan = 0;                   // end of the last pass on any stage
  std::vector<int64_t> busy;              // per stage: total duration of its passes
  std::vector<int32_t> peak_activations;  // per stage: max over time of F done - (W or BW) done

  // Returns the time |stage| spends idle within the makespan.
  int64_t Idle(int32_t stage) const { return makespan - busy[stage]; }

  // Returns 1 - sum(busy) / (stages * makespan): the share of stage time spent idle.
  double BubbleFraction() const;
};

// Runs every stage's list in order: a pass starts when its stage is free and its true
// dependencies (schedule.h) have ended, and takes its duration from |times|.
// REQUIRES: every item's micro_batch and chunk are in range for |schedule|.
Execution Execute(const PipelineSchedule& schedule, const PassTimes& times);

}  // namespace loom::schedule_oracle

#endif  // LOOM_TESTS_SCHEDULE_UNIT_TIME_EXECUTOR_H_
