#ifndef LOOM_SIM_MEMORY_TRACKER_H_
#define LOOM_SIM_MEMORY_TRACKER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "program/memory_baseline.h"
#include "program/task_graph.h"
#include "sim/engine.h"

namespace loom {

struct MemorySample {
  SimTime time;
  int64_t bytes;
};

struct RankMemory {
  int64_t peak_bytes = 0;
  SimTime peak_time;  // the first time the peak was reached
  // The task whose memory change reached the peak (-1: the baseline alone is the peak).
  TaskId peak_task = -1;
  // Indexed by PoolId: what was live at the peak.
  std::vector<int64_t> peak_bytes_by_pool;
  // Indexed by PoolId: the allocations not yet freed at the peak (each allocation counts one,
  // each free takes one away; baselines count none). The live buffers when every buffer is freed
  // in one piece, as the step graph frees them.
  std::vector<int32_t> peak_buffers_by_pool;
  // Bytes after all changes at each time where the total changed, time ascending, starting at
  // time zero (the baseline plus what tasks allocate at time zero). A step function, for plots.
  std::vector<MemorySample> timeline;
  // Bytes still live after the last task: the baseline, plus whatever the step never freed.
  int64_t end_bytes = 0;
};

struct MemoryReport {
  std::vector<RankMemory> ranks;  // indexed by rank
};

// Replays every task's memory changes (Task::alloc_at_start_bytes, Task::free_at_end_bytes and
// TaskGraph::AddMemoryEvent()) on its rank at the times |timeline| gives, on top of |baselines|.
//
// Changes at the same time are applied in causal order: first those at the end of tasks that
// finish then, then those at the start of tasks that start then, then those at the end of
// zero-length tasks. So frees come before allocations, as with the CUDA caching allocator: a
// kernel's blocks return to the pool when it ends and the next kernel allocates from them when it
// starts. Within each class, tasks go in the order the engine started them. peak_bytes counts the
// highest total at any instant, also inside one time.
//
// Returns an InvalidArgument error naming the task, rank and pool if a pool would drop below zero
// (a free without a matching allocation), or if a baseline names an unknown rank or pool or a
// negative size.
// REQUIRES: |timeline| came from Simulate(|graph|).
Result<MemoryReport> TrackMemory(const TaskGraph& graph, const StepTimeline& timeline,
                                 std::span<const MemoryBaseline> baselines);

}  // namespace loom

#endif  // LOOM_SIM_MEMORY_TRACKER_H_
