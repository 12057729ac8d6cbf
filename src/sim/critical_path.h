#ifndef LOOM_SIM_CRITICAL_PATH_H_
#define LOOM_SIM_CRITICAL_PATH_H_

#include <cstdint>
#include <vector>

#include "program/task_graph.h"
#include "sim/engine.h"

namespace loom {

// Why a task on the critical path started when it did: what it waited for last.
enum class Binding : uint8_t {
  kStepStart,    // nothing: it started at time zero or had no predecessor (first on the path)
  kDependency,   // an explicit dependency (the previous step on the path) ended
  kStreamOrder,  // the previous task on its stream ended
  kLink,         // the task before it on its link released the link
  kRendezvous,   // it is in a collective, which waited for one of its other members; that member
                 // waited for the previous step on the path
};

struct CriticalStep {
  TaskId task;
  Binding bound_by;
};

// Returns the chain of tasks that bounds the step, earliest first: starting from the task that
// ends last (of several, the one started last), walks back through the predecessor that ended
// exactly when the current task started (explicit dependencies, the previous task on the stream,
// the previous holder of the link, and for a collective the same for every member). Ties go to a
// dependency, then stream order, then the link, then another member, then the lower task id. For a
// timeline from Simulate() the path has no gaps: it starts at time zero and its (end - start) sum
// to the makespan. Empty for an empty graph.
// REQUIRES: |timeline| came from Simulate(|graph|).
std::vector<CriticalStep> CriticalPath(const TaskGraph& graph, const StepTimeline& timeline);

}  // namespace loom

#endif  // LOOM_SIM_CRITICAL_PATH_H_
