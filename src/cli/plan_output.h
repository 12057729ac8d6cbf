#ifndef LOOM_CLI_PLAN_OUTPUT_H_
#define LOOM_CLI_PLAN_OUTPUT_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>  // full header: EmitResult holds its json as a value

#include "plan/explain.h"
#include "plan/planner.h"

namespace loom {

// What a plan's output restates about the question.
struct PlanHeader {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const SearchRequest& request;
  const PlanOptions& options;
};

// A plan turned into launch settings, or written to a plan file (--emit).
struct EmitResult {
  int64_t rank = 0;
  std::string heading;  // what |text| is; empty: "launch settings of plan <rank>"
  std::string text;     // what to copy
  nlohmann::ordered_json json;
  std::vector<std::string> notes;  // what the settings leave out
  std::string file_text;  // --emit plan without --out: the plan file itself, printed to stdout
};

// The search summary, the ranked table and the rejections by rule. An interrupted search
// (PlanReport::interrupted, by the signal named |interrupted_by|) is marked as such above the table
// and on the last line, with how far it got.
void PrintPlan(const PlanHeader& header, const PlanReport& report, double wall_s, std::ostream& out,
               const std::string& interrupted_by = "");
void PrintEmitted(const EmitResult& emitted, std::ostream& out);
void PrintExplanation(const PlanHeader& header, const Explanation& explanation, std::ostream& out);

// Schema "loom.plan/1" (documented in README.md, "loom plan --json"). search.interrupted is null,
// or for an interrupted search the signal, the phase and how far each phase got.
nlohmann::ordered_json PlanJson(const PlanHeader& header, const PlanReport& report, double wall_s,
                                const std::optional<EmitResult>& emitted,
                                const std::string& interrupted_by = "");
// Schema "loom.explain/1".
nlohmann::ordered_json ExplanationJson(const PlanHeader& header, const Explanation& explanation);

}  // namespace loom

#endif  // LOOM_CLI_PLAN_OUTPUT_H_
