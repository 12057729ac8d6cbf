#include "cost/gemm_tiles.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

// An A100-like GPU whose operand loads cost a fifth of a 128x128 tile's math: large tiles are the
// most efficient, as the cuBLAS guide ranks them.
GpuSpec A100LikeGpu() {
  GpuSpec gpu;
  gpu.name = "a100";
  gpu.sm_count = 108;
  gpu.hbm_bandwidth_GBps = 2039;
  gpu.bf16_tflops = 312;
  gpu.calibration.gemm_efficiency_bf16 = 0.85;
  gpu.calibration.gemm_operand_bandwidth_GBps = 10000;
  return gpu;
}

TEST(ChooseGemmTile, LargeGemmTakesTheLargestTile) {
  const GemmTileChoice c = ChooseGemmTile({8192, 8192, 8192, 1, Dtype::kBf16}, A100LikeGpu());
  EXPECT_EQ(c.tile_m * c.tile_n, 256 * 128);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_EQ(c.waves, 19);  // 32 x 64 = 2048 tiles over 108 SMs
}

TEST(ChooseGemmTile, ChoiceChangesWithShape) {
  const GpuSpec gpu = A100LikeGpu();
  // N = 192: a 64-wide tile covers it exactly where 128 and 256 waste a third or a quarter.
  const GemmTileChoice narrow = ChooseGemmTile({65536, 192, 4096, 1, Dtype::kBf16}, gpu);
  EXPECT_EQ(narrow.tile_n, 64);
  EXPECT_EQ(narrow.tile_m, 256);
  const GemmTileChoice big = ChooseGemmTile({8192, 8192, 8192, 1, Dtype::kBf16}, gpu);
  const GemmTileChoice small = ChooseGemmTile({1024, 1024, 1024, 1, Dtype::kBf16}, gpu);
  EXPECT_LT(small.tile_m * small.tile_n,
            big.tile_m * big.tile_n);  // 64 tiles of 128x128 leave 44 SMs idle
}

TEST(ChooseGemmTile, SmallOutputWithLongKSplitsK) {
  // A 512 x 512 output is 8 tiles of 256x128 (or 64 of 64x64) on 108 SMs; with K = 65536 splitting
  // K keeps the SMs busy.
  const GemmTileChoice c = ChooseGemmTile({512, 512, 65536, 1, Dtype::kBf16}, A100LikeGpu());
  EXPECT_GT(c.split_k, 1);
  EXPECT_GT(c.split_k_bytes, 0);
  // The same output with a short K does not split (each slice would be under kMinSplitKSlice).
  EXPECT_EQ(ChooseGemmTile({512, 512, 256, 1, Dtype::kBf16}, A100LikeGpu()).split_k, 1);
  // Nor does a large output: its tiles fill the SMs.
  EXPECT_EQ(ChooseGemmTile({8192, 8192, 65536, 1, Dtype::kBf16}, A100LikeGpu()).split_k, 1);
}

TEST(ChooseGemmTile, SmallerTilesCostMoreOperandTimePerFlop) {
  GpuSpec gpu = A100LikeGpu();
  gpu.calibration.gemm_tile_m = 64;
  gpu.calibration.gemm_tile_n = 64;
  const GemmShape g{8192, 8192, 4096, 1, Dtype::kBf16};
  const GemmTileChoice small = ChooseGemmTile(g, gpu);
  gpu.calibration.gemm_tile_m = 256;
  gpu.calibration.gemm_tile_n = 128;
  const GemmTileChoice large = ChooseGemmTile(g, gpu);
  // Same FLOPs in whole waves; operand bytes per FLOP (tm + tn) / (2 tm tn): 1/64 against 3/512.
  EXPECT_NEAR(small.operand_bytes_per_sm / small.flops_per_sm, 2.0 * 128 / (2.0 * 64 * 64), 1e-12);
  EXPECT_NEAR(large.operand_bytes_per_sm / large.flops_per_sm, 2.0 * 384 / (2.0 * 256 * 128),
              1e-12);
  EXPECT_GT(small.time_s, large.time_s);
}

TEST(ChooseGemmTile, AFixedTileIsHonoured) {
  GpuSpec gpu = A100LikeGpu();
  gpu.calibration.gemm_tile_m = 128;
  gpu.calibration.gemm_tile_n = 64;
  const GemmTileChoice c = ChooseGemmTile({512, 512, 65536, 1, Dtype::kBf16}, gpu);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.split_k, 1);
}

}  // namespace
}  // namespace loom
