#ifndef LOOM_PLAN_EXPLAIN_H_
#define LOOM_PLAN_EXPLAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "plan/fit_suggestions.h"
#include "plan/planner.h"

namespace loom {

// Where one strategy lands among the plans of its search space, and why.
struct Explanation {
  RankedPlan plan;  // its simulated numbers (index -1: it need not be in the space)
  bool fits = false;
  // Plans of the space that fit and score strictly better (its rank is this plus one), counted up
  // to PlanOptions::better_than_limit (then |more_better_plans| is set). When it does not fit, the
  // space's best plan is searched instead and this is 0.
  int64_t better_plans = 0;
  bool more_better_plans = false;
  std::optional<RankedPlan> best;  // the best plan of the space, when one fits
  // What its step spends most on: "compute", "pipeline bubble", "exposed communication",
  // "optimizer step", or "memory" when it does not fit.
  std::string dominant;
  PlanReport search;  // the search that counted the better plans
  // What holds each stage's memory at its peak (SimulationResult::memory_by_stage), the stage that
  // peaks highest, and the reserve outside every peak (SimulationResult::reserve).
  std::vector<MemoryBreakdown> memory_by_stage;
  int32_t peak_stage = 0;
  MemoryReserve reserve;
  // When it does not fit: the nearest strategies that do (SuggestFits), fewest changes first;
  // with PlanOptions::admit, only those it admits.
  std::vector<FitSuggestion> fit_suggestions;
};

// Simulates the strategy |text| describes (ParseConstraints' key=value list; keys it leaves out
// take loom simulate's defaults, dp fills the GPUs of |request|, and the batch, sequence, dtype and
// optimizer are the request's) and searches |request|'s space for the plans that beat it; when it
// does not fit, also the nearest strategies that do.
// Errors: those of ParseConstraints and EnumerateStrategies; InvalidArgument with every rule the
// strategy breaks.
Result<Explanation> Explain(const ModelSpec& model, const ClusterSpec& cluster,
                            const SearchRequest& request, const PlanOptions& options,
                            std::string_view text);

}  // namespace loom

#endif  // LOOM_PLAN_EXPLAIN_H_
