#ifndef LOOM_EXEC_TIMED_BACKEND_H_
#define LOOM_EXEC_TIMED_BACKEND_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "device/deadline.h"
#include "exec/executor.h"
#include "program/task_graph.h"

namespace loom {

// The messages the host backend exchanges between ranks: behind an interface so that the
// executor is tested with in-process ranks as well as with MPI.
class MessageTransport {
 public:
  virtual ~MessageTransport() = default;

  // Posts this rank's part of the collective |group| on |communicator|, identified by |group|:
  // completes once every member has posted it, and fails if the members did not all post the
  // same group (their orders disagree).
  virtual Status PostCollective(TaskId task, GroupId group, int32_t communicator) = 0;
  // Sends "|task| has ended" to rank |to|.
  virtual Status Send(TaskId task, int32_t to) = 0;
  // Appends the collectives (by this rank's member task) that completed and the task ids that
  // arrived since the last call. Never blocks.
  virtual Status Poll(std::vector<TaskId>* collectives_done, std::vector<TaskId>* received) = 0;
  // Waits until every Send of this rank has left (so that the next step starts clean).
  virtual Status Flush() = 0;
};

// Runs a rank program with time standing in for work: a task takes its predicted duration
// (TaskGraph::Task::duration) divided by |speedup|, as a timed wait; a collective takes, after
// its rendezvous through the transport, the longest duration of its members, as the simulator
// times it; messages between ranks are real. Now() is in plan time: real time since the epoch
// times |speedup|, so that a timeline measured at speedup 100 compares directly with the plan.
//
// What it checks is the orchestration (dependencies, pipeline order, collective membership, no
// deadlock), and how much time the execution itself adds; it measures no kernel. Between polls
// it sleeps (at most 100 us, less when a task ends sooner) instead of spinning, so that ranks
// sharing a core keep their timing.
class TimedBackend : public TaskBackend {
 public:
  // REQUIRES: |graph|, |transport| and |clock| outlive the backend; speedup > 0.
  TimedBackend(const TaskGraph& graph, MessageTransport& transport, Clock& clock, double speedup);

  // Makes Now() zero at |epoch_s| of the clock (NowSeconds()): before each step, every rank at the
  // same instant, so that times of different ranks compare.
  void StartEpoch(double epoch_s);

  Status Start(TaskId task) override;
  Status StartCollective(TaskId task, GroupId group, int32_t communicator) override;
  Status Notify(TaskId task, int32_t to) override;
  Status Poll(std::vector<TaskEnd>* ended, std::vector<TaskId>* notified) override;
  SimTime Now() override;

 private:
  struct Timer {
    TaskId task;
    SimTime end;
  };

  // The longest duration among the members of |task|'s collective.
  SimTime CollectiveDuration(TaskId task) const;
  // Sleeps until the earliest timer or at most 100 us.
  void Nap();

  const TaskGraph& graph_;
  MessageTransport& transport_;
  Clock& clock_;
  double speedup_;
  double epoch_s_ = 0;
  std::vector<Timer> timers_;
  std::vector<TaskId> collectives_done_;
};

}  // namespace loom

#endif  // LOOM_EXEC_TIMED_BACKEND_H_
