#include "plan/explain.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "plan/deepspeed_config.h"
#include "sim/stage_balance.h"

namespace loom {
namespace {

std::string Dominant(const StepBreakdown& b) {
  const std::pair<const char*, double> terms[] = {{"compute", b.compute_s},
                                                  {"pipeline bubble", b.bubble_s},
                                                  {"exposed communication", b.exposed_comm_s},
                                                  {"optimizer step", b.optimizer_s},
                                                  {"host", b.host_s}};
  const auto* top = &terms[0];
  for (const auto& term : terms) {
    if (term.second > top->second) top = &term;
  }
  return top->first;
}

// SuggestFits for |s| with the request's completion of a strategy, keeping those |options| admits.
Result<std::vector<FitSuggestion>> NearestFits(const ModelSpec& model, const ClusterSpec& cluster,
                                               const SearchRequest& request,
                                               const PlanOptions& options, const Strategy& s) {
  FitOptions fit;
  fit.simulation = options.simulation;
  if (request.deepspeed_accumulation) {
    fit.complete = [](Strategy& c) {
      c.grad_accumulation = DeepSpeedGradAccumulation(c);
      c.grad_reduce_in_bf16 = DeepSpeedBudgetsBf16Gradients(c);
    };
  }
  Result<std::vector<FitSuggestion>> fits = SuggestFits(model, cluster, s, fit);
  if (!fits.ok() || !options.admit) return fits;
  std::vector<FitSuggestion> admitted;
  for (const FitSuggestion& f : *fits) {
    if (options.admit(f.strategy).ok()) admitted.push_back(f);
  }
  return admitted;
}

}  // namespace

Result<Explanation> Explain(const ModelSpec& model, const ClusterSpec& cluster,
                            const SearchRequest& request, const PlanOptions& options,
                            std::string_view text) {
  LOOM_ASSIGN_OR_RETURN(Constraints given, ParseConstraints(text, "--explain"));
  Strategy s;
  s.global_batch = request.global_batch;
  s.seq_len = request.seq_len;
  s.dtype = request.dtype;
  s.optimizer = request.optimizer;
  s.grad_accumulation = request.grad_accumulation;
  ApplyConstraints(given, s);
  if (request.deepspeed_accumulation) {
    s.grad_accumulation = DeepSpeedGradAccumulation(s);
    s.grad_reduce_in_bf16 = DeepSpeedBudgetsBf16Gradients(s);
  }
  if (!given.dp.has_value() && s.tp * s.pp * s.cp > 0)
    s.dp = std::max<int64_t>(1, request.gpus / (s.tp * s.pp * s.cp));
  // --min-gpus and --max-gpus also search other GPU counts: a plan may use any of them.
  const std::vector<int64_t> counts = GpuCounts(request, cluster);
  if (std::find(counts.begin(), counts.end(), s.WorldSize()) == counts.end()) {
    return Status::InvalidArgument("--explain " + std::string(text) +
                                   ": tp * pp * dp * cp = " + std::to_string(s.WorldSize()) +
                                   ", not --gpus " + std::to_string(request.gpus) +
                                   (counts.size() > 1 ? " or another GPU count searched" : "") +
                                   "; give a dp that fills the GPUs or leave dp out");
  }
  s.allow_cross_node_tp = s.tp > cluster.NvlinkDomainGpus();
  // As the search does (planner.cc): stages on different GPUs take a balanced layout, unless
  // they cannot (then the rules say why).
  if (PlannerBalancesLayers(cluster, s)) {
    Result<std::vector<int64_t>> layout =
        BalancedPipelineLayout(model, cluster, s, options.simulation.Kernels());
    if (layout.ok()) s.layout = *layout;
  }
  LOOM_ASSIGN_OR_RETURN(SimulationResult result,
                        SimulateTrainingStep(model, cluster, s, options.simulation));
  std::optional<double> goodput;
  if (options.objective == Objective::kGoodput) {
    LOOM_ASSIGN_OR_RETURN(ParameterCount count, CountParameters(model));
    LOOM_ASSIGN_OR_RETURN(goodput, ObjectiveGoodput(options.objective, cluster, count.total, s));
  }
  Explanation e;
  e.plan = RankPlan(-1, s, result, options.objective, goodput, RiskFactor(cluster, options, s));
  e.fits = result.fits_in_memory;
  e.dominant = e.fits ? Dominant(result.breakdown) : "memory";
  e.memory_by_stage = result.memory_by_stage;
  e.peak_stage = result.peak_stage;
  e.reserve = result.reserve;
  if (!e.fits) {
    LOOM_ASSIGN_OR_RETURN(e.fit_suggestions, NearestFits(model, cluster, request, options, s));
  }
  PlanOptions search = options;
  if (e.fits) {
    search.better_than = e.plan.score;
  } else {
    search.top_k = 1;
  }
  LOOM_ASSIGN_OR_RETURN(e.search, Plan(model, cluster, request, search));
  if (e.fits) {
    e.better_plans = static_cast<int64_t>(e.search.ranked.size());
    e.more_better_plans = e.search.saturated;
  }
  if (e.search.saturated) {
    // The count stopped early, so the best plan may not be among those found: search it.
    search.better_than.reset();
    search.top_k = 1;
    LOOM_ASSIGN_OR_RETURN(PlanReport best, Plan(model, cluster, request, search));
    if (!best.ranked.empty()) e.best = best.ranked.front();
  } else if (!e.search.ranked.empty()) {
    e.best = e.search.ranked.front();
  }
  return e;
}

}  // namespace loom
