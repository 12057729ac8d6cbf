#ifndef LOOM_SIM_ENGINE_H_
#define LOOM_SIM_ENGINE_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "sim/task_graph.h"

namespace loom {

// When each task of one step ran, as computed by Simulate().
struct StepTimeline {
  // Indexed by TaskId.
  std::vector<SimTime> start;
  std::vector<SimTime> end;
  // Position of each task in the order the engine started them (0 first); orders tasks that
  // start at the same time, e.g. two zero-length transfers handed the same link in turn.
  std::vector<int32_t> start_sequence;
  // Indexed by StreamId: total time the stream ran a task (time spent waiting is not busy).
  std::vector<SimTime> stream_busy;
  // End of the last task; zero for an empty graph.
  SimTime makespan;
};

// Runs |graph| as a discrete-event simulation from time zero and returns when each task ran.
//
// A task becomes ready when its dependencies and the previous task on its stream have ended.
//  - A task with no link and no collective starts as soon as it is ready.
//  - A task with a link queues for it; a free link goes to the waiting request that became
//    ready first, ties to the lower task id (FIFO, independent of event processing order).
//  - A collective becomes ready when its last member does; it then queues, as one request, for
//    the links of all its members and starts when it heads all those queues and they are all
//    free (a link waits, idle, for a collective at its head). All members start together and end
//    together, after the longest member's duration.
// Events are ordered by (time, sequence number), so equal times are handled FIFO and the result is
// identical on every run. Ties never change times; they only fix start_sequence.
//
// Returns build_status() if the graph recorded a build error, or an InvalidArgument naming the
// wait cycle if the step deadlocks (stream order contradicting dependencies, or collectives ordered
// differently on their members' streams) - it never hangs. TaskGraph::Validate() finds the same
// cycles before simulating.
//
// Cost: O((tasks + edges) log tasks) time and O(tasks + edges) memory, allocated once; about
// 1-2 ms for 50k tasks and 100k edges on one core.
Result<StepTimeline> Simulate(const TaskGraph& graph);

}  // namespace loom

#endif  // LOOM_SIM_ENGINE_H_
