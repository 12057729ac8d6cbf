#include "program/task_graph.h"

#include <algorithm>
#include <string>
#include <utility>

namespace loom {

TaskGraph::TaskGraph() {
  Intern("");  // kEmptyName
  AddPool("default");
}

NameId TaskGraph::Intern(std::string_view text) {
  if (auto it = name_index_.find(text); it != name_index_.end()) return it->second;
  const auto id = static_cast<NameId>(names_.size());
  names_.emplace_back(text);
  name_index_.emplace(std::string(text), id);
  return id;
}

StreamId TaskGraph::AddStream(int32_t rank, std::string_view name) {
  if (rank < 0) {
    RecordError("stream '" + std::string(name) + "': rank " + std::to_string(rank) +
                " is negative; ranks are numbered from 0");
    rank = 0;
  }
  stream_rank_.push_back(rank);
  stream_name_.push_back(Intern(name));
  num_ranks_ = std::max(num_ranks_, rank + 1);
  return num_streams() - 1;
}

LinkId TaskGraph::AddLink(std::string_view name) {
  link_name_.push_back(Intern(name));
  return num_links() - 1;
}

ChannelId TaskGraph::AddChannel(std::string_view name) {
  channel_name_.push_back(Intern(name));
  return num_channels() - 1;
}

RouteId TaskGraph::AddRoute(std::span<const ChannelId> channels) {
  const std::string what = "route " + std::to_string(num_routes());
  if (channels.empty()) {
    RecordError(what + " has no channels");
    return kNoRoute;
  }
  for (size_t i = 0; i < channels.size(); ++i) {
    if (channels[i] < 0 || channels[i] >= num_channels()) {
      RecordError(what + ": unknown channel " + std::to_string(channels[i]) +
                  "; add it with AddChannel() first");
      return kNoRoute;
    }
    // A transfer crosses a channel once; twice would halve its own bandwidth.
    if (std::find(channels.begin(), channels.begin() + i, channels[i]) != channels.begin() + i) {
      RecordError(what + ": channel '" + std::string(Name(channel_name_[channels[i]])) +
                  "' is listed twice");
      return kNoRoute;
    }
  }
  route_channels_.insert(route_channels_.end(), channels.begin(), channels.end());
  route_offsets_.push_back(static_cast<int32_t>(route_channels_.size()));
  return num_routes() - 1;
}

PoolId TaskGraph::AddPool(std::string_view name) {
  pool_name_.push_back(Intern(name));
  return num_pools() - 1;
}

TaskId TaskGraph::AddTask(const Task& task) {
  // One test for the common, valid task; the messages only for a bad one. Building a step of 50k
  // tasks is on the planner's path.
  if (!IsWellFormed(task)) return AddMalformedTask(task);
  tasks_.push_back(task);
  group_of_.push_back(kNoGroup);
  return num_tasks() - 1;
}

bool TaskGraph::IsWellFormed(const Task& task) const {
  return task.stream >= 0 && task.stream < num_streams() &&
         (task.link == kNoLink || (task.link >= 0 && task.link < num_links())) &&
         (task.route == kNoRoute || (task.route >= 0 && task.route < num_routes())) &&
         task.pool >= 0 && task.pool < num_pools() && task.name < names_.size() &&
         task.category < names_.size() && task.duration >= SimTime::Zero() &&
         task.alloc_at_start_bytes >= 0 && task.free_at_end_bytes >= 0;
}

TaskId TaskGraph::AddMalformedTask(const Task& task) {
  const TaskId id = num_tasks();
  auto check = [&](bool ok, const char* problem) {
    if (!ok) RecordError("task " + std::to_string(id) + ": " + problem);
    return ok;
  };
  Task stored = task;
  if (!check(task.stream >= 0 && task.stream < num_streams(),
             "unknown stream; add it with AddStream() first")) {
    // Keep the graph well-formed so that accessors stay safe; the recorded error already makes
    // Validate() and Simulate() refuse it.
    if (num_streams() == 0) AddStream(0, "invalid");
    stored.stream = 0;
  }
  if (!check(task.link == kNoLink || (task.link >= 0 && task.link < num_links()),
             "unknown link; add it with AddLink() first")) {
    stored.link = kNoLink;
  }
  if (!check(task.route == kNoRoute || (task.route >= 0 && task.route < num_routes()),
             "unknown route; add it with AddRoute() first")) {
    stored.route = kNoRoute;
  }
  if (!check(task.pool >= 0 && task.pool < num_pools(), "unknown memory pool")) {
    stored.pool = kDefaultPool;
  }
  if (!check(task.name < names_.size() && task.category < names_.size(),
             "unknown name id; get it from Intern()")) {
    stored.name = stored.category = kEmptyName;
  }
  check(task.duration >= SimTime::Zero(), "negative duration");
  check(task.alloc_at_start_bytes >= 0 && task.free_at_end_bytes >= 0,
        "negative alloc_at_start_bytes or free_at_end_bytes");
  tasks_.push_back(stored);
  group_of_.push_back(kNoGroup);
  return id;
}

void TaskGraph::AddDependency(TaskId before, TaskId after) {
  if (!IsTask(before) || !IsTask(after)) {
    RecordError("dependency " + std::to_string(before) + " -> " + std::to_string(after) +
                ": unknown task id (the graph has " + std::to_string(num_tasks()) + " tasks)");
    return;
  }
  if (before == after) {
    RecordError(DescribeTask(before) + " depends on itself");
    return;
  }
  dependencies_.push_back({before, after});
}

void TaskGraph::SetSmUse(TaskId id, SmUse use) {
  if (!IsTask(id)) {
    RecordError("SetSmUse: unknown task id " + std::to_string(id) + " (the graph has " +
                std::to_string(num_tasks()) + " tasks)");
    return;
  }
  // Written so that NaN fails too.
  if (!(use.holds >= 0 && use.holds < 1)) {
    RecordError(DescribeTask(id) + ": holds a share of " + std::to_string(use.holds) +
                " of its GPU's SMs; a share is in [0, 1)");
    return;
  }
  if (!(use.hbm >= 0 && use.hbm < 1)) {
    RecordError(DescribeTask(id) + ": holds a share of " + std::to_string(use.hbm) +
                " of its GPU's HBM bandwidth; a share is in [0, 1)");
    return;
  }
  if (!(use.memory >= 0 && use.memory <= 1)) {
    RecordError(DescribeTask(id) + ": spends a share of " + std::to_string(use.memory) +
                " of its time in memory-bound kernels; a share is in [0, 1]");
    return;
  }
  if (use.Holds() && use.yields) {
    RecordError(DescribeTask(id) + ": both holds SMs and yields them; a task is one or the other");
    return;
  }
  if (sm_use_.size() <= static_cast<size_t>(id)) sm_use_.resize(static_cast<size_t>(id) + 1);
  sm_use_[id] = use;
  holds_sms_ = holds_sms_ || use.Holds();
}

GroupId TaskGraph::AddCollective(std::span<const TaskId> members) {
  const std::string what = "collective " + std::to_string(num_groups());
  if (members.empty()) {
    RecordError(what + " has no members");
    return kNoGroup;
  }
  std::vector<std::pair<StreamId, TaskId>> by_stream;
  by_stream.reserve(members.size());
  for (TaskId member : members) {
    if (!IsTask(member)) {
      RecordError(what + ": unknown task id " + std::to_string(member));
      return kNoGroup;
    }
    if (group_of_[member] != kNoGroup) {
      RecordError(what + ": " + DescribeTask(member) + " is already in collective " +
                  std::to_string(group_of_[member]));
      return kNoGroup;
    }
    by_stream.emplace_back(tasks_[member].stream, member);
  }
  std::sort(by_stream.begin(), by_stream.end());
  for (size_t i = 1; i < by_stream.size(); ++i) {
    if (by_stream[i].first == by_stream[i - 1].first) {
      RecordError(what + ": " + DescribeTask(by_stream[i - 1].second) + " and " +
                  DescribeTask(by_stream[i].second) +
                  " share a stream, so the second could never start with the first");
      return kNoGroup;
    }
  }
  const GroupId group = num_groups();
  for (TaskId member : members) {
    group_of_[member] = group;
    group_members_.push_back(member);
  }
  group_offsets_.push_back(static_cast<int32_t>(group_members_.size()));
  return group;
}

void TaskGraph::AddMemoryEvent(TaskId task, MemoryPhase phase, PoolId pool, int64_t delta_bytes) {
  if (!IsTask(task) || pool < 0 || pool >= num_pools()) {
    RecordError("memory event on task " + std::to_string(task) + ", pool " + std::to_string(pool) +
                ": unknown task or pool");
    return;
  }
  memory_events_.push_back({task, phase, pool, delta_bytes});
}

void TaskGraph::Reserve(int32_t tasks, int32_t dependencies) {
  tasks_.reserve(tasks);
  group_of_.reserve(tasks);
  dependencies_.reserve(dependencies);
}

std::string TaskGraph::DescribeTask(TaskId id) const {
  if (!IsTask(id)) return "task " + std::to_string(id) + " (unknown)";
  const Task& t = tasks_[id];
  std::string text = "'";
  text += Name(t.name);
  text += "' (task " + std::to_string(id) + ", rank " + std::to_string(stream_rank_[t.stream]) +
          " stream '";
  text += Name(stream_name_[t.stream]);
  text += "')";
  return text;
}

void TaskGraph::RecordError(std::string message) {
  if (build_status_.ok()) {
    build_status_ = Status::InvalidArgument("task graph: " + std::move(message));
  }
}

}  // namespace loom
