#ifndef LOOM_CLI_PROBE_OUTPUT_H_
#define LOOM_CLI_PROBE_OUTPUT_H_

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/profile.h"
#include "probe/probe_runner.h"
#include "probe/sweep.h"

namespace loom {

// The planned sweep of `loom probe --dry-run`: points per kind with the first and last of each.
void PrintSweepPlan(const std::vector<ProbePoint>& points, const std::vector<ProbeGroup>& groups, std::ostream& out);

// The same as one JSON object (probe --dry-run --json), schema loom.probe-plan/1: {"schema",
// "total_points", "kinds": {"gemm": {"points", "keys": [every point's key]}, ...},
// "collectives_measured"}.
nlohmann::ordered_json SweepPlanJson(const std::vector<ProbePoint>& points, const std::vector<ProbeGroup>& groups);

// What a probe run measured: per kernel class the points measured and failed with the best rate
// reached (TFLOP/s for GEMMs and attention, GB/s for memory-bound kernels and copies, us for the
// launch), then one nccl-tests table per collective and group, then the failures.
void PrintProbeReport(const ProbeSummary& summary, std::ostream& out);

// The same as one JSON object, schema loom.probe/1: {"schema", "profile" (path), "planned",
// "resumed", "measured", "failed", "abandoned", "hangs", "classes": [{"class", "measured",
// "best", "unit", "best_point"}]}.
nlohmann::ordered_json ProbeReportJson(const ProbeSummary& summary, const std::string& profile_path);

}  // namespace loom

#endif  // LOOM_CLI_PROBE_OUTPUT_H_
