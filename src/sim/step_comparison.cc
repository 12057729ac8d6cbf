#include "sim/step_comparison.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "program/step_timeline.h"
#include "sim/memory_tracker.h"
#include "sim/step_utilization.h"

namespace loom {
namespace {

constexpr size_t kMaxExamples = 5;

Comparison Compare(double predicted, double measured) { return CompareValues(predicted, measured); }

// OK if |timeline| has one start and end per task of |graph|, start_sequence sized likewise or
// empty, and no task ending before it starts. |what| names the timeline in the message.
Status CheckTimeline(const TaskGraph& graph, const StepTimeline& timeline,
                     const std::string& what) {
  const size_t tasks = static_cast<size_t>(graph.num_tasks());
  if (timeline.start.size() != tasks || timeline.end.size() != tasks ||
      (!timeline.start_sequence.empty() && timeline.start_sequence.size() != tasks)) {
    return Status::InvalidArgument(
        what + ": the timeline has " + std::to_string(timeline.start.size()) + " start times, " +
        std::to_string(timeline.end.size()) + " end times and " +
        std::to_string(timeline.start_sequence.size()) + " start sequence numbers for a step of " +
        std::to_string(tasks) + " tasks; record one of each per task of the plan's step");
  }
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    if (timeline.end[id] < timeline.start[id]) {
      return Status::InvalidArgument(what + ": " + graph.DescribeTask(id) + " ends at " +
                                     FormatMicros(timeline.end[id]) + " us, before it starts at " +
                                     FormatMicros(timeline.start[id]) + " us");
    }
  }
  return Status::Ok();
}

// The index of the median step by makespan: the lower middle one for an even count, ties to the
// earlier step.
size_t MedianStep(std::span<const StepTimeline> measured) {
  std::vector<size_t> order(measured.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return measured[a].makespan < measured[b].makespan; });
  return order[(order.size() - 1) / 2];
}

std::vector<ClassComparison> CompareClasses(const TaskGraph& graph, const StepTimeline& predicted,
                                            const StepTimeline& measured) {
  struct Sums {
    int64_t tasks = 0;
    double predicted_s = 0, measured_s = 0;
  };
  std::vector<NameId> order;
  std::vector<Sums> sums;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const NameId category = graph.task(id).category;
    auto it = std::find(order.begin(), order.end(), category);
    if (it == order.end()) {
      order.push_back(category);
      sums.emplace_back();
      it = order.end() - 1;
    }
    Sums& s = sums[it - order.begin()];
    ++s.tasks;
    s.predicted_s += (predicted.end[id] - predicted.start[id]).ToSeconds();
    s.measured_s += (measured.end[id] - measured.start[id]).ToSeconds();
  }
  std::vector<ClassComparison> classes;
  for (size_t i = 0; i < order.size(); ++i) {
    ClassComparison c;
    c.name = order[i] == kEmptyName ? "other" : std::string(graph.Name(order[i]));
    c.tasks = sums[i].tasks;
    c.seconds = Compare(sums[i].predicted_s, sums[i].measured_s);
    classes.push_back(std::move(c));
  }
  return classes;
}

// |timeline| with start_sequence filled from the start times (ties to the lower task id) if it
// has none.
StepTimeline WithStartSequence(const StepTimeline& timeline) {
  StepTimeline out = timeline;
  if (out.start_sequence.empty()) out.start_sequence = StartSequence(out.start);
  return out;
}

// The highest peak over the ranks of |timeline|'s memory replay.
Result<int64_t> PeakBytes(const TaskGraph& graph, const StepTimeline& timeline,
                          std::span<const MemoryBaseline> baselines, const std::string& what) {
  Result<MemoryReport> report = TrackMemory(graph, WithStartSequence(timeline), baselines);
  if (!report.ok()) return Status::InvalidArgument(what + ": " + report.status().message());
  int64_t peak = 0;
  for (const RankMemory& rank : report->ranks) peak = std::max(peak, rank.peak_bytes);
  return peak;
}

Result<int64_t> MeasuredPeakBytes(const TaskGraph& graph, const StepTimeline& measured,
                                  std::span<const MemoryBaseline> baselines,
                                  const std::optional<std::vector<int64_t>>& measured_peak_bytes,
                                  const std::string& what) {
  if (!measured_peak_bytes.has_value()) return PeakBytes(graph, measured, baselines, what);
  if (measured_peak_bytes->size() != static_cast<size_t>(graph.num_ranks())) {
    return Status::InvalidArgument(
        "measured peak memory: " + std::to_string(measured_peak_bytes->size()) +
        " values for a step of " + std::to_string(graph.num_ranks()) + " ranks; give one per rank");
  }
  int64_t peak = 0;
  for (int64_t bytes : *measured_peak_bytes) peak = std::max(peak, bytes);
  return peak;
}

void AddExample(OrderCheck& check, std::string example) {
  if (check.examples.size() < kMaxExamples) check.examples.push_back(std::move(example));
}

std::string At(SimTime time) { return FormatMicros(time) + " us"; }

// Counts a violation of "|before| ends before |after| starts" in |measured|.
void CheckDependency(const TaskGraph& graph, const StepTimeline& measured, TaskId before,
                     TaskId after, std::string_view kind, OrderCheck& check) {
  if (measured.start[after] >= measured.end[before]) return;
  ++check.dependency_violations;
  AddExample(check, std::string(kind) + " violated: " + graph.DescribeTask(after) + " started at " +
                        At(measured.start[after]) + ", before " + graph.DescribeTask(before) +
                        " ended at " + At(measured.end[before]));
}

void CheckDependencies(const TaskGraph& graph, const StepTimeline& measured, OrderCheck& check) {
  std::vector<TaskId> last_on_stream(static_cast<size_t>(graph.num_streams()), -1);
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    TaskId& last = last_on_stream[graph.task(id).stream];
    if (last >= 0) CheckDependency(graph, measured, last, id, "stream order", check);
    last = id;
  }
  for (const Dependency& d : graph.dependencies()) {
    CheckDependency(graph, measured, d.before, d.after, "dependency", check);
  }
}

void CheckRendezvous(const TaskGraph& graph, const StepTimeline& measured, OrderCheck& check) {
  for (GroupId group = 0; group < graph.num_groups(); ++group) {
    std::span<const TaskId> members = graph.group_members(group);
    TaskId last_start = members[0], first_end = members[0];
    for (TaskId member : members) {
      if (measured.start[member] > measured.start[last_start]) last_start = member;
      if (measured.end[member] < measured.end[first_end]) first_end = member;
    }
    if (measured.start[last_start] <= measured.end[first_end]) continue;
    ++check.rendezvous_violations;
    AddExample(check, "collective members did not overlap: " + graph.DescribeTask(first_end) +
                          " ended at " + At(measured.end[first_end]) + ", before " +
                          graph.DescribeTask(last_start) + " started at " +
                          At(measured.start[last_start]));
  }
}

struct PairCount {
  int64_t pairs = 0;
  int64_t inversions = 0;
};

// Pairs (a, b) of |tasks| with predicted start(b) - start(a) >= |min_gap|, and those of them
// whose measured starts are in the opposite order (strictly).
// REQUIRES: |tasks| sorted by predicted start; min_gap > 0.
PairCount CountOrderedPairs(std::span<const TaskId> tasks, const StepTimeline& predicted,
                            const StepTimeline& measured, SimTime min_gap) {
  std::vector<SimTime> values;
  for (TaskId id : tasks) values.push_back(measured.start[id]);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // A Fenwick tree over the measured starts (1-based): how many counted tasks started at or before.
  std::vector<int64_t> tree(values.size() + 1, 0);
  const auto position = [&](TaskId id) {
    return static_cast<size_t>(std::lower_bound(values.begin(), values.end(), measured.start[id]) -
                               values.begin()) +
           1;
  };
  PairCount count;
  int64_t added = 0;
  size_t next = 0;
  for (TaskId b : tasks) {
    for (; next < tasks.size() && predicted.start[tasks[next]] + min_gap <= predicted.start[b];
         ++next) {
      for (size_t i = position(tasks[next]); i < tree.size(); i += i & (~i + 1)) ++tree[i];
      ++added;
    }
    int64_t not_after = 0;  // counted tasks that started at or before b
    for (size_t i = position(b); i > 0; i -= i & (~i + 1)) not_after += tree[i];
    count.pairs += added;
    count.inversions += added - not_after;
  }
  return count;
}

// Adds an example of an inversion among |tasks| (one rank, sorted by predicted start) for each
// task that has one, until the examples are full: the partner is the eligible task on another
// stream with the latest measured start, tracked as the latest overall and the latest on a
// stream other than that one's.
void AddInversionExamples(const TaskGraph& graph, std::span<const TaskId> tasks,
                          const StepTimeline& predicted, const StepTimeline& measured,
                          SimTime min_gap, OrderCheck& check) {
  TaskId latest = -1, latest_other_stream = -1;
  const auto later = [&](TaskId a, TaskId b) {
    return b < 0 || measured.start[a] > measured.start[b];
  };
  const auto stream = [&](TaskId id) { return graph.task(id).stream; };
  size_t next = 0;
  for (TaskId b : tasks) {
    for (; next < tasks.size() && predicted.start[tasks[next]] + min_gap <= predicted.start[b];
         ++next) {
      const TaskId a = tasks[next];
      if (latest >= 0 && stream(a) == stream(latest)) {
        if (later(a, latest)) latest = a;
      } else if (later(a, latest)) {
        latest_other_stream = latest;
        latest = a;
      } else if (later(a, latest_other_stream)) {
        latest_other_stream = a;
      }
    }
    const TaskId a = latest >= 0 && stream(latest) != stream(b) ? latest : latest_other_stream;
    if (a < 0 || measured.start[a] <= measured.start[b]) continue;
    if (check.examples.size() >= kMaxExamples) return;
    AddExample(check, "order inverted: " + graph.DescribeTask(a) + " was predicted to start at " +
                          At(predicted.start[a]) + ", before " + graph.DescribeTask(b) + " at " +
                          At(predicted.start[b]) + ", but started at " + At(measured.start[a]) +
                          ", after it (" + At(measured.start[b]) + ")");
  }
}

void CountInversions(const TaskGraph& graph, const StepTimeline& predicted,
                     const StepTimeline& measured, SimTime margin, OrderCheck& check) {
  const SimTime min_gap = Max(margin, SimTime::FromNanos(1));
  std::vector<std::vector<TaskId>> by_rank(static_cast<size_t>(graph.num_ranks()));
  for (TaskId id = 0; id < graph.num_tasks(); ++id) by_rank[graph.rank_of(id)].push_back(id);
  for (std::vector<TaskId>& tasks : by_rank) {
    std::stable_sort(tasks.begin(), tasks.end(),
                     [&](TaskId a, TaskId b) { return predicted.start[a] < predicted.start[b]; });
    PairCount rank = CountOrderedPairs(tasks, predicted, measured, min_gap);
    // Take away the pairs on one stream: a stable sort by stream keeps each stream's tasks in
    // predicted order.
    std::vector<TaskId> by_stream = tasks;
    const auto stream = [&](TaskId id) { return graph.task(id).stream; };
    std::stable_sort(by_stream.begin(), by_stream.end(),
                     [&](TaskId a, TaskId b) { return stream(a) < stream(b); });
    for (size_t first = 0, last = 0; first < by_stream.size(); first = last) {
      while (last < by_stream.size() && stream(by_stream[last]) == stream(by_stream[first])) ++last;
      const std::span<const TaskId> on_stream(by_stream.data() + first, last - first);
      const PairCount same = CountOrderedPairs(on_stream, predicted, measured, min_gap);
      rank.pairs -= same.pairs;
      rank.inversions -= same.inversions;
    }
    check.pairs_checked += rank.pairs;
    check.order_inversions += rank.inversions;
    if (rank.inversions > 0)
      AddInversionExamples(graph, tasks, predicted, measured, min_gap, check);
  }
}

OrderCheck CheckOrder(const TaskGraph& graph, const StepTimeline& predicted,
                      const StepTimeline& measured, SimTime margin) {
  OrderCheck check;
  CheckDependencies(graph, measured, check);
  CheckRendezvous(graph, measured, check);
  CountInversions(graph, predicted, measured, margin, check);
  return check;
}

// The error as a fraction, as loom's JSON writes every ratio (docs/schemas/README.md); null if
// infinite.
nlohmann::ordered_json ErrorFractionJson(double error_pct) {
  if (!std::isfinite(error_pct)) return nullptr;
  return error_pct / 100;
}

// {"predicted<suffix>", "measured<suffix>", "error_fraction"}.
nlohmann::ordered_json ComparisonJson(const Comparison& c, const std::string& suffix) {
  return {{"predicted" + suffix, c.predicted},
          {"measured" + suffix, c.measured},
          {"error_fraction", ErrorFractionJson(c.error_pct)}};
}

// As ComparisonJson, with whole bytes.
nlohmann::ordered_json PeakMemoryJson(const Comparison& c) {
  return {{"predicted_bytes", static_cast<int64_t>(std::llround(c.predicted))},
          {"measured_bytes", static_cast<int64_t>(std::llround(c.measured))},
          {"error_fraction", ErrorFractionJson(c.error_pct)}};
}

}  // namespace

Result<StepComparison> CompareStep(const StepGraph& step, std::span<const MemoryBaseline> baselines,
                                   const StepTimeline& predicted,
                                   std::span<const StepTimeline> measured,
                                   std::optional<std::vector<int64_t>> measured_peak_bytes,
                                   SimTime margin) {
  const TaskGraph& graph = step.graph;
  if (measured.empty()) {
    return Status::InvalidArgument(
        "no measured steps to compare with the prediction; run at least one step");
  }
  LOOM_RETURN_IF_ERROR(CheckTimeline(graph, predicted, "predicted step"));
  for (size_t i = 0; i < measured.size(); ++i) {
    LOOM_RETURN_IF_ERROR(CheckTimeline(graph, measured[i], "measured step " + std::to_string(i)));
  }
  const size_t median = MedianStep(measured);
  const StepTimeline& chosen = measured[median];
  const std::string chosen_name = "measured step " + std::to_string(median);

  StepComparison c;
  c.steps = static_cast<int32_t>(measured.size());
  c.median_step = static_cast<int32_t>(median);
  c.step_time_s = Compare(predicted.makespan.ToSeconds(), chosen.makespan.ToSeconds());
  c.measured_min_step_s = c.measured_max_step_s = chosen.makespan.ToSeconds();
  for (const StepTimeline& m : measured) {
    c.measured_min_step_s = std::min(c.measured_min_step_s, m.makespan.ToSeconds());
    c.measured_max_step_s = std::max(c.measured_max_step_s, m.makespan.ToSeconds());
  }
  c.bubble_fraction = Compare(MeasureUtilization(step, predicted).bubble_fraction,
                              MeasureUtilization(step, chosen).bubble_fraction);
  LOOM_ASSIGN_OR_RETURN(int64_t predicted_peak,
                        PeakBytes(graph, predicted, baselines, "predicted step"));
  LOOM_ASSIGN_OR_RETURN(int64_t measured_peak, MeasuredPeakBytes(graph, chosen, baselines,
                                                                 measured_peak_bytes, chosen_name));
  c.peak_memory_bytes =
      Compare(static_cast<double>(predicted_peak), static_cast<double>(measured_peak));
  c.classes = CompareClasses(graph, predicted, chosen);
  c.order = CheckOrder(graph, predicted, chosen, margin);
  return c;
}

nlohmann::ordered_json StepComparisonJson(const StepComparison& c) {
  nlohmann::ordered_json step_time = ComparisonJson(c.step_time_s, "_s");
  step_time["measured_min_s"] = c.measured_min_step_s;
  step_time["measured_max_s"] = c.measured_max_step_s;
  const auto class_rows = [](const std::vector<ClassComparison>& list) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const ClassComparison& k : list) {
      nlohmann::ordered_json row = {{"name", k.name}, {"tasks", k.tasks}};
      const nlohmann::ordered_json seconds = ComparisonJson(k.seconds, "_s");
      for (const auto& [key, value] : seconds.items()) row[key] = value;
      rows.push_back(std::move(row));
    }
    return rows;
  };
  const OrderCheck& o = c.order;
  return {{"schema", "loom.validate/2"},
          {"steps", c.steps},
          {"median_step", c.median_step},
          {"step_time", std::move(step_time)},
          {"bubble_fraction", ComparisonJson(c.bubble_fraction, "")},
          {"peak_memory", PeakMemoryJson(c.peak_memory_bytes)},
          {"classes", class_rows(c.classes)},
          {"work_classes", class_rows(c.work_classes)},
          {"order",
           {{"dependency_violations", o.dependency_violations},
            {"rendezvous_violations", o.rendezvous_violations},
            {"order_inversions", o.order_inversions},
            {"pairs_checked", o.pairs_checked},
            {"examples", o.examples}}}};
}

}  // namespace loom
