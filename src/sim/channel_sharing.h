#ifndef LOOM_SIM_CHANNEL_SHARING_H_
#define LOOM_SIM_CHANNEL_SHARING_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/sim_time.h"
#include "program/task_graph.h"
#include "sim/graph_index.h"

// The engine's bookkeeping for shared-bandwidth channels (engine.h states the semantics).
// Internal to src/sim/.

namespace loom {

// The transfers in progress on the channels of one simulation, and how fast each progresses. A
// flow is one task with a route (flow id = task id) or one collective whose members have routes
// (flow id = num_tasks + group id). Its work is nanoseconds of its time alone; while the most
// crowded of its channels carries k flow uses, it does 1/k ns of work per ns.
class ChannelSharing {
 public:
  // |collective_channels| row g: the channels of group g's members' routes, one entry per member
  // on a channel (two members on one channel are two uses of it). Keeps references to both.
  ChannelSharing(const TaskGraph& graph, const FlatRows& collective_channels);

  int32_t CollectiveFlow(GroupId group) const { return num_tasks_ + group; }
  bool IsCollective(int32_t flow) const { return flow >= num_tasks_; }
  GroupId GroupOf(int32_t flow) const { return flow - num_tasks_; }

  // Puts |flow| on its channels at |now| with |work| left; its end is set by the next Reshare().
  // REQUIRES: work > 0.
  void Begin(int32_t flow, SimTime now, SimTime work);
  // Takes |flow| off its channels.
  void Finish(int32_t flow);

  // Whether an end event of |flow| at |time| is its current end: not superseded by a Reshare()
  // that moved it, and not already finished.
  bool IsCurrentEnd(int32_t flow, SimTime time) const { return end_[flow] == time; }

  // Whether a Begin() or Finish() happened since the last Reshare().
  bool changed() const { return !touched_channels_.empty(); }

  // Gives every flow on a channel touched since the last call the share it has from |now| on,
  // after charging it the work it did since its share last changed, and calls
  // |on_end(flow, end)| for each flow whose end time moved (every flow begun since the last call).
  // REQUIRES: every Begin() and Finish() since the last call happened at |now|.
  template <typename OnEnd>
  void Reshare(SimTime now, OnEnd&& on_end) {
    for (ChannelId c : touched_channels_) {
      channel_touched_[c] = 0;
      Account(c, now);
      // A flow on two touched channels is visited twice; the second visit finds its share
      // unchanged and returns at once.
      for (int32_t flow : on_channel_[c]) {
        if (Update(flow, now)) on_end(flow, end_[flow]);
      }
    }
    touched_channels_.clear();
  }

  // Indexed by ChannelId: time with at least one flow on the channel, and with two or more.
  std::vector<SimTime> TakeBusy() { return std::move(busy_); }
  std::vector<SimTime> TakeShared() { return std::move(shared_); }

 private:
  std::span<const ChannelId> Channels(int32_t flow) const;
  void Touch(ChannelId channel);
  // Adds the time since the channel's last change to its busy and shared totals.
  void Account(ChannelId channel, SimTime now);
  // Returns whether |flow|'s end moved.
  bool Update(int32_t flow, SimTime now);

  const TaskGraph& graph_;
  const FlatRows& collective_channels_;
  const int32_t num_tasks_;

  // Per flow.
  std::vector<double> remaining_ns_;  // work left at |since_|
  std::vector<SimTime> since_;        // when the current share began
  std::vector<int32_t> sharers_;      // k: the flow progresses at 1/k; 0 before its first share
  std::vector<SimTime> end_;          // when it ends at its current share; negative if not running

  // Per channel.
  std::vector<std::vector<int32_t>> on_channel_;  // flow uses, in no particular order
  std::vector<uint8_t> channel_touched_;
  std::vector<ChannelId> touched_channels_;
  std::vector<SimTime> changed_at_;  // the last Reshare() that found the channel touched
  std::vector<int32_t> uses_since_;  // flow uses from |changed_at_| on
  std::vector<SimTime> busy_, shared_;
};

}  // namespace loom

#endif  // LOOM_SIM_CHANNEL_SHARING_H_
