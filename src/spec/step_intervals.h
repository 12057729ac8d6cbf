// How far to trust a simulated step time (issue 41): an 80 % interval for the measured step time,
// read off the residuals of loom's predictions on the corpus of measured training steps
// (tests/reference/steptime/). The interval of a prediction is predicted * exp([q10, q90]) of
// log(measured / predicted) over the corpus rows of its regime: the GPU, the framework whose host
// thread is modelled and the parallelism in play, backing off to the GPU and framework, then the
// GPU, when a finer regime has rows from fewer than two sources. A prediction outside every
// measured GPU takes the envelope of every source's own q10 and q90, and says so.
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
// A regime (below the GPU) needs rows of at least two sources and this many rows in all.
inline constexpr int64_t kStepIntervalMinRows = 20;

// The regime levels, finest first; "outside" is the envelope for a GPU no source measured.
inline constexpr std::array<const char*, 4> kStepRegimeLevels = {"gpu_framework_parallelism",
                                                                 "gpu_framework", "gpu", "outside"};

// A prediction's regime keys, one per level of kStepRegimeLevels ("outside" for the last).
// |framework|: the host thread's framework name, "none" without one.
std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          const Strategy& strategy);

// The framework as the regime keys name it: its name, "none" without a host thread.
std::string RegimeFramework(const std::optional<FrameworkProfile>& framework);

struct StepIntervalRegime {
  int level = 0;  // index into kStepRegimeLevels
  std::string key;
  double log_low = 0;   // q10 of log(measured / predicted)
  double log_high = 0;  // q90
  int64_t rows = 0;
  std::vector<std::string> sources;
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
// (level "outside", key "outside"): the lowest of the sources' own q10 and the highest q90.
StepIntervalTable FitStepIntervals(const std::vector<RegimeResidual>& residuals);

struct StepInterval {
  double low_s = 0;
  double high_s = 0;
  int level = 0;
  std::string basis;  // the regime, its rows and sources, and why a coarser one was used
};

// The interval of |predicted_s| in the finest regime of |keys| that |table| has; nullopt when the
// table has none (not even the envelope).
std::optional<StepInterval> IntervalFor(const StepIntervalTable& table,
                                        const std::array<std::string, 4>& keys, double predicted_s);

// Reads a step-time interval file (schema loom.step-intervals/1); errors name |file| and the key.
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

}  // namespace loom

#endif  // LOOM_SPEC_STEP_INTERVALS_H_
