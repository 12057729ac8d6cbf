#ifndef LOOM_PROGRAM_STEP_TIMELINE_H_
#define LOOM_PROGRAM_STEP_TIMELINE_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "program/task_graph.h"

namespace loom {

// When each task of one step ran: as the engine computes it (Simulate, sim/engine.h), or as an
// executor measured it (MeasuredTimeline, exec/executor.h).
struct StepTimeline {
  // Indexed by TaskId.
  std::vector<SimTime> start;
  std::vector<SimTime> end;
  // Position of each task in the order the engine started them (0 first); orders tasks that
  // start at the same time, e.g. two zero-length transfers handed the same link in turn.
  std::vector<int32_t> start_sequence;
  // Indexed by StreamId: total time the stream ran a task (time spent waiting is not busy).
  std::vector<SimTime> stream_busy;
  // Indexed by ChannelId: time with at least one task on the channel, and time with two or more
  // (each at half its bandwidth or less). A task on a route took end - start instead of its
  // duration when it shared a channel.
  std::vector<SimTime> channel_busy;
  std::vector<SimTime> channel_shared;
  // Indexed by rank: the time its SM-yielding tasks (compute) took beyond their time alone while
  // transfers held some of its SMs (TaskGraph::SetSmUse); zeros when no task holds SMs.
  std::vector<SimTime> sm_lost;
  // End of the last task; zero for an empty graph.
  SimTime makespan;
};

// The position of each task in the order tasks started (StepTimeline::start_sequence): by |start|,
// ties to the lower task id.
std::vector<int32_t> StartSequence(const std::vector<SimTime>& start);

}  // namespace loom

#endif  // LOOM_PROGRAM_STEP_TIMELINE_H_
