// How sure loom's step times are, measured on the corpus of steptime_cases.h (issue 41, "An
// interval on every prediction"): an 80 % interval for a case's measured step time built only from
// the other sources' residuals (leave-one-source-out, split conformal on log residuals), and how
// often it holds the measured time of each held-out source's rows.
//
// The interval of a row is [predicted * exp(q10), predicted * exp(q90)], q10 and q90 the weighted
// 10th and 90th percentiles of log(measured / predicted) over the calibration rows of its regime,
// each source weighing the same in total (so that vTrain's 1,440 one-node rows do not stand for
// every source). The regime is the finest of these with calibration rows from at least two
// sources and kMinRegimeRows rows: the GPU, the framework and the parallelism in play; the GPU and
// the framework; the GPU; every row. A row whose regime has no such calibration takes the coarser
// one, and the report counts how many did.

#ifndef LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_
#define LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/fidelity_tables.h"
#include "reference/steptime_cases.h"

namespace loom {

inline constexpr int64_t kMinRegimeRows = 20;
inline constexpr double kIntervalLow = 0.10;
inline constexpr double kIntervalHigh = 0.90;

// A case's regime, finest first: [0] GPU + framework + parallelism, [1] GPU + framework, [2] GPU,
// [3] "all".
std::array<std::string, 4> RegimeKeys(const CorpusCase& c);

// One predicted row with its residual and regime.
struct Residual {
  std::string source;
  std::array<std::string, 4> regime;
  double predicted = 0;
  double measured = 0;
  double LogRatio() const;  // log(measured / predicted)
};

// The weighted |q| quantile of (value, weight) pairs: the smallest value whose cumulative weight
// (values in increasing order) reaches q of the total weight. REQUIRES: non-empty, weights > 0.
double WeightedQuantile(std::vector<std::pair<double, double>> values_and_weights, double q);

struct SourceCoverage {
  std::string source;
  int64_t rows = 0;                                // predicted rows
  int64_t covered = 0;                             // whose measured time lies in the interval
  double median_width = 0;                         // median of (hi - lo) / predicted
  std::array<int64_t, 4> by_level = {0, 0, 0, 0};  // rows whose interval came from each level
  int64_t uncalibrated = 0;                        // rows for which no other source had rows at all
  double Coverage() const { return rows == 0 ? 0 : static_cast<double>(covered) / rows; }
};

// Residuals of the corpus tables' predicted rows (|tables| from PredictCorpus, whose rows follow
// |corpus.cases| per source, refused rows last).
std::vector<Residual> CorpusResiduals(const Corpus& corpus,
                                      const std::vector<FidelityTable>& tables);

// Each source held out in turn: its rows' intervals from the other sources' residuals.
std::vector<SourceCoverage> LeaveOneSourceOutCoverage(const std::vector<Residual>& residuals);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_
