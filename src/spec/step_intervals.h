// How far to trust a simulated step time (issue 41): an 80 % interval for the measured step time,
// read off the residuals of loom's predictions on the corpus of measured training steps
// (tests/reference/steptime/). The interval of a prediction is predicted * exp([q10, q90]) of
// log(measured / predicted) over the corpus rows of its regime: the GPU, the framework whose host
// thread is modelled and the parallelism in play, backing off to the GPU and framework, then the
// GPU, when a finer regime has rows from fewer than two sources. A prediction outside every
// measured GPU takes the envelope of every source's own quantiles, and says so. Each regime holds
// the quantiles 0.05, 0.10, ..., 0.95, for `loom plan --risk P` (ShippedRiskFactor).
// hardware/intervals/step-time.json holds the fit (tools/fidelity --write-intervals writes it);
// the loom binary carries it compiled in.

#ifndef LOOM_SPEC_STEP_INTERVALS_H_
#define LOOM_SPEC_STEP_INTERVALS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/strategy.h"

namespace loom {

inline constexpr double kStepIntervalLow = 0.10;
inline constexpr double kStepIntervalHigh = 0.90;
// The quantiles a regime holds: kStepQuantileSpacing, 2 kStepQuantileSpacing, ... (0.05 to 0.95).
inline constexpr int kStepQuantileCount = 19;
inline constexpr double kStepQuantileSpacing = 0.05;
// The quantile level of index |i| of a regime's log_quantiles.
constexpr double StepQuantileLevel(int i) { return (i + 1) * kStepQuantileSpacing; }
// The quantiles LogQuantile reads: those the regimes hold and every level between them.
inline constexpr double kStepQuantileLowest = StepQuantileLevel(0);
inline constexpr double kStepQuantileHighest = StepQuantileLevel(kStepQuantileCount - 1);
// A regime (below the GPU) needs rows of at least two sources and this many rows in all.
inline constexpr int64_t kStepIntervalMinRows = 20;

// The regime levels, finest first; "outside" is the envelope for a GPU no source measured.
inline constexpr std::array<const char*, 4> kStepRegimeLevels = {"gpu_framework_parallelism",
                                                                 "gpu_framework", "gpu", "outside"};

// The parallelism in play that a regime names, as a number below kStepParallelismRegimes: tensor,
// pipeline, context and expert parallelism, ZeRO-2 and ZeRO-3 as bits, and without any of them,
// data parallelism alone (0) or one GPU (kStepParallelismRegimes - 1). The planner keys a table of
// its search's regimes by it, so that a strategy's regime costs no strings.
inline constexpr int kStepParallelismRegimes = 65;
int StepParallelismRegime(const Strategy& strategy);

// A prediction's regime keys, one per level of kStepRegimeLevels ("outside" for the last).
// |framework|: the host thread's framework name, "none" without one.
std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          const Strategy& strategy);
// The same from the strategy's StepParallelismRegime. REQUIRES: 0 <= parallelism < 65.
std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          int parallelism);

// The framework as the regime keys name it: its name, "none" without a host thread.
std::string RegimeFramework(const std::optional<FrameworkProfile>& framework);

struct StepIntervalRegime {
  int level = 0;  // index into kStepRegimeLevels
  std::string key;
  // log(measured / predicted) at StepQuantileLevel(0), (1), ...: nondecreasing.
  std::array<double, kStepQuantileCount> log_quantiles = {};
  int64_t rows = 0;
  std::vector<std::string> sources;

  // The |q| quantile of log(measured / predicted), linear between the levels held.
  // REQUIRES: kStepQuantileLowest <= q <= kStepQuantileHighest.
  double LogQuantile(double q) const;
  double LogLow() const { return LogQuantile(kStepIntervalLow); }
  double LogHigh() const { return LogQuantile(kStepIntervalHigh); }
  // The |q| quantile of measured / predicted with the prediction taken as the median:
  // exp(LogQuantile(q) - LogQuantile(0.5)), what `loom plan --risk q` multiplies a prediction by
  // (ShippedRiskFactor says why the median is the prediction's). Same REQUIRES.
  double RiskFactor(double q) const;
};

struct StepIntervalTable {
  std::string file;
  std::vector<std::string> fitted_on;  // the corpus files the residuals came from
  std::vector<StepIntervalRegime> regimes;
};

// One prediction's residual, for the fit.
struct RegimeResidual {
  std::string source;
  std::array<std::string, 4> keys;
  double log_ratio = 0;  // log(measured / predicted)
};

// The weighted |q| quantile of (value, weight) pairs: the smallest value whose cumulative weight,
// values in increasing order, reaches q of the total. REQUIRES: non-empty, weights > 0.
double WeightedQuantile(std::vector<std::pair<double, double>> values_and_weights, double q);

// The regimes of |residuals|: every key of the first three levels with rows of two or more sources
// and kStepIntervalMinRows rows, each source weighing the same in total; and the envelope
// (level "outside", key "outside"): below the median, the lowest of the sources' own quantiles,
// above it the highest, and at it the median of every row, each source weighing the same.
StepIntervalTable FitStepIntervals(const std::vector<RegimeResidual>& residuals);

struct StepInterval {
  double low_s = 0;
  double high_s = 0;
  int level = 0;
  std::string basis;  // the regime, its rows and sources, and why a coarser one was used
};

// The finest regime of |keys| that |table| has; nullptr when it has none (not even the envelope).
const StepIntervalRegime* RegimeFor(const StepIntervalTable& table,
                                    const std::array<std::string, 4>& keys);

// The interval of |predicted_s| in RegimeFor(table, keys); nullopt without one.
std::optional<StepInterval> IntervalFor(const StepIntervalTable& table,
                                        const std::array<std::string, 4>& keys, double predicted_s);

// Reads a step-time interval file (schema loom.step-intervals/2); errors name |file| and the key.
Result<StepIntervalTable> ParseStepIntervals(const nlohmann::json& json, const std::string& file);
// The file's JSON, as ParseStepIntervals reads it back.
nlohmann::ordered_json StepIntervalsJson(const StepIntervalTable& table);

// hardware/intervals/step-time.json as compiled into loom. REQUIRES: it parses (a test checks).
const StepIntervalTable& ShippedStepIntervals();

// The shipped interval of a step of |strategy| predicted at |predicted_s| on |cluster|'s GPU (the
// first group's, for a mixed fleet) under |framework|'s host thread.
std::optional<StepInterval> ShippedStepInterval(const ClusterSpec& cluster,
                                                const std::optional<FrameworkProfile>& framework,
                                                const Strategy& strategy, double predicted_s);

// What `loom plan --risk q` multiplies a prediction by: RiskFactor(q) of the shipped regime of
// |parallelism| (StepParallelismRegime) on |cluster|'s GPU under |framework|; 1 when the shipped
// fit is empty, and at q = 0.5. The spread about the regime's median, not the median
// itself: moving each prediction to its regime's median (fitted without its source) orders the
// corpus's alternatives worse than loom's predictions do (loom_fidelity, "Ranked at a quantile":
// vTrain one node 83.2 % of pairs against 84.8 %, 64-512 GPUs 79.3 % against 80.3 %), since a
// regime's median error today is mostly the host model's on small runs, not a trait of the
// parallelism. REQUIRES: q within [kStepQuantileLowest, kStepQuantileHighest].
double ShippedRiskFactor(const ClusterSpec& cluster,
                         const std::optional<FrameworkProfile>& framework, int parallelism,
                         double q);

// Whether |q| is a quantile LogQuantile reads; else an error naming |flag|, the range and
// why it ends there.
Status CheckStepQuantile(double q, const std::string& flag);

}  // namespace loom

#endif  // LOOM_SPEC_STEP_INTERVALS_H_
