#ifndef LOOM_PLAN_PLANNER_H_
#define LOOM_PLAN_PLANNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "plan/search_space.h"
#include "plan/training_cost.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/step_intervals.h"

namespace loom {

// What the planner minimises.
//   time:            the step time, in seconds.
//   cost:            GPU-hours per 10^9 tokens (plan/training_cost.h: loom's one unit of cost). At
//                    one GPU count it ranks as time does; over SearchRequest's min_gpus..max_gpus a
//                    smaller job may win by wasting less of each GPU.
//   memory-headroom: the peak memory's share of the usable memory (a fraction), then the step time.
//   goodput:         the effective step time, step time / expected goodput (plan/goodput.h): wall
//                    seconds per step once failures, checkpoints and restarts are paid for. It
//                    ranks as effective throughput (tokens/s x goodput) does, which falls with the
//                    GPUs a job spans and the checkpoint it writes. Needs the cluster file's
//                    "reliability" object.
enum class Objective { kTime, kCost, kMemoryHeadroom, kGoodput };
inline constexpr EnumNames<Objective, 4> kObjectiveNames({{
    {Objective::kTime, "time"},
    {Objective::kCost, "cost"},
    {Objective::kMemoryHeadroom, "memory-headroom"},
    {Objective::kGoodput, "goodput"},
}});

struct PlanProgress;

// What the search made of one strategy of its space (PlanOptions::on_verdict).
enum class VerdictKind : uint8_t {
  kNotReached,     // an interrupt stopped the search before it
  kRule,           // a strategy rule, the --emit admission or the workload refused it
  kMemoryBound,    // its memory bound exceeds the usable memory
  kStepTimeBound,  // its step-time bound exceeds --max-step-time
  kBoundedOut,     // its score bound could not beat the top plans: not simulated
  kSimulated,      // simulated and ranked among the plans (or beaten by them)
  kSimulatedOver,  // simulated: it did not fit, or took over --max-step-time
};
inline constexpr EnumNames<VerdictKind, 7> kVerdictKindNames({{
    {VerdictKind::kNotReached, "not reached"},
    {VerdictKind::kRule, "rule"},
    {VerdictKind::kMemoryBound, "memory bound"},
    {VerdictKind::kStepTimeBound, "step-time bound"},
    {VerdictKind::kBoundedOut, "bounded out"},
    {VerdictKind::kSimulated, "simulated"},
    {VerdictKind::kSimulatedOver, "rejected after simulation"},
}});

struct StrategyVerdict {
  VerdictKind kind = VerdictKind::kNotReached;
  std::string rule;  // the rule that rejected it ("--tp", "memory", "--max-step-time", ...)
  // Candidates (bounded out or simulated): the lowest score its bounds allow.
  std::optional<double> score_bound;
  // Simulated: the figures of the simulation (a plan rejected after it has its step and memory).
  std::optional<double> step_time_s, score, tokens_per_s, mfu;
  int64_t peak_memory_bytes = 0;
};

struct PlanOptions {
  int64_t top_k = 10;
  Objective objective = Objective::kTime;
  // The time, cost and goodput objectives take the step time at this quantile of the measured
  // step times, loom's prediction taken as their median and its regime's spread about it
  // (RiskFactor, ShippedRiskFactor in spec/step_intervals.h). 0.5: loom's prediction; 0.9 ranks
  // each plan by its bad case. Within [kStepQuantileLowest, kStepQuantileHighest].
  double risk = 0.5;
  int32_t threads = 0;  // 0: every hardware thread
  // Off: every strategy the rules accept is simulated, and the memory is judged by the simulation
  // alone (the exhaustive search that the pruned one must agree with).
  bool prune = true;
  // Rank only plans that score strictly below this (Explain's question: how many plans beat this
  // one). Every such plan is kept, whatever top_k says, until there are |better_than_limit|: the
  // search then stops, and PlanReport::saturated says the count is a lower bound.
  std::optional<double> better_than;
  int64_t better_than_limit = 100;
  // Plans whose step takes longer are rejected (rule "--max-step-time"): by the step time bound
  // before simulating, or after.
  std::optional<double> max_step_time_s;
  // Rank rows of plans rather than plans: top_k rows, each with the plans that differ from its
  // best only in one setting that moves the step by under 1 % as its variants (plan/distinct.h).
  bool distinct = false;
  // Not used by the search: the price and token count the report turns each plan into time to
  // train and dollars with.
  TrainingRun training;
  SimulationOptions simulation;
  // When set, a strategy it refuses is rejected with its message under |admit_rule| (the launch
  // settings the plan must be expressible in: `--emit megatron` admits what Megatron-LM can run).
  std::function<Status(const Strategy&)> admit;
  std::string admit_rule;
  // Called on the calling thread about ten times a second while the search runs, and once at the
  // end of each phase.
  std::function<void(const PlanProgress&)> progress;
  // When set, polled by every thread before each strategy it bounds or simulates; once it returns
  // true the threads stop after the strategy in hand, and Plan returns what it ranked so far with
  // PlanReport::interrupted set. Called concurrently, so it must be thread-safe, and cheap
  // (`loom plan` passes InterruptRequested, an atomic load).
  std::function<bool()> stop_requested;
  // When set, called after the search on the calling thread once for every strategy of the space,
  // in EnumerateStrategies' order, with the strategy as the search saw it (node groups' balanced
  // layouts) and its verdict (loom plan --csv). Costs about 100 bytes a strategy while searching.
  std::function<void(const Strategy&, const StrategyVerdict&)> on_verdict;
};

// One simulated plan, as the ranked table shows it.
struct RankedPlan {
  int64_t index = 0;  // position in EnumerateStrategies' order (ties rank by it)
  Strategy strategy;
  double score = 0;        // the objective's value: lower is better
  double step_time_s = 0;  // loom's prediction
  // The PlanOptions::risk quantile of the measured step time: step_time_s * RiskFactor, what the
  // time, cost and goodput objectives score.
  double risk_step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double bubble_fraction = 0;
  double exposed_comm_fraction = 0;  // exposed communication over the step time
  int64_t peak_memory_bytes = 0;
  int64_t memory_limit_bytes = 0;
  double gpu_hours_per_billion_tokens = 0;  // loom's unit of cost (plan/training_cost.h)
  // Under Objective::kGoodput: the expected goodput (plan/goodput.h); unset under the others.
  std::optional<double> goodput;
  StepBreakdown breakdown;
  MemoryBreakdown memory;  // what holds the peak stage's memory at its peak
  // With PlanOptions::distinct: the plans of this one's row, best first, that differ from it only
  // in |variant_setting| and by under 1 % in step and score.
  std::vector<RankedPlan> variants;
  std::string variant_setting;
};

// How far the search is, for a progress line.
struct PlanProgress {
  const char* phase = "";  // "bounding" or "simulating"
  // Strategies (bounding) or candidates (simulating) dealt with, out of |total|: with the
  // candidates now |bounded_out| included.
  int64_t done = 0;
  int64_t total = 0;
  // Simulating: candidates not yet reached whose lower bound cannot beat the top_k-th plan found
  // so far. They will never be simulated (that score only falls), so they count as done. At the
  // end of the phase, PlanReport::skipped_by_bound.
  int64_t bounded_out = 0;
  double elapsed_s = 0;     // since the phase began
  bool phase_over = false;  // the phase's last report (the phase ended, or a stop ended it)
  std::optional<RankedPlan>
      best;  // the best plan simulated so far; at the end, the ranking's first
};

// Seconds the phase has left: the work left (total minus done) at the rate of the work done so far
// (done minus bounded out); nullopt before any. While simulating, better plans bound out more of
// what is left, and later simulations may run slower or faster than the first: an estimate.
std::optional<double> RemainingSeconds(const PlanProgress& progress);

// Strategies turned away, by the rule (its flag) that rejected them.
struct Rejection {
  std::string rule;  // "--tp", "--schedule", "memory", ...
  int64_t count = 0;
  std::string example;  // the message of the first strategy (in enumeration order) it rejected
};

struct PlanReport {
  int64_t enumerated = 0;
  int64_t rejected_by_rules = 0;         // StrategyViolations, or the workload refused them
  int64_t rejected_by_memory_bound = 0;  // StepBounds::peak_memory_bytes over the usable memory
  int64_t rejected_by_step_time_bound =
      0;  // StepBounds::step_time over PlanOptions::max_step_time_s
  // Simulated, and the simulated peak did not fit, or the step took over max_step_time_s.
  int64_t rejected_by_simulation = 0;
  int64_t skipped_by_bound =
      0;  // their lower bound could not beat the top_k-th plan: not simulated
  int64_t simulated = 0;
  std::vector<Rejection> rejections;  // the rules' and memory's, most frequent first
  std::vector<RankedPlan> ranked;     // best first, at most top_k (unless better_than)
  bool saturated =
      false;  // with better_than: better_than_limit plans were found and the search stopped
  // Set when PlanOptions::stop_requested stopped the search before it finished: |ranked| is then
  // the best of the |simulated| plans, not necessarily of the space, and the counts above cover
  // only the strategies reached. bounded < enumerated: stopped while bounding (nothing simulated);
  // else while simulating, with |unsearched| candidates neither simulated nor skipped by the bound.
  bool interrupted = false;
  int64_t bounded = 0;     // strategies put through the rules and the memory bound
  int64_t candidates = 0;  // of those, what the rules and the bounds let through, to simulate
  int64_t unsearched =
      0;  // candidates the interrupt left: candidates = simulated + skipped_by_bound + unsearched
};

// Under Objective::kGoodput, the expected goodput of |strategy| on |cluster| for a model of
// |params| parameters (EstimateGoodput, plan/goodput.h); nullopt under the other objectives.
// Errors: those of CheckGoodputInputs and EstimateGoodput.
Result<std::optional<double>> ObjectiveGoodput(Objective objective, const ClusterSpec& cluster,
                                               int64_t params, const Strategy& strategy);

// What a prediction of |strategy|'s step on |cluster| is multiplied by to give the options.risk
// quantile of its measured step time: ShippedRiskFactor of its regime (the GPU, the host thread's
// framework, the parallelism in play).
double RiskFactor(const ClusterSpec& cluster, const PlanOptions& options, const Strategy& strategy);

// |result| of the strategy at |index| of the space as a ranked plan under |objective|, with its
// ObjectiveGoodput |goodput| and its RiskFactor |risk_factor|.
RankedPlan RankPlan(int64_t index, const Strategy& strategy, const SimulationResult& result,
                    Objective objective, std::optional<double> goodput, double risk_factor);

// The objective's value of a simulated plan, and the lowest a plan can score given its bounds.
// |goodput| is the plan's ObjectiveGoodput: a step's bound divided by it bounds the effective step,
// since goodput does not depend on the step time. PlanScore scores the step time at the risk
// quantile (result.step_time_s * |risk_factor|); a bound times the same factor bounds it, since
// the factor depends on the strategy alone.
double PlanScore(Objective objective, const Strategy& strategy, const SimulationResult& result,
                 std::optional<double> goodput, double risk_factor);
double PlanScoreBound(Objective objective, const Strategy& strategy, double step_time_s,
                      int64_t peak_bytes, int64_t limit_bytes, std::optional<double> goodput);

// Searches the space of |request| (EnumerateStrategies): rejects what the strategy rules and the
// memory bound reject, bounds the rest, and simulates them best bound first on |options.threads|
// threads, skipping every strategy whose bound cannot beat the top_k-th plan found so far (sound:
// a plan's score is never below its bound). The ranked list is the same whatever the thread count
// and with or without pruning; the counts of simulated and skipped strategies may vary with the
// threads' timing. Errors: those of EnumerateStrategies; InvalidArgument naming the most common
// rule when nothing in the space is valid (the pinned settings contradict the model or cluster).
// An interrupted search (options.stop_requested) is never an error: its report says how far it got.
// Under Objective::kGoodput, the errors of CheckGoodputInputs come before any search; an
// options.risk outside the quantiles of CheckStepQuantile is an InvalidArgument naming --risk.
Result<PlanReport> Plan(const ModelSpec& model, const ClusterSpec& cluster,
                        const SearchRequest& request, const PlanOptions& options);

}  // namespace loom

#endif  // LOOM_PLAN_PLANNER_H_
