// The GEMM calibration shipped in hardware/gpus/ must be what FitGemm derives from the public
// cuBLASLt measurements (tests/reference/gemm_cublaslt.csv), so that no number in a GPU file is
// typed in by hand.

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cost/compute_fit.h"
#include "reference/reference_csv.h"
#include "spec/cluster.h"

namespace loom {
namespace {

struct Row {
  int64_t m, n, k;
  double a100_fp16_tflops, h100_fp8_tflops;
};

std::vector<Row> ReadGemmTable() {
  Result<CsvTable> table = ReadReferenceCsv(std::string(LOOM_SOURCE_DIR) + "/tests/reference/gemm_cublaslt.csv");
  EXPECT_TRUE(table.ok()) << table.status().message();
  std::vector<Row> rows;
  for (size_t i = 0; table.ok() && i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    rows.push_back({r.Int("m"), r.Int("n"), r.Int("k"), r.Number("a100_fp16_tflops"), r.Number("h100_fp8_tflops")});
    EXPECT_TRUE(r.Finish().ok()) << r.Finish().message();
  }
  return rows;
}

void ExpectShippedCalibrationIsTheFit(const std::string& gpu_file, Dtype dtype, bool a100) {
  Result<GpuSpec> gpu = LoadGpuSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/gpus/" + gpu_file);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  std::vector<GemmSample> samples;
  for (const Row& r : ReadGemmTable()) {
    GemmShape g{r.m, r.n, r.k, 1, dtype};
    const double tflops = a100 ? r.a100_fp16_tflops : r.h100_fp8_tflops;
    samples.push_back({g, static_cast<double>(GemmFlops(g)) / (tflops * 1e12)});
  }
  ASSERT_EQ(samples.size(), 6u);
  Result<GemmFit> fit = FitGemm(samples, *gpu);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ComputeCalibration& c = gpu->calibration;
  EXPECT_EQ(c.gemm_tile_m, fit->tile_m) << gpu_file;
  EXPECT_EQ(c.gemm_tile_n, fit->tile_n) << gpu_file;
  EXPECT_NEAR(*c.GemmEfficiency(dtype), fit->efficiency, 5e-4) << gpu_file;
  EXPECT_NEAR(c.kernel_overhead_us, fit->overhead_us, 5e-3) << gpu_file;
  // The fit explains the table within a few percent per row.
  EXPECT_LT(fit->mean_abs_relative_error, 0.03) << gpu_file;
  for (double e : fit->relative_errors) EXPECT_LT(std::abs(e), 0.08) << gpu_file;
}

TEST(GemmCalibration, A100IsTheFitOfItsFp16Measurements) {
  ExpectShippedCalibrationIsTheFit("a100-sxm4-80gb.json", Dtype::kFp16, true);
}

TEST(GemmCalibration, H100IsTheFitOfItsFp8Measurements) {
  ExpectShippedCalibrationIsTheFit("h100-sxm5-80gb.json", Dtype::kFp8, false);
}

}  // namespace
}  // namespace loom
