#include "cli/plan_progress.h"

#include <cstdio>

#include "cli/format.h"

namespace loom {
namespace {

std::string Number(const char* format, double value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// The best plan's score in its objective's unit and its layout.
std::string BestText(const RankedPlan& best, Objective objective) {
  std::string score;
  switch (objective) {
    case Objective::kTime:
      score = Number("%.3f s/step", best.step_time_s);
      break;
    case Objective::kCost:
      score = Number("%.4g GPU-h/Btok", best.gpu_hours_per_billion_tokens);
      break;
    case Objective::kMemoryHeadroom:
      score = Number("%.1f%% of memory", best.score * 100);
      break;
    case Objective::kGoodput:
      score = Number("%.3f effective s/step", best.score);
      break;
  }
  const Strategy& s = best.strategy;
  return "best " + score + " (tp " + std::to_string(s.tp) + ", pp " + std::to_string(s.pp) +
         ", dp " + std::to_string(s.dp) + (s.cp > 1 ? ", cp " + std::to_string(s.cp) : "") +
         ", mbs " + std::to_string(s.micro_batch) + ")";
}

}  // namespace

std::string ProgressLine(const PlanProgress& p, Objective objective) {
  const bool simulating = std::string(p.phase) == "simulating";
  std::string line = std::string(p.phase) + " " + GroupedDigits(p.done) + " / " +
                     GroupedDigits(p.total) + (simulating ? " candidates" : " strategies");
  if (simulating) line += " (" + GroupedDigits(p.bounded_out) + " bounded out)";
  const int64_t worked = p.done - p.bounded_out;
  if (p.elapsed_s > 0) line += ", " + Number("%.0f/s", static_cast<double>(worked) / p.elapsed_s);
  if (p.best) line += ", " + BestText(*p.best, objective);
  if (p.phase_over) return line + ", done in " + Number("%.1f s", p.elapsed_s);
  const std::optional<double> eta = RemainingSeconds(p);
  return line + ", ETA " + (eta ? Number("%.0f s", *eta) : std::string("?"));
}

ProgressPrinter::ProgressPrinter(std::ostream& err, ProgressStyle style, Objective objective)
    : err_(err), style_(style), objective_(objective) {}

void ProgressPrinter::operator()(const PlanProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  if (style_.terminal) {
    if (!style_.forced && now - start_ < std::chrono::seconds(1)) return;
    err_ << "\r" << ProgressLine(p, objective_) << "   " << (p.phase_over ? "\n" : "")
         << std::flush;
    return;
  }
  if (!p.phase_over && now - last_line_ < std::chrono::seconds(2)) return;
  last_line_ = now;
  err_ << ProgressLine(p, objective_) << "\n" << std::flush;
}

}  // namespace loom
