#include "plan/fit_suggestions.h"

#include <string>

#include <gtest/gtest.h>

#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

std::string ShippedFile(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
};

Inputs Llama8bOnOneNode() {
  Result<ModelSpec> m = LoadModelSpec(ShippedFile("models/llama3-8b.json"));
  Result<ClusterSpec> c = LoadClusterSpec(ShippedFile("hardware/clusters/dgx-h100.json"), 1);
  EXPECT_TRUE(m.ok() && c.ok());
  return {m.ok() ? *m : ModelSpec(), c.ok() ? *c : ClusterSpec()};
}

// Llama 3 8B on 8 H100s, tp 2 without sequence parallelism, 8k-token sequences, no recompute:
// with a few sequences per micro-batch the activations overflow the GPU.
Strategy TooBig(int64_t micro_batch) {
  Strategy s;
  s.tp = 2;
  s.dp = 4;
  s.micro_batch = micro_batch;
  s.global_batch = 64;
  s.seq_len = 8192;
  s.zero_stage = 1;
  s.recompute = Recompute::kNone;
  return s;
}

void ExpectEachFitsAndReadsBack(const Inputs& in, const Strategy& from,
                                const std::vector<FitSuggestion>& fits) {
  for (const FitSuggestion& f : fits) {
    SCOPED_TRACE(f.changes);
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, f.strategy);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->fits_in_memory);
    EXPECT_EQ(r->peak_memory_bytes, f.peak_memory_bytes);
    EXPECT_LE(f.peak_memory_bytes, f.memory_limit_bytes);
    EXPECT_EQ(r->step_time_s, f.step_time_s);
    // The changes, pasted into --explain over the strategy, give the suggested strategy.
    Result<Constraints> c = ParseConstraints(f.changes, "--explain");
    ASSERT_TRUE(c.ok()) << c.status().message();
    Strategy pasted = from;
    ApplyConstraints(*c, pasted);
    EXPECT_EQ(ConstraintText(pasted), ConstraintText(f.strategy));
  }
}

TEST(SuggestFits, EachSuggestionMovesOneLeverAndFits) {
  const Inputs in = Llama8bOnOneNode();
  const Strategy s = TooBig(2);
  Result<SimulationResult> given = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(given.ok()) << given.status().message();
  ASSERT_FALSE(given->fits_in_memory);
  FitOptions options;
  options.max_suggestions = 20;
  Result<std::vector<FitSuggestion>> fits = SuggestFits(in.model, in.cluster, s, options);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  ASSERT_FALSE(fits->empty());
  ExpectEachFitsAndReadsBack(in, s, *fits);
  bool full_recompute = false;
  for (size_t i = 0; i < fits->size(); ++i) {
    EXPECT_EQ((*fits)[i].levers, 1);
    if (i > 0) {
      EXPECT_LE((*fits)[i - 1].step_time_s, (*fits)[i].step_time_s);
    }
    full_recompute = full_recompute || (*fits)[i].changes == "recompute=full";
  }
  // Full recompute keeps one layer input per layer: it fits, and costs the most time.
  EXPECT_TRUE(full_recompute);
  EXPECT_EQ(fits->back().changes, "recompute=full");
  // The levers that free enough beside the reserve and the 15 % fragmentation headroom: the
  // micro-batch halved, pp, cp, tp and full recompute. ZeRO-2, sp and optimizer offload free too
  // little here, and selective recompute (attention is fused) less still.
  std::string all;
  for (const FitSuggestion& f : *fits) all += f.changes + "; ";
  EXPECT_EQ(fits->size(), 5u) << all;
  options.max_suggestions = 3;
  Result<std::vector<FitSuggestion>> best = SuggestFits(in.model, in.cluster, s, options);
  ASSERT_TRUE(best.ok());
  ASSERT_EQ(best->size(), 3u);
  EXPECT_EQ((*best)[2].changes, (*fits)[2].changes);
}

TEST(SuggestFits, TakesPairsOnlyWhenNoSingleLeverFits) {
  const Inputs in = Llama8bOnOneNode();
  // Four sequences per micro-batch without ZeRO: halving the micro-batch, ZeRO-1 or full recompute
  // alone leave it too big; two of them, or one with more tp or pp, fit.
  Strategy s = TooBig(4);
  s.zero_stage = 0;
  FitOptions options;
  options.max_suggestions = 50;
  Result<std::vector<FitSuggestion>> fits = SuggestFits(in.model, in.cluster, s, options);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  ASSERT_FALSE(fits->empty());
  ExpectEachFitsAndReadsBack(in, s, *fits);
  for (const FitSuggestion& f : *fits) EXPECT_EQ(f.levers, 2) << f.changes;
  bool recompute_and_zero = false;
  for (const FitSuggestion& f : *fits)
    recompute_and_zero = recompute_and_zero || f.changes == "recompute=full,zero_stage=1";
  EXPECT_TRUE(recompute_and_zero);
}

TEST(SuggestFits, AStrategyThatFitsGetsNone) {
  const Inputs in = Llama8bOnOneNode();
  Strategy s = TooBig(1);
  s.recompute = Recompute::kFull;
  Result<std::vector<FitSuggestion>> fits = SuggestFits(in.model, in.cluster, s);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_TRUE(fits->empty());
}

TEST(SuggestFits, ABrokenRuleIsAnError) {
  const Inputs in = Llama8bOnOneNode();
  Strategy s = TooBig(1);
  s.tp = 3;
  EXPECT_FALSE(SuggestFits(in.model, in.cluster, s).ok());
}

}  // namespace
}  // namespace loom
