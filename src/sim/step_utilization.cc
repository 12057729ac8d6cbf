#include "sim/step_utilization.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <vector>

namespace loom {
namespace {

// What an instant of a stage's step is, in order of precedence (StepUtilization).
enum Label : int { kCompute, kOptimizer, kTp, kCommWait, kHost, kLabels };

// An interval of a label starts or ends at a time, packed into one integer so that a stage's marks
// sort as integers (MeasureUtilization runs on every plan the planner simulates): the time in ns
// above 4 bits of label and start (1) or end (0). Times stay below 2^59 ns (kMaxStepSeconds).
using Mark = int64_t;
Mark MakeMark(SimTime at, int label, bool start) {
  return (at.nanos() << 4) | (label << 1) | (start ? 1 : 0);
}
SimTime MarkTime(Mark m) { return SimTime::FromNanos(m >> 4); }
int MarkLabel(Mark m) { return static_cast<int>((m >> 1) & 7); }
int MarkDelta(Mark m) { return (m & 1) != 0 ? +1 : -1; }

// Per stage and label: the marks of that label's intervals, in the order they were added (each
// source adds its intervals nearly in time order: a stream's tasks, the ring transfers).
using Marks = std::vector<std::array<std::vector<Mark>, kLabels>>;

void AddInterval(Marks& marks, int32_t stage, Label label, SimTime from, SimTime to) {
  if (!(from < to)) return;
  std::vector<Mark>& m = marks[stage][label];
  m.push_back(MakeMark(from, label, true));
  m.push_back(MakeMark(to, label, false));
}

// A stage's marks of every label in time order: each label's sorted (usually already), then
// merged.
std::vector<Mark> InTimeOrder(std::array<std::vector<Mark>, kLabels>& by_label) {
  std::vector<Mark> all, merged;
  for (std::vector<Mark>& m : by_label) {
    if (!std::is_sorted(m.begin(), m.end())) std::sort(m.begin(), m.end());
    merged.clear();
    merged.reserve(all.size() + m.size());
    std::merge(all.begin(), all.end(), m.begin(), m.end(), std::back_inserter(merged));
    all.swap(merged);
  }
  return all;
}

// The intervals of the tasks of the first replica: compute, tp collectives and optimizer tasks;
// returns the end of the last compute or tp task.
SimTime AddTaskIntervals(const StepGraph& step, const StepTimeline& timeline, Marks& marks) {
  const TaskGraph& g = step.graph;
  SimTime pipeline_end;
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const int32_t rank = g.rank_of(id);
    if (rank >= step.stages) continue;
    const NameId category = g.task(id).category;
    Label label;
    if (category == step.compute_category) {
      label = kCompute;
    } else if (category == step.tp_category) {
      label = kTp;
    } else if (category == step.optimizer_category) {
      label = kOptimizer;
    } else {
      continue;
    }
    AddInterval(marks, rank, label, timeline.start[id], timeline.end[id]);
    if (label != kOptimizer) pipeline_end = Max(pipeline_end, timeline.end[id]);
  }
  return pipeline_end;
}

// The compute stream's waits for the host thread: before each task of a compute stream that its
// host issue was the last thing to let start, from the end of the stream's previous task, or from
// when the host thread last started issuing without a break if that is later. Before that the host
// sat at a synchronisation point, waiting for the GPU work the stream was waiting for too.
void AddHostIntervals(const StepGraph& step, const StepTimeline& timeline, Marks& marks) {
  if (step.host_stream.empty()) return;
  const TaskGraph& g = step.graph;
  const size_t tasks = static_cast<size_t>(g.num_tasks());
  // Per task: the end of the task before it on its stream, and where a run of back-to-back tasks
  // of its stream that ends with it began.
  std::vector<SimTime> previous_end(tasks);
  std::vector<SimTime> run_start(tasks);
  std::vector<TaskId> last(static_cast<size_t>(g.num_streams()), -1);
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const StreamId s = g.task(id).stream;
    const TaskId before = last[s];
    previous_end[id] = before < 0 ? SimTime() : timeline.end[before];
    run_start[id] = before >= 0 && timeline.end[before] == timeline.start[id] ? run_start[before]
                                                                              : timeline.start[id];
    last[s] = id;
  }
  for (const Dependency& d : g.dependencies()) {
    if (step.work[d.before].kind != WorkKind::kHost) continue;
    const int32_t rank = g.rank_of(d.after);
    if (rank >= step.stages || g.task(d.after).stream != step.compute_stream[rank]) continue;
    if (timeline.start[d.after] != timeline.end[d.before]) continue;  // something else held it
    AddInterval(marks, rank, kHost, Max(previous_end[d.after], run_start[d.before]),
                timeline.start[d.after]);
  }
}

}  // namespace

StepUtilization MeasureUtilization(const StepGraph& step, const StepTimeline& timeline) {
  const TaskGraph& g = step.graph;
  StepUtilization u;
  const int32_t stages = std::max(step.stages, 0);
  for (std::vector<double>* v : {&u.compute_s, &u.tp_s, &u.busy_s, &u.optimizer_s, &u.comm_wait_s,
                                 &u.host_wait_s, &u.host_wait_after_s, &u.bubble_s, &u.tail_s}) {
    v->assign(static_cast<size_t>(stages), 0.0);
  }
  Marks marks(static_cast<size_t>(stages));
  const SimTime span = AddTaskIntervals(step, timeline, marks);
  AddHostIntervals(step, timeline, marks);
  // The compute stream's waits for ring transfers: the time a transfer ends after its block.
  for (const StepGraph::RingTransfer& ring : step.ring_transfers) {
    const int32_t rank = g.rank_of(ring.transfer);
    if (rank >= step.stages) continue;
    AddInterval(marks, rank, kCommWait, timeline.end[ring.beside], timeline.end[ring.transfer]);
  }
  u.span_s = span.ToSeconds();
  const SimTime makespan = Max(timeline.makespan, span);
  u.step_s = makespan.ToSeconds();
  const bool pipelined = step.stages > 1;
  for (int32_t s = 0; s < stages; ++s) {
    // Books [from, to) to what holds there (kLabels: nothing), split at the span.
    const auto book = [&](int label, SimTime from, SimTime to) {
      const double before = (std::min(to, span) - std::min(from, span)).ToSeconds();
      const double after = (Max(to, span) - Max(from, span)).ToSeconds();
      switch (label) {
        case kCompute:
          u.compute_s[s] += before + after;
          break;
        case kTp:
          u.tp_s[s] += before + after;
          break;
        case kOptimizer:
          u.optimizer_s[s] += before + after;
          break;
        case kCommWait:
          u.comm_wait_s[s] += before + after;
          break;
        case kHost:
          u.host_wait_s[s] += before;
          u.host_wait_after_s[s] += after;
          break;
        default:
          (pipelined ? u.bubble_s : u.comm_wait_s)[s] += before;
          u.tail_s[s] += after;
      }
    };
    const std::vector<Mark> m = InTimeOrder(marks[s]);
    std::array<int, kLabels> open{};
    SimTime at;
    const auto holding = [&] {
      int label = 0;
      while (label < kLabels && open[label] == 0) ++label;
      return label;
    };
    for (size_t i = 0; i < m.size();) {
      const SimTime next = MarkTime(m[i]);
      book(holding(), at, next);
      at = next;
      for (; i < m.size() && MarkTime(m[i]) == at; ++i) open[MarkLabel(m[i])] += MarkDelta(m[i]);
    }
    book(holding(), at, makespan);
    u.busy_s[s] = u.compute_s[s] + u.tp_s[s];
  }
  double bubble = 0;
  for (int32_t s = 0; s < stages; ++s) bubble += u.bubble_s[s];
  u.bubble_fraction = u.span_s > 0 && stages > 0 ? bubble / (u.span_s * stages) : 0;
  return u;
}

}  // namespace loom
