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
  gpu.calibration.gemm_tile_m = 128;
  gpu.calibration.gemm_tile_n = 128;
  gpu.calibration.gemm_efficiency_bf16 = 0.8;
  gpu.calibration.gemm_efficiency_fp8 = 0.7;
  gpu.calibration.attention_efficiency = 0.5;
  return gpu;
}

double Flops(const GemmShape& g) { return static_cast<double>(GemmFlops(g)); }

GemmShape SustainedGemmShape() { return {128 * 66, 128 * 16, 8192, 1, Dtype::kBf16}; }

TEST(RooflineComputeModel, FullWavesRunAtTheCalibratedEfficiency) {
  RooflineComputeModel model(H100());
  // 1056 x 2048 output = 66 x 16 tiles of 128 = 1056 tiles = 8 full waves of 132 SMs.
  GemmShape gemm{128 * 66, 128 * 16, 8192, 1, Dtype::kBf16};
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), Flops(gemm) / (989e12 * 0.8), 1e-9);
}

TEST(RooflineComputeModel, PartialLastWaveCostsAFullWave) {
  RooflineComputeModel model(H100());
  GemmShape full{128 * 12, 128 * 11, 65536, 1, Dtype::kBf16};  // 132 tiles: one full wave
  GemmShape one_more{128 * 7, 128 * 19, 65536, 1,
                     Dtype::kBf16};  // 133 tiles: two waves, one tile in the second
  EXPECT_NEAR(model.Gemm(full).ToSeconds(), Flops(full) / (989e12 * 0.8), 1e-9);
  EXPECT_NEAR(model.Gemm(one_more).ToSeconds(), Flops(one_more) / (989e12 * 0.8 * 133.0 / 264.0),
              1e-9);
}

TEST(RooflineComputeModel, OneRowPastATileCostsAWholeTileRow) {
  RooflineComputeModel model(H100());
  // 8 x 8 = 64 tiles (under one wave) against 9 x 8 = 72: still one wave, same time.
  GemmShape exact{1024, 1024, 16384, 1, Dtype::kBf16};
  GemmShape padded{1025, 1024, 16384, 1, Dtype::kBf16};
  EXPECT_EQ(model.Gemm(exact), model.Gemm(padded));
  // Past a wave: 17 x 8 = 136 tiles need a second wave.
  GemmShape two_waves{128 * 16 + 1, 1024, 16384, 1, Dtype::kBf16};
  EXPECT_NEAR(model.Gemm(two_waves).ToSeconds() / model.Gemm(exact).ToSeconds(), 2.0, 1e-6);
}

TEST(RooflineComputeModel, Fp8KernelUsesItsOwnPeakAndEfficiency) {
  RooflineComputeModel model(H100());
  GemmShape gemm{128 * 132, 4096, 8192, 1, Dtype::kFp8};
  EXPECT_NEAR(model.GemmKernel(gemm).ToSeconds(), Flops(gemm) / (1979e12 * 0.70), 1e-9);
}

// Transformer Engine's casts to fp8 are kernels of their own in the workload, one cast-transpose
// per tensor (workload/fp8_casts.h): an fp8 GEMM costs its kernel alone.
TEST(RooflineComputeModel, Fp8GemmIsItsKernelAloneItsCastsAreOpsOfTheWorkload) {
  RooflineComputeModel model(H100());
  GemmShape gemm{128 * 132, 4096, 8192, 1, Dtype::kFp8};
  EXPECT_EQ(model.Gemm(gemm), model.GemmKernel(gemm));
}

TEST(RooflineComputeModel, LargeFp8GemmKernelRunsAtTheFp8Rate) {
  // 8192^3: fp8 computes at 1979 * 0.7 against 989 * 0.8 TFLOP/s, 0.571 of the bf16 time.
  RooflineComputeModel model(H100());
  GemmShape fp8{8192, 8192, 8192, 1, Dtype::kFp8};
  GemmShape bf16{8192, 8192, 8192, 1, Dtype::kBf16};
  const double ratio = model.Gemm(fp8).ToSeconds() / model.Gemm(bf16).ToSeconds();
  EXPECT_NEAR(ratio, 791.2 / 1385.3, 1e-3);
}

TEST(RooflineComputeModel, UnmeasuredDtypeBorrowsTheMeasuredEfficiency) {
  GpuSpec gpu = H100();
  gpu.calibration.gemm_efficiency_bf16.reset();
  RooflineComputeModel model(gpu);
  GemmShape gemm{128 * 132, 4096, 8192, 1, Dtype::kBf16};
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), Flops(gemm) / (989e12 * 0.70), 1e-9);
}

TEST(RooflineComputeModel, UncalibratedGpuRunsAtTheDatasheetPeak) {
  GpuSpec gpu = H100();
  gpu.calibration = ComputeCalibration();
  RooflineComputeModel model(gpu);
  GemmShape gemm{128 * 132, 4096, 8192, 1, Dtype::kBf16};
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), Flops(gemm) / 989e12, 1e-9);
}

TEST(RooflineComputeModel, GemmWithLittleReuseIsBoundByMemory) {
  RooflineComputeModel model(H100());
  GemmShape gemm{8192, 8192, 1, 1, Dtype::kBf16};  // an outer product: 2 FLOPs per output element
  double bytes = (8192.0 + 8192.0 + 8192.0 * 8192) * 2;
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), bytes / 3350e9, 1e-9);
}

TEST(RooflineComputeModel, EveryKernelPaysTheOverhead) {
  GpuSpec gpu = H100();
  gpu.calibration.kernel_overhead_us = 5;
  gpu.calibration.memory_bandwidth_fraction = 0.5;
  RooflineComputeModel model(gpu);
  EXPECT_EQ(model.MemoryBound({3'350'000'000, 3'350'000'000}).nanos(), 4'000'000 + 5'000);
  GemmShape gemm{128 * 66, 128 * 16, 8192, 1, Dtype::kBf16};
  EXPECT_NEAR(model.Gemm(gemm).ToSeconds(), 5e-6 + Flops(gemm) / (989e12 * 0.8), 1e-9);
}

// A norm or softmax reduces each row before writing it and reaches less of the bandwidth than a
// copy (core/memory_access.h); a file that measured none times it as a copy.
TEST(RooflineComputeModel, RowReductionsMoveTheirBytesAtTheirOwnFraction) {
  GpuSpec gpu = H100();
  gpu.calibration.memory_bandwidth_fraction = 0.9;
  const MemoryShape copy{1'675'000'000, 1'675'000'000};
  const MemoryShape norm{1'675'000'000, 1'675'000'000, MemoryAccess::kRowReduction};
  EXPECT_NEAR(RooflineComputeModel(gpu).MemoryBound(norm).ToSeconds(), 1e-3 / 0.9, 1e-9);
  gpu.calibration.memory_bandwidth_fraction_row_reduction = 0.6;
  const RooflineComputeModel model(gpu);
  EXPECT_NEAR(model.MemoryBound(norm).ToSeconds(), 1e-3 / 0.6, 1e-9);
  EXPECT_NEAR(model.MemoryBound(copy).ToSeconds(), 1e-3 / 0.9, 1e-9);
}

// A GEMM bound by its bytes (unfused attention's Q K^T: K is a head dimension, the output the
// seq x seq scores) moves them at the GEMM's own fraction of HBM where the file measured one
// (A100: 0.44, fitted on Megatron's attention, tests/reference/attention_tables.h), at the
// streaming fraction where it did not; a GEMM bound by its math does not change.
TEST(RooflineComputeModel, GemmsBoundByTheirBytesMoveThemAtTheGemmFraction) {
  GpuSpec gpu = H100();
  gpu.calibration.memory_bandwidth_fraction = 0.9;
  const GemmShape scores{2048, 2048, 64, 128, Dtype::kBf16};
  const double bytes = 128.0 * (2048.0 * 64 * 2 + 2048.0 * 2048) * 2;
  const GemmShape square{8192, 8192, 8192, 1, Dtype::kBf16};
  const double streaming = RooflineComputeModel(gpu).Gemm(scores).ToSeconds();
  const double math = RooflineComputeModel(gpu).Gemm(square).ToSeconds();
  EXPECT_NEAR(streaming, bytes / (3350e9 * 0.9), 1e-9);
  gpu.calibration.gemm_memory_bandwidth_fraction = 0.45;
  const RooflineComputeModel model(gpu);
  EXPECT_NEAR(model.Gemm(scores).ToSeconds(), bytes / (3350e9 * 0.45), 1e-9);
  EXPECT_EQ(model.Gemm(square).ToSeconds(), math);
  // Memory-bound kernels that are not GEMMs keep the streaming fraction.
  EXPECT_NEAR(model.MemoryBound({1'675'000'000, 1'675'000'000}).ToSeconds(), 1e-3 / 0.9, 1e-9);
}

TEST(RooflineComputeModel, MemoryBoundOpsMoveTheirBytesAtHbmBandwidth) {
  RooflineComputeModel model(H100());
  EXPECT_EQ(model.MemoryBound({3'350'000'000, 3'350'000'000}).nanos(), 2'000'000);
}

TEST(RooflineComputeModel, AttentionBackwardCostsTwoAndAHalfForwards) {
  RooflineComputeModel model(H100());
  AttentionShape a{1,           16, 16, 4096, 4096, 128, 128, /*causal=*/true, /*backward=*/false,
                   Dtype::kBf16};
  AttentionShape b = a;
  b.backward = true;
  EXPECT_NEAR(model.Attention(b).ToSeconds() / model.Attention(a).ToSeconds(), 2.5, 1e-4);
  EXPECT_NEAR(model.Attention(a).ToSeconds(), AttentionKernelFlops(a) / (989e12 * 0.5), 1e-9);
}

// An A100 and an H100 as the accumulation tests see them: the fixed 128x128 tile of H100() keeps
// the main loop simple; what differs is whether the epilogue overlaps it.
GpuSpec A100() {
  GpuSpec gpu = H100();
  gpu.name = "a100";
  gpu.sm_count = 108;
  gpu.hbm_bandwidth_GBps = 2039;
  gpu.bf16_tflops = 312;
  gpu.calibration.memory_bandwidth_fraction = 0.88;
  gpu.calibration.gemm_epilogue_overlap = false;
  return gpu;
}

GemmShape Wgrad(int64_t m, int64_t n, int64_t k, bool accumulate) {
  GemmShape g{m, n, k, 1, Dtype::kBf16};
  g.accumulate_fp32 = accumulate;
  return g;
}

TEST(RooflineComputeModel, AccumulatingIntoFp32OnAmpereAddsTheEpilogueTraffic) {
  RooflineComputeModel model(A100());
  // A wgrad GEMM of a 4096 x 4096 weight over 8192 tokens: compute-bound.
  const GemmShape plain = Wgrad(4096, 4096, 8192, false),
                  accumulating = Wgrad(4096, 4096, 8192, true);
  const double extra_s = (model.Gemm(accumulating) - model.Gemm(plain)).ToSeconds();
  // Read and write 4096 * 4096 fp32 instead of writing bf16: 6 more bytes per element.
  EXPECT_NEAR(extra_s, 4096.0 * 4096 * 6 / (2039e9 * 0.88), 2e-9);
}

TEST(RooflineComputeModel, AccumulationTrafficGrowsWithTheWeightNotTheTokens) {
  RooflineComputeModel model(A100());
  auto extra = [&](int64_t m, int64_t n, int64_t k) {
    return (model.Gemm(Wgrad(m, n, k, true)) - model.Gemm(Wgrad(m, n, k, false))).ToSeconds();
  };
  EXPECT_NEAR(extra(4096, 4096, 2048), extra(4096, 4096, 16384),
              2e-9);  // independent of K (tokens)
  EXPECT_NEAR(extra(8192, 4096, 8192), 2 * extra(4096, 4096, 8192), 2e-9);  // proportional to m * n
}

TEST(RooflineComputeModel, AccumulationHidesUnderTheMainLoopWhereEpiloguesOverlap) {
  GpuSpec gpu = H100();
  gpu.calibration.gemm_epilogue_overlap = true;
  RooflineComputeModel model(gpu);
  // Compute-bound: 4096 x 4096 x 8192 takes ~0.35 ms; its 134 MB of epilogue traffic ~0.04 ms.
  EXPECT_EQ(model.Gemm(Wgrad(4096, 4096, 8192, true)), model.Gemm(Wgrad(4096, 4096, 8192, false)));
  // Without the overlap the same GPU pays for the traffic.
  gpu.calibration.gemm_epilogue_overlap = false;
  RooflineComputeModel serial(gpu);
  EXPECT_GT(serial.Gemm(Wgrad(4096, 4096, 8192, true)),
            serial.Gemm(Wgrad(4096, 4096, 8192, false)));
}

TEST(RooflineComputeModel, OverlappedEpilogueStillBoundsAShortMainLoop) {
  GpuSpec gpu = H100();
  gpu.calibration.gemm_epilogue_overlap = true;
  RooflineComputeModel model(gpu);
  // K = 64: the main loop is far shorter than reading and writing 8192 x 8192 fp32 (537 MB).
  const SimTime t = model.Gemm(Wgrad(8192, 8192, 64, true));
  EXPECT_GE(t.ToSeconds(), 8192.0 * 8192 * 8 / 3350e9);
}

TEST(RooflineComputeModel, ChoosesTheTilePerShapeWithoutAFixedTile) {
  GpuSpec gpu = A100();
  gpu.calibration.gemm_tile_m = gpu.calibration.gemm_tile_n = 0;
  gpu.calibration.gemm_operand_bandwidth_GBps = 10000;
  RooflineComputeModel model(gpu);
  // N = 192: the chosen 64-wide tile wastes nothing, so the kernel beats a 128x128-tile one.
  const GemmShape narrow{65536, 192, 4096, 1, Dtype::kBf16};
  GpuSpec fixed = gpu;
  fixed.calibration.gemm_tile_m = fixed.calibration.gemm_tile_n = 128;
  EXPECT_LT(model.Gemm(narrow), RooflineComputeModel(fixed).Gemm(narrow));
}

// Sustained clocks (ClockRegime): a GPU at its power limit holds a lower tensor rate than the
// burst a profile times; the ceiling applies to tensor work in a training step only.
GpuSpec SustainedH100() {
  GpuSpec gpu = H100();
  gpu.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.7;
  return gpu;
}

TEST(RooflineComputeModel, SustainedClocksCapALongGemmAtThePowerLimitedRate) {
  const GemmShape gemm{128 * 66, 128 * 16, 8192, 1, Dtype::kBf16};  // 8 full waves at 0.8
  const RooflineComputeModel burst(SustainedH100(), ClockRegime::kBurst);
  const RooflineComputeModel sustained(SustainedH100(), ClockRegime::kSustained);
  EXPECT_NEAR(burst.Gemm(gemm).ToSeconds(), Flops(gemm) / (989e12 * 0.8), 1e-9);
  EXPECT_NEAR(sustained.Gemm(gemm).ToSeconds(), Flops(gemm) / (989e12 * 0.7), 1e-9);
  // fp16 runs on the same tensor-core path and shares bf16's fraction.
  GemmShape fp16 = gemm;
  fp16.dtype = Dtype::kFp16;
  EXPECT_GT(sustained.Gemm(fp16), burst.Gemm(fp16));
}

TEST(RooflineComputeModel, SustainedClocksLeaveSlowerKernelsAndOtherPathsAlone) {
  const RooflineComputeModel burst(SustainedH100(), ClockRegime::kBurst);
  const RooflineComputeModel sustained(SustainedH100(), ClockRegime::kSustained);
  // 133 tiles: two waves for 133/264 of the work, a rate of 0.40 of the peak, under the ceiling.
  const GemmShape slow{128 * 7, 128 * 19, 65536, 1, Dtype::kBf16};
  EXPECT_EQ(sustained.Gemm(slow), burst.Gemm(slow));
  // No fp8 fraction: fp8 draws another power per FLOP, so it borrows none.
  const GemmShape fp8{128 * 132, 4096, 8192, 1, Dtype::kFp8};
  EXPECT_EQ(sustained.Gemm(fp8), burst.Gemm(fp8));
  // Memory-bound kernels keep the HBM's rate.
  const MemoryShape copy{1 << 30, 1 << 30};
  EXPECT_EQ(sustained.MemoryBound(copy), burst.MemoryBound(copy));
  // Without a fraction the regimes agree.
  const RooflineComputeModel plain(H100(), ClockRegime::kSustained);
  EXPECT_EQ(plain.Gemm(SustainedGemmShape()),
            RooflineComputeModel(H100()).Gemm(SustainedGemmShape()));
}

TEST(RooflineComputeModel, SustainedClocksCapAttentionToo) {
  GpuSpec gpu = SustainedH100();
  gpu.calibration.attention_efficiency = 0.9;  // above the ceiling
  const AttentionShape a{8, 32, 32, 8192, 8192, 128, 128, true, false, Dtype::kBf16};
  const double burst = RooflineComputeModel(gpu).Attention(a).ToSeconds();
  const double sustained =
      RooflineComputeModel(gpu, ClockRegime::kSustained).Attention(a).ToSeconds();
  EXPECT_NEAR(sustained / burst, 0.9 / 0.7, 1e-3);
}

TEST(TensorClock, LowersTheClockOnlyWhereTheWorkAsksMoreThanTheGpuHolds) {
  const GpuSpec gpu = SustainedH100();  // bf16 holds 0.7 x 989 = 692.3 TFLOP/s
  EXPECT_EQ(TensorClock(gpu, Dtype::kBf16, 600e12), 1.0);
  EXPECT_NEAR(TensorClock(gpu, Dtype::kBf16, 791.2e12), 692.3 / 791.2, 1e-12);
  EXPECT_NEAR(TensorClock(gpu, Dtype::kFp16, 791.2e12), 692.3 / 791.2, 1e-12);
  EXPECT_EQ(TensorClock(gpu, Dtype::kFp8, 1900e12), 1.0);  // no fp8 fraction
  EXPECT_EQ(TensorClock(H100(), Dtype::kBf16, 900e12), 1.0);
}

TEST(RooflineComputeModel, ATensorClockSlowsTensorWorkButNotMemory) {
  const GemmShape gemm = SustainedGemmShape();
  const RooflineComputeModel full(H100());
  const RooflineComputeModel slow(H100(), ClockRegime::kBurst, 0.8);
  EXPECT_NEAR(slow.Gemm(gemm).ToSeconds(), full.Gemm(gemm).ToSeconds() / 0.8, 1e-9);
  const MemoryShape copy{1 << 30, 1 << 30};
  EXPECT_EQ(slow.MemoryBound(copy), full.MemoryBound(copy));
}

}  // namespace
}  // namespace loom
