#include "exec/exec_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace loom {
namespace {

// The CSR lists of |pairs| (task, item), grouped by task.
void FillCsr(int32_t tasks, std::vector<std::pair<TaskId, TaskId>>& pairs,
             std::vector<int32_t>& offsets, std::vector<TaskId>& items) {
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  offsets.assign(static_cast<size_t>(tasks) + 1, 0);
  for (const auto& [task, item] : pairs) ++offsets[task + 1];
  for (int32_t t = 0; t < tasks; ++t) offsets[t + 1] += offsets[t];
  items.clear();
  for (const auto& [task, item] : pairs) items.push_back(item);
}

}  // namespace

Status CheckWorldSize(const TaskGraph& graph, int32_t world) {
  if (world == graph.num_ranks()) return Status::Ok();
  const std::string n = std::to_string(graph.num_ranks());
  return Status::InvalidArgument(
      "the plan's rank programs are for " + n + " ranks, but " + std::to_string(world) +
      " processes run it; launch one process per rank: mpirun -np " + n + " loom validate ...");
}

Result<ExecPlan> PlanExecution(const TaskGraph& graph, int32_t world) {
  LOOM_RETURN_IF_ERROR(graph.build_status());
  if (Status valid = graph.Validate(); !valid.ok()) {
    return Status::InvalidArgument("the plan's rank programs would deadlock, so nothing was run: " +
                                   valid.message());
  }
  LOOM_RETURN_IF_ERROR(CheckWorldSize(graph, world));
  ExecPlan plan;
  plan.graph_ = &graph;
  const int32_t tasks = graph.num_tasks();
  plan.ranks_.resize(static_cast<size_t>(graph.num_ranks()));
  std::vector<int32_t> stream_slot(static_cast<size_t>(graph.num_streams()));
  for (int32_t r = 0; r < graph.num_ranks(); ++r) plan.ranks_[r].rank = r;
  for (StreamId s = 0; s < graph.num_streams(); ++s) {
    RankProgram& program = plan.ranks_[graph.stream_rank(s)];
    stream_slot[s] = static_cast<int32_t>(program.streams.size());
    program.streams.push_back(s);
    program.stream_tasks.emplace_back();
  }
  for (TaskId t = 0; t < tasks; ++t) {
    const StreamId s = graph.task(t).stream;
    plan.ranks_[graph.stream_rank(s)].stream_tasks[stream_slot[s]].push_back(t);
  }
  for (const RankProgram& program : plan.ranks_) {
    bool any = false;
    for (const auto& list : program.stream_tasks) any = any || !list.empty();
    if (!any) {
      return Status::InvalidArgument(
          "rank " + std::to_string(program.rank) +
          " has no tasks: its process would have nothing to run; the plan file is damaged");
    }
  }

  plan.local_waits_.assign(static_cast<size_t>(tasks), 0);
  plan.remote_waits_.assign(static_cast<size_t>(tasks), 0);
  std::vector<std::pair<TaskId, TaskId>> local, remote;
  for (const Dependency& d : graph.dependencies()) {
    const Task& before = graph.task(d.before);
    const Task& after = graph.task(d.after);
    if (before.stream == after.stream)
      continue;  // the stream's own order (Validate: before < after)
    if (graph.rank_of(d.before) == graph.rank_of(d.after)) {
      local.emplace_back(d.before, d.after);
      ++plan.local_waits_[d.after];
    } else {
      remote.emplace_back(d.before, d.after);
      ++plan.remote_waits_[d.after];
    }
  }
  FillCsr(tasks, local, plan.local_succ_.offsets, plan.local_succ_.items);
  FillCsr(tasks, remote, plan.remote_succ_.offsets, plan.remote_succ_.items);

  std::map<std::pair<std::vector<int32_t>, NameId>, int32_t> communicator_index;
  for (GroupId g = 0; g < graph.num_groups(); ++g) {
    std::vector<int32_t> ranks;
    for (TaskId member : graph.group_members(g)) ranks.push_back(graph.rank_of(member));
    std::sort(ranks.begin(), ranks.end());
    if (auto twice = std::adjacent_find(ranks.begin(), ranks.end()); twice != ranks.end()) {
      return Status::InvalidArgument("collective of " +
                                     graph.DescribeTask(graph.group_members(g)[0]) +
                                     " has two members on rank " + std::to_string(*twice) +
                                     ": a rank joins a collective once");
    }
    const NameId stream_name = graph.stream_name(graph.task(graph.group_members(g)[0]).stream);
    for (TaskId member : graph.group_members(g)) {
      const NameId other = graph.stream_name(graph.task(member).stream);
      if (other != stream_name) {
        return Status::InvalidArgument(
            "collective of " + graph.DescribeTask(member) + " has members on streams '" +
            std::string(graph.Name(stream_name)) + "' and '" + std::string(graph.Name(other)) +
            "': one communicator cannot keep the order of both");
      }
    }
    auto [it, added] = communicator_index.try_emplace(
        {ranks, stream_name}, static_cast<int32_t>(plan.communicators_.size()));
    if (added) plan.communicators_.push_back({std::move(ranks), stream_name});
    plan.group_comm_.push_back(it->second);
  }
  return plan;
}

}  // namespace loom
