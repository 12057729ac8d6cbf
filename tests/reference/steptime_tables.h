// loom's predictions for the corpus of steptime_cases.h: one FidelityTable per source (seconds per
// step), the rows loom does not express listed as failed with their reason, and for the jobs a
// source measured several ways, whether loom orders the alternatives as measured.

#ifndef LOOM_TESTS_REFERENCE_STEPTIME_TABLES_H_
#define LOOM_TESTS_REFERENCE_STEPTIME_TABLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/fidelity_tables.h"
#include "reference/steptime_cases.h"

namespace loom {

// Orders the predicted rows of |table| by job (|jobs|, one per row) as Ordering says.
Ordering OrderingOf(const FidelityTable& table, const std::vector<std::string>& jobs);

// Every source of kCorpusSources as a table (unit s): each case simulated (SimulateTrainingStep
// with its kernels and framework) against its measured seconds, then each refused row as a failed
// row, "not expressed: <reason>"; with its Ordering. No shipped calibration is fitted on the
// corpus, so each row's loso_predicted is its prediction.
std::vector<FidelityTable> PredictCorpus(const Corpus& corpus);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_STEPTIME_TABLES_H_
