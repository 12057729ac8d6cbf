#include "cost/compute_fit.h"

#include <cmath>

#include <gtest/gtest.h>

#include "cost/compute_model.h"

namespace loom {
namespace {

GpuSpec A100Like(int64_t tile_m, int64_t tile_n, double efficiency, double overhead_us) {
  GpuSpec gpu;
  gpu.name = "a100";
  gpu.sm_count = 108;
  gpu.hbm_bandwidth_GBps = 2039;
  gpu.fp16_tflops = 312;
  gpu.calibration.gemm_tile_m = tile_m;
  gpu.calibration.gemm_tile_n = tile_n;
  gpu.calibration.gemm_efficiency_fp16 = efficiency;
  gpu.calibration.kernel_overhead_us = overhead_us;
  return gpu;
}

TEST(FitGemm, RecoversTheParametersOfSyntheticData) {
  GpuSpec truth = A100Like(128, 256, 0.77, 6.5);
  RooflineComputeModel model(truth);
  std::vector<GemmSample> samples;
  for (int64_t m : {512, 1000, 2048, 3000, 4096, 8192}) {
    for (int64_t n : {1024, 2500, 6144}) {
      GemmShape g{m, n, 4096, 1, Dtype::kFp16};
      samples.push_back({g, model.Gemm(g).ToSeconds()});
    }
  }
  Result<GemmFit> fit = FitGemm(samples, A100Like(64, 64, 1, 0));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->tile_m, 128);
  EXPECT_EQ(fit->tile_n, 256);
  EXPECT_NEAR(fit->efficiency, 0.77, 1e-4);
  EXPECT_NEAR(fit->overhead_us, 6.5, 0.01);
  EXPECT_LT(fit->mean_abs_relative_error, 1e-4);
}

TEST(FitGemm, RefusesTooFewSamples) {
  std::vector<GemmSample> samples = {{{1024, 1024, 1024, 1, Dtype::kFp16}, 1e-5}, {{2048, 2048, 2048, 1, Dtype::kFp16}, 8e-5}};
  Result<GemmFit> fit = FitGemm(samples, A100Like(128, 128, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("2 samples; at least 3 shapes are needed"), std::string::npos);
}

TEST(FitGemm, RefusesNonPositiveTimesAndMixedDtypes) {
  std::vector<GemmSample> samples = {{{1024, 1024, 1024, 1, Dtype::kFp16}, 1e-5},
                                     {{2048, 2048, 2048, 1, Dtype::kFp16}, 0},
                                     {{4096, 4096, 4096, 1, Dtype::kFp16}, 6e-4}};
  Result<GemmFit> fit = FitGemm(samples, A100Like(128, 128, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("2048x2048x2048 has a non-positive size or time"), std::string::npos);
  samples[1].time_s = 8e-5;
  samples[2].shape.dtype = Dtype::kBf16;
  fit = FitGemm(samples, A100Like(128, 128, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("mix dtypes"), std::string::npos);
}

}  // namespace
}  // namespace loom
