#include "sim/engine.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/channel_sharing.h"
#include "sim/event_queue.h"
#include "sim/graph_index.h"
#include "sim/sm_sharing.h"

namespace loom {
namespace {

// A request for a link: one task, or a whole collective (handle ~group, always negative).
struct LinkRequest {
  SimTime ready;
  TaskId order;  // the task, or the collective's lowest member: the tie-breaker
  int32_t handle;
};

// std::*_heap keep the greatest element first; "greatest" here is the request served next.
bool ServedLater(const LinkRequest& a, const LinkRequest& b) {
  return a.ready != b.ready ? a.ready > b.ready : a.order > b.order;
}

// Spells out the wait cycle that keeps the unstarted tasks from ever starting.
Status DeadlockError(const TaskGraph& graph, const StepTimeline& timeline,
                     const std::vector<int32_t>& waiting_on);

// One simulation: all state in flat arrays sized once up front (link queues and the event heap
// to their largest possible size), so that the event loop itself allocates nothing - except the
// heap of flow ends in a graph with routes, where every change of a share can move an end.
//
// Tasks on routes end through a second heap, |flow_ends_|, of possible ends of ChannelSharing's
// flows: an end is current only if no later change of the flow's share moved it. A current one
// becomes task ends in |events_| at the same time, so that the loop over |events_| stays the one
// of a graph without routes.
class EngineRun {
 public:
  EngineRun(const TaskGraph& graph, std::span<const SimTime> durations)
      : graph_(graph), tasks_(graph.tasks()), durations_(durations) {}

  Result<StepTimeline> Run();

 private:
  void BuildSuccessors();
  void BuildCollectives();
  void BuildLinkQueues();

  template <bool kSharing, bool kSms>
  void RunEvents();
  SimTime NextEventTime() const;
  void OnReady(TaskId id, SimTime now);
  void Enqueue(LinkId link, const LinkRequest& request);
  void MarkDirty(LinkId link);
  void MarkStarted(TaskId id, SimTime now);
  void Start(TaskId id, SimTime now, SimTime duration);
  void StartCollective(GroupId group, SimTime now);
  void EndFlowsAt(SimTime now);
  void EndYieldingAt(SimTime now);
  void ReshareSms(SimTime now);
  void Complete(TaskId id);
  void Reshare(SimTime now);
  void DispatchLinks(SimTime now);
  void TryDispatch(LinkId link, SimTime now);
  StepTimeline TakeTimeline();

  const TaskGraph& graph_;
  const std::span<const Task> tasks_;
  const std::span<const SimTime> durations_;  // per task: its time alone

  FlatRows successors_;              // dependencies, then the next task on the same stream
  std::vector<int32_t> waiting_on_;  // per task: predecessors that have not ended

  std::vector<int32_t> collective_ready_;  // per group: members ready so far
  std::vector<SimTime> collective_duration_;
  std::vector<TaskId> collective_order_;  // lowest member id
  FlatRows collective_links_;             // the distinct links of each group's members
  FlatRows collective_channels_;          // the channels of each group's members' routes

  std::unique_ptr<ChannelSharing> sharing_;  // only for a graph with routes
  std::unique_ptr<SmSharing> sms_;           // only for a graph whose tasks hold SMs

  std::vector<uint8_t> link_busy_;
  std::vector<std::vector<LinkRequest>> link_queue_;  // one heap per link
  std::vector<uint8_t> link_dirty_;                   // touched since the last dispatch
  std::vector<LinkId> dirty_links_;

  EventQueue events_;     // payload: the task that ends
  EventQueue flow_ends_;  // payload: the flow that may end
  EventQueue sm_ends_;    // payload: the SM-yielding task that may end
  StepTimeline timeline_;
  int32_t started_ = 0;
  int32_t completed_ = 0;
};

Result<StepTimeline> EngineRun::Run() {
  LOOM_RETURN_IF_ERROR(graph_.build_status());
  const int32_t n = graph_.num_tasks();
  BuildSuccessors();
  BuildCollectives();
  BuildLinkQueues();
  if (graph_.num_routes() > 0)
    sharing_ = std::make_unique<ChannelSharing>(graph_, collective_channels_);
  if (graph_.holds_sms()) sms_ = std::make_unique<SmSharing>(graph_);
  timeline_.start.assign(n, SimTime::Zero());
  timeline_.end.assign(n, SimTime::Zero());
  timeline_.start_sequence.assign(n, -1);
  events_.Reserve(n);

  for (TaskId t = 0; t < n; ++t) {
    if (waiting_on_[t] == 0) OnReady(t, SimTime::Zero());
  }
  DispatchLinks(SimTime::Zero());
  if (sharing_) Reshare(SimTime::Zero());
  if (sms_) ReshareSms(SimTime::Zero());
  if (sharing_ && sms_) {
    RunEvents<true, true>();
  } else if (sharing_) {
    RunEvents<true, false>();
  } else if (sms_) {
    RunEvents<false, true>();
  } else {
    RunEvents<false, false>();
  }
  if (completed_ < n) return DeadlockError(graph_, timeline_, waiting_on_);
  return TakeTimeline();
}

// Four instances, so that a graph without routes or SM shares runs the loop it ran before they
// existed: a test per event in it cost 10% of the engine's time.
template <bool kSharing, bool kSms>
void EngineRun::RunEvents() {
  while (!events_.empty() || (kSharing && !flow_ends_.empty()) || (kSms && !sm_ends_.empty())) {
    // Finish everything that ends at |now| before handing out links, so that link order depends
    // on (ready time, task id) only, not on the order of events at equal times; then share the
    // channels among the transfers, and the SMs among the tasks, running from |now| on.
    const SimTime now = kSharing || kSms ? NextEventTime() : events_.top().time;
    if constexpr (kSharing) EndFlowsAt(now);
    if constexpr (kSms) EndYieldingAt(now);
    while (!events_.empty() && events_.top().time == now) Complete(events_.Pop().payload);
    DispatchLinks(now);
    if constexpr (kSharing) Reshare(now);
    if constexpr (kSms) ReshareSms(now);
  }
}

SimTime EngineRun::NextEventTime() const {
  SimTime next = SimTime::Forever();
  if (!events_.empty()) next = events_.top().time;
  if (!flow_ends_.empty()) next = Min(next, flow_ends_.top().time);
  if (!sm_ends_.empty()) next = Min(next, sm_ends_.top().time);
  return next;
}

void EngineRun::BuildSuccessors() {
  const int32_t n = graph_.num_tasks();
  const std::vector<TaskId> previous = PreviousOnStream(graph_);
  std::vector<int32_t>& offsets = successors_.offsets;
  offsets.assign(n + 1, 0);
  waiting_on_.assign(n, 0);
  for (const Dependency& d : graph_.dependencies()) {
    ++offsets[d.before + 1];
    ++waiting_on_[d.after];
  }
  for (TaskId t = 0; t < n; ++t) {
    if (previous[t] < 0) continue;
    ++offsets[previous[t] + 1];
    ++waiting_on_[t];
  }
  for (int32_t t = 0; t < n; ++t) offsets[t + 1] += offsets[t];
  successors_.items.resize(offsets[n]);
  std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
  for (const Dependency& d : graph_.dependencies()) successors_.items[cursor[d.before]++] = d.after;
  for (TaskId t = 0; t < n; ++t) {
    if (previous[t] >= 0) successors_.items[cursor[previous[t]]++] = t;
  }
}

void EngineRun::BuildCollectives() {
  const int32_t groups = graph_.num_groups();
  collective_ready_.assign(groups, 0);
  collective_duration_.assign(groups, SimTime::Zero());
  collective_order_.assign(groups, 0);
  collective_links_.offsets.assign(groups + 1, 0);
  collective_links_.items.clear();
  collective_channels_.offsets.assign(groups + 1, 0);
  collective_channels_.items.clear();
  std::vector<GroupId> last_group_on_link(graph_.num_links(), kNoGroup);
  for (GroupId g = 0; g < groups; ++g) {
    const std::span<const TaskId> members = graph_.group_members(g);
    collective_order_[g] = *std::min_element(members.begin(), members.end());
    for (TaskId m : members) {
      collective_duration_[g] = Max(collective_duration_[g], durations_[m]);
      const LinkId link = tasks_[m].link;
      if (link != kNoLink && last_group_on_link[link] != g) {
        last_group_on_link[link] = g;
        collective_links_.items.push_back(link);
      }
      if (const RouteId route = tasks_[m].route; route != kNoRoute) {
        const std::span<const ChannelId> channels = graph_.route_channels(route);
        collective_channels_.items.insert(collective_channels_.items.end(), channels.begin(),
                                          channels.end());
      }
    }
    collective_links_.offsets[g + 1] = static_cast<int32_t>(collective_links_.items.size());
    collective_channels_.offsets[g + 1] = static_cast<int32_t>(collective_channels_.items.size());
  }
}

void EngineRun::BuildLinkQueues() {
  const int32_t links = graph_.num_links();
  std::vector<int32_t> requests(links, 0);
  for (TaskId t = 0; t < graph_.num_tasks(); ++t) {
    if (tasks_[t].link != kNoLink && graph_.group_of(t) == kNoGroup) ++requests[tasks_[t].link];
  }
  for (LinkId link : collective_links_.items) ++requests[link];
  link_busy_.assign(links, 0);
  link_dirty_.assign(links, 0);
  link_queue_.resize(links);
  for (LinkId l = 0; l < links; ++l) link_queue_[l].reserve(requests[l]);
  dirty_links_.reserve(links);
}

void EngineRun::OnReady(TaskId id, SimTime now) {
  const GroupId group = graph_.group_of(id);
  if (group != kNoGroup) {
    if (++collective_ready_[group] < static_cast<int32_t>(graph_.group_members(group).size())) {
      return;
    }
    const std::span<const LinkId> links = collective_links_.Row(group);
    if (links.empty()) {
      StartCollective(group, now);
      return;
    }
    for (LinkId link : links) Enqueue(link, {now, collective_order_[group], ~group});
    return;
  }
  const Task& task = tasks_[id];
  if (task.link == kNoLink) {
    Start(id, now, durations_[id]);
  } else {
    Enqueue(task.link, {now, id, id});
  }
}

void EngineRun::Enqueue(LinkId link, const LinkRequest& request) {
  std::vector<LinkRequest>& queue = link_queue_[link];
  queue.push_back(request);
  std::push_heap(queue.begin(), queue.end(), ServedLater);
  MarkDirty(link);
}

void EngineRun::MarkDirty(LinkId link) {
  if (!link_dirty_[link]) {
    link_dirty_[link] = 1;
    dirty_links_.push_back(link);
  }
}

void EngineRun::MarkStarted(TaskId id, SimTime now) {
  timeline_.start[id] = now;
  timeline_.start_sequence[id] = started_++;
  if (tasks_[id].link != kNoLink) link_busy_[tasks_[id].link] = 1;
  if (sms_ && graph_.sm_use(id).Holds()) sms_->Hold(id);
}

// A task of zero duration ends where it starts whatever its share, so it stays off its channels
// and its rank's SMs.
void EngineRun::Start(TaskId id, SimTime now, SimTime duration) {
  MarkStarted(id, now);
  if (tasks_[id].route != kNoRoute && duration > SimTime::Zero() &&
      graph_.group_of(id) == kNoGroup) {
    sharing_->Begin(id, now, duration);
    return;
  }
  // An SM-yielding task on a route (none is) would keep its channel share and ignore the SMs.
  if (sms_ && duration > SimTime::Zero() && graph_.sm_use(id).yields &&
      graph_.group_of(id) == kNoGroup && tasks_[id].route == kNoRoute) {
    sms_->Begin(id, now, duration);
    return;
  }
  timeline_.end[id] = now + duration;
  events_.Push(now + duration, id);
}

void EngineRun::StartCollective(GroupId group, SimTime now) {
  const SimTime duration = collective_duration_[group];
  if (collective_channels_.Row(group).empty() || duration == SimTime::Zero()) {
    for (TaskId member : graph_.group_members(group)) Start(member, now, duration);
    return;
  }
  for (TaskId member : graph_.group_members(group)) MarkStarted(member, now);
  sharing_->Begin(sharing_->CollectiveFlow(group), now, duration);
}

void EngineRun::EndFlowsAt(SimTime now) {
  while (!flow_ends_.empty() && flow_ends_.top().time == now) {
    const int32_t flow = flow_ends_.Pop().payload;
    if (!sharing_->IsCurrentEnd(flow, now)) continue;  // a later share moved this end
    sharing_->Finish(flow);
    if (!sharing_->IsCollective(flow)) {
      events_.Push(now, flow);
      continue;
    }
    for (TaskId member : graph_.group_members(sharing_->GroupOf(flow))) events_.Push(now, member);
  }
}

void EngineRun::EndYieldingAt(SimTime now) {
  while (!sm_ends_.empty() && sm_ends_.top().time == now) {
    const TaskId id = sm_ends_.Pop().payload;
    if (!sms_->IsCurrentEnd(id, now)) continue;  // a later rate moved this end
    sms_->Finish(id);
    events_.Push(now, id);
  }
}

void EngineRun::ReshareSms(SimTime now) {
  if (!sms_->changed()) return;
  sms_->Reshare(now, [&](TaskId id, SimTime end) {
    timeline_.end[id] = end;
    sm_ends_.Push(end, id);
  });
}

// Pushes the moved ends and leaves the superseded ones in the heap: finding them would cost more
// than popping them, and EndFlowsAt() skips them.
void EngineRun::Reshare(SimTime now) {
  if (!sharing_->changed()) return;
  sharing_->Reshare(now, [&](int32_t flow, SimTime end) {
    if (sharing_->IsCollective(flow)) {
      for (TaskId member : graph_.group_members(sharing_->GroupOf(flow)))
        timeline_.end[member] = end;
    } else {
      timeline_.end[flow] = end;
    }
    flow_ends_.Push(end, flow);
  });
}

void EngineRun::Complete(TaskId id) {
  ++completed_;
  if (sms_ && graph_.sm_use(id).Holds()) sms_->Release(id);
  const LinkId link = tasks_[id].link;
  if (link != kNoLink) {
    link_busy_[link] = 0;
    MarkDirty(link);
  }
  const SimTime now = timeline_.end[id];
  for (TaskId next : successors_.Row(id)) {
    if (--waiting_on_[next] == 0) OnReady(next, now);
  }
}

void EngineRun::DispatchLinks(SimTime now) {
  // Starting a task only ever makes links busy, so one pass over the touched links suffices.
  for (LinkId link : dirty_links_) {
    link_dirty_[link] = 0;
    TryDispatch(link, now);
  }
  dirty_links_.clear();
}

void EngineRun::TryDispatch(LinkId link, SimTime now) {
  std::vector<LinkRequest>& queue = link_queue_[link];
  if (link_busy_[link] || queue.empty()) return;
  const LinkRequest head = queue.front();
  if (head.handle >= 0) {
    std::pop_heap(queue.begin(), queue.end(), ServedLater);
    queue.pop_back();
    Start(head.handle, now, durations_[head.handle]);
    return;
  }
  // A collective takes all its links at once, when it heads every one of their queues; requests
  // are ordered the same way in every queue, so some collective always can (no circular wait).
  const GroupId group = ~head.handle;
  const std::span<const LinkId> links = collective_links_.Row(group);
  for (LinkId other : links) {
    if (link_busy_[other] || link_queue_[other].front().handle != head.handle) return;
  }
  for (LinkId other : links) {
    std::pop_heap(link_queue_[other].begin(), link_queue_[other].end(), ServedLater);
    link_queue_[other].pop_back();
  }
  StartCollective(group, now);
}

StepTimeline EngineRun::TakeTimeline() {
  if (sharing_) {
    timeline_.channel_busy = sharing_->TakeBusy();
    timeline_.channel_shared = sharing_->TakeShared();
  } else {
    timeline_.channel_busy.assign(graph_.num_channels(), SimTime::Zero());
    timeline_.channel_shared.assign(graph_.num_channels(), SimTime::Zero());
  }
  timeline_.sm_lost =
      sms_ ? sms_->TakeLostTime() : std::vector<SimTime>(graph_.num_ranks(), SimTime::Zero());
  timeline_.stream_busy.assign(graph_.num_streams(), SimTime::Zero());
  for (TaskId t = 0; t < graph_.num_tasks(); ++t) {
    timeline_.stream_busy[tasks_[t].stream] += timeline_.end[t] - timeline_.start[t];
    timeline_.makespan = Max(timeline_.makespan, timeline_.end[t]);
  }
  return std::move(timeline_);
}

struct Wait {
  TaskId task;
  TaskId waits_for;  // -1 if nothing could be named
  const char* reason;
};

// Returns one unstarted task that keeps |id| from starting.
Wait WaitOf(const TaskGraph& graph, const StepTimeline& timeline, const FlatRows& predecessors,
            const std::vector<TaskId>& previous, const std::vector<int32_t>& waiting_on,
            TaskId id) {
  auto unstarted = [&](TaskId t) { return timeline.start_sequence[t] < 0; };
  if (previous[id] >= 0 && unstarted(previous[id])) return {id, previous[id], "stream order"};
  for (TaskId p : predecessors.Row(id)) {
    if (unstarted(p)) return {id, p, "dependency"};
  }
  if (const GroupId g = graph.group_of(id); g != kNoGroup) {
    for (TaskId m : graph.group_members(g)) {
      if (m != id && waiting_on[m] > 0) return {id, m, "collective member"};
    }
  }
  return {id, -1, "a link"};
}

Status DeadlockError(const TaskGraph& graph, const StepTimeline& timeline,
                     const std::vector<int32_t>& waiting_on) {
  const int32_t n = graph.num_tasks();
  const FlatRows predecessors = DependencyPredecessors(graph);
  const std::vector<TaskId> previous = PreviousOnStream(graph);

  // Every unstarted task waits for another unstarted one, so following the waits from any of them
  // must come back to a task already seen: that loop is the deadlock.
  const int32_t unstarted = static_cast<int32_t>(
      std::count(timeline.start_sequence.begin(), timeline.start_sequence.end(), -1));
  TaskId id = static_cast<TaskId>(
      std::find(timeline.start_sequence.begin(), timeline.start_sequence.end(), -1) -
      timeline.start_sequence.begin());
  std::vector<int32_t> seen_at(n, -1);
  std::vector<Wait> chain;
  while (id >= 0 && seen_at[id] < 0) {
    seen_at[id] = static_cast<int32_t>(chain.size());
    chain.push_back(WaitOf(graph, timeline, predecessors, previous, waiting_on, id));
    id = chain.back().waits_for;
  }
  const size_t cycle_begin = id >= 0 ? seen_at[id] : 0;

  constexpr size_t kMaxWaitsShown = 8;
  std::string message = "deadlock: " + std::to_string(unstarted) + " of " + std::to_string(n) +
                        " tasks never started; wait cycle: ";
  for (size_t i = cycle_begin; i < chain.size() && i < cycle_begin + kMaxWaitsShown; ++i) {
    const Wait& w = chain[i];
    if (i > cycle_begin) message += "; ";
    message += graph.DescribeTask(w.task) + " waits for ";
    message += w.waits_for >= 0 ? graph.DescribeTask(w.waits_for) : std::string("a link");
    message += " (" + std::string(w.reason) + ")";
  }
  if (chain.size() > cycle_begin + kMaxWaitsShown) message += "; ...";
  return Status::InvalidArgument(
      message +
      ". Make stream order agree with the dependencies, and issue collectives in the "
      "same order on every member's stream");
}

}  // namespace

std::vector<SimTime> TaskDurations(const TaskGraph& graph) {
  std::vector<SimTime> durations;
  durations.reserve(graph.num_tasks());
  for (const Task& task : graph.tasks()) durations.push_back(task.duration);
  return durations;
}

Result<StepTimeline> Simulate(const TaskGraph& graph) {
  return EngineRun(graph, TaskDurations(graph)).Run();
}

Result<StepTimeline> Simulate(const TaskGraph& graph, std::span<const SimTime> durations) {
  if (static_cast<int64_t>(durations.size()) != graph.num_tasks()) {
    return Status::InvalidArgument("Simulate: " + std::to_string(durations.size()) +
                                   " durations for a graph of " +
                                   std::to_string(graph.num_tasks()) + " tasks; give one per task");
  }
  for (size_t t = 0; t < durations.size(); ++t) {
    if (durations[t] < SimTime::Zero()) {
      return Status::InvalidArgument("Simulate: negative duration for " +
                                     graph.DescribeTask(static_cast<TaskId>(t)));
    }
  }
  return EngineRun(graph, durations).Run();
}

}  // namespace loom
