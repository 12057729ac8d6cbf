#ifndef LOOM_REPORT_STEP_VIEWS_H_
#define LOOM_REPORT_STEP_VIEWS_H_

#include <string>
#include <vector>

#include "program/step_graph.h"
#include "report/html_report.h"
#include "sim/engine.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace loom {

// One timeline of a step's tasks, under a title ("predicted", "measured (median step)").
struct TitledTimeline {
  std::string title;
  const StepTimeline* timeline = nullptr;
};

// The pipeline Gantt: one row per rank and stream, one bar per task of each timeline, all on one
// time axis. data: {"streams": [{"rank", "name"}] (by StreamId), "names": [the task names,
// categories and labels used], "tasks": {"stream", "name", "category", "label", "micro_batch",
// "chunk"} (columns by TaskId; name, category and label index "names"; label is TaskLabel's, "F mb3
// c1"; micro_batch and chunk -1 when none), "timelines": [{"title", "start_ns", "end_ns",
// "makespan_ns"}], and with |context| "rank_names": each graph rank as the trace names it
// (TraceRankName: "rank 3072 (pp 3, dp 0, cp 0, tp 0)")}.
// REQUIRES: every timeline came from |step|'s graph.
ReportView GanttView(const StepGraph& step, const std::vector<TitledTimeline>& timelines,
                     const TraceContext* context = nullptr);

// Memory over the step per stage (the first replica's ranks), each stage's peak marked, and what
// holds it at the peak. data: {"limit_bytes", "reserved_bytes", "peak_stage", "stages": [{"stage",
// "rank", "peak_bytes", "peak_time_ns", "peak_task", "time_ns": [...], "bytes": [...], "items":
// [{"item", "bytes"}]}]}; items empty when |result| has no breakdown.
ReportView StageMemoryView(const SimulationResult& result);

// Where the step's time goes: the step breakdown, the critical path and each stage's compute and
// bubble. data: {"step_time_s", "breakdown": {...}, "critical_path": {...}, "stages": [...]}.
ReportView BreakdownView(const SimulationResult& result);

// The report of `loom simulate`: Gantt (its ranks named as |context| names them in a trace, when
// given), memory and breakdown of |result|.
std::string SimulationReport(const std::string& title, const std::string& subtitle,
                             const SimulationResult& result, const TraceContext* context = nullptr);

}  // namespace loom

#endif  // LOOM_REPORT_STEP_VIEWS_H_
