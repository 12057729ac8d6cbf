#ifndef LOOM_REPORT_VALIDATE_VIEW_H_
#define LOOM_REPORT_VALIDATE_VIEW_H_

#include <string>

#include "program/step_graph.h"
#include "report/html_report.h"
#include "sim/engine.h"
#include "sim/step_comparison.h"

namespace loom {

// Predicted against measured, side by side: step time, bubble, peak memory and each task class.
// data: StepComparisonJson(|comparison|) (schema loom.validate/2's keys).
ReportView ValidateView(const StepComparison& comparison);

// The report of `loom validate`: the comparison, and the predicted and measured (median) step as
// two Gantts on one time axis.
// REQUIRES: both timelines came from |step|'s graph.
std::string ValidationReport(const std::string& title, const std::string& subtitle,
                             const StepGraph& step, const StepTimeline& predicted,
                             const StepTimeline& measured, const StepComparison& comparison);

}  // namespace loom

#endif  // LOOM_REPORT_VALIDATE_VIEW_H_
