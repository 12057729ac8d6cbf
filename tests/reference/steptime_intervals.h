// How sure loom's step times are, measured on the corpus of steptime_cases.h (issue 41, "An
// interval on every prediction"): each source held out in turn, its rows get the 80 % interval of
// spec/step_intervals.h fitted on the other sources' residuals only (FitStepIntervals), and the
// report counts how often it holds their measured step times, and how wide it is.

#ifndef LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_
#define LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/fidelity_tables.h"
#include "reference/steptime_cases.h"
#include "spec/step_intervals.h"

namespace loom {

// A case's regime keys (StepRegimeKeys of its GPU, framework and strategy).
std::array<std::string, 4> RegimeKeys(const CorpusCase& c);

// One predicted row with its residual and regime.
struct Residual {
  std::string source;
  std::string job;  // CorpusCase::job: rows of one job are alternatives of one another
  std::array<std::string, 4> regime;
  double predicted = 0;
  double measured = 0;
  double LogRatio() const;  // log(measured / predicted)
};

struct SourceCoverage {
  std::string source;
  int64_t rows = 0;                                // predicted rows
  int64_t covered = 0;                             // whose measured time lies in the interval
  double median_width = 0;                         // median of (hi - lo) / predicted
  std::array<int64_t, 4> by_level = {0, 0, 0, 0};  // rows by kStepRegimeLevels
  int64_t uncalibrated = 0;  // rows for which the other sources gave no interval at all
  // How the source's jobs are ordered (Ordering) by loom's predictions (`loom plan`'s default);
  // by the predictions moved to their regime's median fitted without the source (what
  // ShippedRiskFactor leaves out, because it orders worse); and at the 90th percentile with loom's
  // prediction as the median (`loom plan --risk 0.9`).
  Ordering as_predicted;
  Ordering at_median;
  Ordering at_p90;
  double Coverage() const {
    return rows == 0 ? 0 : static_cast<double>(covered) / static_cast<double>(rows);
  }
};

// Residuals of the corpus tables' predicted rows (the tables of PredictCorpus among |tables|, whose
// rows follow |corpus.cases| per source, refused rows last; other tables are left alone).
std::vector<Residual> CorpusResiduals(const Corpus& corpus,
                                      const std::vector<FidelityTable>& tables);

// The fit of every residual (what hardware/intervals/step-time.json holds).
StepIntervalTable FitCorpusIntervals(const std::vector<Residual>& residuals);

// Each source held out in turn: its rows' intervals from the other sources' residuals.
std::vector<SourceCoverage> LeaveOneSourceOutCoverage(const std::vector<Residual>& residuals);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_STEPTIME_INTERVALS_H_
