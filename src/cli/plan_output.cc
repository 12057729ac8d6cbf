#include "cli/plan_output.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "cli/memory_output.h"
#include "core/formatted.h"
#include "plan/distinct.h"
#include "plan/search_space.h"
#include "spec/scenario.h"
#include "spec/step_intervals.h"

namespace loom {
namespace {

// The 80 % interval of a plan's measured step time (spec/step_intervals.h), under the search's
// framework.
std::optional<StepInterval> PlanInterval(const PlanHeader& h, const RankedPlan& p) {
  return ShippedStepInterval(h.cluster, h.options.simulation.framework, p.strategy, p.step_time_s);
}

// Whether |plan|'s interval overlaps |best|'s by at most half of |best|'s width: loom's errors
// can tell the two apart. Without both intervals, nothing is known: nullopt.
std::optional<bool> DistinguishableFrom(const std::optional<StepInterval>& best,
                                        const std::optional<StepInterval>& plan) {
  if (!best || !plan) return std::nullopt;
  const double overlap =
      std::max(0.0, std::min(best->high_s, plan->high_s) - std::max(best->low_s, plan->low_s));
  return overlap <= 0.5 * (best->high_s - best->low_s);
}

std::string Gib(int64_t bytes) {
  return Fixed(static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30), 1);
}

std::string OnOff(bool on) { return on ? "on" : "off"; }

// The overlap switches that are on: g (grad reduce), p (param gather), t (tp comm), or "off".
std::string Overlap(const Strategy& s) {
  std::string out;
  if (s.overlap_grad_reduce) out += "g";
  if (s.overlap_param_gather) out += "p";
  if (s.tp_comm_overlap) out += "t";
  return out.empty() ? "off" : out;
}

std::string Recomputation(const Strategy& s) {
  std::string name(kRecomputeNames.Name(s.recompute));
  if (s.recompute == Recompute::kFull && s.recompute_layers > 0)
    name += "/" + std::to_string(s.recompute_layers);
  return name;
}

std::string Zero(const Strategy& s) {
  std::string out = std::to_string(s.zero_stage);
  if (s.offload == Offload::kOptimizer) out += "+off";
  if (s.offload == Offload::kOptimizerAndParams) out += "+offp";
  return out;
}

std::string ContextParallel(const Strategy& s) {
  if (s.cp == 1) return "1";
  return std::to_string(s.cp) + (s.cp_comm == CpComm::kP2p ? "r" : "g");
}

std::string Schedule(const Strategy& s) {
  std::string name(kScheduleNames.Name(s.schedule));
  if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    name += " " + std::to_string(s.first_stage_layers) + "/" + std::to_string(s.last_stage_layers);
  }
  // A layout (the planner balances stages on different GPUs): each stage's layers, "22/10"; the
  // JSON's strategy.pipeline_layout has every chunk.
  if (!s.layout.empty() && s.pp > 0) {
    std::vector<int64_t> stages(static_cast<size_t>(s.pp), 0);
    for (size_t v = 0; v < s.layout.size(); ++v) stages[v % stages.size()] += s.layout[v];
    for (size_t i = 0; i < stages.size(); ++i) {
      name += (i == 0 ? " " : "/") + std::to_string(stages[i]);
    }
  }
  return name;
}

// What the table adds to the plans' columns: the GPU count, and the cost columns.
struct CostColumns {
  bool gpus = false;    // more than one GPU count searched, or the cost objective
  bool cost = false;    // GPU-h/Btok: the cost objective, a price or tokens
  bool price = false;   // $/Btok
  bool tokens = false;  // days to train (and $ to train with a price)
};

CostColumns CostColumnsOf(const PlanHeader& h) {
  const TrainingRun& run = h.options.training;
  CostColumns c;
  c.gpus = h.options.objective == Objective::kCost || GpuCounts(h.request, h.cluster).size() > 1;
  c.price = run.price_per_gpu_hour_usd.has_value();
  c.tokens = run.tokens.has_value();
  c.cost = h.options.objective == Objective::kCost || c.price || c.tokens;
  return c;
}

std::string CountList(const std::vector<int64_t>& counts) {
  std::string text;
  for (int64_t n : counts) text += (text.empty() ? "" : ", ") + GroupedDigits(n);
  return text;
}

// The question's terms beyond the first line: GPU counts, the step time limit, the cost's unit,
// price and tokens; nothing when none is given.
void PrintTerms(const PlanHeader& h, std::ostream& out) {
  const TrainingRun& run = h.options.training;
  const std::vector<int64_t> counts = GpuCounts(h.request, h.cluster);
  std::vector<std::string> terms;
  if (counts.size() > 1) terms.push_back("GPU counts searched " + CountList(counts));
  if (h.options.max_step_time_s)
    terms.push_back("steps of at most " + Fixed(*h.options.max_step_time_s, 3) + " s");
  if (CostColumnsOf(h).cost) terms.push_back("cost in GPU-hours per 10^9 tokens (GPU-h/Btok)");
  if (run.price_per_gpu_hour_usd) {
    terms.push_back("$" + Fixed(*run.price_per_gpu_hour_usd, 2) + " per GPU-hour (" +
                    run.price_source + ")");
  }
  if (run.tokens) terms.push_back(HumanCount(*run.tokens) + " tokens to train");
  if (terms.empty()) return;
  out << "terms:";
  for (size_t i = 0; i < terms.size(); ++i) out << (i == 0 ? " " : "; ") << terms[i];
  out << "\n";
}

// Whether the plans are ranked by a step time other than loom's prediction (--risk, not 0.5).
bool RiskRanked(const PlanHeader& h) {
  return h.options.objective != Objective::kMemoryHeadroom &&
         std::abs(h.options.risk - 0.5) > 1e-12;
}

// The ranked quantile as a percentile: "p90", "p87.5".
std::string RiskName(double risk) {
  const double percent = 100 * risk;
  const bool whole = std::abs(percent - std::round(percent)) < 1e-9;
  return "p" + Fixed(percent, whole ? 0 : 1);
}

void PrintHeader(const PlanHeader& h, std::ostream& out) {
  const SearchRequest& r = h.request;
  // "in CLUSTER", not "(CLUSTER)": the names hold parentheses of their own ("NVIDIA GB200 ...
  // (GB200 NVL72) (GB200 NVL72 (72x ...))" nested three deep).
  out << "loom plan: " << h.model.name << " on " << r.gpus << " x " << GpuNames(h.cluster) << " in "
      << h.cluster.name << ", global batch " << r.global_batch << " x " << r.seq_len << " tokens, "
      << kDtypeNames.Name(r.dtype) << ", " << kOptimizerNames.Name(r.optimizer) << ", objective "
      << kObjectiveNames.Name(h.options.objective)
      << (RiskRanked(h) ? " at the " + RiskName(h.options.risk) + " step time" : std::string())
      << ", host "
      << (h.options.simulation.framework ? h.options.simulation.framework->name
                                         : std::string("none (always fed)"))
      << "\n";
  PrintTerms(h, out);
}

TrainingCost CostOf(const RankedPlan& p, const TrainingRun& run) {
  const Strategy& s = p.strategy;
  return CostOfTraining(p.step_time_s, s.WorldSize(), s.global_batch * s.seq_len, run);
}

// "  ~ offload=optimizer: 4.131 s, 61.2/77.6 GiB" under a --distinct row, for each variant.
void PrintVariants(const RankedPlan& p, std::ostream& out) {
  for (const RankedPlan& v : p.variants) {
    std::string value;
    for (const Setting& setting : SettingsOf(v.strategy)) {
      if (setting.name == p.variant_setting) value = setting.value;
    }
    out << "      ~ " << value << ": " << Fixed(v.step_time_s, 3) << " s ("
        << (v.step_time_s >= p.step_time_s ? "+" : "") << Percent(v.step_time_s / p.step_time_s - 1)
        << "), " << Gib(v.peak_memory_bytes) << "/" << Gib(v.memory_limit_bytes) << " GiB\n";
  }
}

void PrintTable(const PlanHeader& h, const std::vector<RankedPlan>& plans, std::ostream& out) {
  const CostColumns columns = CostColumnsOf(h);
  out << std::right << std::setw(4) << "rank" << std::setw(4) << "tp" << std::setw(4) << "pp"
      << std::setw(6) << "dp" << std::setw(5) << "cp" << std::setw(4) << "ep" << std::setw(4)
      << "vpp" << std::setw(4) << "mbs"
      << "  " << std::left << std::setw(17) << "schedule" << std::setw(13) << "recompute"
      << std::setw(7) << "zero" << std::setw(4) << "sp" << std::setw(5) << "ovl" << std::right
      << std::setw(9) << "step s" << std::setw(13) << "80% interval";
  // At --risk 0.5 the ranked step time is the prediction: no column of its own.
  const bool risk = RiskRanked(h);
  if (risk) out << std::setw(9) << RiskName(h.options.risk) + " s";
  out << std::setw(9) << "vs best" << std::setw(10) << "tokens/s" << std::setw(7) << "MFU"
      << std::setw(14) << "memory GiB" << std::setw(8) << "bubble" << std::setw(10) << "exp.comm";
  const bool goodput = h.options.objective == Objective::kGoodput;
  if (goodput) out << std::setw(9) << "goodput" << std::setw(11) << "eff.tok/s";
  // The cost columns' texts, each column as wide as its widest text and two blanks (a price of
  // $10,000 an hour and 10^18 tokens run to sixteen digits).
  std::vector<std::array<std::string, 4>> cost_texts;
  std::array<int, 4> cost_widths = {12, 10, 11, 16};
  const std::array<const char*, 4> cost_headers = {"GPU-h/Btok", "$/Btok", "train days", "train $"};
  for (const RankedPlan& p : plans) {
    const TrainingCost cost = CostOf(p, h.options.training);
    std::array<std::string, 4> texts;
    if (columns.cost) texts[0] = Fixed(cost.gpu_hours_per_billion_tokens, 1);
    if (columns.price) texts[1] = Fixed(*cost.usd_per_billion_tokens, 2);
    if (columns.tokens) texts[2] = Fixed(*cost.time_to_train_s / 86400, 1);
    if (columns.tokens && columns.price) {
      texts[3] = GroupedDigits(static_cast<int64_t>(std::llround(*cost.usd_to_train)));
    }
    for (size_t c = 0; c < texts.size(); ++c) {
      cost_widths[c] = std::max(cost_widths[c], static_cast<int>(texts[c].size()) + 2);
    }
    cost_texts.push_back(std::move(texts));
  }
  const std::array<bool, 4> cost_shown = {columns.cost, columns.price, columns.tokens,
                                          columns.tokens && columns.price};
  if (columns.gpus) out << std::setw(7) << "GPUs";
  for (size_t c = 0; c < cost_headers.size(); ++c) {
    if (cost_shown[c]) out << std::setw(cost_widths[c]) << cost_headers[c];
  }
  out << "\n";
  const std::optional<StepInterval> best =
      plans.empty() ? std::nullopt : PlanInterval(h, plans.front());
  for (size_t i = 0; i < plans.size(); ++i) {
    const RankedPlan& p = plans[i];
    const Strategy& s = p.strategy;
    const std::optional<StepInterval> interval = PlanInterval(h, p);
    const std::optional<bool> distinct = DistinguishableFrom(best, interval);
    const char* versus = i == 0 ? "best" : !distinct ? "-" : *distinct ? "distinct" : "within";
    // A schedule wider than its column ("interleaved 30/30/11/9") keeps a space before the next.
    std::string schedule = Schedule(s);
    if (schedule.size() >= 17) schedule += ' ';
    out << std::right << std::setw(4) << i + 1 << std::setw(4) << s.tp << std::setw(4) << s.pp
        << std::setw(6) << s.dp << std::setw(5) << ContextParallel(s) << std::setw(4) << s.ep
        << std::setw(4) << s.vpp << std::setw(4) << s.micro_batch << "  " << std::left
        << std::setw(17) << schedule << std::setw(13) << Recomputation(s) << std::setw(7) << Zero(s)
        << std::setw(4) << OnOff(s.sp) << std::setw(5) << Overlap(s) << std::right << std::setw(9)
        << Fixed(p.step_time_s, 3) << std::setw(13) << IntervalText(interval);
    if (risk) out << std::setw(9) << Fixed(p.risk_step_time_s, 3);
    out << std::setw(9) << versus << std::setw(10) << HumanCount(p.tokens_per_s) << std::setw(7)
        << Percent(p.mfu) << std::setw(14)
        << (Gib(p.peak_memory_bytes) + "/" + Gib(p.memory_limit_bytes)) << std::setw(8)
        << Percent(p.bubble_fraction) << std::setw(10) << Percent(p.exposed_comm_fraction);
    if (goodput) {
      const double fraction = p.goodput.value_or(0);
      // Two decimals: at a few nodes goodput sits within a tenth of a percent of 1.
      out << std::setw(9) << Fixed(fraction * 100, 2) + "%" << std::setw(11)
          << HumanCount(p.tokens_per_s * fraction);
    }
    if (columns.gpus) out << std::setw(7) << s.WorldSize();
    for (size_t c = 0; c < cost_headers.size(); ++c) {
      if (cost_shown[c]) out << std::setw(cost_widths[c]) << cost_texts[i][c];
    }
    out << "\n";
    PrintVariants(p, out);
  }
}

// A number, or null where it is not known.
nlohmann::ordered_json OrNull(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json VariantsJson(const RankedPlan& p) {
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (const RankedPlan& v : p.variants) {
    variants.push_back({{"setting", p.variant_setting},
                        {"fix", ConstraintText(v.strategy)},
                        {"score", v.score},
                        {"step_time_s", v.step_time_s},
                        {"peak_memory_bytes", v.peak_memory_bytes}});
  }
  return variants;
}

// |best|: the best plan's interval, for distinguishable_from_best (null for the best itself and
// where either interval is unknown).
nlohmann::ordered_json PlanEntry(const PlanHeader& h, const RankedPlan& p, int64_t rank,
                                 const std::optional<StepInterval>& best, bool is_best) {
  const TrainingRun& run = h.options.training;
  const TrainingCost cost = CostOf(p, run);
  const std::optional<StepInterval> interval = PlanInterval(h, p);
  nlohmann::ordered_json j;
  j["rank"] = rank;
  j["fix"] = ConstraintText(p.strategy);
  j["strategy"] = StrategyJson(p.strategy);
  j["score"] = p.score;
  j["step_time_s"] = p.step_time_s;
  AddIntervalJson(interval, j);
  j["risk_step_time_s"] = p.risk_step_time_s;
  const std::optional<bool> distinct = is_best ? std::nullopt : DistinguishableFrom(best, interval);
  j["distinguishable_from_best"] =
      distinct ? nlohmann::ordered_json(*distinct) : nlohmann::ordered_json();
  j["tokens_per_s"] = p.tokens_per_s;
  j["mfu"] = p.mfu;
  j["peak_memory_bytes"] = p.peak_memory_bytes;
  j["memory_limit_bytes"] = p.memory_limit_bytes;
  j["bubble_fraction"] = p.bubble_fraction;
  j["exposed_comm_fraction"] = p.exposed_comm_fraction;
  j["breakdown"] = BreakdownJson(p.breakdown);
  j["memory_breakdown"] = MemoryBreakdownJson(p.memory);
  if (p.goodput) {
    j["goodput"] = *p.goodput;
    j["effective_tokens_per_s"] = p.tokens_per_s * *p.goodput;
  }
  j["gpus"] = p.strategy.WorldSize();
  j["gpu_hours_per_billion_tokens"] = cost.gpu_hours_per_billion_tokens;
  j["usd_per_billion_tokens"] = OrNull(cost.usd_per_billion_tokens);
  j["steps_to_train"] =
      cost.steps ? nlohmann::ordered_json(*cost.steps) : nlohmann::ordered_json(nullptr);
  j["time_to_train_s"] = OrNull(cost.time_to_train_s);
  j["gpu_hours_to_train"] = OrNull(cost.gpu_hours_to_train);
  j["usd_to_train"] = OrNull(cost.usd_to_train);
  j["variants"] = VariantsJson(p);
  return j;
}

// The unit of a plan's "score" under |objective|.
const char* ScoreUnit(Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return "s";
    case Objective::kCost:
      return "gpu_hours_per_billion_tokens";
    case Objective::kMemoryHeadroom:
      return "fraction";
    case Objective::kGoodput:
      return "effective_s";
  }
  return "s";
}

nlohmann::ordered_json RequestJson(const PlanHeader& h) {
  const SearchRequest& r = h.request;
  const TrainingRun& run = h.options.training;
  return {{"model", h.model.file},
          {"cluster", h.cluster.file},
          {"gpus", r.gpus},
          {"global_batch", r.global_batch},
          {"seq_len", r.seq_len},
          {"dtype", kDtypeNames.Name(r.dtype)},
          {"optimizer", kOptimizerNames.Name(r.optimizer)},
          {"objective", kObjectiveNames.Name(h.options.objective)},
          {"risk", h.options.risk},
          {"framework", h.options.simulation.framework ? h.options.simulation.framework->name
                                                       : std::string("none")},
          {"top", h.options.top_k},
          {"score_unit", ScoreUnit(h.options.objective)},
          {"gpu_counts", GpuCounts(r, h.cluster)},
          {"max_step_time_s", OrNull(h.options.max_step_time_s)},
          {"price_per_gpu_hour_usd", OrNull(run.price_per_gpu_hour_usd)},
          {"price_source", run.price_source.empty() ? nlohmann::ordered_json(nullptr)
                                                    : nlohmann::ordered_json(run.price_source)},
          {"tokens", OrNull(run.tokens)},
          {"distinct", h.options.distinct}};
}

nlohmann::ordered_json SearchJson(const PlanReport& report) {
  nlohmann::ordered_json rejections = nlohmann::ordered_json::array();
  for (const Rejection& r : report.rejections) {
    rejections.push_back({{"rule", r.rule}, {"count", r.count}, {"example", r.example}});
  }
  return {{"enumerated", report.enumerated},
          {"rejected_by_rules", report.rejected_by_rules},
          {"rejected_by_memory_bound", report.rejected_by_memory_bound},
          {"rejected_by_step_time_bound", report.rejected_by_step_time_bound},
          {"skipped_by_bound", report.skipped_by_bound},
          {"simulated", report.simulated},
          {"rejected_by_simulation", report.rejected_by_simulation},
          {"rejections", rejections}};
}

const char* InterruptedPhase(const PlanReport& report) {
  return report.bounded < report.enumerated ? "bounding" : "simulating";
}

// "INTERRUPTED by SIGINT while simulating: ..." - how far the search got and what the table is.
std::string InterruptedLine(const PlanReport& r, const std::string& signal) {
  std::string line = "INTERRUPTED" + (signal.empty() ? std::string() : " by " + signal) +
                     " while " + InterruptedPhase(r) + ": a PARTIAL result. ";
  if (r.bounded < r.enumerated) {
    return line + GroupedDigits(r.bounded) + " of " + GroupedDigits(r.enumerated) +
           " strategies bounded, none simulated yet: no plan to rank.";
  }
  return line + GroupedDigits(r.simulated) + " of " + GroupedDigits(r.candidates) +
         " candidates simulated (all " + GroupedDigits(r.enumerated) +
         " strategies bounded); the plans below are the "
         "best of those " +
         GroupedDigits(r.simulated) + ", not necessarily of the search space.";
}

nlohmann::ordered_json InterruptedJson(const PlanReport& r, const std::string& signal) {
  if (!r.interrupted) return nullptr;
  return {
      {"signal", signal.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(signal)},
      {"phase", InterruptedPhase(r)},
      {"strategies_bounded", r.bounded},
      {"strategies", r.enumerated},
      {"candidates_simulated", r.simulated},
      {"candidates", r.candidates},
      {"candidates_not_reached", r.unsearched}};
}

}  // namespace

void PrintPlan(const PlanHeader& header, const PlanReport& report, double wall_s, std::ostream& out,
               const std::string& interrupted_by) {
  PrintHeader(header, out);
  if (report.interrupted) out << InterruptedLine(report, interrupted_by) << "\n";
  out << "searched " << (report.interrupted ? GroupedDigits(report.bounded) + " of " : "")
      << GroupedDigits(report.enumerated) << " strategies in " << Fixed(wall_s, 2)
      << " s: " << GroupedDigits(report.rejected_by_rules) << " break a rule, "
      << GroupedDigits(report.rejected_by_memory_bound) << " cannot fit (memory bound), "
      << (header.options.max_step_time_s ? GroupedDigits(report.rejected_by_step_time_bound) +
                                               " over --max-step-time (step time bound), "
                                         : "")
      << GroupedDigits(report.skipped_by_bound) << " cannot beat the top " << header.options.top_k
      << " (time bound, not simulated), " << GroupedDigits(report.simulated) << " simulated ("
      << GroupedDigits(report.rejected_by_simulation) << " did not fit)";
  if (report.interrupted)
    out << ", " << GroupedDigits(report.unsearched) << " candidates not reached (interrupted)";
  out << "\n\n";
  PrintTable(header, report.ranked, out);
  if (report.interrupted && report.ranked.empty())
    out << "   (no plan simulated before the interrupt)\n";
  out << "\ncolumns: cp 4r = ring attention, 4g = all-gather; zero +off = optimizer offload, +offp "
         "= also "
         "parameters; ovl g/p/t = overlap grad reduce / param gather / tp comm; schedule a/b = "
         "layers on the first/"
         "last stage; 80% interval = where the measured step time falls, from loom's errors on "
         "measured steps of the plan's regime (README, Fidelity); "
      << (RiskRanked(header)
              ? RiskName(header.options.risk) +
                    " s = the step time at that quantile (--risk), loom's prediction as the median "
                    "and spread as its errors in the regime, what the plans are ranked by; "
              : std::string())
      << "vs best: within = that interval "
         "overlaps the best plan's by more than half, so loom's errors cannot tell the two apart. "
         "Paste a plan into --explain with `--json` (its \"fix\").\n";
  const CostColumns columns = CostColumnsOf(header);
  if (columns.cost) {
    out << "cost: GPU-h/Btok = GPU-hours per 10^9 tokens"
        << (columns.price ? ", $/Btok = its dollars" : "")
        << (columns.tokens ? "; train days and GPU-hours over whole steps of the global batch" : "")
        << ".\n";
  }
  if (header.options.objective == Objective::kGoodput) {
    out << "goodput: the expected share of wall time that trains, with failures at the rates of "
        << header.cluster.file
        << " for the plan's GPUs and nodes, checkpoints at Daly's interval and a restart after "
           "each failure; eff.tok/s = tokens/s x goodput, which the ranking maximises.\n";
  }
  if (header.options.distinct) {
    out << "--distinct: a \"~\" line is a variant of the row above: it differs only in the setting "
           "shown, by under "
           "1 % in step time and score.\n";
  }
  if (!report.rejections.empty()) {
    out << "\nrejected, by rule (one example each):\n";
    for (const Rejection& r : report.rejections) {
      out << "  " << std::left << std::setw(22) << r.rule << std::right << std::setw(10)
          << GroupedDigits(r.count) << "  " << r.example << "\n";
    }
  }
  if (report.interrupted) {
    out << "\nINTERRUPTED" << (interrupted_by.empty() ? "" : " (" + interrupted_by + ")")
        << ": the ranking above is partial; run the search to the end for the best plans of the "
           "space.\n";
  }
}

void PrintEmitted(const EmitResult& emitted, std::ostream& out) {
  const std::string heading = emitted.heading.empty()
                                  ? "launch settings of plan " + std::to_string(emitted.rank)
                                  : emitted.heading;
  out << "\n" << heading << ":\n" << emitted.text;
  for (const std::string& note : emitted.notes) out << "note: " << note << "\n";
}

namespace {

// What holds the explained strategy's memory, and what would make it fit.
MemoryView ExplainedMemory(const Explanation& e) {
  return {e.memory_by_stage, e.peak_stage,      e.plan.memory_limit_bytes,
          e.reserve,         e.fit_suggestions, e.plan.step_time_s};
}

}  // namespace

void PrintExplanation(const PlanHeader& header, const Explanation& e, std::ostream& out) {
  PrintHeader(header, out);
  const RankedPlan& p = e.plan;
  const StepBreakdown& b = p.breakdown;
  out << "strategy: " << ConstraintText(p.strategy) << "\n";
  const std::optional<StepInterval> interval = PlanInterval(header, p);
  out << "step " << Fixed(p.step_time_s, 3) << " s (80% interval " << IntervalText(interval)
      << " s), " << HumanCount(p.tokens_per_s) << " tokens/s, MFU " << Percent(p.mfu)
      << ", peak memory " << Gib(p.peak_memory_bytes) << " of " << Gib(p.memory_limit_bytes)
      << " GiB usable" << (e.fits ? "" : ": DOES NOT FIT") << "\n";
  const double step = p.step_time_s > 0 ? p.step_time_s : 1;
  out << "the step: compute " << Fixed(b.compute_s, 3) << " s (" << Percent(b.compute_s / step)
      << "), bubble " << Fixed(b.bubble_s, 3) << " s (" << Percent(b.bubble_s / step)
      << "), exposed communication " << Fixed(b.exposed_comm_s, 3) << " s ("
      << Percent(b.exposed_comm_s / step) << "), optimizer " << Fixed(b.optimizer_s, 3) << " s ("
      << Percent(b.optimizer_s / step) << "), host " << Fixed(b.host_s, 3) << " s ("
      << Percent(b.host_s / step) << "); dominated by " << e.dominant << "\n";
  PrintMemory(ExplainedMemory(e), out);
  if (e.fits) {
    if (e.more_better_plans) {
      out << "rank over " << e.better_plans << ": at least " << e.better_plans
          << " plans of the search space do better";
    } else {
      out << "rank " << e.better_plans + 1 << ": " << e.better_plans
          << " plans of the search space do better";
    }
    if (e.better_plans == 0) out << " (it is the best plan)";
    out << "\n";
  }
  if (e.best.has_value() && e.best->score < p.score) {
    const RankedPlan& best = *e.best;
    const std::optional<StepInterval> best_interval = PlanInterval(header, best);
    const std::optional<bool> distinct = DistinguishableFrom(best_interval, interval);
    out << "best plan: " << ConstraintText(best.strategy) << "\n  step "
        << Fixed(best.step_time_s, 3) << " s (" << Percent(best.step_time_s / step - 1)
        << "; 80% interval " << IntervalText(best_interval) << " s"
        << (!distinct   ? ""
            : *distinct ? ", apart from this strategy's"
                        : ", overlapping this strategy's by more than half: loom's errors cannot "
                          "tell the two apart")
        << "), MFU " << Percent(best.mfu) << ", peak " << Gib(best.peak_memory_bytes)
        << " GiB; against this strategy: compute "
        << Fixed(best.breakdown.compute_s - b.compute_s, 3) << " s, bubble "
        << Fixed(best.breakdown.bubble_s - b.bubble_s, 3) << " s, exposed communication "
        << Fixed(best.breakdown.exposed_comm_s - b.exposed_comm_s, 3) << " s, optimizer "
        << Fixed(best.breakdown.optimizer_s - b.optimizer_s, 3) << " s, host "
        << Fixed(best.breakdown.host_s - b.host_s, 3) << " s\n";
  }
}

nlohmann::ordered_json PlanJson(const PlanHeader& header, const PlanReport& report, double wall_s,
                                const std::optional<EmitResult>& emitted,
                                const std::string& interrupted_by) {
  nlohmann::ordered_json j;
  j["schema"] = "loom.plan/1";
  j["request"] = RequestJson(header);
  j["search"] = SearchJson(report);
  j["search"]["wall_s"] = wall_s;
  j["search"]["interrupted"] = InterruptedJson(report, interrupted_by);
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  const std::optional<StepInterval> best =
      report.ranked.empty() ? std::nullopt : PlanInterval(header, report.ranked.front());
  for (size_t i = 0; i < report.ranked.size(); ++i) {
    plans.push_back(PlanEntry(header, report.ranked[i], static_cast<int64_t>(i) + 1, best, i == 0));
  }
  j["plans"] = plans;
  if (emitted.has_value()) {
    j["emit"] = emitted->json;
    j["emit"]["notes"] = emitted->notes;
  }
  return j;
}

nlohmann::ordered_json ExplanationJson(const PlanHeader& header, const Explanation& e) {
  nlohmann::ordered_json j;
  j["schema"] = "loom.explain/1";
  j["request"] = RequestJson(header);
  const std::optional<StepInterval> best =
      e.best.has_value() ? PlanInterval(header, *e.best) : std::nullopt;
  const bool is_best = !e.best.has_value() || e.better_plans == 0;
  j["strategy"] = PlanEntry(header, e.plan, e.fits ? e.better_plans + 1 : 0, best, is_best);
  j["fits"] = e.fits;
  j["dominant"] = e.dominant;
  j["better_plans"] = e.better_plans;
  j["better_plans_is_lower_bound"] = e.more_better_plans;
  j["memory"] = MemoryJson(ExplainedMemory(e));
  if (e.best.has_value()) j["best"] = PlanEntry(header, *e.best, 1, best, true);
  j["search"] = SearchJson(e.search);
  return j;
}

}  // namespace loom
