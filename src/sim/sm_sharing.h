#ifndef LOOM_SIM_SM_SHARING_H_
#define LOOM_SIM_SM_SHARING_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "program/task_graph.h"

// The engine's bookkeeping for the SMs of each rank's GPU (engine.h states the semantics).
// Internal to src/sim/.

namespace loom {

// The tasks that yield SMs (SmUse::yields) in progress on each rank, and how fast each goes:
// while tasks holding shares h1, h2, ... of the rank's SMs and b1, b2, ... of its HBM bandwidth
// run, a yielding task whose time alone is a share m in memory-bound kernels does its compute
// part at c = max(kMinRate, 1 - (h1 + h2 + ...)) and its memory-bound part at
// min(c, max(kMinRate, 1 - (b1 + b2 + ...))), i.e. 1 / ((1 - m) / c + m / that) ns of its work
// per ns.
class SmSharing {
 public:
  // Keeps a reference to |graph|.
  explicit SmSharing(const TaskGraph& graph);

  // The floor of a yielding task's rate: however many SMs transfers hold, a compute kernel keeps
  // at least this much of the GPU, as CTAs of both kinds are dispatched as SMs free up.
  static constexpr double kMinRate = 0.1;

  // Task |id| holds its share of its rank's SMs from |now| until Release().
  void Hold(TaskId id);
  void Release(TaskId id);

  // Yielding task |id| starts at |now| with |work| of its time alone to do; its end is set by the
  // next Reshare(). REQUIRES: work > 0.
  void Begin(TaskId id, SimTime now, SimTime work);
  // At its current end.
  void Finish(TaskId id);

  // Whether an end event of |id| at |time| is its current end, not one a later Reshare() moved.
  bool IsCurrentEnd(TaskId id, SimTime time) const { return end_[id] == time; }

  // Whether a Hold(), Release() or Begin() happened since the last Reshare().
  bool changed() const { return !touched_ranks_.empty(); }

  // Gives every yielding task on a rank touched since the last call the rate it has from |now|
  // on, after charging it the work it did at its old rate, and calls |on_end(id, end)| for each
  // task whose end moved (every task begun since the last call).
  // REQUIRES: every Hold(), Release() and Begin() since the last call happened at |now|.
  template <typename OnEnd>
  void Reshare(SimTime now, OnEnd&& on_end) {
    for (int32_t rank : touched_ranks_) {
      rank_touched_[rank] = 0;
      for (TaskId id : running_[rank]) {
        if (Update(id, now, Rate(rank, graph_.sm_use(id).memory))) on_end(id, end_[id]);
      }
    }
    touched_ranks_.clear();
  }

  // Per rank: the time its yielding tasks took beyond their time alone, because transfers held
  // some of its SMs (what the step's breakdown reports as compute slowed by communication).
  std::vector<SimTime> TakeLostTime() const;

 private:
  void Touch(int32_t rank);
  // The rate of a yielding task of rank |rank| with |memory| of its time in memory-bound kernels.
  double Rate(int32_t rank, float memory) const;
  // Returns whether |id|'s end moved.
  bool Update(TaskId id, SimTime now, double rate);

  const TaskGraph& graph_;

  // Per task.
  std::vector<double> remaining_ns_;  // work left at |since_|
  std::vector<SimTime> since_;        // when the current rate began
  std::vector<double> rate_;          // 0 before its first rate
  std::vector<SimTime> end_;          // when it ends at its current rate; negative if not running

  // Per rank.
  std::vector<double> held_;                  // the SM shares of the holding tasks now running
  std::vector<double> hbm_held_;              // and their HBM shares
  std::vector<int32_t> holders_;              // how many; 0 resets |held_| to exactly 0
  std::vector<std::vector<TaskId>> running_;  // yielding tasks, in no particular order
  std::vector<uint8_t> rank_touched_;
  std::vector<int32_t> touched_ranks_;
  std::vector<double> lost_ns_;
};

}  // namespace loom

#endif  // LOOM_SIM_SM_SHARING_H_
