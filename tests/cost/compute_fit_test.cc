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

GpuSpec A100WithAttentionAndHbm(double attention_efficiency, double memory_fraction, double overhead_us) {
  GpuSpec gpu = A100Like(128, 128, 1, overhead_us);
  gpu.file = "a100.json";
  gpu.bf16_tflops = 312;
  gpu.calibration.attention_efficiency = attention_efficiency;
  gpu.calibration.memory_bandwidth_fraction = memory_fraction;
  return gpu;
}

std::vector<AttentionSample> AttentionSamples(const GpuSpec& truth) {
  RooflineComputeModel model(truth);
  std::vector<AttentionSample> samples;
  for (int64_t seq : {1024, 2048, 4096, 8192}) {
    for (bool backward : {false, true}) {
      AttentionShape a{2, 16, 16, seq, seq, 128, 128, seq != 1024, backward, Dtype::kBf16};
      samples.push_back({a, model.Attention(a).ToSeconds()});
    }
  }
  return samples;
}

TEST(FitAttention, RecoversEfficiencyAndOverheadOfSyntheticData) {
  Result<EfficiencyFit> fit =
      FitAttention(AttentionSamples(A100WithAttentionAndHbm(0.62, 1, 4.0)), A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->efficiency, 0.62, 1e-5);
  EXPECT_NEAR(fit->overhead_us, 4.0, 0.01);
  EXPECT_EQ(fit->relative_errors.size(), 8u);
  EXPECT_LT(fit->mean_abs_relative_error, 1e-4);
}

TEST(FitAttention, RefusesMixedDtypesAndTimesFasterThanThePeak) {
  std::vector<AttentionSample> samples = AttentionSamples(A100WithAttentionAndHbm(0.9, 1, 4.0));
  GpuSpec slower = A100WithAttentionAndHbm(1, 1, 0);
  slower.bf16_tflops = 200;
  Result<EfficiencyFit> fit = FitAttention(samples, slower);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("the samples run at 1.404x peak_tflops.bf16 of a100.json (200)"),
            std::string::npos)
      << fit.status().message();
  samples[3].shape.dtype = Dtype::kFp16;
  fit = FitAttention(samples, A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("samples mix dtypes"), std::string::npos) << fit.status().message();
}

TEST(FitMemoryBandwidth, RecoversFractionAndOverheadOfSyntheticData) {
  RooflineComputeModel model(A100WithAttentionAndHbm(1, 0.83, 2.5));
  std::vector<MemorySample> samples;
  for (int64_t mib : {8, 32, 128, 512, 2048}) {
    MemoryShape m{mib << 20, mib << 19};
    samples.push_back({m, model.MemoryBound(m).ToSeconds()});
  }
  Result<EfficiencyFit> fit = FitMemoryBandwidth(samples, A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->efficiency, 0.83, 1e-5);
  EXPECT_NEAR(fit->overhead_us, 2.5, 0.01);
}

TEST(FitMemoryBandwidth, RefusesTooFewDistinctSizesAndNoBytes) {
  std::vector<MemorySample> samples = {{{1 << 20, 1 << 20}, 5e-6}, {{1 << 20, 1 << 20}, 5.1e-6}, {{1 << 24, 0}, 2e-5}};
  Result<EfficiencyFit> fit = FitMemoryBandwidth(samples, A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("2 distinct shape(s); at least 3 are needed"), std::string::npos)
      << fit.status().message();
  samples[1].shape = {0, 0};
  fit = FitMemoryBandwidth(samples, A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("memory 0 B read, 0 B written has a non-positive size or time"),
            std::string::npos)
      << fit.status().message();
}

TEST(FitMemoryBandwidth, RefusesTimesThatDoNotGrowWithTheBytes) {
  std::vector<MemorySample> samples = {{{1 << 20, 0}, 9e-6}, {{1 << 24, 0}, 6e-6}, {{1 << 28, 0}, 3e-6}};
  Result<EfficiencyFit> fit = FitMemoryBandwidth(samples, A100WithAttentionAndHbm(1, 1, 0));
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("do not take longer as their work grows"), std::string::npos)
      << fit.status().message();
}

}  // namespace
}  // namespace loom
