// loom's predictions for the published measurements of fidelity_cases.h, one table per source,
// with the signed error of every case and the mean absolute percentage error of each table.

#ifndef LOOM_TESTS_REFERENCE_FIDELITY_TABLES_H_
#define LOOM_TESTS_REFERENCE_FIDELITY_TABLES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "reference/fidelity_cases.h"
#include "sim/simulator.h"

namespace loom {

// One measured case and loom's prediction of it, or the error that kept loom from predicting it
// (a strategy rule, an unsupported feature), which counts the case as failed.
struct FidelityRow {
  std::string name;
  double predicted = 0;
  double measured = 0;
  std::string error;  // empty when predicted
  // The prediction with every calibration fitted without this row's table (leave-one-source-out);
  // equal to |predicted| when no calibration was fitted on the table.
  double loso_predicted = 0;
  // For tables that hold several sites (the machines a run was measured on): the site, and the
  // prediction with the calibration refitted without that site's rows of the table.
  std::string site = "";
  double site_loso_predicted = 0;
  // What the case ran, for plotting residuals against it (`loom_fidelity --csv`): (name, value)
  // pairs, for the rows of a simulated step; empty elsewhere.
  std::vector<std::pair<std::string, std::string>> features = {};
  // The part of its source the row belongs to (CorpusCase::part), for errors part by part
  // (FidelityTable::ByPart); empty for a table that is one whole.
  std::string part = "";

  bool ok() const { return error.empty(); }
  // 100 * (predicted - measured) / measured. REQUIRES: ok() and measured != 0.
  double ErrorPct() const { return 100.0 * (predicted - measured) / measured; }
  double LosoErrorPct() const { return 100.0 * (loso_predicted - measured) / measured; }
  double SiteLosoErrorPct() const { return 100.0 * (site_loso_predicted - measured) / measured; }
};

// Mean and median |error|, largest |error| and mean signed error (bias) of a table's predicted
// rows, in %.
struct ErrorSummary {
  double mape_pct = 0;
  double median_abs_pct = 0;  // the median |error|
  double max_abs_pct = 0;
  double bias_pct = 0;
};

// How loom orders a table's jobs measured several ways (rows of one CorpusCase::job): over every
// pair of predicted rows of one job whose measured times differ, the share that loom's predictions
// order the same way; per job, the top-1 regret, how much slower (measured) loom's fastest
// predicted row is than the measured fastest: measured(loom's pick) / measured best - 1.
struct Ordering {
  int64_t jobs = 0;   // jobs with two or more predicted rows
  int64_t pairs = 0;  // pairs whose measured times differ
  int64_t pairs_in_order = 0;
  double mean_regret = 0;  // over |jobs|, a fraction
  double max_regret = 0;
  std::string worst_job = "";  // where max_regret is

  double InOrderShare() const {
    return pairs == 0 ? 0 : static_cast<double>(pairs_in_order) / static_cast<double>(pairs);
  }
};

struct FidelityTable {
  std::string name;   // a stable key for tools: "korthikanti2022_table5"
  std::string title;  // what a reader sees: source, quantity and unit
  std::string unit;   // of predicted and measured
  std::vector<FidelityRow> rows;
  // The file of tests/reference/ the measurements come from: what the leave-one-source-out
  // column refits without.
  std::string source_file = "";
  // Whether a shipped calibration was fitted on |source_file| (so the columns can differ).
  bool refitted = false;
  // Whether the rows have sites and site_loso_predicted (each site left out of the fit in turn).
  bool site_refitted = false;
  // Whether the table's rows hold jobs measured several ways, and how loom orders them.
  bool has_ordering = false;
  Ordering ordering = {};

  // The errors of each part of the table (FidelityRow::part), in the order the parts first
  // appear; empty when no row names a part.
  struct Part {
    std::string name;
    int64_t rows = 0;  // predicted
    ErrorSummary in_sample, loso;
  };
  std::vector<Part> ByPart() const;

  int64_t Failed() const;
  ErrorSummary InSample() const;
  ErrorSummary LeaveOneSourceOut() const;
  ErrorSummary LeaveOneSiteOut() const;
  // Mean of |ErrorPct()| over the rows that were predicted; 0 when none was.
  double MapePct() const;
  // Largest |ErrorPct()| over the rows that were predicted; 0 when none was.
  double MaxAbsErrorPct() const;
};

// The case's step as SimulateTrainingStep simulates it, with its kernels and framework.
Result<SimulationResult> SimulateCase(const StepCase& c);

// Korthikanti et al. 2022, Table 5: simulated step time (SimulateTrainingStep with each case's
// kernels) against measured seconds per iteration.
FidelityTable PredictIterationTimes(const std::vector<StepCase>& cases);

// Korthikanti et al. 2022, Table 4: the forward and backward time of one layer per setting, in
// ms, from the op-level pass costs (OpTime) of one transformer layer with the simulator's compute
// and communication models, with |cases.kernels| (the paper timed Megatron-LM's unfused attention
// core with dropout). Forward = its F ops; backward = recompute + B + W.
FidelityTable PredictLayerTimes(const LayerCases& cases);

// Narayanan et al. 2021, Table 1: TFLOP/s per GPU. The paper counts FLOPs with full recompute,
// 96 B s L h^2 (1 + s/(6h) + V/(16 L h)) per iteration (its eq. 3), not loom's model FLOPs, so
// the prediction applies that formula to the simulated step time: the same count over two times.
FidelityTable PredictNarayananTflops(const std::vector<StepCase>& cases);

// Narayanan et al. 2021, eq. 3: FLOPs of one iteration with full recompute.
double NarayananIterationFlops(const ModelSpec& model, const Strategy& strategy);

// nccl-tests all-reduce bus bandwidth in GB/s: bytes * 2(n-1)/n / (the simulator's communication
// model's time of one all-reduce over the case's group).
FidelityTable PredictAllReduceBusBandwidth(const std::string& name, const std::string& title,
                                           const std::vector<AllReduceCase>& cases);

// Every table of the fidelity report, in the order of issues 4 and 18, with the shipped
// calibrations (the in-sample column) and, per table, the calibrations refitted without the
// table's source file (the leave-one-source-out column; FitReferenceCommCalibration); then the
// corpus of measured steps (steptime_tables.h) and the GEMM tables (PredictGemmTables,
// gemm_tables.h). Errors: those of loading the cases (a missing or malformed reference table,
// cluster or GPU file) or of a refit; a case loom cannot predict is a failed row instead.
Result<std::vector<FidelityTable>> BuildFidelityReport(const ReferencePaths& paths);

// The tables with every cluster calibration fitted on |excluded_file| refitted without it (none
// refitted when empty); loso_predicted is left 0.
Result<std::vector<FidelityTable>> BuildFidelityTables(const ReferencePaths& paths,
                                                       std::string_view excluded_file);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_FIDELITY_TABLES_H_
