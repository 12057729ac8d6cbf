// The step-time intervals (spec/step_intervals.h): the fit keeps regimes two sources measured,
// a prediction takes its finest fitted regime or the envelope, the file's errors name the key and
// the fix, and the shipped fit parses.

#include "spec/step_intervals.h"

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

// A regime whose log quantiles run straight from |low| at q10 to |high| at q90.
StepIntervalRegime Straight(int level, const std::string& key, double low, double high,
                            int64_t rows, std::vector<std::string> sources) {
  StepIntervalRegime r{level, key, {}, rows, std::move(sources)};
  for (int i = 0; i < kStepQuantileCount; ++i) {
    r.log_quantiles[static_cast<size_t>(i)] =
        low + (high - low) * (StepQuantileLevel(i) - 0.1) / 0.8;
  }
  return r;
}

RegimeResidual At(const std::string& source, const std::string& fine, const std::string& gpu,
                  double ratio) {
  return {source, {fine, gpu + " / fw", gpu, "outside"}, std::log(ratio)};
}

TEST(StepRegimeKeys, NameTheGpuFrameworkAndTheParallelismInPlay) {
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 2;
  s.zero_stage = 1;  // the distributed optimizer: not a regime of its own
  const std::array<std::string, 4> keys = StepRegimeKeys("A100", "megatron-core", s);
  EXPECT_EQ(keys[0], "A100 / megatron-core / tp+pp");
  EXPECT_EQ(keys[1], "A100 / megatron-core");
  EXPECT_EQ(keys[2], "A100");
  EXPECT_EQ(keys[3], "outside");
  Strategy fsdp;
  fsdp.dp = 64;
  fsdp.zero_stage = 3;
  EXPECT_EQ(StepRegimeKeys("H100", "pytorch-eager", fsdp)[0], "H100 / pytorch-eager / zero3");
  EXPECT_EQ(StepRegimeKeys("H100", "none", Strategy{})[0], "H100 / none / one GPU");
}

TEST(StepParallelismRegime, NamesEachRegimeOnceAndAsTheKeysDo) {
  std::set<std::string> names;
  for (int p = 0; p < kStepParallelismRegimes; ++p) names.insert(StepRegimeKeys("G", "f", p)[0]);
  EXPECT_EQ(names.size(), static_cast<size_t>(kStepParallelismRegimes));
  Strategy s;
  s.dp = 4;
  EXPECT_EQ(StepParallelismRegime(s), 0);
  s.ep = 2;
  s.zero_stage = 2;
  EXPECT_EQ(StepRegimeKeys("G", "f", StepParallelismRegime(s))[0], "G / f / ep+zero2");
  EXPECT_EQ(StepParallelismRegime(Strategy{}), kStepParallelismRegimes - 1);
}

TEST(FitStepIntervals, KeepsOnlyRegimesOfTwoSourcesAndEnoughRows) {
  std::vector<RegimeResidual> residuals;
  for (int i = 0; i < 15; ++i) {
    residuals.push_back(At("a", "fine", "A100", 1.0 + 0.01 * i));
    residuals.push_back(At("b", "fine", "A100", 1.1));
    residuals.push_back(At("c", "lonely", "H100", 2.0));  // one source: no H100 regime
  }
  const StepIntervalTable t = FitStepIntervals(residuals);
  EXPECT_EQ(t.fitted_on, (std::vector<std::string>{"a", "b", "c"}));
  std::vector<std::string> keys;
  for (const StepIntervalRegime& r : t.regimes) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"fine", "A100 / fw", "A100", "outside"}));
  const StepIntervalRegime& fine = t.regimes.front();
  EXPECT_EQ(fine.rows, 30);
  // Each source weighs half: p10 is a's third value or so, p90 just above b's 1.1.
  EXPECT_GE(fine.LogLow(), std::log(1.01));
  EXPECT_LE(fine.LogLow(), std::log(1.035));
  EXPECT_GE(fine.LogHigh(), std::log(1.095));
  EXPECT_LE(fine.LogHigh(), std::log(1.13));
  for (size_t i = 1; i < fine.log_quantiles.size(); ++i)
    EXPECT_LE(fine.log_quantiles[i - 1], fine.log_quantiles[i]);
  // The envelope: the widest of each source's own p10 and p90; its median, every row's with each
  // source weighing a third (a's values all lie below b's 1.1, and c's 2.0 above it).
  const StepIntervalRegime& outside = t.regimes.back();
  EXPECT_NEAR(outside.LogLow(), std::log(1.01), 1e-9);
  EXPECT_NEAR(outside.LogHigh(), std::log(2.0), 1e-9);
  EXPECT_NEAR(outside.LogQuantile(0.5), std::log(1.1), 1e-9);
}

TEST(StepIntervalRegime, ReadsQuantilesBetweenTheLevelsItHolds) {
  const StepIntervalRegime r = Straight(0, "k", -0.2, 0.6, 40, {"a", "b"});
  EXPECT_NEAR(r.LogQuantile(0.1), -0.2, 1e-12);
  EXPECT_NEAR(r.LogQuantile(0.5), 0.2, 1e-12);
  EXPECT_NEAR(r.LogQuantile(0.9), 0.6, 1e-12);
  EXPECT_NEAR(r.LogQuantile(0.125), -0.175, 1e-12);  // between the levels 0.10 and 0.15
  EXPECT_NEAR(r.LogQuantile(0.95), 0.65, 1e-12);
  // The risk factor takes the median as the prediction's.
  EXPECT_NEAR(r.RiskFactor(0.5), 1.0, 1e-12);
  EXPECT_NEAR(r.RiskFactor(0.9), std::exp(0.4), 1e-12);
  EXPECT_NEAR(r.RiskFactor(0.1), std::exp(-0.4), 1e-12);
}

TEST(CheckStepQuantile, NamesTheFlagAndTheRange) {
  EXPECT_TRUE(CheckStepQuantile(0.5, "--risk").ok());
  EXPECT_TRUE(CheckStepQuantile(0.95, "--risk").ok());
  const Status low = CheckStepQuantile(0.01, "--risk");
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.message().find("--risk is 0.01: it must lie within 0.05 and 0.95"),
            std::string::npos)
      << low.message();
  EXPECT_FALSE(CheckStepQuantile(std::nan(""), "--risk").ok());
  EXPECT_FALSE(CheckStepQuantile(1.0, "--risk").ok());
}

TEST(IntervalFor, TakesTheFinestFittedRegimeAndSaysWhy) {
  StepIntervalTable t;
  t.regimes = {Straight(1, "A100 / fw", std::log(0.8), std::log(1.25), 100, {"a", "b"}),
               Straight(3, "outside", std::log(0.5), std::log(3.0), 300, {"a", "b", "c"})};
  const std::optional<StepInterval> fine =
      IntervalFor(t, {"A100 / fw / tp", "A100 / fw", "A100", "outside"}, 10.0);
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->level, 1);
  EXPECT_NEAR(fine->low_s, 8.0, 1e-9);
  EXPECT_NEAR(fine->high_s, 12.5, 1e-9);
  EXPECT_NE(fine->basis.find("no finer regime (A100 / fw / tp)"), std::string::npos) << fine->basis;
  const std::optional<StepInterval> outside =
      IntervalFor(t, {"B200 / fw / tp", "B200 / fw", "B200", "outside"}, 10.0);
  ASSERT_TRUE(outside.has_value());
  EXPECT_EQ(outside->level, 3);
  EXPECT_NEAR(outside->high_s, 30.0, 1e-9);
  EXPECT_NE(outside->basis.find("no source of the corpus measured B200"), std::string::npos)
      << outside->basis;
  EXPECT_FALSE(IntervalFor(StepIntervalTable{}, {"x", "x", "x", "outside"}, 1.0).has_value());
}

TEST(ParseStepIntervals, ReadsBackWhatItWrites) {
  StepIntervalTable t;
  t.fitted_on = {"a.csv", "b.csv"};
  t.regimes = {Straight(0, "A100 / fw / tp", -0.2, 0.3, 40, {"a.csv", "b.csv"}),
               Straight(3, "outside", -0.5, 1.0, 80, {"a.csv", "b.csv"})};
  const nlohmann::json json = nlohmann::json::parse(StepIntervalsJson(t).dump());
  Result<StepIntervalTable> back = ParseStepIntervals(json, "x.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->fitted_on, t.fitted_on);
  ASSERT_EQ(back->regimes.size(), 2u);
  EXPECT_EQ(back->regimes[0].key, "A100 / fw / tp");
  EXPECT_EQ(back->regimes[1].level, 3);
  EXPECT_EQ(back->regimes[1].log_quantiles, t.regimes[1].log_quantiles);
}

TEST(ParseStepIntervals, ABadFileNamesTheKeyAndTheFix) {
  StepIntervalTable good;
  good.regimes = {Straight(2, "A100", -0.2, 0.3, 40, {"a"})};
  nlohmann::json json = nlohmann::json::parse(StepIntervalsJson(good).dump());
  json["regimes"][0]["log_quantiles"][3] = -1.0;
  Result<StepIntervalTable> t = ParseStepIntervals(json, "x.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(
                "x.json: regimes[0].log_quantiles[3] is below the quantile before it"),
            std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("tools/fidelity --write-intervals"), std::string::npos);
  json["regimes"][0]["log_quantiles"].erase(0);
  EXPECT_NE(ParseStepIntervals(json, "x.json")
                .status()
                .message()
                .find("regimes[0].log_quantiles is missing or not a list of 19 numbers"),
            std::string::npos);
  json["regimes"][0]["level"] = "rack";
  EXPECT_NE(ParseStepIntervals(json, "x.json").status().message().find("regimes[0].level"),
            std::string::npos);
  nlohmann::json levels = nlohmann::json::parse(StepIntervalsJson(good).dump());
  levels["quantile_levels"] = {0.1, 0.9};
  EXPECT_NE(ParseStepIntervals(levels, "x.json").status().message().find("x.json: quantile_levels"),
            std::string::npos);
  EXPECT_FALSE(ParseStepIntervals(nlohmann::json{{"schema", "other/1"}}, "x.json").ok());
}

TEST(ShippedStepIntervals, ParseAndHoldTheEnvelope) {
  const StepIntervalTable& t = ShippedStepIntervals();
  ASSERT_FALSE(t.regimes.empty()) << "hardware/intervals/step-time.json did not parse";
  EXPECT_EQ(t.regimes.back().level, 3);
  EXPECT_GE(t.fitted_on.size(), 2u);
}

}  // namespace
}  // namespace loom
