#ifndef LOOM_PLAN_DISTINCT_H_
#define LOOM_PLAN_DISTINCT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plan/planner.h"
#include "spec/strategy.h"

namespace loom {

// `--distinct`: plans that differ only in one setting that moves the step (and the objective) by
// less than 1 % are one row, e.g. the same layout with and without optimizer offload.
inline constexpr double kDistinctTolerance = 0.01;

// A setting of a strategy and its value, as the --fix keys spell it: each key is its own setting
// except those the search varies together: schedule (schedule, vpp, microbatch_group), recompute
// (recompute, recompute_layers), overlap (overlap_grad_reduce, overlap_param_gather,
// tp_comm_overlap) and stage_layers (first_stage_layers, last_stage_layers). The value is the
// keys' "key=value" pairs: "offload=optimizer", "recompute=full,recompute_layers=2".
struct Setting {
  std::string name;
  std::string value;
};

// Every setting of |strategy|, in ConstraintText's order.
std::vector<Setting> SettingsOf(const Strategy& strategy);

// The one setting in which |a| and |b| differ; empty when they differ in none or in more than one.
std::string OnlyDifferingSetting(const Strategy& a, const Strategy& b);

// Counts the values each setting takes over the strategies added: no row of GroupDistinct over
// plans of those strategies can have more members than Most() (its members share every other
// setting).
class SettingValueCounter {
 public:
  void Add(const Strategy& strategy);
  int64_t Most() const;

 private:
  std::map<std::string, std::set<std::string>> values_;
};

// Groups |ranked| (best first) into rows: a plan joins the first row whose every member differs
// from it in one and the same setting and whose steps and scores, with its own, stay within
// kDistinctTolerance (largest < smallest * 1.01); otherwise it starts a row. Returns at most
// |max_rows| rows, best first, each its best plan with the row's other members as its |variants|
// (best first) and the setting they vary in |variant_setting|. The rows are the ones a grouping of
// every plan gives, as long as |ranked| holds every plan that scores up to the last row's best
// times 1 + kDistinctTolerance.
std::vector<RankedPlan> GroupDistinct(const std::vector<RankedPlan>& ranked, int64_t max_rows);

}  // namespace loom

#endif  // LOOM_PLAN_DISTINCT_H_
