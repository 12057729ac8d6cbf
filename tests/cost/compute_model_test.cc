#include "cost/compute_model.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

GpuSpec H100() {
  GpuSpec gpu;
  gpu.name = "h100";
  gpu.sm_count = 132;
  gpu.hbm_bandwidth_GBps = 3350;
  gpu.bf16_tflops = 989;
  gpu.fp16_tflops = 989;
  gpu.fp8_tflops = 1979;
  return gpu;
}

TEST(RooflineComputeModel, FullWavesRunAtTheFixedEfficiency) {
  RooflineComputeModel model(H100());
  // 1056 x 2048 output = 66 x 16 tiles of 128 = 1056 tiles = 8 full waves of 132 SMs.
  GemmShape gemm{128 * 66, 128 * 16, 8192, 1, Dtype::kBf16};
  double expected_s = static_cast<double>(GemmFlops(gemm)) / (989e12 * 0.82);
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), expected_s, 1e-9);
}

TEST(RooflineComputeModel, PartialLastWaveCostsAFullWave) {
  RooflineComputeModel model(H100());
  GemmShape full{128 * 12, 128 * 11, 65536, 1, Dtype::kBf16};    // 132 tiles: one full wave
  GemmShape one_more{128 * 7, 128 * 19, 65536, 1, Dtype::kBf16};  // 133 tiles: two waves, one tile in the second
  EXPECT_NEAR(model.Gemm(full).ToSeconds(), static_cast<double>(GemmFlops(full)) / (989e12 * 0.82), 1e-9);
  EXPECT_NEAR(model.Gemm(one_more).ToSeconds(), static_cast<double>(GemmFlops(one_more)) / (989e12 * 0.82 * 133.0 / 264.0), 1e-9);
}

TEST(RooflineComputeModel, Fp8UsesItsOwnPeakAndEfficiency) {
  RooflineComputeModel model(H100());
  GemmShape gemm{128 * 132, 4096, 8192, 1, Dtype::kFp8};
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), static_cast<double>(GemmFlops(gemm)) / (1979e12 * 0.70), 1e-9);
}

TEST(RooflineComputeModel, SkinnyGemmIsBoundByMemory) {
  RooflineComputeModel model(H100());
  GemmShape gemm{1, 8192, 8192, 1, Dtype::kBf16};  // a matrix-vector product
  double bytes = (1.0 * 8192 + 8192.0 * 8192 + 8192) * 2;
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), bytes / 3350e9, 1e-9);
}

TEST(RooflineComputeModel, MemoryBoundOpsMoveTheirBytesAtHbmBandwidth) {
  RooflineComputeModel model(H100());
  EXPECT_EQ(model.MemoryBound({3'350'000'000, 3'350'000'000}).nanos(), 2'000'000);
}

TEST(RooflineComputeModel, AttentionBackwardCostsTwoAndAHalfForwards) {
  RooflineComputeModel model(H100());
  AttentionShape a{1, 16, 16, 4096, 4096, 128, 128, /*causal=*/true, /*backward=*/false, Dtype::kBf16};
  AttentionShape b = a;
  b.backward = true;
  EXPECT_NEAR(model.Attention(b).ToSeconds() / model.Attention(a).ToSeconds(), 2.5, 1e-4);
  EXPECT_NEAR(model.Attention(a).ToSeconds(), AttentionKernelFlops(a) / (989e12 * 0.5), 1e-9);
}

}  // namespace
}  // namespace loom
