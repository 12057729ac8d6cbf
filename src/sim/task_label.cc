#include "sim/task_label.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace loom {
namespace {

bool HasVirtualStage(WorkKind kind) {
  return IsPassWork(kind) || kind == WorkKind::kTransfer || kind == WorkKind::kGradReduce;
}

// The tasks MicroBatchesOf counts: one per micro-batch and pass (or a fixed number, like a host
// issue's lead and rest), never a variable number per pass as ZeRO-3's layer gathers are.
bool CountedPerMicroBatch(WorkKind kind) {
  return kind == WorkKind::kPass || kind == WorkKind::kTpComm || kind == WorkKind::kRingSend ||
         kind == WorkKind::kTransfer || kind == WorkKind::kHost;
}

// The task after |task| on its stream, or -1: a stream runs its tasks in the order they were added.
TaskId NextOnStream(const TaskGraph& g, TaskId task) {
  for (TaskId next = task + 1; next < g.num_tasks(); ++next) {
    if (g.task(next).stream == g.task(task).stream) return next;
  }
  return -1;
}

std::string Fraction(int32_t part, int32_t parts) {
  return parts > 1 ? " " + std::to_string(part + 1) + "/" + std::to_string(parts) : "";
}

}  // namespace

bool IsPassWork(WorkKind kind) {
  return kind == WorkKind::kPass || kind == WorkKind::kTpComm || kind == WorkKind::kRingSend ||
         kind == WorkKind::kHost;
}

std::vector<int32_t> ChunkOfVirtualStages(const PipelineSchedule& schedule) {
  std::vector<int32_t> chunk_of(static_cast<size_t>(schedule.VirtualStages()));
  for (int32_t v = 0; v < schedule.VirtualStages(); ++v) chunk_of[v] = schedule.Place(v).chunk;
  return chunk_of;
}

std::vector<int32_t> ChunkOfVirtualStages(const StepGraph& step) {
  const TaskGraph& g = step.graph;
  std::map<int32_t, std::vector<int32_t>> by_rank;  // rank -> the virtual stages it runs
  int32_t virtual_stages = 0;
  for (TaskId t = 0; t < g.num_tasks() && static_cast<size_t>(t) < step.work.size(); ++t) {
    if (step.work[t].kind != WorkKind::kPass || step.work[t].index < 0) continue;
    by_rank[g.rank_of(t)].push_back(step.work[t].index);
    virtual_stages = std::max(virtual_stages, step.work[t].index + 1);
  }
  std::vector<int32_t> chunk_of(static_cast<size_t>(virtual_stages), -1);
  for (auto& [rank, stages] : by_rank) {
    std::sort(stages.begin(), stages.end());
    stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
    for (size_t c = 0; c < stages.size(); ++c) chunk_of[stages[c]] = static_cast<int32_t>(c);
  }
  return chunk_of;
}

std::vector<int32_t> MicroBatchesOf(const StepGraph& step) {
  const TaskGraph& g = step.graph;
  if (static_cast<int32_t>(step.micro_batch.size()) == g.num_tasks()) return step.micro_batch;
  std::vector<int32_t> micro_batches(static_cast<size_t>(g.num_tasks()), -1);
  if (static_cast<int32_t>(step.work.size()) != g.num_tasks()) return micro_batches;
  // A pass cut into parts (its chunk's last backward, cut at the gradient buckets) starts at its
  // part 0: count the starts.
  using Key = std::tuple<StreamId, NameId, NameId, WorkKind, Pass, int32_t>;
  std::map<Key, std::vector<TaskId>> runs;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const TaskWork& w = step.work[t];
    if (!CountedPerMicroBatch(w.kind) || w.index < 0) continue;
    const Task& task = g.task(t);
    runs[Key{task.stream, task.name, task.category, w.kind, w.pass, w.index}].push_back(t);
  }
  const auto starts = [&](const std::vector<TaskId>& tasks) {
    return std::count_if(tasks.begin(), tasks.end(),
                         [&](TaskId t) { return step.work[t].part == 0; });
  };
  // The micro-batches of the step: the most forwards of one chunk on one stream.
  int64_t count = 0;
  for (const auto& [key, tasks] : runs) {
    if (std::get<3>(key) == WorkKind::kPass && std::get<4>(key) == Pass::kF)
      count = std::max(count, starts(tasks));
  }
  for (const auto& [key, tasks] : runs) {
    const int64_t total = starts(tasks);
    if (count == 0 || total % count != 0) continue;  // not one run per micro-batch: unknown
    const int64_t per_micro_batch = total / count;
    int64_t seen = 0;
    for (TaskId t : tasks) {
      if (step.work[t].part == 0) ++seen;
      if (seen > 0) micro_batches[t] = static_cast<int32_t>((seen - 1) / per_micro_batch);
    }
  }
  return micro_batches;
}

TaskPlace PlaceOfTask(const StepGraph& step, const std::vector<int32_t>& chunk_of,
                      const std::vector<int32_t>& micro_batches, TaskId task) {
  TaskPlace place;
  const size_t t = static_cast<size_t>(task);
  if (t < micro_batches.size()) place.micro_batch = micro_batches[t];
  if (t >= step.work.size()) return place;
  const TaskWork& work = step.work[t];
  // The zero-length marker that starts a pass with hidden tp collectives (step_builder.cc, AddPass)
  // has no work of its own: it is placed as the pass it starts, the next task on its stream.
  if (work.kind == WorkKind::kNone && step.graph.task(task).duration == SimTime()) {
    const TaskId next = NextOnStream(step.graph, task);
    if (next >= 0 && static_cast<size_t>(next) < step.work.size() &&
        step.work[next].kind == WorkKind::kPass) {
      return PlaceOfTask(step, chunk_of, micro_batches, next);
    }
  }
  place.kind = work.kind;
  place.pass = work.pass;
  // A host task without a micro-batch issues a stage's optimizer: its index is the stage.
  const bool host_optimizer = work.kind == WorkKind::kHost && place.micro_batch < 0;
  if (HasVirtualStage(work.kind) && !host_optimizer && work.index >= 0 &&
      static_cast<size_t>(work.index) < chunk_of.size()) {
    place.virtual_stage = work.index;
    place.chunk = chunk_of[work.index];
  }
  return place;
}

std::string TaskLabel(const StepGraph& step, const TaskPlace& place, TaskId task) {
  const std::string name(step.graph.Name(step.graph.task(task).name));
  const std::string mb = place.micro_batch >= 0 ? " mb" + std::to_string(place.micro_batch) : "";
  const std::string chunk = place.chunk >= 0 ? " c" + std::to_string(place.chunk) : "";
  const TaskWork work = static_cast<size_t>(task) < step.work.size() ? step.work[task] : TaskWork{};
  switch (place.virtual_stage < 0 ? WorkKind::kNone : place.kind) {
    case WorkKind::kPass:
    case WorkKind::kTpComm:
    case WorkKind::kHost:
      return std::string(kPassNames.Name(place.pass)) + mb + chunk +
             Fraction(work.part, work.parts);
    case WorkKind::kTransfer:
      return "send " + std::string(kPassNames.Name(place.pass)) + mb + chunk;
    case WorkKind::kRingSend:
      return name + mb + chunk;
    case WorkKind::kGradReduce:
      return name + chunk + Fraction(work.part, work.parts);
    default:
      break;
  }
  if (work.kind == WorkKind::kParamGather) return name + Fraction(work.part, work.parts);
  return name + mb;
}

}  // namespace loom
