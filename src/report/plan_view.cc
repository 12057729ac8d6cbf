#include "report/plan_view.h"

#include <nlohmann/json.hpp>

#include "spec/scenario.h"

namespace loom {

int64_t StrategyGpus(const Strategy& strategy) {
  return strategy.tp * strategy.cp * strategy.pp * strategy.dp;
}

std::string StrategySummary(const Strategy& s) {
  std::string text = "tp " + std::to_string(s.tp) + ", pp " + std::to_string(s.pp) + ", dp " +
                     std::to_string(s.dp);
  if (s.cp > 1) text += ", cp " + std::to_string(s.cp);
  if (s.ep > 1) text += ", ep " + std::to_string(s.ep);
  if (s.vpp > 1) text += ", vpp " + std::to_string(s.vpp);
  text += ", micro-batch " + std::to_string(s.micro_batch) + ", global batch " +
          std::to_string(s.global_batch) + ", seq " + std::to_string(s.seq_len) + ", " +
          std::string(kScheduleNames.Name(s.schedule)) + ", recompute " +
          std::string(kRecomputeNames.Name(s.recompute)) + ", ZeRO " + std::to_string(s.zero_stage);
  return text;
}

ReportView PlansView(const PlanReport& report, Objective objective) {
  using Json = nlohmann::ordered_json;
  Json plans = Json::array();
  for (size_t i = 0; i < report.ranked.size(); ++i) {
    const RankedPlan& p = report.ranked[i];
    plans.push_back({{"rank", i + 1},
                     {"gpus", StrategyGpus(p.strategy)},
                     {"step_time_s", p.step_time_s},
                     {"peak_memory_bytes", p.peak_memory_bytes},
                     {"memory_limit_bytes", p.memory_limit_bytes},
                     {"mfu", p.mfu},
                     {"score", p.score},
                     {"strategy", StrategyJson(p.strategy)}});
  }
  Json rejections = Json::array();
  for (const Rejection& r : report.rejections) {
    rejections.push_back({{"rule", r.rule}, {"count", r.count}, {"example", r.example}});
  }
  Json counts = {{"enumerated", report.enumerated},
                 {"rejected_by_rules", report.rejected_by_rules},
                 {"rejected_by_memory_bound", report.rejected_by_memory_bound},
                 {"rejected_by_step_time_bound", report.rejected_by_step_time_bound},
                 {"rejected_by_simulation", report.rejected_by_simulation},
                 {"skipped_by_bound", report.skipped_by_bound},
                 {"simulated", report.simulated}};
  // What the objective scores (PlanScoreBound), for the axis and the table: a plan's score is its
  // value, and the best plan has the lowest.
  std::string score_label = "step time at the risk quantile", score_unit = "s";
  switch (objective) {
    case Objective::kTime:
      break;
    case Objective::kCost:
      score_label = "GPU-hours per billion tokens", score_unit = "gpu_hours";
      break;
    case Objective::kMemoryHeadroom:
      score_label = "peak memory over the usable memory", score_unit = "share";
      break;
    case Objective::kGoodput:
      score_label = "wall time per step with failures and checkpoints", score_unit = "s";
      break;
  }
  Json data = {{"objective", std::string(kObjectiveNames.Name(objective))},
               {"score_label", score_label},
               {"score_unit", score_unit},
               {"plans", plans},
               {"counts", counts},
               {"rejections", rejections},
               {"interrupted", report.interrupted}};
  return {"plans", "Ranked plans", "plans", std::move(data)};
}

std::string PlanSearchReport(const std::string& title, const std::string& subtitle,
                             const PlanReport& report, Objective objective) {
  return HtmlReport(title, subtitle, {PlansView(report, objective)});
}

}  // namespace loom
