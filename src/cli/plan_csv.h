// loom plan --csv: every strategy the search saw, one row each, with its verdict and, where it was
// simulated, its figures (issue 45, section 3): what Calculon's all-executions output gives its
// users, for a spreadsheet or pandas.

#ifndef LOOM_CLI_PLAN_CSV_H_
#define LOOM_CLI_PLAN_CSV_H_

#include <cstdint>
#include <string>

#include "plan/planner.h"
#include "spec/strategy.h"

namespace loom {

// The CSV text, built one strategy at a time (PlanOptions::on_verdict).
class PlanCsv {
 public:
  // The header: index, the strategy's keys as a scenario names them (StrategyJson, with
  // pipeline_layout), then verdict, rule, score_bound, step_time_s, score, tokens_per_s, mfu and
  // peak_memory_gib; a figure the strategy has none of is empty.
  PlanCsv();
  // Appends |strategy|'s row.
  void Add(const Strategy& strategy, const StrategyVerdict& verdict);
  const std::string& text() const { return text_; }
  int64_t rows() const { return rows_; }

 private:
  std::string text_;
  int64_t rows_ = 0;
};

}  // namespace loom

#endif  // LOOM_CLI_PLAN_CSV_H_
