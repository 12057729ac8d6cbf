#ifndef LOOM_SIM_STEP_COMPARISON_H_
#define LOOM_SIM_STEP_COMPARISON_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "program/comparison.h"
#include "program/memory_baseline.h"
#include "program/step_graph.h"
#include "program/step_timeline.h"

namespace loom {

// Whether the measured timeline ran the rank programs as the simulator did.
struct OrderCheck {
  // Dependencies (explicit, and stream order: each task and the next one added to its stream)
  // whose |after| started strictly before |before| ended.
  int64_t dependency_violations = 0;
  // Collectives whose members' [start, end] intervals have no common point (one ended before
  // another started).
  int64_t rendezvous_violations = 0;
  // pairs_checked: pairs (a, b) of tasks on one rank, on different streams, whose predicted starts
  // are at least max(|margin|, 1 ns) apart, a first. order_inversions: those of them where b's
  // measured start is strictly before a's (equal measured starts are no inversion). Pairs on one
  // stream are left out: stream order makes them dependencies, checked above. Counted in
  // O(n log n) per rank (a merge count over a Fenwick tree), so every pair is counted, not a
  // sample.
  int64_t order_inversions = 0;
  int64_t pairs_checked = 0;
  // The first few problems (at most 5), described with TaskGraph::DescribeTask and the measured
  // times in microseconds: dependency violations first, then rendezvous, then inversions.
  std::vector<std::string> examples;
};

struct StepComparison {
  int32_t steps = 0;        // measured steps compared
  int32_t median_step = 0;  // the index in |measured| of the step reported on
  Comparison step_time_s;   // measured: the median step's makespan
  double measured_min_step_s = 0, measured_max_step_s = 0;
  Comparison bubble_fraction;    // idle share of the compute streams while the pipeline runs
  Comparison peak_memory_bytes;  // max over ranks
  std::vector<ClassComparison> classes;  // in order of first appearance in the graph
  // Finer classes a backend measured itself (the cuda backend: GEMMs, attention, memory-bound
  // ops, sends, each collective kind, the optimizer), summed over ranks; empty for the host one.
  std::vector<ClassComparison> work_classes;
  OrderCheck order;  // of the median step
};

// Compares the measured steps with the prediction.
//  - step time, classes, bubble and order are read off |measured| (the median step by makespan:
//    with an even count the lower of the two middle ones, ties to the earlier step);
//  - bubble fraction: MeasureUtilization (sim/step_utilization.h), the simulator's definition,
//    on both timelines;
//  - peak memory: if |measured_peak_bytes| is given (one per rank, e.g. from the device), their
//  max;
//    otherwise the memory events replayed at the median step's measured times (TrackMemory) on
//    |baselines|. TrackMemory reads only start, end and start_sequence (which orders changes at
//    one instant), so a measured timeline needs just those; one without start_sequence gets one
//    from its start times, ties to the lower task id. Predicted peak: TrackMemory on |predicted|.
// |margin| as in OrderCheck. A timeline needs start and end per task and makespan; stream_busy and
// the channel fields are not read.
// Errors: InvalidArgument if |measured| is empty, a timeline's start, end or start_sequence size
// does not match the graph, a task ends before it starts, |measured_peak_bytes| has not one entry
// per rank, or TrackMemory fails (a free before its allocation in the measured order).
Result<StepComparison> CompareStep(const StepGraph& step, std::span<const MemoryBaseline> baselines,
                                   const StepTimeline& predicted,
                                   std::span<const StepTimeline> measured,
                                   std::optional<std::vector<int64_t>> measured_peak_bytes,
                                   SimTime margin);

// Schema "loom.validate/2":
//   {"schema", "steps",
//    "step_time": {"predicted_s", "measured_s", "error_fraction", "measured_min_s",
//    "measured_max_s"}, "bubble_fraction": {"predicted", "measured", "error_fraction"},
//    "peak_memory": {"predicted_bytes", "measured_bytes", "error_fraction"},
//    "classes": [{"name", "tasks", "predicted_s", "measured_s", "error_fraction"}, ...],
//    "work_classes": [the same, for StepComparison::work_classes],
//    "order": {"dependency_violations", "rendezvous_violations", "order_inversions",
//              "pairs_checked", "examples": [...]}}
// error_fraction is Comparison::error_pct / 100 (a fraction, as every ratio in loom's JSON); an
// infinite one is written as null. The CLI stamps "loom_version" and "request"
// (cli/json_contract.h).
nlohmann::ordered_json StepComparisonJson(const StepComparison& comparison);

}  // namespace loom

#endif  // LOOM_SIM_STEP_COMPARISON_H_
