#include "plan/planner.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "core/checked.h"
#include "plan/distinct.h"
#include "plan/goodput.h"
#include "plan/leaderboard.h"
#include "sim/stage_balance.h"
#include "sim/step_bounds.h"

namespace loom {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// The rule an error of the step's builders (the schedule, the workload, the simulator) comes from,
// for strategies the rules (StrategyViolations, tallied by their flag) accept: the flag its message
// leads with ("--schedule dualpipev with --pp 2: ..." -> "--schedule"), else "workload". Those
// errors carry a Status, not a flag.
std::string RuleOf(const std::string& message) {
  if (message.rfind("--", 0) != 0) return "workload";
  return message.substr(0, message.find_first_of(" :"));
}

struct Tally {
  int64_t count = 0;
  int64_t first_index = std::numeric_limits<int64_t>::max();
  std::string example;
};
using Tallies = std::map<std::string, Tally>;

void Count(Tallies& tallies, const std::string& rule, int64_t index, const std::string& message) {
  Tally& t = tallies[rule];
  ++t.count;
  if (index < t.first_index) {
    t.first_index = index;
    t.example = message;
  }
}

void Merge(const Tallies& from, Tallies& into) {
  for (const auto& [rule, t] : from) {
    Tally& to = into[rule];
    to.count += t.count;
    if (t.first_index < to.first_index) {
      to.first_index = t.first_index;
      to.example = t.example;
    }
  }
}

// Runs work(thread, i) for every i in [0, n) on |threads| threads, taking indices in order, until
// work returns false; meanwhile calls report(finished, taken) on the calling thread about ten
// times a second (taken: indices handed out, finished: of those, the ones whose work returned).
void ParallelFor(int64_t n, int32_t threads, const std::function<bool(int32_t, int64_t)>& work,
                 const std::function<void(int64_t, int64_t)>& report) {
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable finished;
  int32_t running = threads;
  std::vector<std::thread> pool;
  for (int32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t i = next.fetch_add(1);
        if (i >= n) break;
        if (!work(t, i)) stop.store(true);
        done.fetch_add(1, std::memory_order_relaxed);
      }
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      finished.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; })) {
      report(done.load(), std::min(n, next.load()));
    }
  }
  for (std::thread& t : pool) t.join();
}

// Seconds since |start|.
double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "tp=1,pp=1,...: needs at least 912.3 GiB of 77.6 GiB usable".
std::string MemoryMessage(const Strategy& s, const char* verb, int64_t bytes, int64_t limit) {
  const auto gib = [](int64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB",
                  static_cast<double>(b) / static_cast<double>(int64_t{1} << 30));
    return std::string(text);
  };
  return ConstraintText(s) + ": " + verb + " " + gib(bytes) + " per GPU of " + gib(limit) +
         " usable";
}

// A strategy that passed the rules and the memory bound.
struct Survivor {
  int64_t index;
  double bound;  // the lowest score it can reach
};

// Why a request has no strategy at all, with the nearest GPU counts (in whole nodes) that have
// some.
Status EmptySpaceError(const ModelSpec& model, const ClusterSpec& cluster,
                       const SearchRequest& request) {
  const auto has_layouts = [&](int64_t gpus) {
    SearchRequest r = request;
    r.gpus = gpus;
    Result<std::vector<Strategy>> space = EnumerateStrategies(model, cluster, r);
    return space.ok() && !space->empty();
  };
  const int64_t step = std::max<int64_t>(1, cluster.gpus_per_node);
  const Constraints& fixed = request.fixed;
  const bool pinned =
      fixed.tp.has_value() || fixed.pp.has_value() || fixed.dp.has_value() || fixed.cp.has_value();
  std::string nearest;
  for (int64_t k = 1; k <= 64 && nearest.empty(); ++k) {
    for (int64_t gpus : {request.gpus - k * step, request.gpus + k * step}) {
      if (gpus >= 1 && has_layouts(gpus))
        nearest += (nearest.empty() ? "" : " or ") + std::to_string(gpus);
    }
  }
  return Status::InvalidArgument(
      "--gpus " + std::to_string(request.gpus) + " --global-batch " +
      std::to_string(request.global_batch) +
      ": no layout tp * cp * pp * dp of the GPUs (tp within a node, pp up to the " +
      std::to_string(model.num_layers) + " layers, dp dividing the global batch" +
      (pinned ? ", the pinned degrees kept" : "") + ") exists" +
      (nearest.empty() ? std::string("; change the GPU count or the global batch")
                       : "; use --gpus " + nearest +
                             ", or a global batch that more data-parallel sizes divide"));
}

// One search's inputs, shared by its two phases.
struct Search {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  // The space; bounding gives a strategy whose stages run on different GPUs its balanced layout
  // (each strategy written by the one thread that bounds it, read by the simulations after).
  std::vector<Strategy>& strategies;
  const PlanOptions& options;
  int32_t threads;
  int64_t params;  // the model's parameters, which a checkpoint holds (goodput objective)
  // RiskFactor of each StepParallelismRegime: the GPU and framework are the search's.
  std::array<double, kStepParallelismRegimes> risk_factors;

  double RiskOf(const Strategy& s) const {
    return risk_factors[static_cast<size_t>(StepParallelismRegime(s))];
  }
  // With PlanOptions::on_verdict: each strategy's, written by the one thread that deals with it.
  std::vector<StrategyVerdict>* verdicts = nullptr;
};

// Counts strategy |i| under |rule| in |tallies| and records it as a |kind| verdict.
void Reject(const Search& search, Tallies& tallies, VerdictKind kind, const std::string& rule,
            int64_t i, const std::string& message) {
  Count(tallies, rule, i, message);
  if (search.verdicts == nullptr) return;
  StrategyVerdict& v = (*search.verdicts)[static_cast<size_t>(i)];
  v.kind = kind;
  v.rule = rule;
}

std::array<double, kStepParallelismRegimes> RiskFactors(const ClusterSpec& cluster,
                                                        const PlanOptions& options) {
  std::array<double, kStepParallelismRegimes> factors = {};
  for (int p = 0; p < kStepParallelismRegimes; ++p) {
    factors[static_cast<size_t>(p)] =
        ShippedRiskFactor(cluster, options.simulation.framework, p, options.risk);
  }
  return factors;
}

// Stages on GPUs of different speeds (node groups) take the layers in proportion to their speed
// (BalancedPipelineLayout) rather than an even split, which would leave the faster GPUs waiting on
// the slower. A strategy the balance cannot place is left as it is, for the rules to judge.
void BalanceLayers(const Search& search, Strategy& s) {
  if (!PlannerBalancesLayers(search.cluster, s)) return;
  Result<std::vector<int64_t>> layout =
      BalancedPipelineLayout(search.model, search.cluster, s, search.options.simulation.Kernels());
  if (layout.ok()) s.layout = *layout;
}

bool StopRequested(const PlanOptions& options) {
  return options.stop_requested && options.stop_requested();
}

// What the rules and the bounds made of a strategy.
enum class Bounded : uint8_t {
  kNotReached,
  kRuleRejected,
  kMemoryRejected,
  kStepTimeRejected,
  kCandidate
};

// "tp=1,...: a step takes at least 14.21 s, over --max-step-time 10 s".
std::string StepTimeMessage(const Strategy& s, const char* verb, double step_s, double max_s) {
  char text[96];
  std::snprintf(text, sizeof text, ": %s %.3g s, over --max-step-time %g s", verb, step_s, max_s);
  return ConstraintText(s) + text;
}

// Puts strategy |i| through the rules, the --emit admission and the memory bound; a candidate gets
// the lowest score it can reach in |bound|.
Bounded BoundOne(const Search& search, int64_t i, Tallies& tallies, double* bound) {
  BalanceLayers(search, search.strategies[i]);
  const Strategy& s = search.strategies[i];
  const PlanOptions& options = search.options;
  const std::vector<StrategyViolation> violations =
      StrategyViolations(s, search.model, search.cluster);
  if (!violations.empty()) {
    Reject(search, tallies, VerdictKind::kRule, violations.front().flag, i,
           violations.front().message);
    return Bounded::kRuleRejected;
  }
  if (options.admit) {
    if (Status admitted = options.admit(s); !admitted.ok()) {
      Reject(search, tallies, VerdictKind::kRule, options.admit_rule, i, admitted.message());
      return Bounded::kRuleRejected;
    }
  }
  Result<PreparedStep> step =
      PrepareTrainingStep(search.model, search.cluster, s, options.simulation);
  if (!step.ok()) {
    Reject(search, tallies, VerdictKind::kRule, RuleOf(step.status().message()), i,
           step.status().message());
    return Bounded::kRuleRejected;
  }
  const StepBounds b = BoundStep(*step);
  // The strategy's own reserve (its NCCL communicators): on node groups the roomiest stage's. A
  // bound over the limit by less than the fragmentation headroom is rejected under its own rule:
  // a lower --memory-headroom may admit it.
  int64_t limit = 0, headroom_bytes = 0;
  for (const MemoryReserve& reserve : step->reserves) {
    if (reserve.LimitBytes() < limit) continue;
    limit = reserve.LimitBytes();
    headroom_bytes = reserve.headroom_bytes;
  }
  if (options.prune && b.peak_memory_bytes > limit) {
    const bool near = b.peak_memory_bytes <= limit + headroom_bytes;
    std::string message = MemoryMessage(s, "needs at least", b.peak_memory_bytes, limit);
    if (near)
      message += ", over it by less than the " + HeadroomText(step->reserves.front()) +
                 " headroom kept for fragmentation";
    Reject(search, tallies, VerdictKind::kMemoryBound, near ? "memory headroom" : "memory", i,
           message);
    return Bounded::kMemoryRejected;
  }
  const std::optional<double>& max_step_s = options.max_step_time_s;
  if (options.prune && max_step_s && b.step_time.ToSeconds() > *max_step_s) {
    Reject(search, tallies, VerdictKind::kStepTimeBound, "--max-step-time", i,
           StepTimeMessage(s, "a step takes at least", b.step_time.ToSeconds(), *max_step_s));
    return Bounded::kStepTimeRejected;
  }
  Result<std::optional<double>> goodput =
      ObjectiveGoodput(options.objective, search.cluster, search.params, s);
  if (!goodput.ok()) {
    Reject(search, tallies, VerdictKind::kRule, "--objective", i, goodput.status().message());
    return Bounded::kRuleRejected;
  }
  *bound = PlanScoreBound(options.objective, s, b.step_time.ToSeconds() * search.RiskOf(s),
                          b.peak_memory_bytes, limit, *goodput);
  if (search.verdicts != nullptr) {
    StrategyVerdict& v = (*search.verdicts)[static_cast<size_t>(i)];
    v.kind = VerdictKind::kBoundedOut;  // until it is simulated
    v.score_bound = *bound;
  }
  return Bounded::kCandidate;
}

struct Bounding {
  int64_t bounded = 0;  // every strategy unless stop_requested came first
  int64_t rejected_by_rules = 0;
  int64_t rejected_by_memory_bound = 0;
  int64_t rejected_by_step_time_bound = 0;
  std::vector<Survivor> candidates;  // best bound first
  Tallies tallies;
};

// Rules and bounds, every strategy (until stop_requested).
Bounding BoundEvery(const Search& search) {
  const int64_t n = static_cast<int64_t>(search.strategies.size());
  std::vector<Tallies> tallies(static_cast<size_t>(search.threads));
  std::vector<double> bound(static_cast<size_t>(n), kNever);
  std::vector<Bounded> outcome(static_cast<size_t>(n),
                               Bounded::kNotReached);  // each written by one thread
  const PlanOptions& options = search.options;
  const auto start = std::chrono::steady_clock::now();
  const auto report = [&](int64_t finished, int64_t, bool over) {
    PlanProgress p;
    p.phase = "bounding";
    p.done = finished;
    p.total = n;
    p.elapsed_s = SecondsSince(start);
    p.phase_over = over;
    options.progress(p);
  };
  ParallelFor(
      n, search.threads,
      [&](int32_t t, int64_t i) {
        if (StopRequested(options)) return false;
        outcome[i] = BoundOne(search, i, tallies[t], &bound[i]);
        return true;
      },
      [&](int64_t finished, int64_t taken) {
        if (options.progress) report(finished, taken, false);
      });
  Bounding result;
  for (const Tallies& t : tallies) Merge(t, result.tallies);
  for (int64_t i = 0; i < n; ++i) {
    result.bounded += outcome[i] != Bounded::kNotReached;
    result.rejected_by_rules += outcome[i] == Bounded::kRuleRejected;
    result.rejected_by_memory_bound += outcome[i] == Bounded::kMemoryRejected;
    result.rejected_by_step_time_bound += outcome[i] == Bounded::kStepTimeRejected;
    if (outcome[i] == Bounded::kCandidate) result.candidates.push_back({i, bound[i]});
  }
  if (options.progress) report(result.bounded, 0, true);
  std::sort(result.candidates.begin(), result.candidates.end(),
            [](const Survivor& a, const Survivor& b) {
              return a.bound != b.bound ? a.bound < b.bound : a.index < b.index;
            });
  return result;
}

// What the simulation phase did with a candidate.
enum class Simulated : uint8_t { kNotReached, kSimulated, kOverBound, kStopped };

struct Simulation {
  int64_t simulated = 0;
  int64_t rejected = 0;  // simulated, and did not fit or took over max_step_time_s
  int64_t skipped_by_bound = 0;
  int64_t unsearched = 0;  // left by stop_requested
  Tallies tallies;
};

// Whether candidate |c|'s bound keeps it out of a leaderboard whose threshold is |threshold|.
bool OverBound(const PlanOptions& options, const Survivor& c, double threshold) {
  return ((options.prune || options.better_than.has_value()) && c.bound > threshold) ||
         (options.better_than.has_value() && c.bound >= *options.better_than);
}

// The first of |candidates| (best bound first) that OverBound keeps out at |threshold|; every one
// after it is kept out too.
int64_t FirstOverBound(const PlanOptions& options, const std::vector<Survivor>& candidates,
                       double threshold) {
  return std::partition_point(
             candidates.begin(), candidates.end(),
             [&](const Survivor& c) { return !OverBound(options, c, threshold); }) -
         candidates.begin();
}

// Simulates candidate |c| and offers it to |board|; counts it under its rule in |tallies| and
// returns false when the simulation rejects it.
bool SimulateOne(const Search& search, const Survivor& c, Tallies& tallies, Leaderboard& board) {
  const PlanOptions& options = search.options;
  const Strategy& s = search.strategies[c.index];
  Result<SimulationResult> r =
      SimulateTrainingStep(search.model, search.cluster, s, options.simulation);
  if (!r.ok()) {
    Reject(search, tallies, VerdictKind::kRule, RuleOf(r.status().message()), c.index,
           r.status().message());
    return true;
  }
  StrategyVerdict* verdict =
      search.verdicts ? &(*search.verdicts)[static_cast<size_t>(c.index)] : nullptr;
  if (verdict != nullptr) {
    verdict->step_time_s = r->step_time_s;
    verdict->tokens_per_s = r->tokens_per_s;
    verdict->mfu = r->mfu;
    verdict->peak_memory_bytes = r->peak_memory_bytes;
  }
  if (!r->fits_in_memory) {
    std::string message = MemoryMessage(s, "peaks at", r->peak_memory_bytes, r->memory_limit_bytes);
    if (r->inside_headroom) {
      message += ", inside the " + HeadroomText(r->reserve) + " headroom kept for fragmentation";
    }
    Reject(search, tallies, VerdictKind::kSimulatedOver,
           r->inside_headroom ? "memory headroom" : "memory", c.index, message);
    return false;
  }
  if (options.max_step_time_s && r->step_time_s > *options.max_step_time_s) {
    Reject(search, tallies, VerdictKind::kSimulatedOver, "--max-step-time", c.index,
           StepTimeMessage(s, "a step takes", r->step_time_s, *options.max_step_time_s));
    return false;
  }
  Result<std::optional<double>> goodput =
      ObjectiveGoodput(options.objective, search.cluster, search.params, s);
  if (!goodput.ok()) {
    Reject(search, tallies, VerdictKind::kRule, "--objective", c.index, goodput.status().message());
    return true;
  }
  RankedPlan plan = RankPlan(c.index, s, *r, options.objective, *goodput, search.RiskOf(s));
  if (verdict != nullptr) {
    verdict->kind = VerdictKind::kSimulated;
    verdict->score = plan.score;
  }
  board.Offer(std::move(plan));
  return true;
}

// Simulates |candidates| in order (best bound first) into |board| until no bound can enter it, or
// until stop_requested.
Simulation SimulateBestFirst(const Search& search, const std::vector<Survivor>& candidates,
                             Leaderboard& board) {
  const PlanOptions& options = search.options;
  const int64_t m = static_cast<int64_t>(candidates.size());
  std::vector<Tallies> tallies(static_cast<size_t>(search.threads));
  std::vector<Simulated> outcome(static_cast<size_t>(m),
                                 Simulated::kNotReached);  // each written by one thread
  std::atomic<int64_t> rejected{0};
  const auto start = std::chrono::steady_clock::now();
  const auto report = [&](int64_t done, int64_t bounded_out, bool over) {
    PlanProgress p;
    p.phase = "simulating";
    p.done = done;
    p.total = m;
    p.bounded_out = bounded_out;
    p.elapsed_s = SecondsSince(start);
    p.phase_over = over;
    p.best = board.Best();
    options.progress(p);
  };
  // Untaken candidates over the bound now will never be simulated: they count as done.
  const auto report_running = [&](int64_t finished, int64_t taken) {
    if (!options.progress) return;
    const int64_t bounded_out =
        m - std::max(taken, FirstOverBound(options, candidates, board.Threshold()));
    report(finished + bounded_out, bounded_out, false);
  };
  ParallelFor(
      m, search.threads,
      [&](int32_t t, int64_t k) {
        const Survivor& c = candidates[k];
        if (StopRequested(options)) {
          outcome[k] = Simulated::kStopped;
          return false;
        }
        if (OverBound(options, c, board.Threshold())) {
          outcome[k] = Simulated::kOverBound;
          return false;
        }
        outcome[k] = Simulated::kSimulated;
        if (!SimulateOne(search, c, tallies[t], board)) rejected.fetch_add(1);
        return true;
      },
      report_running);
  Simulation result;
  for (const Tallies& t : tallies) Merge(t, result.tallies);
  result.rejected = rejected.load();
  // Every candidate from the first one over the bound on has a bound at least as high: skipped by
  // it. Indices are taken in order, so one below it that was not simulated was left by a stop.
  const int64_t first_over =
      std::find(outcome.begin(), outcome.end(), Simulated::kOverBound) - outcome.begin();
  for (int64_t k = 0; k < m; ++k) {
    if (outcome[k] == Simulated::kSimulated) {
      ++result.simulated;
    } else if (k >= first_over) {
      ++result.skipped_by_bound;
    } else {
      ++result.unsearched;
      if (search.verdicts != nullptr) {
        (*search.verdicts)[static_cast<size_t>(candidates[k].index)].kind =
            VerdictKind::kNotReached;
      }
    }
  }
  if (options.progress)
    report(result.simulated + result.skipped_by_bound, result.skipped_by_bound, true);
  return result;
}

// A leaderboard that holds every plan the top |rows| rows of GroupDistinct and their variants can
// come from. A row's members share every setting but one, so it has at most as many as that
// setting has values (SettingValueCounter::Most, V): the best rows * V plans hold the first |rows|
// rows' best plans, and every variant scores within kDistinctTolerance of its row's best.
Leaderboard DistinctLeaderboard(const Search& search, const std::vector<Survivor>& candidates,
                                int64_t rows) {
  SettingValueCounter values;
  for (const Survivor& c : candidates) values.Add(search.strategies[c.index]);
  const CheckedInt plans = CheckedInt(rows) * values.Most();
  return Leaderboard(plans.get().value_or(std::numeric_limits<int64_t>::max()), std::nullopt, 0,
                     1 + kDistinctTolerance);
}

// Why a search found no valid strategy. The strategies that passed every strategy rule and were
// then refused by the launch settings (--emit's admission) came closest: that refusal is what
// blocks the request whatever else changes (--emit megatron with --fix offload=optimizer+params:
// Megatron-LM offloads no parameters), so it is the headline, before the rule most strategies
// broke on the way. Otherwise the most common rule, which then blocks most of the space.
Status NothingValidError(const PlanReport& report, const PlanOptions& options, int64_t n) {
  const Rejection& top = report.rejections.front();
  const auto admitted = std::find_if(
      report.rejections.begin(), report.rejections.end(),
      [&](const Rejection& r) { return options.admit && r.rule == options.admit_rule; });
  if (admitted == report.rejections.end()) {
    return Status::InvalidArgument(
        "no strategy of the search space is valid; the most common reason (" +
        std::to_string(top.count) + " of " + std::to_string(n) + "): " + top.example);
  }
  std::string message = "no strategy of the search space is valid; the " +
                        std::to_string(admitted->count) + " of " + std::to_string(n) +
                        " that pass loom's rules are refused by " + admitted->rule + ": " +
                        admitted->example;
  const auto other = std::find_if(report.rejections.begin(), report.rejections.end(),
                                  [&](const Rejection& r) { return r.rule != admitted->rule; });
  if (other != report.rejections.end()) {
    message += "\n(the other " + std::to_string(n - admitted->count) +
               " break loom's rules on the way, most often " + other->rule + ": " + other->example +
               ")";
  }
  return Status::InvalidArgument(message);
}

}  // namespace

Result<std::optional<double>> ObjectiveGoodput(Objective objective, const ClusterSpec& cluster,
                                               int64_t params, const Strategy& strategy) {
  if (objective != Objective::kGoodput) return std::optional<double>();
  LOOM_RETURN_IF_ERROR(CheckGoodputInputs(cluster));
  LOOM_ASSIGN_OR_RETURN(GoodputEstimate estimate, EstimateGoodput(cluster, params, strategy));
  return estimate.goodput;
}

double RiskFactor(const ClusterSpec& cluster, const PlanOptions& options, const Strategy& s) {
  return ShippedRiskFactor(cluster, options.simulation.framework, StepParallelismRegime(s),
                           options.risk);
}

RankedPlan RankPlan(int64_t index, const Strategy& s, const SimulationResult& r,
                    Objective objective, std::optional<double> goodput, double risk_factor) {
  RankedPlan p;
  p.index = index;
  p.strategy = s;
  p.score = PlanScore(objective, s, r, goodput, risk_factor);
  p.goodput = goodput;
  p.step_time_s = r.step_time_s;
  p.risk_step_time_s = r.step_time_s * risk_factor;
  p.tokens_per_s = r.tokens_per_s;
  p.mfu = r.mfu;
  p.bubble_fraction = r.bubble_fraction;
  p.exposed_comm_fraction = r.step_time_s > 0 ? r.breakdown.exposed_comm_s / r.step_time_s : 0;
  p.peak_memory_bytes = r.peak_memory_bytes;
  p.memory_limit_bytes = r.memory_limit_bytes;
  p.gpu_hours_per_billion_tokens =
      GpuHoursPerBillionTokens(r.step_time_s, s.WorldSize(), s.global_batch * s.seq_len);
  p.breakdown = r.breakdown;
  if (!r.memory_by_stage.empty()) p.memory = r.memory_by_stage[r.peak_stage];
  return p;
}

std::optional<double> RemainingSeconds(const PlanProgress& p) {
  const int64_t worked = p.done - p.bounded_out;
  if (worked <= 0 || p.elapsed_s <= 0) return std::nullopt;
  return static_cast<double>(p.total - p.done) * p.elapsed_s / static_cast<double>(worked);
}

double PlanScore(Objective objective, const Strategy& strategy, const SimulationResult& result,
                 std::optional<double> goodput, double risk_factor) {
  return PlanScoreBound(objective, strategy, result.step_time_s * risk_factor,
                        result.peak_memory_bytes, result.memory_limit_bytes, goodput);
}

double PlanScoreBound(Objective objective, const Strategy& strategy, double step_time_s,
                      int64_t peak_bytes, int64_t limit_bytes, std::optional<double> goodput) {
  switch (objective) {
    case Objective::kTime:
      return step_time_s;
    case Objective::kCost:
      return GpuHoursPerBillionTokens(step_time_s, strategy.WorldSize(),
                                      strategy.global_batch * strategy.seq_len);
    case Objective::kMemoryHeadroom:
      return static_cast<double>(peak_bytes) / static_cast<double>(limit_bytes);
    case Objective::kGoodput:
      // A goodput of 0 (failures faster than checkpoints) never finishes: the worst score.
      return goodput && *goodput > 0 ? step_time_s / *goodput : kNever;
  }
  return step_time_s;
}

Result<PlanReport> Plan(const ModelSpec& model, const ClusterSpec& cluster,
                        const SearchRequest& request, const PlanOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckStepQuantile(options.risk, "--risk"));
  int64_t params = 0;
  if (options.objective == Objective::kGoodput) {
    LOOM_RETURN_IF_ERROR(CheckGoodputInputs(cluster));
    LOOM_ASSIGN_OR_RETURN(ParameterCount count, CountParameters(model));
    params = count.total;
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<Strategy> space, EnumerateStrategies(model, cluster, request));
  const int64_t n = static_cast<int64_t>(space.size());
  if (n == 0) return EmptySpaceError(model, cluster, request);
  std::vector<StrategyVerdict> verdicts;
  if (options.on_verdict) verdicts.resize(static_cast<size_t>(n));
  const Search search{
      model,
      cluster,
      space,
      options,
      options.threads > 0
          ? options.threads
          : std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency())),
      params,
      RiskFactors(cluster, options),
      options.on_verdict ? &verdicts : nullptr};
  Bounding bounding = BoundEvery(search);
  const int64_t top_k = std::max<int64_t>(1, options.top_k);
  const bool distinct = options.distinct && !options.better_than.has_value();
  Leaderboard board = distinct ? DistinctLeaderboard(search, bounding.candidates, top_k)
                               : Leaderboard(top_k, options.better_than, options.better_than_limit);
  Simulation simulation;
  if (bounding.bounded == n) {
    simulation = SimulateBestFirst(search, bounding.candidates, board);
  } else {
    simulation.unsearched =
        static_cast<int64_t>(bounding.candidates.size());  // stopped while bounding
    for (const Survivor& c : bounding.candidates) {
      if (search.verdicts != nullptr) {
        (*search.verdicts)[static_cast<size_t>(c.index)].kind = VerdictKind::kNotReached;
      }
    }
  }
  PlanReport report;
  report.enumerated = n;
  report.bounded = bounding.bounded;
  report.rejected_by_rules = bounding.rejected_by_rules;
  report.rejected_by_memory_bound = bounding.rejected_by_memory_bound;
  report.rejected_by_step_time_bound = bounding.rejected_by_step_time_bound;
  report.candidates = static_cast<int64_t>(bounding.candidates.size());
  report.simulated = simulation.simulated;
  report.rejected_by_simulation = simulation.rejected;
  report.skipped_by_bound = simulation.skipped_by_bound;
  report.unsearched = simulation.unsearched;
  report.interrupted = report.bounded < n || report.unsearched > 0;
  Merge(simulation.tallies, bounding.tallies);
  for (const auto& [rule, t] : bounding.tallies)
    report.rejections.push_back({rule, t.count, t.example});
  std::sort(report.rejections.begin(), report.rejections.end(),
            [](const Rejection& a, const Rejection& b) {
              return a.count != b.count ? a.count > b.count : a.rule < b.rule;
            });
  report.saturated = board.saturated();
  report.ranked = distinct ? GroupDistinct(board.Take(), top_k) : board.Take();
  if (options.on_verdict) {
    for (int64_t i = 0; i < n; ++i) options.on_verdict(space[i], verdicts[static_cast<size_t>(i)]);
  }
  if (!report.interrupted && report.rejected_by_rules == n && !report.rejections.empty()) {
    return NothingValidError(report, options, n);
  }
  return report;
}

}  // namespace loom
