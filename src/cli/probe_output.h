#ifndef LOOM_CLI_PROBE_OUTPUT_H_
#define LOOM_CLI_PROBE_OUTPUT_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cost/profile.h"
#include "probe/probe_estimate.h"
#include "probe/probe_runner.h"
#include "probe/sweep.h"

namespace loom {

// How long the sweep of a dry run would take (EstimateProbeDuration), and what the estimate
// assumes: the GPU file whose calibrated model it comes from. Absent without a cluster file.
struct SweepEstimate {
  ProbeDurationEstimate duration;
  std::string gpu_file;
};

// The planned sweep of `loom probe --dry-run`: points per kind with the first and last of each,
// then, with |estimate|, the estimated seconds of each kind that has points and the total
// ("estimated duration: ~N s (an estimate from <GPU file>'s calibrated model ...)"); without one,
// a line saying that --cluster gives one.
void PrintSweepPlan(const std::vector<ProbePoint>& points, const std::vector<ProbeGroup>& groups,
                    const std::optional<SweepEstimate>& estimate, std::ostream& out);

// The same as one JSON object (probe --dry-run --json), schema loom.probe-plan/1: {"schema",
// "total_points", "kinds": {"gemm": {"points", "keys": [every point's key]}, ...},
// "collectives_measured", "estimate": {"kind_s": {"gemm": s, ...}, "total_s", "gpu", "assumes"}
// or null without a cluster file}.
nlohmann::ordered_json SweepPlanJson(const std::vector<ProbePoint>& points,
                                     const std::vector<ProbeGroup>& groups,
                                     const std::optional<SweepEstimate>& estimate);

// What a probe run measured: per kernel class the points measured and failed with the best rate
// reached (TFLOP/s for GEMMs and attention, GB/s for memory-bound kernels and copies, us for the
// launch), then one nccl-tests table per collective and group, then the failures.
void PrintProbeReport(const ProbeSummary& summary, std::ostream& out);

// The same as one JSON object, schema loom.probe/1: {"schema", "profile" (path), "planned",
// "resumed", "measured", "failed", "abandoned", "hangs", "classes": [{"class", "measured",
// "best", "unit", "best_point"}]}.
nlohmann::ordered_json ProbeReportJson(const ProbeSummary& summary,
                                       const std::string& profile_path);

}  // namespace loom

#endif  // LOOM_CLI_PROBE_OUTPUT_H_
