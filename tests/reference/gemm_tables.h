// The GEMM tables of the fidelity report (issue 42, mechanism 5): loom's GEMM model against the
// public cuBLAS(Lt) measurements the shipped GPU files were fitted on, in-sample and with each
// table and each source left out of the fit, and against the committed H100 run's grid, which no
// shipped calibration was fitted on.

#ifndef LOOM_TESTS_REFERENCE_GEMM_TABLES_H_
#define LOOM_TESTS_REFERENCE_GEMM_TABLES_H_

#include <vector>

#include "core/status.h"
#include "reference/fidelity_cases.h"
#include "reference/fidelity_tables.h"

namespace loom {

// One table per reference file (gemm_cublaslt.csv, gemm_shapes.csv), a row per GEMM on the GPU
// file it calibrates (A100 rows on a100-sxm4-80gb.json, H100 and H200 rows on their own), as
// kernel times in microseconds (the published TFLOP/s converted, so that the errors are those the
// fit minimises and loom fit --check reports): predicted by RooflineComputeModel::GemmKernel with
// the shipped calibration (in-sample); leave-one-source-out with that GPU's GEMM calibration
// refitted without the row's file (FitReferenceGemmCalibration); and, in the site column, refitted
// without the row's source (azure, mamf, fastcu, zzc). Where the rows left do not determine the
// fit, the GPU is predicted as loom predicts one never measured (the datasheet: no GEMM
// calibration), and the row's name says so. Then the committed H100 run's grid
// (hardware/validation/2026-11-27/grid.json): its 106 GEMMs, measured back to back after the
// profile, with the shipped H100 file at the sustained ceiling (ClockRegime::kSustained); no
// shipped calibration is fitted on the grid, so its leave-one-source-out column is in-sample.
// Errors: a missing or malformed reference table, GPU file or grid.
Result<std::vector<FidelityTable>> PredictGemmTables(const ReferencePaths& paths);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_GEMM_TABLES_H_
