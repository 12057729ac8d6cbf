#ifndef LOOM_REPORT_PLAN_VIEW_H_
#define LOOM_REPORT_PLAN_VIEW_H_

#include <string>

#include "plan/planner.h"
#include "report/html_report.h"

namespace loom {

// The ranked plans (step time against peak memory, sized by GPUs) and why the rest were turned
// away. data: {"objective", "plans": [{"rank", "gpus", "step_time_s", "peak_memory_bytes",
// "memory_limit_bytes", "mfu", "score", "strategy": {StrategyJson}}], "counts": {"enumerated",
// "rejected_by_rules", "rejected_by_memory_bound", "rejected_by_step_time_bound",
// "rejected_by_simulation", "skipped_by_bound", "simulated"}, "rejections": [{"rule", "count",
// "example"}], "interrupted"}.
ReportView PlansView(const PlanReport& report, Objective objective);

// The GPUs a strategy runs on: tp * cp * pp * dp (Megatron-LM's world size; expert parallelism
// reuses the data- and context-parallel ranks).
int64_t StrategyGpus(const Strategy& strategy);

// "tp 8, pp 4, dp 2, vpp 2, micro-batch 1, global batch 512, seq 4096, interleaved, recompute
// none, ZeRO 1": a report's one-line name of |strategy| (cp, ep and vpp only when above 1).
std::string StrategySummary(const Strategy& strategy);

// The report of `loom plan`: the plans view.
std::string PlanSearchReport(const std::string& title, const std::string& subtitle,
                             const PlanReport& report, Objective objective);

}  // namespace loom

#endif  // LOOM_REPORT_PLAN_VIEW_H_
