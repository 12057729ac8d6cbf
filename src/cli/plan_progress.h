#ifndef LOOM_CLI_PLAN_PROGRESS_H_
#define LOOM_CLI_PLAN_PROGRESS_H_

#include <chrono>
#include <functional>
#include <ostream>
#include <string>

#include "plan/planner.h"

namespace loom {

// One line on the search's progress (no line end): "simulating 1,650 / 32,914 candidates (31,264
// bounded out), 110/s, best 4.662 s/step (tp 8, pp 16, dp 128, mbs 1), ETA 3 s": RemainingSeconds.
std::string ProgressLine(const PlanProgress& progress, Objective objective);

// Where and how often progress lines go.
struct ProgressStyle {
  bool terminal = false;  // rewrite one line in place (\r); else one line per report printed
  bool forced = false;    // --progress: also on a non-terminal, and from the first report
};

// Writes the search's progress to |err| (PlanOptions::progress). On a terminal the line is
// rewritten at every report once the search has run for a second (at once when forced); elsewhere
// (forced) a line every 2 s and one at the end of each phase, so that a log shows how the search
// went without filling up.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& err, ProgressStyle style, Objective objective);
  void operator()(const PlanProgress& progress);

 private:
  std::ostream& err_;
  const ProgressStyle style_;
  const Objective objective_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_ = start_;
};

}  // namespace loom

#endif  // LOOM_CLI_PLAN_PROGRESS_H_
