#ifndef LOOM_PROGRAM_TASK_GRAPH_H_
#define LOOM_PROGRAM_TASK_GRAPH_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"

namespace loom {

// Dense ids, handed out in insertion order by the TaskGraph::Add* calls.
using TaskId = int32_t;
using StreamId = int32_t;
using LinkId = int32_t;
using GroupId = int32_t;
using PoolId = int32_t;
using ChannelId = int32_t;
using RouteId = int32_t;
using NameId = uint32_t;  // index into the graph's string table

inline constexpr LinkId kNoLink = -1;
inline constexpr ChannelId kNoChannel = -1;
inline constexpr RouteId kNoRoute = -1;
inline constexpr GroupId kNoGroup = -1;
inline constexpr PoolId kDefaultPool = 0;  // always present, named "default"
inline constexpr NameId kEmptyName = 0;    // always present, the empty string

// One unit of work on one stream: a kernel, a collective's share on one rank, a p2p transfer.
// Plain data, 48 bytes: a step has tens of thousands of these, so names are ids into the
// graph's string table rather than strings, and the channels a transfer crosses are one id of a
// route the graph stores once.
struct Task {
  // The in-order queue that runs the task; the stream's rank is the task's rank.
  StreamId stream = -1;
  // An exclusive shared resource held for the whole duration; tasks waiting for it are served
  // first come, first served (see sim/engine.h).
  LinkId link = kNoLink;
  // Without a route, the time the task takes. With one, its time alone on the route's channels:
  // concurrent tasks on a channel share its bandwidth and take longer (see sim/engine.h).
  SimTime duration = SimTime::Zero();
  NameId name = kEmptyName;      // shown as the slice name in traces
  NameId category = kEmptyName;  // e.g. "compute", "comm"; the trace's "cat"
  // Memory on the task's rank: allocated when it starts, freed when it ends. For a task that
  // touches several pools, or frees at start, add TaskGraph::AddMemoryEvent()s as well.
  int64_t alloc_at_start_bytes = 0;
  int64_t free_at_end_bytes = 0;
  PoolId pool = kDefaultPool;
  // The shared-bandwidth channels the task transfers over (TaskGraph::AddRoute), e.g. the
  // sender's NIC send side and the receiver's NIC receive side.
  RouteId route = kNoRoute;
};

// How a task uses the SMs and HBM of its rank's GPU (sim/engine.h): |holds|, the fraction of the
// SMs its kernels occupy while it runs (an NCCL kernel's CTAs, one per channel), and |hbm|, the
// fraction of the HBM bandwidth its traffic takes meanwhile; |yields|, whether its time alone
// assumes every SM and all the bandwidth, so that it runs slower while tasks holding a share run
// on the rank (a compute pass), and |memory|, the part of its time alone spent in memory-bound
// kernels, which slow with the bandwidth left rather than the SMs. The default, neither, is a
// task the GPU does not concern (a copy-engine transfer, a host task, a marker).
struct SmUse {
  float holds = 0;
  float hbm = 0;
  float memory = 0;
  bool yields = false;

  bool Holds() const { return holds > 0 || hbm > 0; }
};

// "|before| must end before |after| may start".
struct Dependency {
  TaskId before;
  TaskId after;
};

enum class MemoryPhase : uint8_t { kAtStart, kAtEnd };

// A change of |delta_bytes| (positive: allocation, negative: free) in |pool| on the task's rank,
// applied when the task starts or ends.
struct MemoryEvent {
  TaskId task;
  MemoryPhase phase;
  PoolId pool;
  int64_t delta_bytes;
};

// One training step as a DAG of tasks on streams. Besides the explicit dependencies, two rules
// constrain the order, as on a GPU:
//  - Stream order: tasks on one stream run one at a time, in the order they were added
//    (like kernels on a CUDA stream) - an implicit edge from each task to the next on its stream.
//  - Rendezvous: the members of a collective group (one task per participating rank) all start
//    at the same time, once every member could start, and all end together.
// Channels never delay a start; they only stretch the time of the tasks that share them.
//
// Building is cheap and never fails loudly: a call with an invalid argument records the first
// such error in build_status(), which Validate() and Simulate() return.
class TaskGraph {
 public:
  TaskGraph();

  // Returns the id of |text| in the string table, adding it on first use.
  NameId Intern(std::string_view text);
  // REQUIRES: |id| was returned by Intern() (or is kEmptyName). The view is valid until the next
  // Intern() call.
  std::string_view Name(NameId id) const { return names_[id]; }

  // Adds an in-order queue on |rank| (>= 0), e.g. "compute" or "comm".
  StreamId AddStream(int32_t rank, std::string_view name);
  // Adds an exclusive shared resource, e.g. "stage0->stage1": one task (or collective) at a time.
  LinkId AddLink(std::string_view name);
  // Adds a shared-bandwidth resource, e.g. "rank 3 nic tx" (one direction of one NIC): any number
  // of tasks use it at once, each at an equal share of its bandwidth (see sim/engine.h).
  ChannelId AddChannel(std::string_view name);
  // Adds the set of channels one transfer crosses, e.g. {sender's nic tx, receiver's nic rx}, for
  // Task::route. Records an error (and returns kNoRoute) if |channels| is empty, names an unknown
  // channel or one channel twice.
  RouteId AddRoute(std::span<const ChannelId> channels);
  // Adds a memory pool, e.g. "activations"; shown in the memory report's breakdown.
  PoolId AddPool(std::string_view name);

  // Appends |task| to the end of its stream. Records an error if the stream, link, route, pool or
  // a name id is unknown, or the duration or a byte count is negative.
  TaskId AddTask(const Task& task);
  // Records an error if either id is unknown or |before| == |after|.
  void AddDependency(TaskId before, TaskId after);
  // Sets how task |id| uses its GPU's SMs (SmUse); kept beside the tasks, so that a graph that
  // never calls it pays nothing. Records an error if |id| is unknown, |use.holds| or |use.hbm| is
  // not in [0, 1), |use.memory| not in [0, 1], or a task both holds and yields.
  void SetSmUse(TaskId id, SmUse use);
  // Makes |members| one collective: they start together, when all of them could start, and run
  // for the longest member's duration. Records an error (and returns kNoGroup) if |members| is
  // empty, names an unknown task, a task already in a group, or two tasks on one stream (the
  // second could never start before the first ends).
  GroupId AddCollective(std::span<const TaskId> members);
  // Adds a memory change to |task|, in addition to the alloc/free fields of the task itself.
  void AddMemoryEvent(TaskId task, MemoryPhase phase, PoolId pool, int64_t delta_bytes);

  // Pre-sizes the arrays; optional.
  void Reserve(int32_t tasks, int32_t dependencies);

  // OK, or the first error recorded while building.
  const Status& build_status() const { return build_status_; }

  // Returns build_status() if it is an error; otherwise checks that the step can run to the end:
  // that dependencies, stream order and collectives form no cycle. A cycle is reported with the
  // tasks on it and the kind of each edge. Costs a few milliseconds for 50k tasks; Simulate()
  // does not call it (it reports a deadlock on its own), but gives a less direct message.
  Status Validate() const;

  int32_t num_tasks() const { return static_cast<int32_t>(tasks_.size()); }
  // REQUIRES: 0 <= id < num_tasks(), and likewise for the other accessors below.
  const Task& task(TaskId id) const { return tasks_[id]; }
  std::span<const Task> tasks() const { return tasks_; }
  std::span<const Dependency> dependencies() const { return dependencies_; }
  std::span<const MemoryEvent> memory_events() const { return memory_events_; }

  int32_t num_ranks() const { return num_ranks_; }
  int32_t num_streams() const { return static_cast<int32_t>(stream_rank_.size()); }
  int32_t stream_rank(StreamId stream) const { return stream_rank_[stream]; }
  NameId stream_name(StreamId stream) const { return stream_name_[stream]; }
  int32_t rank_of(TaskId id) const { return stream_rank_[tasks_[id].stream]; }

  int32_t num_links() const { return static_cast<int32_t>(link_name_.size()); }
  NameId link_name(LinkId link) const { return link_name_[link]; }
  int32_t num_channels() const { return static_cast<int32_t>(channel_name_.size()); }
  NameId channel_name(ChannelId channel) const { return channel_name_[channel]; }
  int32_t num_routes() const { return static_cast<int32_t>(route_offsets_.size()) - 1; }
  std::span<const ChannelId> route_channels(RouteId route) const {
    return std::span<const ChannelId>(route_channels_)
        .subspan(route_offsets_[route], route_offsets_[route + 1] - route_offsets_[route]);
  }
  int32_t num_pools() const { return static_cast<int32_t>(pool_name_.size()); }
  NameId pool_name(PoolId pool) const { return pool_name_[pool]; }

  int32_t num_groups() const { return static_cast<int32_t>(group_offsets_.size()) - 1; }
  GroupId group_of(TaskId id) const { return group_of_[id]; }
  std::span<const TaskId> group_members(GroupId group) const {
    return std::span<const TaskId>(group_members_)
        .subspan(group_offsets_[group], group_offsets_[group + 1] - group_offsets_[group]);
  }

  // The SetSmUse() of |id|, the default SmUse if none was set; whether any task holds SMs.
  SmUse sm_use(TaskId id) const {
    return static_cast<size_t>(id) < sm_use_.size() ? sm_use_[id] : SmUse{};
  }
  bool holds_sms() const { return holds_sms_; }

  // Returns "'<name>' (task <id>, rank <r> stream '<stream>')", for error messages.
  std::string DescribeTask(TaskId id) const;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  bool IsTask(TaskId id) const { return id >= 0 && id < num_tasks(); }
  // Whether |task| names only known ids and has no negative duration or byte count.
  bool IsWellFormed(const Task& task) const;
  // Adds |task| with its bad fields replaced by defaults, recording the first problem.
  TaskId AddMalformedTask(const Task& task);
  void RecordError(std::string message);

  std::vector<std::string> names_;
  std::unordered_map<std::string, NameId, StringHash, std::equal_to<>> name_index_;

  std::vector<Task> tasks_;
  std::vector<Dependency> dependencies_;
  std::vector<MemoryEvent> memory_events_;
  std::vector<GroupId> group_of_;  // per task
  std::vector<SmUse> sm_use_;      // per task up to the last one SetSmUse() was called for
  bool holds_sms_ = false;

  int32_t num_ranks_ = 0;
  std::vector<int32_t> stream_rank_;
  std::vector<NameId> stream_name_;
  std::vector<NameId> link_name_;
  std::vector<NameId> channel_name_;
  std::vector<NameId> pool_name_;

  std::vector<int32_t> route_offsets_{0};  // channels of route r: [offsets[r], offsets[r + 1])
  std::vector<ChannelId> route_channels_;

  std::vector<int32_t> group_offsets_{0};  // members of group g: [offsets[g], offsets[g + 1])
  std::vector<TaskId> group_members_;

  Status build_status_;
};

}  // namespace loom

#endif  // LOOM_PROGRAM_TASK_GRAPH_H_
