#include "exec/executor.h"

#include <algorithm>
#include <string>

namespace loom {
namespace {

// One rank's progress through its program.
class RankRun {
 public:
  RankRun(const ExecPlan& plan, int32_t rank, TaskBackend& backend)
      : plan_(plan),
        graph_(plan.graph()),
        program_(plan.ranks()[rank]),
        rank_(rank),
        backend_(backend) {
    waits_.assign(static_cast<size_t>(graph_.num_tasks()), 0);
    next_.assign(program_.streams.size(), 0);
    running_.assign(program_.streams.size(), false);
    for (const auto& list : program_.stream_tasks) {
      for (TaskId t : list) {
        waits_[t] = plan.local_waits(t) + plan.remote_waits(t);
        times_.tasks.push_back(t);
        ++remaining_;
      }
    }
    std::sort(times_.tasks.begin(), times_.tasks.end());
    times_.start.assign(times_.tasks.size(), SimTime());
    times_.end.assign(times_.tasks.size(), SimTime());
  }

  Result<RankTimes> Run(const RunOptions& options) {
    std::vector<TaskEnd> ended;
    std::vector<TaskId> notified;
    while (remaining_ > 0) {
      LOOM_RETURN_IF_ERROR(StartReady());
      ended.clear();
      notified.clear();
      LOOM_RETURN_IF_ERROR(backend_.Poll(&ended, &notified));
      for (const TaskEnd& e : ended) LOOM_RETURN_IF_ERROR(End(e));
      for (TaskId t : notified) Arrived(t);
      if (ended.empty() && notified.empty() && backend_.Now() > options.timeout)
        return Stuck(options.timeout);
    }
    return std::move(times_);
  }

 private:
  size_t Slot(TaskId t) const {
    return static_cast<size_t>(std::lower_bound(times_.tasks.begin(), times_.tasks.end(), t) -
                               times_.tasks.begin());
  }

  // Starts, in task id order, every stream head whose waits are over.
  Status StartReady() {
    ready_.clear();
    for (size_t s = 0; s < program_.streams.size(); ++s) {
      const auto& list = program_.stream_tasks[s];
      if (!running_[s] && next_[s] < list.size() && waits_[list[next_[s]]] == 0)
        ready_.push_back(s);
    }
    std::sort(ready_.begin(), ready_.end(), [&](size_t a, size_t b) {
      return program_.stream_tasks[a][next_[a]] < program_.stream_tasks[b][next_[b]];
    });
    for (size_t s : ready_) {
      const TaskId t = program_.stream_tasks[s][next_[s]];
      running_[s] = true;
      times_.start[Slot(t)] = backend_.Now();
      const GroupId group = graph_.group_of(t);
      LOOM_RETURN_IF_ERROR(group == kNoGroup
                               ? backend_.Start(t)
                               : backend_.StartCollective(t, group, plan_.communicator_of(group)));
    }
    return Status::Ok();
  }

  Status End(const TaskEnd& e) {
    times_.end[Slot(e.task)] = e.end;
    const size_t s = StreamSlot(e.task);
    running_[s] = false;
    ++next_[s];
    --remaining_;
    for (TaskId after : plan_.local_successors(e.task)) --waits_[after];
    notified_ranks_.clear();
    for (TaskId after : plan_.remote_successors(e.task))
      notified_ranks_.push_back(graph_.rank_of(after));
    std::sort(notified_ranks_.begin(), notified_ranks_.end());
    notified_ranks_.erase(std::unique(notified_ranks_.begin(), notified_ranks_.end()),
                          notified_ranks_.end());
    for (int32_t to : notified_ranks_) LOOM_RETURN_IF_ERROR(backend_.Notify(e.task, to));
    return Status::Ok();
  }

  void Arrived(TaskId before) {
    for (TaskId after : plan_.remote_successors(before)) {
      if (graph_.rank_of(after) == rank_) --waits_[after];
    }
  }

  size_t StreamSlot(TaskId t) const {
    const StreamId stream = graph_.task(t).stream;
    return static_cast<size_t>(std::find(program_.streams.begin(), program_.streams.end(), stream) -
                               program_.streams.begin());
  }

  // DeadlineExceeded naming the first stream heads that never ran, and what they wait for.
  Status Stuck(SimTime timeout) const {
    std::string waiting;
    int32_t listed = 0;
    for (size_t s = 0; s < program_.streams.size() && listed < 4; ++s) {
      const auto& list = program_.stream_tasks[s];
      if (next_[s] >= list.size()) continue;
      const TaskId t = list[next_[s]];
      waiting +=
          "\n  " + graph_.DescribeTask(t) +
          (running_[s] ? ": started, never ended (a collective whose other members never came?)"
                       : ": waits for " + std::to_string(waits_.at(t)) + " dependencies");
      ++listed;
    }
    return Status::DeadlineExceeded(
        "rank " + std::to_string(rank_) + " did not finish its step within " +
        std::to_string(timeout.ToSeconds()) + " s; still waiting:" + waiting +
        "\nraise --timeout-s if the step is this long, or look at the other ranks' errors");
  }

  const ExecPlan& plan_;
  const TaskGraph& graph_;
  const RankProgram& program_;
  int32_t rank_;
  TaskBackend& backend_;
  std::vector<size_t> next_;
  std::vector<bool> running_;
  std::vector<int32_t> waits_;  // by task id; only this rank's entries are used
  int64_t remaining_ = 0;
  RankTimes times_;
  std::vector<size_t> ready_;
  std::vector<int32_t> notified_ranks_;
};

}  // namespace

Result<RankTimes> RunRankProgram(const ExecPlan& plan, int32_t rank, TaskBackend& backend,
                                 const RunOptions& options) {
  RankRun run(plan, rank, backend);
  return run.Run(options);
}

StepTimeline MeasuredTimeline(const TaskGraph& graph, const std::vector<RankTimes>& times) {
  StepTimeline timeline;
  const size_t n = static_cast<size_t>(graph.num_tasks());
  timeline.start.assign(n, SimTime());
  timeline.end.assign(n, SimTime());
  timeline.stream_busy.assign(static_cast<size_t>(graph.num_streams()), SimTime());
  for (const RankTimes& rank : times) {
    for (size_t i = 0; i < rank.tasks.size(); ++i) {
      const TaskId t = rank.tasks[i];
      timeline.start[t] = rank.start[i];
      timeline.end[t] = rank.end[i];
      timeline.stream_busy[graph.task(t).stream] += rank.end[i] - rank.start[i];
      timeline.makespan = Max(timeline.makespan, rank.end[i]);
    }
  }
  timeline.start_sequence = StartSequence(timeline.start);
  return timeline;
}

}  // namespace loom
