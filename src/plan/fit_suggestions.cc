#include "plan/fit_suggestions.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <utility>

#include "plan/search_space.h"
#include "sim/step_bounds.h"

namespace loom {
namespace {

// One memory lever: the strategies one step along it from |s| (none where it does not apply).
using Lever = std::vector<Strategy> (*)(const Strategy& s);

// Recompute more: none -> selective or full, selective -> full, a partial full -> every layer.
std::vector<Strategy> MoreRecompute(const Strategy& s) {
  std::vector<Strategy> out;
  const auto with = [&](Recompute recompute) {
    Strategy c = s;
    c.recompute = recompute;
    c.recompute_layers = 0;
    out.push_back(c);
  };
  if (s.recompute == Recompute::kNone) with(Recompute::kSelective);
  if (s.recompute != Recompute::kFull || s.recompute_layers > 0) with(Recompute::kFull);
  return out;
}

std::vector<Strategy> HalfMicroBatch(const Strategy& s) {
  if (s.micro_batch < 2) return {};
  Strategy c = s;
  c.micro_batch = s.micro_batch / 2;
  return {c};
}

// ZeRO one stage up: 1 shards the optimizer states (Megatron's distributed optimizer), 2 the
// gradients too, 3 the weights too (Rajbhandari et al. 2020, Section 5).
std::vector<Strategy> NextZeroStage(const Strategy& s) {
  if (s.zero_stage >= 3) return {};
  Strategy c = s;
  ++c.zero_stage;
  return {c};
}

std::vector<Strategy> SequenceParallel(const Strategy& s) {
  if (s.tp < 2 || s.sp) return {};
  Strategy c = s;
  c.sp = true;
  return {c};
}

// Twice the ranks in |degree|, half the data-parallel replicas: the same GPUs.
std::vector<Strategy> Doubled(const Strategy& s, int64_t Strategy::*degree) {
  if (s.dp % 2 != 0) return {};
  Strategy c = s;
  c.*degree *= 2;
  c.dp /= 2;
  return {c};
}
std::vector<Strategy> MoreTp(const Strategy& s) { return Doubled(s, &Strategy::tp); }
std::vector<Strategy> MoreCp(const Strategy& s) { return Doubled(s, &Strategy::cp); }
std::vector<Strategy> MorePp(const Strategy& s) {
  return s.layout.empty() ? Doubled(s, &Strategy::pp) : std::vector<Strategy>{};
}

// The optimizer states to the host (ZeRO-Offload), or with ZeRO-3 the weights too.
std::vector<Strategy> MoreOffload(const Strategy& s) {
  Strategy c = s;
  if (s.zero_stage >= 1 && s.offload == Offload::kNone) {
    c.offload = Offload::kOptimizer;
  } else if (s.zero_stage == 3 && s.offload == Offload::kOptimizer) {
    c.offload = Offload::kOptimizerAndParams;
  } else {
    return {};
  }
  return {c};
}

// An interleaved schedule's chunks per stage halved (one chunk: 1F1B) or doubled: the warm-up
// holds (p - s - 1) * 2 + (v - 1) * p + 1 chunk passes of 1/v of the stage's layers (Megatron-LM's
// schedules.py), which both directions move.
std::vector<Strategy> OtherChunks(const Strategy& s, bool more) {
  if (s.schedule != ScheduleKind::kInterleaved || !s.layout.empty()) return {};
  Strategy c = s;
  if (more) {
    c.vpp *= 2;
  } else if (s.vpp >= 2) {
    c.vpp /= 2;
  } else {
    return {};
  }
  if (c.vpp == 1) {
    c.schedule = ScheduleKind::k1F1B;
    c.microbatch_group = 0;
  }
  return {c};
}
std::vector<Strategy> FewerChunks(const Strategy& s) { return OtherChunks(s, false); }
std::vector<Strategy> MoreChunks(const Strategy& s) { return OtherChunks(s, true); }

constexpr std::array<Lever, 10> kLevers = {
    MoreRecompute, HalfMicroBatch, NextZeroStage, SequenceParallel, MoreTp,
    MorePp,        MoreCp,         MoreOffload,   FewerChunks,      MoreChunks};

std::vector<std::string_view> SplitPairs(std::string_view text) {
  std::vector<std::string_view> pairs;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    pairs.push_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return pairs;
}

// The key=value pairs of |to| that differ from |from|'s, in ConstraintText's order.
std::string ChangedKeys(const Strategy& from, const Strategy& to) {
  const std::string a = ConstraintText(from), b = ConstraintText(to);
  const std::vector<std::string_view> before = SplitPairs(a), after = SplitPairs(b);
  std::string out;
  for (size_t i = 0; i < after.size(); ++i) {
    if (i < before.size() && before[i] == after[i]) continue;
    if (!out.empty()) out += ',';
    out += after[i];
  }
  return out;
}

struct Candidate {
  Strategy strategy;
  int32_t levers = 0;
};

struct Bounded {
  Candidate candidate;
  PreparedStep step;
  StepBounds bounds;
};

// Prepares and bounds every candidate the rules accept (once each) whose memory bound fits, then
// simulates them lowest step bound first, at most |*budget| of them. Returns those that fit.
Result<std::vector<FitSuggestion>> TryCandidates(const ModelSpec& model, const ClusterSpec& cluster,
                                                 const Strategy& from,
                                                 std::vector<Candidate> candidates,
                                                 const FitOptions& options, int64_t limit,
                                                 int32_t* budget) {
  std::set<std::string> seen = {ConstraintText(from)};
  std::vector<Bounded> bounded;
  for (Candidate& c : candidates) {
    if (options.complete) options.complete(c.strategy);
    if (!seen.insert(ConstraintText(c.strategy)).second) continue;
    Result<PreparedStep> step = PrepareTrainingStep(model, cluster, c.strategy, options.simulation);
    if (!step.ok()) continue;  // a rule or the workload refuses it: not a strategy to suggest
    const StepBounds bounds = BoundStep(*step);
    // The candidate's own reserve (its NCCL communicators differ from the given strategy's).
    const int64_t own = step->reserves.front().LimitBytes();
    if (bounds.peak_memory_bytes > std::max(limit, own)) continue;
    bounded.push_back({std::move(c), std::move(step).value(), bounds});
  }
  std::stable_sort(bounded.begin(), bounded.end(), [](const Bounded& a, const Bounded& b) {
    return a.bounds.step_time < b.bounds.step_time;
  });
  std::vector<FitSuggestion> fits;
  for (const Bounded& b : bounded) {
    if (*budget <= 0) break;
    --*budget;
    LOOM_ASSIGN_OR_RETURN(SimulationResult r, SimulatePreparedStep(model, cluster, b.step));
    if (!r.fits_in_memory) continue;
    fits.push_back({b.candidate.strategy, ChangedKeys(from, b.candidate.strategy),
                    b.candidate.levers, r.step_time_s, r.peak_memory_bytes, r.memory_limit_bytes});
  }
  return fits;
}

std::vector<Candidate> SingleLevers(const Strategy& s) {
  std::vector<Candidate> out;
  for (Lever lever : kLevers) {
    for (Strategy& c : lever(s)) out.push_back({std::move(c), 1});
  }
  return out;
}

std::vector<Candidate> LeverPairs(const Strategy& s) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < kLevers.size(); ++i) {
    for (const Strategy& first : kLevers[i](s)) {
      for (size_t j = i + 1; j < kLevers.size(); ++j) {
        for (Strategy& both : kLevers[j](first)) out.push_back({std::move(both), 2});
      }
    }
  }
  return out;
}

}  // namespace

Result<std::vector<FitSuggestion>> SuggestFits(const ModelSpec& model, const ClusterSpec& cluster,
                                               const Strategy& strategy,
                                               const FitOptions& options) {
  LOOM_ASSIGN_OR_RETURN(SimulationResult given,
                        SimulateTrainingStep(model, cluster, strategy, options.simulation));
  if (given.fits_in_memory) return std::vector<FitSuggestion>{};
  const int64_t limit = given.memory_limit_bytes;
  int32_t budget = options.max_simulations;
  Result<std::vector<FitSuggestion>> fits =
      TryCandidates(model, cluster, strategy, SingleLevers(strategy), options, limit, &budget);
  if (fits.ok() && fits->empty()) {
    fits = TryCandidates(model, cluster, strategy, LeverPairs(strategy), options, limit, &budget);
  }
  if (!fits.ok()) return fits.status();
  std::vector<FitSuggestion> out = std::move(fits).value();
  std::stable_sort(out.begin(), out.end(), [](const FitSuggestion& a, const FitSuggestion& b) {
    return std::pair(a.levers, a.step_time_s) < std::pair(b.levers, b.step_time_s);
  });
  if (out.size() > static_cast<size_t>(std::max(0, options.max_suggestions))) {
    out.resize(static_cast<size_t>(std::max(0, options.max_suggestions)));
  }
  return out;
}

}  // namespace loom
