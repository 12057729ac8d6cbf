#ifndef LOOM_EXEC_EXECUTOR_H_
#define LOOM_EXEC_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "exec/exec_plan.h"
#include "program/step_timeline.h"
#include "program/task_graph.h"

namespace loom {

struct TaskEnd {
  TaskId task = -1;
  SimTime end;
};

// How one rank's tasks run. The executor decides when a task may start (its stream is free, its
// dependencies have ended, messages from other ranks have arrived); the backend runs it and says
// when it is done. Every call happens on the rank's one thread.
class TaskBackend {
 public:
  virtual ~TaskBackend() = default;

  // Starts |task|, a task of this rank that is not in a collective.
  virtual Status Start(TaskId task) = 0;
  // Starts this rank's member |task| of |group| on communicator |communicator|; it ends only after
  // every member has started it (rendezvous).
  virtual Status StartCollective(TaskId task, GroupId group, int32_t communicator) = 0;
  // Tells rank |to| that |task| has ended.
  virtual Status Notify(TaskId task, int32_t to) = 0;
  // Appends the tasks started here that have ended (with when they ended), and the tasks of other
  // ranks whose Notify arrived, since the last call; never blocks for long (a poll, or a short
  // sleep).
  virtual Status Poll(std::vector<TaskEnd>* ended, std::vector<TaskId>* notified) = 0;
  // Nanoseconds since an epoch shared by all ranks of the step (zero: the start of the step).
  virtual SimTime Now() = 0;
};

struct RunOptions {
  // A step that has not ended after this long (in the backend's clock) is abandoned, naming the
  // tasks still waiting.
  SimTime timeout = SimTime::FromSeconds(600);
};

// When this rank's tasks ran, in the backend's clock.
struct RankTimes {
  std::vector<TaskId> tasks;
  std::vector<SimTime> start, end;
};

// Runs |rank|'s program of |plan| once, from the backend's Now(), and returns when its tasks ran.
// A task starts as soon as the task before it on its stream has ended, every dependency on this
// rank has ended and every message it waits for has arrived; tasks that become ready together
// start in task id order. Errors: the backend's, or DeadlineExceeded naming the first tasks still
// waiting and what each waits for.
Result<RankTimes> RunRankProgram(const ExecPlan& plan, int32_t rank, TaskBackend& backend,
                                 const RunOptions& options = {});

// The measured timeline of a step from every rank's times (the engine's StepTimeline: start and
// end per task, the order tasks started in, busy time per stream, the makespan), in the ranks'
// shared epoch (zero: the start of the step).
// REQUIRES: |times| holds every task of the graph exactly once.
StepTimeline MeasuredTimeline(const TaskGraph& graph, const std::vector<RankTimes>& times);

}  // namespace loom

#endif  // LOOM_EXEC_EXECUTOR_H_
