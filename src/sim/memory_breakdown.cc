#include "sim/memory_breakdown.h"

#include <array>
#include <string>
#include <utility>

#include "sim/task_label.h"

namespace loom {
namespace {

// The item each of the step's named pools holds; any other pool (the graph's "default" one
// included) is kOther.
MemoryItem ItemOfPool(const StepGraph& step, PoolId pool) {
  const std::array<std::pair<PoolId, MemoryItem>, 8> named = {{
      {step.weights, MemoryItem::kWeights},
      {step.gradients, MemoryItem::kGradients},
      {step.optimizer_states, MemoryItem::kOptimizerStates},
      {step.activations, MemoryItem::kStashedActivations},
      {step.recompute, MemoryItem::kRecomputeBuffers},
      {step.logits, MemoryItem::kLogits},
      {step.gathered_weights, MemoryItem::kCommunicationBuffers},
      {step.model_states, MemoryItem::kModelStates},
  }};
  for (const auto& [id, item] : named) {
    if (id != kDefaultPool && id == pool) return item;
  }
  return MemoryItem::kOther;
}

// The items of |rank|'s peak, one per item kind the graph has a pool of, in MemoryItem order.
std::vector<MemoryItemBytes> Items(const StepGraph& step, const RankMemory& rank) {
  constexpr size_t kItems = static_cast<size_t>(MemoryItem::kOther) + 1;
  std::array<int64_t, kItems> bytes{};
  std::array<bool, kItems> present{};
  for (PoolId p = 0; p < step.graph.num_pools(); ++p) {
    const auto item = static_cast<size_t>(ItemOfPool(step, p));
    const int64_t held = rank.peak_bytes_by_pool[p];
    bytes[item] += held;
    // The default pool is in every graph: it is an item only when it holds something.
    present[item] = present[item] || p != kDefaultPool || held != 0;
  }
  std::vector<MemoryItemBytes> items;
  for (size_t i = 0; i < kItems; ++i) {
    if (present[i]) items.push_back({static_cast<MemoryItem>(i), bytes[i]});
  }
  return items;
}

// A zero-length task that starts a pass (the marker of a pass with hidden tp collectives) sets the
// peak with the allocation of the pass it starts: name the pass's kernels instead, the next task
// on its stream (a stream runs its tasks in the order they were added).
TaskId RunningTask(const StepGraph& step, const StepTimeline& timeline, TaskId task) {
  const TaskGraph& g = step.graph;
  if (task < 0 || static_cast<size_t>(task) >= step.work.size() ||
      step.work[task].kind != WorkKind::kNone || timeline.end[task] != timeline.start[task]) {
    return task;
  }
  for (TaskId next = task + 1; next < g.num_tasks(); ++next) {
    if (g.task(next).stream == g.task(task).stream) return next;
  }
  return task;
}

PeakTask DescribeTask(const StepGraph& step, const StepTimeline& timeline,
                      const PipelineSchedule& schedule, TaskId id) {
  PeakTask peak;
  peak.task = RunningTask(step, timeline, id);
  if (peak.task < 0) return peak;
  const TaskGraph& g = step.graph;
  const Task& t = g.task(peak.task);
  peak.name = std::string(g.Name(t.name));
  peak.stream = std::string(g.Name(g.stream_name(t.stream)));
  peak.start = timeline.start[peak.task];
  peak.end = timeline.end[peak.task];
  const TaskPlace place =
      PlaceOfTask(step, ChunkOfVirtualStages(schedule), step.micro_batch, peak.task);
  peak.micro_batch = place.micro_batch;
  peak.kind = place.kind;
  peak.pass = place.pass;
  if (IsPassWork(place.kind)) {
    peak.virtual_stage = place.virtual_stage;
    peak.chunk = place.chunk;
  }
  return peak;
}

}  // namespace

int64_t MemoryBreakdown::Bytes(MemoryItem item) const {
  int64_t bytes = 0;
  for (const MemoryItemBytes& i : items) {
    if (i.item == item) bytes += i.bytes;
  }
  return bytes;
}

std::vector<MemoryBreakdown> BreakDownMemory(const StepGraph& step, const StepTimeline& timeline,
                                             const MemoryReport& memory,
                                             const PipelineSchedule& schedule) {
  std::vector<MemoryBreakdown> stages;
  for (int32_t s = 0; s < step.stages && static_cast<size_t>(s) < memory.ranks.size(); ++s) {
    const RankMemory& rank = memory.ranks[s];
    MemoryBreakdown b;
    b.stage = s;
    b.rank = s;
    b.peak_bytes = rank.peak_bytes;
    b.peak_time = rank.peak_time;
    b.items = Items(step, rank);
    if (step.activations != kDefaultPool)
      b.stashed_micro_batches = rank.peak_buffers_by_pool[step.activations];
    b.peak_task = DescribeTask(step, timeline, schedule, rank.peak_task);
    stages.push_back(std::move(b));
  }
  return stages;
}

std::string DescribePeakTask(const PeakTask& task) {
  if (task.task < 0) return "none (the model states alone)";
  if (task.virtual_stage < 0) {
    const std::string of =
        task.micro_batch >= 0 ? " for micro-batch " + std::to_string(task.micro_batch) : "";
    return task.name + of + " (" + task.stream + " stream)";
  }
  std::string text(kPassNames.Name(task.pass));
  if (task.kind == WorkKind::kTpComm) text += "'s collectives";
  if (task.kind == WorkKind::kRingSend) text += "'s ring send";
  if (task.kind == WorkKind::kHost) text += "'s issue on the host";
  if (task.micro_batch >= 0) text += " of micro-batch " + std::to_string(task.micro_batch);
  text += task.micro_batch >= 0 ? ", " : " of ";
  text += "chunk " + std::to_string(task.chunk) + " (virtual stage " +
          std::to_string(task.virtual_stage) + ")";
  return text;
}

int32_t PeakStage(const std::vector<MemoryBreakdown>& stages) {
  int32_t peak = 0;
  for (size_t s = 1; s < stages.size(); ++s) {
    if (stages[s].peak_bytes > stages[peak].peak_bytes) peak = static_cast<int32_t>(s);
  }
  return peak;
}

}  // namespace loom
