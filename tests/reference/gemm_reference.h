// The published cuBLAS(Lt) GEMM measurements of tests/reference/ (gemm_cublaslt.csv and
// gemm_shapes.csv) as kernel samples of the GPU files they calibrate, so that the shipped GEMM
// calibrations can be checked against their fit (gemm_calibration_test.cc) and refitted without
// one table or one source (the GEMM tables of the fidelity report, issue 42 mechanism 5).

#ifndef LOOM_TESTS_REFERENCE_GEMM_REFERENCE_H_
#define LOOM_TESTS_REFERENCE_GEMM_REFERENCE_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "cost/roofline_fit.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

inline constexpr std::string_view kCublasLtTable = "gemm_cublaslt.csv";
inline constexpr std::string_view kGemmShapesTable = "gemm_shapes.csv";

// One published GEMM: the table and source it comes from, the GPU file it calibrates
// (hardware/gpus/<gpu>.json), its shape and its time at the measured TFLOP/s.
struct GemmReferenceRow {
  std::string table;   // file name in tests/reference/
  std::string source;  // who measured it: "azure", "mamf", "fastcu", "zzc"
  std::string gpu;     // hardware/gpus/ file name without .json
  GemmShape shape;
  double time_s = 0;
};

// Every row of gemm_cublaslt.csv (a column per GPU and dtype: Azure's AI benchmarking guide) and
// gemm_shapes.csv (a row per measurement) in |tables_dir|. Errors name the table, row and column.
Result<std::vector<GemmReferenceRow>> LoadGemmReferenceRows(const std::string& tables_dir);

// The GPUs whose measurements fit |gpu|'s file: H100 and H200 are one GH100 silicon with the same
// SM count and tensor-core peaks (their files' sources), so each is fitted on both GPUs' rows.
std::set<std::string> GemmFittedGpus(const std::string& gpu);

// |gpu|'s GEMM calibration (FitComputeJointly on the GEMMs alone: the GEMM keys and the overhead)
// fitted on the rows of |rows| that GemmFittedGpus(gpu.file's name) measured, less those of
// |excluded_table| and of |excluded_source| (none when empty). The GPU's other calibration values
// stay as given, and a dtype the fit did not see has no GEMM efficiency of its own: it borrows as
// the model does (ComputeCalibration::GemmEfficiency). |gpu_name| is the file name without .json.
Result<ComputeCalibration> FitReferenceGemmCalibration(const std::vector<GemmReferenceRow>& rows,
                                                       const GpuSpec& gpu,
                                                       const std::string& gpu_name,
                                                       std::string_view excluded_table = "",
                                                       std::string_view excluded_source = "");

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_GEMM_REFERENCE_H_
