#include "plan/planner.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plan/distinct.h"
#include "plan/explain.h"
#include "plan/plan_test_support.h"
#include "sim/pass_costs.h"
#include "sim/step_bounds.h"
#include "spec/framework.h"
#include "spec/strategy.h"

namespace loom {
namespace {

// Llama-3-8B on two DGX H100 with a small batch: a space of a few thousand strategies, some of
// which do not fit, that simulates in seconds.
SearchRequest SmallRequest() {
  SearchRequest r = Request(16, 32, 4096);
  r.fixed = *ParseConstraints("overlap_grad_reduce=true", "--fix");
  return r;
}

std::vector<std::string> Fixes(const PlanReport& report) {
  std::vector<std::string> out;
  for (const RankedPlan& p : report.ranked)
    out.push_back(ConstraintText(p.strategy) + " " + std::to_string(p.step_time_s));
  return out;
}

TEST(Plan, PrunedSearchFindsTheExhaustiveTopK) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions pruned;
  pruned.top_k = 8;
  pruned.threads = 2;
  PlanOptions exhaustive = pruned;
  exhaustive.prune = false;
  Result<PlanReport> a = Plan(in.model, in.cluster, SmallRequest(), pruned);
  Result<PlanReport> b = Plan(in.model, in.cluster, SmallRequest(), exhaustive);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->ranked.size(), 8u);
  EXPECT_EQ(Fixes(*a), Fixes(*b));
  // The bounds did the work: the exhaustive search simulated everything the rules let through.
  EXPECT_EQ(b->simulated, b->enumerated - b->rejected_by_rules);
  EXPECT_LT(a->simulated * 5, b->simulated);
  EXPECT_GT(a->rejected_by_memory_bound, 0);
  EXPECT_EQ(a->rejected_by_memory_bound + a->rejected_by_simulation, b->rejected_by_simulation);
}

// A strategy whose peak fits only inside the fragmentation headroom is not called fitting: it is
// rejected under its own rule, saying so, and a lower --memory-headroom ranks it.
TEST(Plan, APlanInsideTheMemoryHeadroomIsMarkedAndALowerHeadroomRanksIt) {
  const Inputs in = Load("models/llama3-8b.json", 1);
  SearchRequest request = Request(8, 64, 8192);
  request.fixed = *ParseConstraints(
      "tp=1,pp=1,cp=1,micro_batch=1,zero_stage=2,recompute=selective,offload=none", "--fix");
  PlanOptions options;
  Result<PlanReport> tight = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  EXPECT_TRUE(tight->ranked.empty());
  const Rejection* headroom = nullptr;
  for (const Rejection& r : tight->rejections) {
    if (r.rule == "memory headroom") headroom = &r;
  }
  ASSERT_NE(headroom, nullptr);
  EXPECT_NE(headroom->example.find("15 % headroom kept for fragmentation"), std::string::npos)
      << headroom->example;
  options.simulation.memory_headroom = 0.1;
  Result<PlanReport> roomy = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(roomy.ok()) << roomy.status().message();
  ASSERT_FALSE(roomy->ranked.empty());
  EXPECT_LE(roomy->ranked.front().peak_memory_bytes, roomy->ranked.front().memory_limit_bytes);
}

TEST(Plan, TheRankingDoesNotDependOnTheThreadCount) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions one;
  one.top_k = 5;
  one.threads = 1;
  PlanOptions three = one;
  three.threads = 3;
  Result<PlanReport> a = Plan(in.model, in.cluster, SmallRequest(), one);
  Result<PlanReport> b = Plan(in.model, in.cluster, SmallRequest(), three);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Fixes(*a), Fixes(*b));
}

// The memory bound may only reject what the simulation would reject, and the time bound may never
// exceed the simulated step: checked strategy by strategy over a space where about half do not fit.
TEST(Plan, BoundsNeverExceedTheSimulationOverASpace) {
  const Inputs in = Load("models/llama3-70b.json", 2);
  SearchRequest request = Request(16, 16, 4096);
  request.fixed = *ParseConstraints("tp=8,micro_batch=1", "--fix");
  Result<std::vector<Strategy>> space = EnumerateStrategies(in.model, in.cluster, request);
  ASSERT_TRUE(space.ok());
  int64_t checked = 0, over_limit = 0, fitting = 0;
  for (const Strategy& s : *space) {
    Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s);
    if (!step.ok()) continue;
    const int64_t limit = step->reserves.front().LimitBytes();
    const StepBounds bounds = BoundStep(*step);
    Result<SimulationResult> sim = SimulatePreparedStep(in.model, in.cluster, *step);
    ASSERT_TRUE(sim.ok()) << sim.status().message();
    ++checked;
    EXPECT_LE(bounds.step_time.ToSeconds(), sim->step_time_s + 1e-9) << ConstraintText(s);
    EXPECT_LE(bounds.peak_memory_bytes, sim->peak_memory_bytes) << ConstraintText(s);
    if (bounds.peak_memory_bytes > limit) {
      ++over_limit;
      EXPECT_FALSE(sim->fits_in_memory) << ConstraintText(s);
    }
    fitting += sim->fits_in_memory ? 1 : 0;
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(over_limit, 10);
  EXPECT_GT(fitting, 10);
}

TEST(Plan, BetterThanCountsThePlansAheadOfAScore) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions options;
  options.top_k = 20;
  Result<PlanReport> top = Plan(in.model, in.cluster, SmallRequest(), options);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->ranked.size(), 20u);
  PlanOptions ahead = options;
  ahead.better_than = top->ranked[12].score;
  Result<PlanReport> better = Plan(in.model, in.cluster, SmallRequest(), ahead);
  ASSERT_TRUE(better.ok());
  int64_t strictly_better = 0;
  for (const RankedPlan& p : top->ranked)
    strictly_better += p.score < top->ranked[12].score ? 1 : 0;
  EXPECT_EQ(static_cast<int64_t>(better->ranked.size()), strictly_better);
}

TEST(Plan, GoodputObjectiveScoresTheStepOverTheGoodput) {
  Strategy s;
  // A 2 s step that trains 80 % of the wall time takes 2 / 0.8 = 2.5 s of wall time per step.
  EXPECT_DOUBLE_EQ(PlanScoreBound(Objective::kGoodput, s, 2.0, 0, 1, 0.8), 2.5);
  // The other objectives ignore it.
  EXPECT_DOUBLE_EQ(PlanScoreBound(Objective::kTime, s, 2.0, 0, 1, std::nullopt), 2.0);
}

TEST(Plan, GoodputObjectiveNeedsTheClustersReliabilityBeforeSearching) {
  Inputs in = Load("models/llama3-8b.json", 2);
  in.cluster.reliability.reset();
  PlanOptions options;
  options.objective = Objective::kGoodput;
  Result<PlanReport> report = Plan(in.model, in.cluster, SmallRequest(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("dgx-h100.json: has no \"reliability\" object"),
            std::string::npos)
      << report.status().message();
}

TEST(Plan, CostObjectiveTriesFewerGpusOnlyDownToMinGpus) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  SearchRequest request = SmallRequest();
  PlanOptions options;
  options.objective = Objective::kCost;
  options.top_k = 3;
  // The search over GPU counts is under test, not the memory reserve: no fragmentation headroom,
  // so that 8 GPUs hold this batch without recompute.
  options.simulation.memory_headroom = 0.0;
  // The question asked is the question answered: without --min-gpus, 16 GPUs only.
  Result<PlanReport> fixed = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(fixed.ok());
  ASSERT_FALSE(fixed->ranked.empty());
  for (const RankedPlan& p : fixed->ranked) EXPECT_EQ(p.strategy.WorldSize(), 16);
  request.min_gpus = 8;
  Result<PlanReport> report = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(report.ok());
  ASSERT_FALSE(report->ranked.empty());
  const RankedPlan& best = report->ranked.front();
  // GPU-hours per 10^9 tokens: the step time spread over the tokens of each step, times the GPUs.
  EXPECT_NEAR(best.score,
              best.step_time_s * static_cast<double>(best.strategy.WorldSize()) / 3600 /
                  (32.0 * 4096) * 1e9,
              1e-9);
  EXPECT_DOUBLE_EQ(best.score, best.gpu_hours_per_billion_tokens);
  bool smaller = false;
  for (const RankedPlan& p : report->ranked) {
    smaller |= p.strategy.WorldSize() < 16;
    EXPECT_GE(p.strategy.WorldSize(), 8) << "--min-gpus 8";
  }
  EXPECT_TRUE(smaller) << "8 GPUs waste less of each GPU on a 32-sequence batch than 16";
  EXPECT_LT(best.score, fixed->ranked.front().score);
}

// Every progress report of a search, in order.
struct Recorded {
  std::vector<PlanProgress> bounding, simulating;
};

TEST(Plan, ProgressCountsBoundedOutCandidatesAsDoneAndEndsOnTheBestPlan) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  auto recorded = std::make_shared<Recorded>();
  PlanOptions options;
  options.top_k = 5;
  options.threads = 2;
  options.progress = [recorded](const PlanProgress& p) {
    (std::string(p.phase) == "bounding" ? recorded->bounding : recorded->simulating).push_back(p);
  };
  Result<PlanReport> r = Plan(in.model, in.cluster, SmallRequest(), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(recorded->bounding.empty());
  ASSERT_FALSE(recorded->simulating.empty());
  const PlanProgress& bounded = recorded->bounding.back();
  EXPECT_TRUE(bounded.phase_over);
  EXPECT_EQ(bounded.done, r->enumerated);
  EXPECT_EQ(bounded.total, r->enumerated);
  for (const PlanProgress& p : recorded->simulating) {
    EXPECT_EQ(p.total, r->candidates);
    EXPECT_LE(0, p.bounded_out);
    EXPECT_LE(p.bounded_out, p.done);
    EXPECT_LE(p.done, p.total);
  }
  // The phase ends with every candidate done, most of them bounded out rather than simulated: an
  // ETA over all candidates at the simulation rate would be off by that factor.
  const PlanProgress& last = recorded->simulating.back();
  EXPECT_TRUE(last.phase_over);
  EXPECT_EQ(last.done, last.total);
  EXPECT_EQ(last.bounded_out, r->skipped_by_bound);
  EXPECT_EQ(last.done - last.bounded_out, r->simulated);
  EXPECT_GT(last.bounded_out, 10 * r->simulated);
  EXPECT_EQ(RemainingSeconds(last), 0.0);
  ASSERT_TRUE(last.best.has_value());
  ASSERT_FALSE(r->ranked.empty());
  EXPECT_EQ(last.best->index, r->ranked.front().index);
  EXPECT_EQ(last.best->score, r->ranked.front().score);
}

TEST(Plan, RemainingSecondsIsTheWorkLeftAtTheRateOfTheWorkDone) {
  PlanProgress p;
  p.phase = "simulating";
  p.total = 1000;
  p.done = 400;         // 100 simulated in 10 s ...
  p.bounded_out = 300;  // ... and 300 never to be simulated
  p.elapsed_s = 10;
  ASSERT_TRUE(RemainingSeconds(p).has_value());
  EXPECT_DOUBLE_EQ(*RemainingSeconds(p), 60.0);  // 600 left at 10/s
  p.bounded_out = 400;                           // nothing simulated yet: no rate
  EXPECT_FALSE(RemainingSeconds(p).has_value());
}

// A request narrow enough to search exhaustively in a second.
SearchRequest NarrowRequest() {
  SearchRequest r = Request(16, 32, 4096);
  r.fixed = *ParseConstraints("pp=1,overlap_grad_reduce=true", "--fix");
  return r;
}

TEST(Plan, MaxStepTimeRejectsSlowerPlansUnderItsRuleAndKeepsTheRanking) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions free;
  free.top_k = 20;
  free.threads = 2;
  Result<PlanReport> unconstrained = Plan(in.model, in.cluster, NarrowRequest(), free);
  ASSERT_TRUE(unconstrained.ok() && unconstrained->ranked.size() == 20u);
  // A limit between two neighbours of the ranking, from the sixth plan on: near-ties (a setting
  // that moves the step by nothing) stay on one side together.
  size_t within = 6;
  while (within < unconstrained->ranked.size() &&
         unconstrained->ranked[within].step_time_s <=
             unconstrained->ranked[within - 1].step_time_s * 1.0001) {
    ++within;
  }
  ASSERT_LT(within, unconstrained->ranked.size());
  PlanOptions limited = free;
  limited.max_step_time_s =
      (unconstrained->ranked[within - 1].step_time_s + unconstrained->ranked[within].step_time_s) /
      2;
  limited.top_k = 50;
  Result<PlanReport> r = Plan(in.model, in.cluster, NarrowRequest(), limited);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Exactly the plans of the unconstrained ranking within the limit, in order.
  ASSERT_EQ(r->ranked.size(), within);
  for (size_t i = 0; i < r->ranked.size(); ++i)
    EXPECT_EQ(r->ranked[i].index, unconstrained->ranked[i].index);
  EXPECT_GT(r->rejected_by_step_time_bound, 0);
  EXPECT_EQ(r->enumerated, r->rejected_by_rules + r->rejected_by_memory_bound +
                               r->rejected_by_step_time_bound + r->skipped_by_bound + r->simulated);
  const auto rule = std::find_if(r->rejections.begin(), r->rejections.end(),
                                 [](const Rejection& j) { return j.rule == "--max-step-time"; });
  ASSERT_NE(rule, r->rejections.end());
  EXPECT_NE(rule->example.find(", over --max-step-time "), std::string::npos) << rule->example;
  // The exhaustive search, which rejects only after simulating, ranks the same plans.
  limited.prune = false;
  Result<PlanReport> exhaustive = Plan(in.model, in.cluster, NarrowRequest(), limited);
  ASSERT_TRUE(exhaustive.ok());
  EXPECT_EQ(Fixes(*exhaustive), Fixes(*r));
  EXPECT_EQ(exhaustive->rejected_by_step_time_bound, 0);
  EXPECT_GT(exhaustive->rejected_by_simulation, 0);
}

// --distinct's rows: each member differs from every other in the row's one setting only and by
// under 1 %, and every plan that scores below the last row's best is in some row.
void ExpectRowsHold(const std::vector<RankedPlan>& rows,
                    const std::vector<RankedPlan>& every_plan) {
  std::set<int64_t> grouped;
  for (const RankedPlan& row : rows) {
    std::vector<RankedPlan> members = {row};
    members.insert(members.end(), row.variants.begin(), row.variants.end());
    for (const RankedPlan& a : members) {
      grouped.insert(a.index);
      for (const RankedPlan& b : members) {
        if (a.index == b.index) continue;
        EXPECT_EQ(OnlyDifferingSetting(a.strategy, b.strategy), row.variant_setting);
        EXPECT_LT(std::max(a.step_time_s, b.step_time_s),
                  std::min(a.step_time_s, b.step_time_s) * 1.01);
      }
    }
  }
  for (const RankedPlan& p : every_plan) {
    if (p.score < rows.back().score) {
      EXPECT_TRUE(grouped.count(p.index)) << ConstraintText(p.strategy);
    }
  }
}

TEST(Plan, DistinctRowsAreThoseOfEveryPlanOfTheSpace) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions options;
  options.top_k = 6;
  options.threads = 2;
  options.distinct = true;
  Result<PlanReport> pruned = Plan(in.model, in.cluster, NarrowRequest(), options);
  // Every plan of the space, simulated and ranked, then grouped.
  PlanOptions every = options;
  every.distinct = false;
  every.prune = false;
  every.top_k = 1 << 20;
  Result<PlanReport> all = Plan(in.model, in.cluster, NarrowRequest(), every);
  ASSERT_TRUE(pruned.ok() && all.ok());
  ASSERT_EQ(pruned->ranked.size(), 6u);
  const std::vector<RankedPlan> rows = GroupDistinct(all->ranked, 6);
  ASSERT_EQ(rows.size(), 6u);
  size_t variants = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(pruned->ranked[i].index, rows[i].index) << i;
    ASSERT_EQ(pruned->ranked[i].variants.size(), rows[i].variants.size()) << i;
    variants += rows[i].variants.size();
    for (size_t v = 0; v < rows[i].variants.size(); ++v) {
      EXPECT_EQ(pruned->ranked[i].variants[v].index, rows[i].variants[v].index);
    }
  }
  EXPECT_GT(variants, 0u) << "the space has twins within 1 % (ZeRO stages, offload)";
  // The pruned search simulated far fewer plans than there are.
  EXPECT_LT(pruned->simulated * 4, all->simulated);
  ExpectRowsHold(pruned->ranked, all->ranked);
}

TEST(Plan, AContradictoryPinIsAnErrorThatNamesTheRule) {
  const Inputs in = Load("models/llama3-70b.json", 3);
  SearchRequest request = Request(24, 24, 4096);
  request.fixed = *ParseConstraints("tp=3", "--fix");
  Result<PlanReport> report = Plan(in.model, in.cluster, request, PlanOptions());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("no strategy of the search space is valid"),
            std::string::npos);
  EXPECT_NE(report.status().message().find("--tp 3: num_attention_heads (64)"), std::string::npos)
      << report.status().message();
}

// 5,128 GPUs are 641 nodes, and 641 is prime: every layout puts 641 in pp (over the 105 layers)
// or in dp (which must divide the batch of 2520), so the space is empty.
TEST(Plan, AnEmptySpaceSaysWhyAndTheNearestGpuCountThatHasLayouts) {
  const Inputs in = Load("models/megatron-530b.json", 641);
  Result<PlanReport> report = Plan(in.model, in.cluster, Request(5128, 2520, 2048), PlanOptions());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("--gpus 5128 --global-batch 2520: no layout"),
            std::string::npos)
      << report.status().message();
  EXPECT_NE(report.status().message().find("use --gpus 5120"), std::string::npos)
      << report.status().message();
}

// With --min-gpus the search covers half the GPUs too, so its plans explain on their own GPU count.
TEST(Explain, UnderTheCostObjectiveAPlanOnFewerGpusExplains) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  SearchRequest request = SmallRequest();
  request.min_gpus = 8;
  PlanOptions options;
  options.objective = Objective::kCost;
  options.top_k = 1;
  options.simulation.memory_headroom = 0.0;  // as CostObjectiveTriesFewerGpusOnlyDownToMinGpus
  Result<PlanReport> report = Plan(in.model, in.cluster, request, options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->ranked.size(), 1u);
  ASSERT_LT(report->ranked[0].strategy.WorldSize(), 16);
  Result<Explanation> e =
      Explain(in.model, in.cluster, request, options, ConstraintText(report->ranked[0].strategy));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->fits);
  EXPECT_EQ(e->better_plans, 0);
  request.min_gpus = 0;
  Result<Explanation> refused =
      Explain(in.model, in.cluster, request, options, ConstraintText(report->ranked[0].strategy));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not --gpus 16"), std::string::npos)
      << refused.status().message();
}

// A stop_requested that answers false to its first |calls| polls, then true: with one thread, the
// search stops before strategy (or candidate) |calls| + 1 exactly.
std::function<bool()> StopAfter(int64_t calls) {
  auto polls = std::make_shared<std::atomic<int64_t>>(0);
  return [polls, calls] { return polls->fetch_add(1) >= calls; };
}

// The counts of an interrupted report add up as they do for a finished one.
void ExpectConsistentCounts(const PlanReport& r) {
  EXPECT_EQ(r.bounded, r.rejected_by_rules + r.rejected_by_memory_bound + r.candidates);
  EXPECT_EQ(r.candidates, r.simulated + r.skipped_by_bound + r.unsearched);
  EXPECT_LE(static_cast<int64_t>(r.ranked.size()) + r.rejected_by_simulation, r.simulated);
  EXPECT_TRUE(
      std::is_sorted(r.ranked.begin(), r.ranked.end(),
                     [](const RankedPlan& a, const RankedPlan& b) { return a.score < b.score; }));
}

TEST(Plan, AStopWhileBoundingReturnsTheCountsSoFarAndNoPlan) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions options;
  options.threads = 1;
  options.stop_requested = StopAfter(1000);
  Result<PlanReport> r = Plan(in.model, in.cluster, SmallRequest(), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->bounded, 1000);
  EXPECT_GT(r->enumerated, 1000);
  EXPECT_EQ(r->simulated, 0);
  EXPECT_EQ(r->skipped_by_bound, 0);
  EXPECT_EQ(r->unsearched, r->candidates);
  EXPECT_TRUE(r->ranked.empty());
  ExpectConsistentCounts(*r);
}

TEST(Plan, AStopWhileSimulatingRanksTheBestOfWhatItSimulated) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions full;
  full.top_k = 8;
  full.threads = 1;
  Result<PlanReport> complete = Plan(in.model, in.cluster, SmallRequest(), full);
  ASSERT_TRUE(complete.ok()) << complete.status().message();
  EXPECT_FALSE(complete->interrupted);
  EXPECT_EQ(complete->bounded, complete->enumerated);
  EXPECT_EQ(complete->unsearched, 0);
  ExpectConsistentCounts(*complete);

  // Every strategy bounded (one poll each), then five candidates simulated.
  PlanOptions stopped = full;
  stopped.stop_requested = StopAfter(complete->enumerated + 5);
  Result<PlanReport> r = Plan(in.model, in.cluster, SmallRequest(), stopped);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->bounded, r->enumerated);
  EXPECT_EQ(r->candidates, complete->candidates);
  EXPECT_EQ(r->simulated, 5);
  EXPECT_EQ(r->unsearched, r->candidates - 5);
  ASSERT_FALSE(r->ranked.empty());
  ExpectConsistentCounts(*r);
  // The best of five can only be as good as the best of the space.
  EXPECT_GE(r->ranked.front().score, complete->ranked.front().score);
}

TEST(Plan, AStopThatNeverComesChangesNothing) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  PlanOptions plain;
  plain.top_k = 5;
  plain.threads = 2;
  PlanOptions polled = plain;
  polled.stop_requested = [] { return false; };
  Result<PlanReport> a = Plan(in.model, in.cluster, SmallRequest(), plain);
  Result<PlanReport> b = Plan(in.model, in.cluster, SmallRequest(), polled);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(b->interrupted);
  EXPECT_EQ(Fixes(*a), Fixes(*b));
  EXPECT_EQ(a->rejected_by_rules, b->rejected_by_rules);
  EXPECT_EQ(a->candidates, b->candidates);
}

// Every thread stops: with three of them, no more than one strategy each past the stop.
TEST(Plan, EveryThreadStopsAtTheNextStrategy) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto reached = std::make_shared<std::atomic<int64_t>>(0);
  PlanOptions options;
  options.threads = 3;
  options.stop_requested = [stop, reached] {
    if (stop->load()) return true;
    if (reached->fetch_add(1) + 1 >= 500) stop->store(true);
    return false;
  };
  Result<PlanReport> r = Plan(in.model, in.cluster, SmallRequest(), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->interrupted);
  EXPECT_GE(r->bounded, 500);
  EXPECT_LE(r->bounded, 500 + 3);
  ExpectConsistentCounts(*r);
}

// Every shipped cluster file loads and plans the README's small example: Llama 3 8B on 64 GPUs,
// `loom plan --gpus 64 --global-batch 64 --seq 4096 --top 1`, with a plan of positive step time.
TEST(Plan, EveryShippedClusterPlansLlama8BOn64Gpus) {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/llama3-8b.json"));
  ASSERT_TRUE(model.ok()) << model.status().message();
  int64_t clusters = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Shipped("hardware/clusters"))) {
    if (entry.path().extension() != ".json") continue;
    ++clusters;
    Result<ClusterSpec> cluster = LoadClusterSpec(entry.path().string());
    ASSERT_TRUE(cluster.ok()) << cluster.status().message();
    ClusterSpec c = *cluster;
    c.nodes = 64 / c.gpus_per_node;
    PlanOptions options;
    options.top_k = 1;
    Result<PlanReport> report = Plan(*model, c, Request(64, 64, 4096), options);
    ASSERT_TRUE(report.ok()) << entry.path() << ": " << report.status().message();
    ASSERT_EQ(report->ranked.size(), 1u) << entry.path();
    EXPECT_GT(report->ranked[0].step_time_s, 0) << entry.path();
  }
  EXPECT_GE(clusters, 9);
}

Inputs LoadOn(const std::string& cluster_file, int64_t nodes) {
  Result<ModelSpec> m = LoadModelSpec(Shipped("models/llama3-8b.json"));
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("hardware/clusters/" + cluster_file), nodes);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return {m.ok() ? *m : ModelSpec(), c.ok() ? *c : ClusterSpec()};
}

Strategy TensorParallel(int64_t tp, int64_t dp) {
  Strategy s;
  s.tp = tp;
  s.dp = dp;
  s.sp = true;
  s.global_batch = dp;
  s.seq_len = 4096;
  return s;
}

// GB200 NVL72 hosts 4 GPUs a tray but joins 72 in one NVLink domain: tp 8 over two trays and a
// dp group over 16 trays stay on NVLink, and the search offers tp up to the domain.
TEST(Plan, Gb200Nvl72PlacesGroupsOnItsNvlinkDomainNotItsTrays) {
  const Inputs in = LoadOn("gb200-nvl72.json", 16);
  ASSERT_EQ(in.cluster.gpus_per_node, 4);
  ASSERT_EQ(in.cluster.NvlinkDomainGpus(), 72);
  const Strategy s = TensorParallel(8, 8);
  EXPECT_TRUE(ValidateStrategy(s, in.model, in.cluster).ok())
      << ValidateStrategy(s, in.model, in.cluster).message();
  const Placements p = PlaceStrategy(s, in.cluster);
  EXPECT_EQ(p.tp.Nodes(), 1);
  EXPECT_EQ(p.dp.Nodes(), 1);
  EXPECT_FALSE(p.pp_across_nodes);
  const std::vector<int64_t> degrees = in.cluster.TensorParallelDegrees();
  EXPECT_EQ(degrees.back(), 72);
}

// DGX B200's NVLink stops at its 8 GPUs: tp 16 is refused as before, and accepted with
// --allow-cross-node-tp it spans two domains, over the NICs.
TEST(Plan, DgxB200KeepsTensorParallelismWithinItsNode) {
  const Inputs in = LoadOn("dgx-b200.json", 2);
  ASSERT_EQ(in.cluster.NvlinkDomainGpus(), 8);
  Strategy s = TensorParallel(16, 1);
  Status refused = ValidateStrategy(s, in.model, in.cluster);
  EXPECT_NE(refused.message().find("--tp 16: exceeds the 8 GPUs per node of"), std::string::npos)
      << refused.message();
  s.allow_cross_node_tp = true;
  EXPECT_EQ(PlaceStrategy(s, in.cluster).tp.Nodes(), 2);
}

// --risk 0.9 scores each plan by its regime's spread (on A100 under megatron-core the regimes of
// the corpus differ by the parallelism in play); the bounds, scaled by the same factor,
// still prune soundly, and a quantile outside the corpus's is refused before any search.
TEST(Plan, RiskScoresEachPlanAtItsRegimesQuantileAndStillPrunesSoundly) {
  const Inputs in = LoadOn("dgx-a100.json", 2);
  PlanOptions pruned;
  pruned.top_k = 8;
  pruned.threads = 2;
  pruned.risk = 0.9;
  PlanOptions exhaustive = pruned;
  exhaustive.prune = false;
  Result<PlanReport> a = Plan(in.model, in.cluster, SmallRequest(), pruned);
  Result<PlanReport> b = Plan(in.model, in.cluster, SmallRequest(), exhaustive);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
  ASSERT_EQ(a->ranked.size(), 8u);
  EXPECT_EQ(Fixes(*a), Fixes(*b));
  EXPECT_LT(a->simulated, b->simulated);
  for (const RankedPlan& p : b->ranked) {
    const double factor = RiskFactor(in.cluster, pruned, p.strategy);
    EXPECT_GT(factor, 1.0) << ConstraintText(p.strategy);
    EXPECT_DOUBLE_EQ(p.risk_step_time_s, p.step_time_s * factor);
    EXPECT_DOUBLE_EQ(p.score, p.risk_step_time_s);
  }
  for (size_t i = 1; i < b->ranked.size(); ++i)
    EXPECT_LE(b->ranked[i - 1].score, b->ranked[i].score);
  // Under a framework whose tp and dp regimes two sources measured (vTrain's Megatron-DeepSpeed),
  // plans of different regimes are weighed by different spreads; without a host thread the search
  // above took the GPU's one regime.
  PlanOptions megatron = pruned;
  Result<std::optional<FrameworkProfile>> framework =
      ResolveFramework("megatron-deepspeed", Shipped("hardware/clusters/dgx-a100.json"));
  ASSERT_TRUE(framework.ok()) << framework.status().message();
  megatron.simulation.framework = *framework;
  const Strategy tp = TensorParallel(8, 2);
  const Strategy dp = TensorParallel(1, 16);
  EXPECT_NE(RiskFactor(in.cluster, megatron, tp), RiskFactor(in.cluster, megatron, dp));
  EXPECT_EQ(RiskFactor(in.cluster, pruned, tp), RiskFactor(in.cluster, pruned, dp));
  PlanOptions median = megatron;
  median.risk = 0.5;
  EXPECT_DOUBLE_EQ(RiskFactor(in.cluster, median, tp), 1.0);

  PlanOptions bad = pruned;
  bad.risk = 0.99;
  Result<PlanReport> refused = Plan(in.model, in.cluster, SmallRequest(), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--risk is 0.99"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace loom
