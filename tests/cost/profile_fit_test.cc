#include "cost/profile_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/compute_model.h"
#include "cost/h100_run.h"

namespace loom {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

GpuSpec H100Like() {
  GpuSpec gpu;
  gpu.name = "h100";
  gpu.file = "h100.json";
  gpu.sm_count = 132;
  gpu.hbm_bandwidth_GBps = 3350;
  gpu.bf16_tflops = 989;
  gpu.fp8_tflops = 1979;
  return gpu;
}

// The model every shipped GPU file uses: tiles and split-K chosen per shape (ChooseGemmTile).
GpuSpec Truth() {
  GpuSpec gpu = H100Like();
  ComputeCalibration& c = gpu.calibration;
  c.gemm_efficiency_bf16 = 0.71;
  c.gemm_efficiency_fp16 =
      0.71;  // bf16 and fp16 share one efficiency, as FitComputeJointly fits them
  c.gemm_efficiency_fp8 = 0.58;
  c.gemm_wave_latency_us = 3.2;
  c.gemm_operand_bandwidth_GBps = 60000;
  c.kernel_overhead_us = 4.5;
  c.attention_efficiency = 0.47;
  c.memory_bandwidth_fraction = 0.91;
  return gpu;
}

// Samples of |shapes| timed by |truth|, as p.json's, from samples[|first|] on.
std::vector<ProfileSample> Timed(const GpuSpec& truth, const std::vector<KernelShape>& shapes,
                                 size_t first = 0, ClockRegime clocks = ClockRegime::kBurst) {
  const RooflineComputeModel model(truth, clocks);
  std::vector<ProfileSample> samples;
  for (const KernelShape& shape : shapes) {
    ProfileSample s;
    s.shape = shape;
    if (const GemmShape* g = std::get_if<GemmShape>(&shape))
      s.median_us = model.GemmKernel(*g).ToMicros();
    if (const AttentionShape* a = std::get_if<AttentionShape>(&shape))
      s.median_us = model.Attention(*a).ToMicros();
    if (const MemoryShape* m = std::get_if<MemoryShape>(&shape))
      s.median_us = model.MemoryBound(*m).ToMicros();
    s.where = "p.json: samples[" + std::to_string(first + samples.size()) + "]";
    samples.push_back(s);
  }
  return samples;
}

// A profile of GEMMs in bf16 and fp8, attention and memory-bound kernels, timed by |truth|.
std::vector<ProfileSample> SyntheticProfile(const GpuSpec& truth) {
  std::vector<KernelShape> shapes;
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp8}) {
    for (int64_t m : {1000, 1408, 2048, 4864}) {  // tile choices, split-K and waves vary
      for (int64_t n : {1536, 3000, 7000})
        shapes.push_back(GemmShape{m, n, m == 2048 ? 2048 : 8192, 1, dtype, false});
    }
  }
  for (int64_t seq : {1024, 2048, 4096, 8192}) {
    shapes.push_back(AttentionShape{1, 64, 8, seq, seq, 128, 128, true, seq > 2048, Dtype::kBf16});
  }
  for (int64_t mib : {64, 256, 1024}) shapes.push_back(MemoryShape{mib << 20, mib << 20});
  return Timed(truth, shapes);
}

// SyntheticProfile with the probe's weight-gradient pairs: each GEMM accumulating into fp32 and
// plain, compute-bound, so that the epilogue's 6 extra bytes per output are a visible share of
// the time when it follows the main loop and nothing when it overlaps it.
std::vector<ProfileSample> WithAccumulatingPairs(const GpuSpec& truth) {
  std::vector<ProfileSample> samples = SyntheticProfile(truth);
  std::vector<KernelShape> pairs;
  for (int64_t k : {2048, 4096, 8192}) {
    for (bool accumulate : {true, false})
      pairs.push_back(GemmShape{4096, 5120, k, 1, Dtype::kBf16, accumulate});
  }
  for (const ProfileSample& s : Timed(truth, pairs, samples.size())) samples.push_back(s);
  return samples;
}

// The synthetic profile with its attention timed as cuDNN's kernels (what loom probe writes).
std::vector<ProfileSample> AsCudnn(std::vector<ProfileSample> samples) {
  for (ProfileSample& s : samples) {
    if (AttentionShape* a = std::get_if<AttentionShape>(&s.shape))
      a->family = AttentionFamily::kCudnn;
  }
  return samples;
}

// The file's attention tiles are cuDNN's (cost/attention_tiles.h). A profile's cuDNN attention too
// few for tiles fits the single attention_efficiency, which the tiles would override for those
// kernels, so the fit drops them from the model it fits with and from the file it writes (no
// value left unused). FlashAttention-2's samples fit attention_efficiency, its own rate, and
// leave cuDNN's tiles as they were.
TEST(FitComputeCalibration, FewCudnnAttentionSamplesReplaceTheFilesAttentionTiles) {
  GpuSpec file = H100Like();
  file.calibration.attention_forward_tiles = AttentionTileParams{.matmul_efficiency = 0.9};
  file.calibration.attention_backward_tiles = AttentionTileParams{.matmul_efficiency = 0.6};
  Result<ComputeFit> fit = FitComputeCalibration(AsCudnn(SyntheticProfile(Truth())), file);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(*fit->calibration.attention_efficiency, 0.47, 1e-5);
  EXPECT_FALSE(fit->calibration.attention_forward_tiles.has_value());
  EXPECT_FALSE(fit->calibration.attention_backward_tiles.has_value());
  EXPECT_NE(std::find(fit->removed_keys.begin(), fit->removed_keys.end(), "attention_tiles"),
            fit->removed_keys.end());
  nlohmann::ordered_json written = WithComputeCalibration(
      {{"calibration",
        {{"attention_tiles", {{"forward", {{"matmul_efficiency", 0.9}}}}}, {"source", "old"}}}},
      *fit);
  EXPECT_FALSE(written["calibration"].contains("attention_tiles")) << written.dump();
  // FlashAttention-2's samples, and a GEMM-only profile, say nothing about cuDNN's tiles.
  Result<ComputeFit> flash_fit = FitComputeCalibration(SyntheticProfile(Truth()), file);
  ASSERT_TRUE(flash_fit.ok()) << flash_fit.status().message();
  EXPECT_NEAR(*flash_fit->calibration.attention_efficiency, 0.47, 1e-5);
  EXPECT_TRUE(flash_fit->calibration.attention_forward_tiles.has_value());
  std::vector<ProfileSample> gemms;
  for (const ProfileSample& s : SyntheticProfile(Truth())) {
    if (std::holds_alternative<GemmShape>(s.shape)) gemms.push_back(s);
  }
  Result<ComputeFit> gemm_fit = FitComputeCalibration(gemms, file);
  ASSERT_TRUE(gemm_fit.ok()) << gemm_fit.status().message();
  EXPECT_EQ(
      std::find(gemm_fit->removed_keys.begin(), gemm_fit->removed_keys.end(), "attention_tiles"),
      gemm_fit->removed_keys.end());
  EXPECT_TRUE(gemm_fit->calibration.attention_forward_tiles.has_value());
}

// FlashAttention-2's samples fit attention_efficiency, which the file's FlashAttention-2 tiles
// (attention_tiles_flash2, fitted on the FlashAttention-2 paper's figures) would override for
// them: the fit drops those from the model and the file, and leaves cuDNN's and the Triton port's.
TEST(FitComputeCalibration, Flash2AttentionSamplesReplaceTheFilesFlash2Tiles) {
  GpuSpec file = H100Like();
  file.calibration.flash2_forward_tiles = AttentionTileParams{.matmul_efficiency = 0.5};
  file.calibration.flash2_backward_tiles = AttentionTileParams{.matmul_efficiency = 0.4};
  file.calibration.attention_forward_tiles = AttentionTileParams{.matmul_efficiency = 0.9};
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(Truth()), file);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(*fit->calibration.attention_efficiency, 0.47, 1e-5);
  EXPECT_FALSE(fit->calibration.flash2_forward_tiles.has_value());
  EXPECT_FALSE(fit->calibration.flash2_backward_tiles.has_value());
  EXPECT_TRUE(fit->calibration.attention_forward_tiles.has_value());
  EXPECT_NE(std::find(fit->removed_keys.begin(), fit->removed_keys.end(), "attention_tiles_flash2"),
            fit->removed_keys.end());
  // cuDNN's samples say nothing about FlashAttention-2's tiles.
  Result<ComputeFit> cudnn_fit = FitComputeCalibration(AsCudnn(SyntheticProfile(Truth())), file);
  ASSERT_TRUE(cudnn_fit.ok()) << cudnn_fit.status().message();
  EXPECT_TRUE(cudnn_fit->calibration.flash2_forward_tiles.has_value());
}

// With kMinAttentionTileSamples of each pass, cuDNN's attention fits the tile model
// (FitAttentionTiles) apart from the joint fit: the truth's tiles come back, the other keys are
// fitted as before, the class is reported as tiles, and the file gets the "attention_tiles" object.
TEST(FitComputeCalibration, CudnnAttentionFitsTheTileModel) {
  GpuSpec truth = Truth();
  truth.calibration.attention_forward_tiles = AttentionTileParams{.matmul_efficiency = 0.8,
                                                                  .score_ps = 35,
                                                                  .masked_score_ps = 30,
                                                                  .element_ps = 0.5,
                                                                  .wave_us = 1.5,
                                                                  .latency_us = 12};
  truth.calibration.attention_backward_tiles = AttentionTileParams{.matmul_efficiency = 0.7,
                                                                   .score_ps = 60,
                                                                   .masked_score_ps = 90,
                                                                   .element_ps = 5,
                                                                   .wave_us = 4,
                                                                   .latency_us = 24};
  std::vector<KernelShape> shapes;
  for (const ProfileSample& s : SyntheticProfile(truth)) {
    if (!std::holds_alternative<AttentionShape>(s.shape)) shapes.push_back(s.shape);
  }
  for (bool backward : {false, true}) {
    for (bool causal : {true, false}) {
      for (int64_t head_dim : {64, 128}) {
        for (int64_t batch : {1, 3}) {
          for (int64_t heads : {8, 40}) {
            for (int64_t seq : {1024, 4096}) {
              shapes.push_back(AttentionShape{batch, heads, heads, seq, seq, head_dim, head_dim,
                                              causal, backward, Dtype::kBf16,
                                              AttentionFamily::kCudnn});
            }
          }
        }
      }
    }
  }
  Result<ComputeFit> fit = FitComputeCalibration(Timed(truth, shapes), H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ComputeCalibration& c = fit->calibration;
  ASSERT_TRUE(c.attention_forward_tiles && c.attention_backward_tiles);
  EXPECT_NEAR(c.attention_forward_tiles->matmul_efficiency, 0.8, 1e-4);
  EXPECT_NEAR(c.attention_forward_tiles->score_ps, 35, 1e-2);
  EXPECT_NEAR(c.attention_backward_tiles->matmul_efficiency, 0.7, 1e-4);
  EXPECT_NEAR(c.attention_backward_tiles->latency_us, 24, 1e-2);
  EXPECT_NEAR(*c.gemm_efficiency_bf16, 0.71, 1e-5);
  EXPECT_NEAR(*c.memory_bandwidth_fraction, 0.91, 1e-5);
  EXPECT_FALSE(c.attention_efficiency.has_value());  // no FlashAttention-2 samples: not fitted
  EXPECT_NE(std::find(fit->fitted_keys.begin(), fit->fitted_keys.end(), "attention_tiles"),
            fit->fitted_keys.end());
  const auto tiles = std::find_if(fit->classes.begin(), fit->classes.end(),
                                  [](const KernelClassFit& k) { return k.tiles; });
  ASSERT_NE(tiles, fit->classes.end());
  EXPECT_EQ(tiles->Name(), "attention bf16 cudnn");
  EXPECT_EQ(tiles->key, "attention_tiles");
  EXPECT_EQ(tiles->residuals.size(), 64u);
  EXPECT_LT(tiles->max_abs_relative_error, 1e-3);
  const nlohmann::ordered_json written =
      WithComputeCalibration({{"calibration", {{"source", "old"}}}}, *fit);
  EXPECT_NEAR(written["calibration"]["attention_tiles"]["backward"]["wave_us"].get<double>(), 4,
              1e-3)
      << written.dump();
}

TEST(FitComputeCalibration, RecoversEveryParameterOfTheModelsOwnTimes) {
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(Truth()), H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ComputeCalibration& c = fit->calibration;
  EXPECT_EQ(c.gemm_tile_m, 0);  // chosen per shape
  EXPECT_EQ(c.gemm_tile_n, 0);
  EXPECT_NEAR(*c.gemm_efficiency_bf16, 0.71, 1e-5);
  EXPECT_NEAR(*c.gemm_efficiency_fp16, 0.71, 1e-5);
  EXPECT_NEAR(*c.gemm_efficiency_fp8, 0.58, 1e-5);
  EXPECT_NEAR(*c.gemm_wave_latency_us, 3.2, 1e-3);
  ASSERT_TRUE(c.gemm_operand_bandwidth_GBps.has_value());
  EXPECT_NEAR(*c.gemm_operand_bandwidth_GBps, 60000, 10);
  EXPECT_NEAR(c.kernel_overhead_us, 4.5, 0.01);
  EXPECT_NEAR(*c.attention_efficiency, 0.47, 1e-5);
  EXPECT_NEAR(*c.memory_bandwidth_fraction, 0.91, 1e-5);
  EXPECT_FALSE(c.gemm_epilogue_overlap);
  EXPECT_FALSE(fit->epilogue_overlap.has_value());  // no accumulating samples: the file's setting
  EXPECT_EQ(fit->fitted_keys,
            (std::vector<std::string>{"gemm_operand_bandwidth_GBps", "gemm_wave_latency_us",
                                      "gemm_efficiency_bf16", "gemm_efficiency_fp16",
                                      "gemm_efficiency_fp8", "kernel_overhead_us",
                                      "attention_efficiency", "memory_bandwidth_fraction"}));
  EXPECT_EQ(fit->removed_keys, (std::vector<std::string>{"gemm_tile_m", "gemm_tile_n"}));
  ASSERT_EQ(fit->classes.size(), 4u);
  EXPECT_EQ(fit->classes[0].Name(), "gemm bf16");
  EXPECT_EQ(fit->classes[1].Name(), "gemm fp8");
  EXPECT_EQ(fit->classes[2].Name(), "attention bf16");
  EXPECT_EQ(fit->classes[3].Name(), "memory");
  EXPECT_EQ(fit->classes[3].residuals.size(), 3u);
  EXPECT_EQ(fit->classes[3].residuals[0].sample, 28u);
  EXPECT_LT(fit->mean_abs_relative_error, 1e-4);
  for (const KernelClassFit& k : fit->classes)
    EXPECT_LT(k.max_abs_relative_error, 1e-4) << k.Name();
}

TEST(FitComputeCalibration, ReportsSpreadAndResidualsOfTheCalibrationItFitted) {
  std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  samples[30].median_us *= 1.1;  // one memory sample 10% slower than the model
  samples[30].p10_us = samples[30].median_us * 0.98;
  samples[30].p90_us = samples[30].median_us * 1.02;
  Result<ComputeFit> fit = FitComputeCalibration(samples, H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const KernelClassFit& memory = fit->classes[3];
  ASSERT_TRUE(memory.spread.has_value());
  EXPECT_NEAR(*memory.spread, 0.04, 1e-12);
  EXPECT_FALSE(fit->classes[0].spread.has_value());
  // The residual is RooflineComputeModel's with the fitted values, whatever they became.
  GpuSpec fitted = H100Like();
  fitted.calibration = fit->calibration;
  const MemoryShape& shape = std::get<MemoryShape>(samples[30].shape);
  const double predicted = RooflineComputeModel(fitted).MemoryBound(shape).ToMicros();
  EXPECT_DOUBLE_EQ(memory.residuals[2].relative_error,
                   (predicted - samples[30].median_us) / samples[30].median_us);
  EXPECT_GT(memory.max_abs_relative_error, 0.01);
}

// Held-out error: the calibration as it is, on samples it was not fitted to. The true
// calibration predicts its own times exactly; one 10% too slow (efficiency 0.9 of the truth's)
// is off by 1/0.9 - 1 on every work-bound GEMM, and its median and p90 say so.
TEST(CheckComputeCalibration, ReportsTheFilesOwnErrorsWithoutFittingAnything) {
  const std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  Result<ComputeFit> exact = CheckComputeCalibration(samples, Truth());
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_TRUE(exact->fitted_keys.empty());
  ASSERT_EQ(exact->classes.size(), 4u);
  for (const KernelClassFit& k : exact->classes)
    EXPECT_LT(k.max_abs_relative_error, 1e-9) << k.Name();
  EXPECT_DOUBLE_EQ(exact->classes[0].value, 0.71);

  GpuSpec slow = Truth();
  slow.calibration.gemm_efficiency_bf16 = 0.71 * 0.9;
  Result<ComputeFit> check = CheckComputeCalibration(samples, slow);
  ASSERT_TRUE(check.ok()) << check.status().message();
  const KernelClassFit& bf16 = check->classes[0];
  EXPECT_EQ(bf16.Name(), "gemm bf16");
  EXPECT_EQ(bf16.residuals.size(), 12u);
  EXPECT_GT(bf16.median_abs_relative_error, 0.05);
  EXPECT_LE(bf16.median_abs_relative_error, 1 / 0.9 - 1 + 1e-9);
  EXPECT_LE(bf16.median_abs_relative_error, bf16.p90_abs_relative_error);
  EXPECT_LE(bf16.p90_abs_relative_error, bf16.max_abs_relative_error);
  EXPECT_LT(check->classes[1].max_abs_relative_error, 1e-9);  // fp8 untouched
}

TEST(CheckComputeCalibration, RefusesAnEmptyProfileAndADtypeWithoutAPeak) {
  EXPECT_FALSE(CheckComputeCalibration({}, Truth()).ok());
  GpuSpec no_fp8 = Truth();
  no_fp8.fp8_tflops.reset();
  Result<ComputeFit> check = CheckComputeCalibration(SyntheticProfile(Truth()), no_fp8);
  ASSERT_FALSE(check.ok());
  EXPECT_TRUE(Contains(check.status().message(), "no peak_tflops.fp8"));
}

// Row reductions (norms, softmax) reach a share of the HBM bandwidth of their own: with such
// samples beside the copies the fit recovers both fractions, each from its own kernels, and
// reports a class for each; the fraction of copies alone would time the norms 36% fast.
TEST(FitComputeCalibration, RowReductionsGetAFractionOfTheirOwn) {
  GpuSpec truth = Truth();
  truth.calibration.memory_bandwidth_fraction_row_reduction = 0.66;
  std::vector<ProfileSample> samples = SyntheticProfile(truth);
  std::vector<KernelShape> norms;
  for (int64_t mib : {16, 128, 512, 2048})
    norms.push_back(MemoryShape{mib << 20, mib << 20, MemoryAccess::kRowReduction});
  for (const ProfileSample& s : Timed(truth, norms, samples.size())) samples.push_back(s);
  Result<ComputeFit> fit = FitComputeCalibration(samples, H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(*fit->calibration.memory_bandwidth_fraction, 0.91, 1e-5);
  ASSERT_TRUE(fit->calibration.memory_bandwidth_fraction_row_reduction.has_value());
  EXPECT_NEAR(*fit->calibration.memory_bandwidth_fraction_row_reduction, 0.66, 1e-5);
  EXPECT_NEAR(fit->calibration.kernel_overhead_us, 4.5, 0.01);
  ASSERT_EQ(fit->classes.size(), 5u);
  EXPECT_EQ(fit->classes[3].Name(), "memory");
  EXPECT_EQ(fit->classes[4].Name(), "memory row_reduction");
  EXPECT_EQ(fit->classes[4].key, "memory_bandwidth_fraction_row_reduction");
  EXPECT_NEAR(fit->classes[4].value, 0.66, 1e-5);
  EXPECT_LT(fit->classes[4].max_abs_relative_error, 1e-4);
  EXPECT_EQ(fit->fitted_keys.back(), "memory_bandwidth_fraction_row_reduction");
  nlohmann::ordered_json file = {{"schema", "loom.gpu/1"}, {"calibration", {{"source", "x"}}}};
  const nlohmann::ordered_json written = WithComputeCalibration(file, *fit);
  EXPECT_NEAR(written["calibration"]["memory_bandwidth_fraction_row_reduction"].get<double>(), 0.66,
              1e-4);

  // Without row reductions in the profile the file's own fraction stays, and a file without one
  // times them at the streaming fraction.
  GpuSpec gpu = H100Like();
  gpu.calibration.memory_bandwidth_fraction_row_reduction = 0.5;
  samples.resize(samples.size() - norms.size());
  Result<ComputeFit> without = FitComputeCalibration(samples, gpu);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_EQ(without->calibration.memory_bandwidth_fraction_row_reduction, 0.5);
  ComputeCalibration plain;
  plain.memory_bandwidth_fraction = 0.8;
  EXPECT_EQ(plain.MemoryBandwidthFraction(MemoryAccess::kRowReduction), 0.8);
  EXPECT_EQ(ComputeCalibration{}.MemoryBandwidthFraction(MemoryAccess::kRowReduction), 1.0);
}

// The file's GEMM values were fitted with its overhead, so a profile without GEMMs keeps both and
// fits the other classes' efficiencies with that overhead.
TEST(FitComputeCalibration, WithoutGemmsKeepsTheGemmKeysAndTheOverheadAndFitsTheRest) {
  std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  samples.erase(samples.begin(), samples.begin() + 24);
  GpuSpec gpu = Truth();
  gpu.calibration.attention_efficiency.reset();
  gpu.calibration.memory_bandwidth_fraction = 0.5;
  Result<ComputeFit> fit = FitComputeCalibration(samples, gpu);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->calibration.kernel_overhead_us, 4.5);
  EXPECT_EQ(fit->calibration.gemm_wave_latency_us, 3.2);
  EXPECT_NEAR(*fit->calibration.attention_efficiency, 0.47, 1e-5);
  EXPECT_NEAR(*fit->calibration.memory_bandwidth_fraction, 0.91, 1e-5);
  EXPECT_EQ(fit->fitted_keys,
            (std::vector<std::string>{"attention_efficiency", "memory_bandwidth_fraction"}));
  EXPECT_TRUE(fit->removed_keys.empty());
}

// Accumulating pairs generated with either setting are fitted with it: the other setting predicts
// the accumulating samples worse, and both errors are reported.
TEST(FitComputeCalibration, FitsTheEpilogueOverlapThatTimedTheAccumulatingSamples) {
  for (bool overlap : {false, true}) {
    GpuSpec truth = Truth();
    truth.calibration.gemm_epilogue_overlap = overlap;
    GpuSpec gpu = H100Like();
    gpu.calibration.gemm_epilogue_overlap = !overlap;  // the file says the other
    Result<ComputeFit> fit = FitComputeCalibration(WithAccumulatingPairs(truth), gpu);
    ASSERT_TRUE(fit.ok()) << fit.status().message();
    EXPECT_EQ(fit->calibration.gemm_epilogue_overlap, overlap);
    ASSERT_TRUE(fit->epilogue_overlap.has_value());
    const EpilogueOverlapFit& e = *fit->epilogue_overlap;
    EXPECT_EQ(e.overlap, overlap);
    EXPECT_EQ(e.samples, 3u);
    ASSERT_TRUE(e.serial_error && e.overlapped_error);
    EXPECT_LT(overlap ? *e.overlapped_error : *e.serial_error, 1e-4) << overlap;
    EXPECT_GT(overlap ? *e.serial_error : *e.overlapped_error, 0.02) << overlap;
    EXPECT_NEAR(*fit->calibration.gemm_efficiency_bf16, 0.71, 1e-4) << overlap;
    EXPECT_NEAR(fit->calibration.kernel_overhead_us, 4.5, 0.01) << overlap;
    EXPECT_LT(fit->mean_abs_relative_error, 1e-4) << overlap;
    EXPECT_EQ(fit->fitted_keys[2], "gemm_epilogue_overlap");
  }
}

TEST(FitComputeCalibration, RefusesAttentionInTwoDtypes) {
  std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  std::get<AttentionShape>(samples[26].shape).dtype = Dtype::kFp8;
  Result<ComputeFit> fit = FitComputeCalibration(samples, H100Like());
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(),
                       "p.json: samples[26]: attention in fp8 after attention in bf16; the "
                       "calibration has one attention_efficiency"));
}

TEST(FitComputeCalibration, RefusesAClassWithFewerThanThreeShapes) {
  std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  samples.pop_back();
  Result<ComputeFit> fit = FitComputeCalibration(samples, H100Like());
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(),
                       "p.json: the memory samples: 2 distinct shape(s); at least 3"));
}

TEST(FitComputeCalibration, RefusesADtypeTheGpuHasNoPeakFor) {
  GpuSpec gpu = H100Like();
  gpu.fp8_tflops.reset();
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(Truth()), gpu);
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(),
                       "p.json: the gemm fp8 samples are fp8 but h100.json has no "
                       "peak_tflops.fp8"));
}

TEST(FitComputeCalibration, RefusesMeasurementsThatBeatTheDatasheet) {
  GpuSpec gpu = H100Like();
  gpu.hbm_bandwidth_GBps = 2000;  // the samples moved 0.91 * 3350 GB/s
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(Truth()), gpu);
  ASSERT_FALSE(fit.ok());
  // 0.91 * 3350 / 2000 = 1.524, less the GEMMs' split-K traffic, which the bound costs at 2000
  // GB/s.
  EXPECT_TRUE(Contains(fit.status().message(), "p.json: the memory samples move bytes at 1.52"));
  EXPECT_TRUE(Contains(fit.status().message(), "x hbm_bandwidth_GBps of h100.json (2000)"));
  gpu = H100Like();
  gpu.bf16_tflops = 500;
  fit = FitComputeCalibration(SyntheticProfile(Truth()), gpu);
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "p.json: the gemm bf16 samples run at"));
  EXPECT_TRUE(
      Contains(fit.status().message(), "peak_tflops.bf16 of h100.json (500) at every tile size"));
}

TEST(FitComputeCalibration, RefusesAnEmptyProfile) {
  Result<ComputeFit> fit = FitComputeCalibration({}, H100Like());
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "the profile has no samples"));
}

ComputeFit Fitted() {
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(Truth()), H100Like());
  EXPECT_TRUE(fit.ok());
  ComputeFit out = fit.value();
  out.calibration.kernel_overhead_us = 4.500123;
  out.calibration.source = "a test";
  SetFittedOn({"/some/folder/p.json"}, &out);
  return out;
}

// A fixed tile of an older fit is removed, not kept: it would switch the model off the per-shape
// tile choice the values were fitted with.
TEST(WithComputeCalibration, ReplacesKeysInPlaceRemovesTheTileAndPutsSourceLast) {
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(
      R"({"schema": "loom.gpu/1", "calibration": {"kernel_overhead_us": 7, "gemm_efficiency_tf32": 0.8,)"
      R"( "source": "old", "gemm_tile_m": 64, "gemm_tile_n": 128}, "sources": {}})");
  nlohmann::ordered_json out = WithComputeCalibration(file, Fitted());
  std::vector<std::string> keys;
  for (const auto& [key, value] : out["calibration"].items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"kernel_overhead_us", "gemm_efficiency_tf32",
                                            "gemm_operand_bandwidth_GBps", "gemm_wave_latency_us",
                                            "gemm_efficiency_bf16", "gemm_efficiency_fp16",
                                            "gemm_efficiency_fp8", "attention_efficiency",
                                            "memory_bandwidth_fraction", "fitted_on", "source"}));
  EXPECT_EQ(out["calibration"]["kernel_overhead_us"], 4.5);
  EXPECT_EQ(out["calibration"]["gemm_wave_latency_us"], 3.2);
  EXPECT_EQ(out["calibration"]["gemm_efficiency_tf32"], 0.8);
  EXPECT_EQ(out["calibration"]["gemm_efficiency_bf16"], 0.71);
  EXPECT_EQ(out["calibration"]["fitted_on"], nlohmann::ordered_json::array({"p.json"}));
  EXPECT_EQ(out["calibration"]["source"],
            "a test Kept from the earlier calibration (gemm_efficiency_tf32): old");
  std::vector<std::string> top;
  for (const auto& [key, value] : out.items()) top.push_back(key);
  EXPECT_EQ(top, (std::vector<std::string>{"schema", "calibration", "sources"}));
}

TEST(WithComputeCalibration, WrittenFileLoadsWithTheFittedValues) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "loom_profile_fit_test";
  std::filesystem::create_directories(dir);
  std::ifstream shipped(std::string(LOOM_SOURCE_DIR) + "/hardware/gpus/h100-sxm5-80gb.json");
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(shipped);
  // Fitted() ran on a GPU without FlashAttention-2 tiles; fitted on this file, its FlashAttention-2
  // samples would have dropped the file's (Flash2AttentionSamplesReplaceTheFilesFlash2Tiles).
  file["calibration"].erase("attention_tiles_flash2");
  std::ofstream(dir / "gpu.json") << WithComputeCalibration(file, Fitted()).dump(2);
  file["calibration"]["gemm_tile_m"] = 64;  // as an older loom fit wrote it
  file["calibration"]["gemm_tile_n"] = 64;
  const nlohmann::ordered_json written = WithComputeCalibration(file, Fitted());
  EXPECT_FALSE(written["calibration"].contains("gemm_tile_m"));
  EXPECT_FALSE(written["calibration"].contains("gemm_tile_n"));
  std::ofstream(dir / "gpu.json") << written.dump(2);
  Result<GpuSpec> gpu = LoadGpuSpec((dir / "gpu.json").string());
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const ComputeCalibration& c = gpu->calibration;
  EXPECT_EQ(c.gemm_tile_m, 0);
  EXPECT_EQ(c.gemm_tile_n, 0);
  EXPECT_EQ(c.gemm_efficiency_fp8, 0.58);
  EXPECT_EQ(c.gemm_wave_latency_us, 3.2);
  EXPECT_EQ(c.gemm_operand_bandwidth_GBps, 60000);
  EXPECT_EQ(c.memory_bandwidth_fraction, 0.91);
  EXPECT_EQ(c.kernel_overhead_us, 4.5);
  EXPECT_EQ(c.fitted_on, (std::vector<std::string>{"p.json"}));
  // The loaded file predicts the profile it was fitted on within the 4-digit rounding.
  const std::vector<ProfileSample> samples = SyntheticProfile(Truth());
  Result<ComputeFit> check = CheckComputeCalibration(samples, *gpu);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_LT(check->mean_abs_relative_error, 1e-3);
}

TEST(WithComputeCalibration, RemovesTheOperandBandwidthWhenTheFitNeedsNone) {
  GpuSpec truth = Truth();
  truth.calibration.gemm_operand_bandwidth_GBps.reset();
  Result<ComputeFit> fit = FitComputeCalibration(SyntheticProfile(truth), H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_FALSE(fit->calibration.gemm_operand_bandwidth_GBps.has_value());
  EXPECT_EQ(fit->removed_keys, (std::vector<std::string>{"gemm_tile_m", "gemm_tile_n",
                                                         "gemm_operand_bandwidth_GBps"}));
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(
      R"({"calibration": {"gemm_operand_bandwidth_GBps": 9000, "source": "old"}})");
  ComputeFit written = fit.value();
  written.calibration.source = "new.";
  const nlohmann::ordered_json out = WithComputeCalibration(file, written);
  EXPECT_FALSE(out["calibration"].contains("gemm_operand_bandwidth_GBps"));
  EXPECT_EQ(out["calibration"]["source"], "new.");  // nothing kept
}

TEST(WithComputeCalibration, WritesTheEpilogueOverlapItFitted) {
  GpuSpec truth = Truth();
  truth.calibration.gemm_epilogue_overlap = true;
  Result<ComputeFit> fit = FitComputeCalibration(WithAccumulatingPairs(truth), H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const nlohmann::ordered_json file =
      nlohmann::ordered_json::parse(R"({"calibration": {"gemm_epilogue_overlap": false}})");
  const nlohmann::ordered_json out = WithComputeCalibration(file, *fit);
  EXPECT_EQ(out["calibration"]["gemm_epilogue_overlap"], true);
}

TEST(SetFittedOn, NamesTheProfilesAndKeepsTheEarlierTablesOnlyWhenGemmKeysWereKept) {
  ComputeFit with_gemms;
  with_gemms.fitted_keys = {"gemm_wave_latency_us", "gemm_efficiency_bf16", "kernel_overhead_us"};
  with_gemms.calibration.fitted_on = {"gemm_cublaslt.csv"};
  SetFittedOn({"a/p1.json", "b/p2.json", "b/notes.txt"}, &with_gemms);
  EXPECT_EQ(with_gemms.calibration.fitted_on, (std::vector<std::string>{"p1.json", "p2.json"}));
  ComputeFit without = with_gemms;
  without.fitted_keys = {"attention_efficiency"};
  without.calibration.fitted_on = {"gemm_cublaslt.csv"};
  SetFittedOn({"a/p1.json"}, &without);
  EXPECT_EQ(without.calibration.fitted_on,
            (std::vector<std::string>{"gemm_cublaslt.csv", "p1.json"}));
}

// Sustained clocks: GEMMs held for kSustainedGemmMinUs or more in their burst run at the GPU's
// power-limited rate, the rest at the burst rate; the fit separates the two.
std::vector<ProfileSample> WithLongGemms(const GpuSpec& truth, size_t count,
                                         ClockRegime clocks = ClockRegime::kSustained) {
  std::vector<ProfileSample> samples = SyntheticProfile(truth);
  std::vector<KernelShape> longs;
  for (size_t i = 0; i < count; ++i)
    longs.push_back(
        GemmShape{16384, 8192 + 1024 * static_cast<int64_t>(i), 8192, 1, Dtype::kBf16, false});
  for (const ProfileSample& s : Timed(truth, longs, samples.size(), clocks)) {
    EXPECT_TRUE(HeldAtPowerLimit(s)) << s.median_us;
    samples.push_back(s);
  }
  return samples;
}

GpuSpec SustainedTruth() {
  GpuSpec gpu = Truth();
  gpu.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.45;
  return gpu;
}

TEST(FitComputeCalibration, FitsTheSustainedFractionOnTheGemmsHeldAtThePowerLimit) {
  const std::vector<ProfileSample> samples = WithLongGemms(SustainedTruth(), 5);
  Result<ComputeFit> fit = FitComputeCalibration(samples, H100Like());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ComputeCalibration& c = fit->calibration;
  // The burst calibration is the truth's: the long GEMMs did not pull it down.
  EXPECT_NEAR(*c.gemm_efficiency_bf16, 0.71, 1e-5);
  EXPECT_NEAR(c.kernel_overhead_us, 4.5, 0.01);
  ASSERT_TRUE(c.SustainedTensorFraction(Dtype::kBf16).has_value());
  EXPECT_NEAR(*c.SustainedTensorFraction(Dtype::kBf16), 0.45, 1e-4);
  EXPECT_NEAR(*c.sustained_tensor_fraction[static_cast<size_t>(Dtype::kFp16)], 0.45, 1e-4);
  EXPECT_FALSE(c.SustainedTensorFraction(Dtype::kFp8).has_value());
  ASSERT_EQ(fit->sustained.size(), 1u);
  EXPECT_EQ(fit->sustained[0].dtype, Dtype::kBf16);
  EXPECT_EQ(fit->sustained[0].samples, 5u);
  EXPECT_GT(fit->sustained[0].burst_error, 0.1);  // far faster at burst clocks
  EXPECT_LT(fit->sustained[0].sustained_error, 1e-3);
  EXPECT_EQ(fit->fitted_keys.back(), "sustained_tensor_fraction_fp16");
  // Every sample is scored at the clocks it ran at: the long ones at the ceiling.
  EXPECT_EQ(fit->classes[0].residuals.size(), 17u);
  EXPECT_LT(fit->classes[0].max_abs_relative_error, 1e-3);
}

TEST(FitComputeCalibration, FitsNoSustainedFractionFromTooFewLongGemms) {
  GpuSpec file = H100Like();
  file.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.5;
  const std::vector<ProfileSample> samples =
      WithLongGemms(SustainedTruth(), kMinSustainedSamples - 1);
  Result<ComputeFit> fit = FitComputeCalibration(samples, file);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(fit->sustained.empty());
  EXPECT_EQ(fit->calibration.SustainedTensorFraction(Dtype::kBf16), 0.5);  // the file's, kept
  EXPECT_EQ(std::count(fit->fitted_keys.begin(), fit->fitted_keys.end(),
                       "sustained_tensor_fraction_bf16"),
            0);
}

TEST(FitComputeCalibration, RemovesASustainedFractionThatNoLongGemmShows) {
  GpuSpec file = H100Like();
  file.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.5;
  // The long GEMMs ran at the burst rate: this GPU held its clocks.
  const std::vector<ProfileSample> samples = WithLongGemms(Truth(), 5, ClockRegime::kBurst);
  Result<ComputeFit> fit = FitComputeCalibration(samples, file);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->sustained.size(), 1u);
  EXPECT_FALSE(fit->sustained[0].fraction.has_value());
  EXPECT_FALSE(fit->calibration.SustainedTensorFraction(Dtype::kBf16).has_value());
  EXPECT_NE(std::find(fit->removed_keys.begin(), fit->removed_keys.end(),
                      "sustained_tensor_fraction_bf16"),
            fit->removed_keys.end());
  const nlohmann::ordered_json written = WithComputeCalibration(
      nlohmann::ordered_json{
          {"calibration", {{"sustained_tensor_fraction_bf16", 0.5}, {"source", "old"}}}},
      *fit);
  EXPECT_FALSE(written["calibration"].contains("sustained_tensor_fraction_bf16"));
}

TEST(CheckComputeCalibration, AddsEachGemmClassAgainAtTheSustainedCeiling) {
  // Times of a GPU that ran back to back: every GEMM at the ceiling.
  const std::vector<ProfileSample> samples = [] {
    std::vector<ProfileSample> all = SyntheticProfile(SustainedTruth());
    std::vector<KernelShape> shapes;
    for (const ProfileSample& s : all) shapes.push_back(s.shape);
    return Timed(SustainedTruth(), shapes, 0, ClockRegime::kSustained);
  }();
  Result<ComputeFit> check = CheckComputeCalibration(samples, SustainedTruth());
  ASSERT_TRUE(check.ok()) << check.status().message();
  ASSERT_EQ(check->classes.size(), 5u);  // bf16, fp8, attention, memory, bf16 sustained
  const KernelClassFit& at_ceiling = check->classes[4];
  EXPECT_EQ(at_ceiling.Name(), "gemm bf16 sustained");
  EXPECT_EQ(at_ceiling.key, "sustained_tensor_fraction_bf16");
  EXPECT_DOUBLE_EQ(at_ceiling.value, 0.45);
  EXPECT_LT(at_ceiling.max_abs_relative_error, 1e-9);
  // The same samples at the clocks of a profile's bursts (none long enough) come out too fast.
  EXPECT_GT(check->classes[0].max_abs_relative_error, 0.05);
}

// The committed H100 run (hardware/validation/2026-11-27): fitted on its profile, whose 12 bf16
// GEMMs of 2 ms or more ran at the power limit, the calibration predicts the grid measured back to
// back after it, GEMMs it never saw, within the acceptance of issue 42 (median 5%, p90 10%) only
// at the sustained ceiling; at burst clocks (no ceiling) it is 8-11% too fast on the median.
TEST(CheckComputeCalibration, TheH100RunsGridIsPredictedAtTheCeilingFittedOnItsProfile) {
  H100Run run;
  ASSERT_NO_FATAL_FAILURE(LoadH100Run(&run));
  Result<ComputeFit> fit = FitComputeCalibration(run.profile.samples, run.gpu);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->sustained.size(), 1u);
  EXPECT_EQ(fit->sustained[0].samples, 12u);
  ASSERT_TRUE(fit->sustained[0].fraction.has_value());
  EXPECT_NEAR(*fit->sustained[0].fraction, 0.7235, 5e-4);
  EXPECT_LT(fit->sustained[0].sustained_error, fit->sustained[0].burst_error / 1.5);

  GpuSpec fitted = run.gpu;
  fitted.calibration = fit->calibration;
  std::vector<ProfileSample> gemms;
  for (const ProfileSample& s : run.grid.samples) {
    if (s.Kind() == OpKind::kGemm) gemms.push_back(s);
  }
  ASSERT_EQ(gemms.size(), 106u);
  Result<ComputeFit> check = CheckComputeCalibration(gemms, fitted);
  ASSERT_TRUE(check.ok()) << check.status().message();
  ASSERT_EQ(check->classes.size(), 2u);
  const KernelClassFit& ceiling = check->classes[1];
  ASSERT_TRUE(ceiling.sustained);
  EXPECT_LE(ceiling.median_abs_relative_error, 0.05);
  EXPECT_LE(ceiling.p90_abs_relative_error, 0.10);

  GpuSpec burst = fitted;
  burst.calibration.sustained_tensor_fraction = {};
  Result<ComputeFit> without = CheckComputeCalibration(gemms, burst);
  ASSERT_TRUE(without.ok()) << without.status().message();
  ASSERT_EQ(without->classes.size(), 1u);
  EXPECT_GT(without->classes[0].median_abs_relative_error, 0.08);
  EXPECT_GT(without->classes[0].p90_abs_relative_error, 0.10);
}

// The committed H100 run's memory-bound samples: its RMSNorm reaches less of the HBM bandwidth
// than its copies and SwiGLU, so each access pattern gets its own fraction. The shipped H100 file
// holds that fit (on the memory samples alone, its own overhead kept, as loom fit does for such a
// profile), and the fit is better than one fraction for both by a third on the mean.
TEST(FitComputeCalibration, TheH100RunsNormsGetTheFractionTheShippedFileHolds) {
  H100Run run;
  ASSERT_NO_FATAL_FAILURE(LoadH100Run(&run));
  std::vector<ProfileSample> memory, streamed;
  for (const ProfileSample& s : run.profile.samples) {
    if (s.Kind() != OpKind::kMemoryBound) continue;
    memory.push_back(s);
    streamed.push_back(s);
    std::get<MemoryShape>(streamed.back().shape).access = MemoryAccess::kStreaming;
  }
  ASSERT_EQ(memory.size(), 39u);
  Result<GpuSpec> shipped = LoadGpuSpec(std::string(LOOM_SOURCE_DIR) +
                                        "/hardware/gpus/h100-sxm5-80gb.json");
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  Result<ComputeFit> fit = FitComputeCalibration(memory, *shipped);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->classes.size(), 2u);
  EXPECT_EQ(fit->classes[0].residuals.size(), 26u);  // copy and SwiGLU
  EXPECT_EQ(fit->classes[1].residuals.size(), 13u);  // RMSNorm
  const ComputeCalibration& c = fit->calibration;
  EXPECT_NEAR(*c.memory_bandwidth_fraction, *shipped->calibration.memory_bandwidth_fraction, 5e-4);
  EXPECT_NEAR(*c.memory_bandwidth_fraction_row_reduction,
              *shipped->calibration.memory_bandwidth_fraction_row_reduction, 5e-4);
  EXPECT_LT(*c.memory_bandwidth_fraction_row_reduction, *c.memory_bandwidth_fraction - 0.15);
  Result<ComputeFit> one = FitComputeCalibration(streamed, *shipped);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->classes.size(), 1u);
  EXPECT_LT(fit->mean_abs_relative_error, one->mean_abs_relative_error / 1.4);
}

}  // namespace
}  // namespace loom
