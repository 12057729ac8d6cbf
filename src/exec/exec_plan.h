#ifndef LOOM_EXEC_EXEC_PLAN_H_
#define LOOM_EXEC_EXEC_PLAN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "program/task_graph.h"

namespace loom {

// What one rank runs: its streams, each an in-order queue of tasks (the rank program).
struct RankProgram {
  int32_t rank = 0;
  std::vector<StreamId> streams;
  std::vector<std::vector<TaskId>> stream_tasks;  // parallel to |streams|, each in stream order
};

// A set of ranks that run collectives together; one MPI communicator (or NCCL communicator) per
// communicator here. Collectives of one communicator are issued in one stream's order on every
// member, so that every member issues them in the same order (MPI and NCCL require it).
struct Communicator {
  std::vector<int32_t> ranks;  // ascending
  NameId stream_name = kEmptyName;
};

// A step's rank programs made ready to run on |world| processes, one per rank: which tasks wait
// for which, on the same rank and across ranks, and which communicator each collective uses.
// Only dependencies between different streams are listed: stream order is the queue's own.
class ExecPlan {
 public:
  const TaskGraph& graph() const { return *graph_; }
  std::span<const RankProgram> ranks() const { return ranks_; }
  std::span<const Communicator> communicators() const { return communicators_; }

  // Dependencies of |task| on tasks of its own rank, on other streams.
  int32_t local_waits(TaskId task) const { return local_waits_[task]; }
  // Tasks of other ranks whose end |task| waits for: each arrives as a message.
  int32_t remote_waits(TaskId task) const { return remote_waits_[task]; }
  // Tasks on the rank of |task|, on other streams, that wait for it to end.
  std::span<const TaskId> local_successors(TaskId task) const { return Slice(local_succ_, task); }
  // Tasks on other ranks that wait for |task| to end.
  std::span<const TaskId> remote_successors(TaskId task) const { return Slice(remote_succ_, task); }
  // The communicator of |group|.
  int32_t communicator_of(GroupId group) const { return group_comm_[group]; }

 private:
  friend Result<ExecPlan> PlanExecution(const TaskGraph& graph, int32_t world);

  struct Csr {
    std::vector<int32_t> offsets;
    std::vector<TaskId> items;
  };
  static std::span<const TaskId> Slice(const Csr& csr, TaskId task) {
    return std::span<const TaskId>(csr.items).subspan(csr.offsets[task],
                                                      csr.offsets[task + 1] - csr.offsets[task]);
  }

  const TaskGraph* graph_ = nullptr;
  std::vector<RankProgram> ranks_;
  std::vector<Communicator> communicators_;
  std::vector<int32_t> local_waits_, remote_waits_;
  Csr local_succ_, remote_succ_;
  std::vector<int32_t> group_comm_;
};

// OK if |world| processes, one per rank, run |graph|; otherwise an error with the mpirun command
// that launches it.
Status CheckWorldSize(const TaskGraph& graph, int32_t world);

// Checks that |graph| can run on |world| processes and plans it; refuses, before anything runs:
//  - a graph that does not build or would deadlock (TaskGraph::Validate: a cycle of waits through
//    dependencies, stream order and collectives), with the cycle;
//  - a world size that is not the graph's number of ranks (CheckWorldSize);
//  - a rank with no tasks; a collective with two members on one rank, or with members on streams
//    of different names (no single communicator order could serve it).
// The result refers to |graph|, which must outlive it.
Result<ExecPlan> PlanExecution(const TaskGraph& graph, int32_t world);

}  // namespace loom

#endif  // LOOM_EXEC_EXEC_PLAN_H_
