#include "report/validate_view.h"

#include <nlohmann/json.hpp>

#include "report/step_views.h"

namespace loom {

ReportView ValidateView(const StepComparison& comparison) {
  return {"validate", "Predicted vs measured", "validate", StepComparisonJson(comparison)};
}

std::string ValidationReport(const std::string& title, const std::string& subtitle,
                             const StepGraph& step, const StepTimeline& predicted,
                             const StepTimeline& measured, const StepComparison& comparison) {
  return HtmlReport(
      title, subtitle,
      {ValidateView(comparison),
       GanttView(step, {{"predicted", &predicted}, {"measured (median step)", &measured}})});
}

}  // namespace loom
