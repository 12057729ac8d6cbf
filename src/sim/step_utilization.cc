#include "sim/step_utilization.h"

#include <algorithm>

namespace loom {
namespace {

// Fills busy_s, tp_s and optimizer_s; returns the end of the last compute or tp task.
SimTime AddTaskTimes(const StepGraph& step, const StepTimeline& timeline, StepUtilization& u) {
  const TaskGraph& g = step.graph;
  SimTime pipeline_end;
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const Task& t = g.task(id);
    const int32_t rank = g.rank_of(id);
    if (rank >= step.stages) continue;
    const double ran_s = (timeline.end[id] - timeline.start[id]).ToSeconds();
    if (t.category == step.compute_category || t.category == step.tp_category) {
      u.busy_s[rank] += ran_s;
      if (t.category == step.tp_category) u.tp_s[rank] += ran_s;
      pipeline_end = Max(pipeline_end, timeline.end[id]);
    } else if (t.category == step.optimizer_category) {
      u.optimizer_s[rank] += ran_s;
    }
  }
  return pipeline_end;
}

// Fills host_wait_s and host_wait_after_s: the compute stream's idle time before each task whose
// host lead ended last among what it waited for.
void AddHostWaits(const StepGraph& step, const StepTimeline& timeline, SimTime span,
                  StepUtilization& u) {
  if (step.host_stream.empty()) return;
  const TaskGraph& g = step.graph;
  // The end of the task before each one on its stream.
  std::vector<SimTime> previous_end(static_cast<size_t>(g.num_tasks()));
  std::vector<SimTime> stream_end(static_cast<size_t>(g.num_streams()));
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const StreamId s = g.task(id).stream;
    previous_end[id] = stream_end[s];
    stream_end[s] = timeline.end[id];
  }
  for (const Dependency& d : g.dependencies()) {
    if (step.work[d.before].kind != WorkKind::kHost) continue;
    const int32_t rank = g.rank_of(d.after);
    if (rank >= step.stages || g.task(d.after).stream != step.compute_stream[rank]) continue;
    if (timeline.start[d.after] != timeline.end[d.before])
      continue;  // something else held it longer
    const double wait =
        std::max(0.0, (timeline.start[d.after] - previous_end[d.after]).ToSeconds());
    (timeline.start[d.after] >= span ? u.host_wait_after_s : u.host_wait_s)[rank] += wait;
  }
}

}  // namespace

StepUtilization MeasureUtilization(const StepGraph& step, const StepTimeline& timeline) {
  const TaskGraph& g = step.graph;
  StepUtilization u;
  const size_t stages = static_cast<size_t>(std::max(step.stages, 0));
  u.busy_s.assign(stages, 0);
  u.tp_s.assign(stages, 0);
  u.optimizer_s.assign(stages, 0);
  u.comm_wait_s.assign(stages, 0);
  u.host_wait_s.assign(stages, 0);
  u.host_wait_after_s.assign(stages, 0);
  u.bubble_s.assign(stages, 0);
  const SimTime span = AddTaskTimes(step, timeline, u);
  u.span_s = span.ToSeconds();
  AddHostWaits(step, timeline, span, u);
  // The compute stream's waits for ring transfers count as exposed communication, not bubble.
  for (const StepGraph::RingTransfer& ring : step.ring_transfers) {
    const int32_t rank = g.rank_of(ring.transfer);
    if (rank >= step.stages) continue;
    u.comm_wait_s[rank] +=
        std::max(0.0, (timeline.end[ring.transfer] - timeline.end[ring.beside]).ToSeconds());
  }
  const bool pipelined = step.stages > 1;
  double busy_sum = 0;
  for (int32_t s = 0; s < step.stages; ++s) {
    const double idle = std::max(0.0, u.span_s - u.busy_s[s] - u.comm_wait_s[s] - u.host_wait_s[s]);
    if (pipelined) {
      u.bubble_s[s] = idle;
    } else {
      u.comm_wait_s[s] += idle;
    }
    busy_sum += u.busy_s[s] + u.comm_wait_s[s] + u.host_wait_s[s];
  }
  u.bubble_fraction = u.span_s > 0 ? std::max(0.0, 1.0 - busy_sum / (u.span_s * step.stages)) : 0;
  return u;
}

}  // namespace loom
