#include "cost/attention_tiles.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cost/compute_model.h"
#include "cost/h100_run.h"
#include "cost/profile.h"
#include "spec/cluster.h"

namespace loom {
namespace {

const std::string kRoot = LOOM_SOURCE_DIR;

AttentionShape Shape(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool causal,
                     bool backward) {
  return {.batch = batch,
          .heads = heads,
          .kv_heads = heads,
          .seq_q = seq,
          .seq_kv = seq,
          .head_dim_qk = dim,
          .head_dim_v = dim,
          .causal = causal,
          .backward = backward};
}

TEST(AttentionTiles, CountsTheCtasAndTheBlocksEachVisits) {
  // Forward, head dim 64: 128 x 128 blocks; seq 1024 is 8 query blocks, causal CTA i visits i+1 kv
  // blocks (36 in all) and 8 of them are on the diagonal. 2 x 4 heads: 64 CTAs on 132 SMs, so the
  // longest CTA (8 blocks) sets the time.
  AttentionTileWork w = CountAttentionTiles(Shape(2, 4, 1024, 64, true, false), 132, 989e12);
  EXPECT_EQ(w.ctas, 64);
  EXPECT_DOUBLE_EQ(w.waves, 1);
  EXPECT_DOUBLE_EQ(w.scores, 8.0 * 128 * 128);
  // Without masking every CTA visits all 8 and the grid is still under one wave.
  AttentionTileWork full = CountAttentionTiles(Shape(2, 4, 1024, 64, false, false), 132, 989e12);
  EXPECT_DOUBLE_EQ(full.scores, 8.0 * 128 * 128);
  EXPECT_DOUBLE_EQ(full.masked_scores, 0);
  // A grid of many waves: the total over the SMs. 4 x 66 heads x 8 CTAs = 2112 = 16 waves.
  AttentionTileWork many = CountAttentionTiles(Shape(4, 66, 1024, 64, true, false), 132, 989e12);
  EXPECT_DOUBLE_EQ(many.waves, 16);
  EXPECT_DOUBLE_EQ(many.scores, 4.0 * 66 * 36 / 132 * 128 * 128);
  EXPECT_DOUBLE_EQ(many.masked_scores, 4.0 * 66 * 8 / 132 * 128 * 128);
  // Products: 4 d FLOPs a score forward, 10 d backward, at the per-SM peak.
  EXPECT_NEAR(many.matmul_s_at_peak, many.scores * 4 * 64 / (989e12 / 132), 1e-15);
  // Backward: CTAs per 128-key block (8), each over the 64-query blocks at or after it.
  AttentionTileWork back = CountAttentionTiles(Shape(4, 66, 1024, 64, true, true), 132, 989e12);
  EXPECT_EQ(back.ctas, 4 * 66 * 8);
  // kv block j is seen by query blocks 2j .. 15: 16, 14, ..., 2 = 72 blocks of 64 x 128.
  EXPECT_DOUBLE_EQ(back.scores, 4.0 * 66 * 72 / 132 * 64 * 128);
}

std::vector<AttentionTiming> Timings(const Profile& profile, bool backward) {
  std::vector<AttentionTiming> out;
  for (const ProfileSample& s : profile.samples) {
    const auto* a = std::get_if<AttentionShape>(&s.shape);
    if (a && a->backward == backward) out.push_back({*a, s.median_us * 1e-6});
  }
  return out;
}

struct HeldOut {
  double median = 0, p90 = 0;
};

HeldOut Errors(const std::vector<AttentionTiming>& timings, const GpuSpec& gpu) {
  RooflineComputeModel model(gpu);
  std::vector<double> e;
  for (const AttentionTiming& t : timings) {
    e.push_back(std::abs(model.Attention(t.shape).ToSeconds() / t.seconds - 1));
  }
  std::sort(e.begin(), e.end());
  return {e[e.size() / 2], e[static_cast<size_t>(0.9 * static_cast<double>(e.size() - 1))]};
}

// The committed H100 run (hardware/validation/2026-11-27): the four models' attention kernels
// (profile.json, seq 2048, causal) and the generic grid (grid.json: seq 512 and 4096, causal and
// not, 16-32 heads, GQA, head dims 64 and 128). The tile model is fitted on the profile and every
// other grid shape and judged on the grid shapes it did not see, both ways round; the single
// efficiency of the shipped model is the baseline it must beat (46.9 % median on the grid).
TEST(AttentionTiles, FittedOnTheH100RunItPredictsTheShapesItDidNotSee) {
  H100Run run;
  ASSERT_NO_FATAL_FAILURE(LoadH100Run(&run));

  for (bool backward : {false, true}) {
    const std::vector<AttentionTiming> grid_timings = Timings(run.grid, backward);
    ASSERT_GE(grid_timings.size(), 90u);
    std::vector<double> medians, p90s;
    for (int fold = 0; fold < 2; ++fold) {
      std::vector<AttentionTiming> fit = Timings(run.profile, backward), held;
      for (size_t i = 0; i < grid_timings.size(); ++i) {
        (static_cast<int>(i % 2) == fold ? held : fit).push_back(grid_timings[i]);
      }
      Result<AttentionTileParams> p = FitAttentionTiles(fit, run.gpu);
      ASSERT_TRUE(p.ok()) << p.status().message();
      GpuSpec tiled = run.gpu;
      (backward ? tiled.calibration.attention_backward_tiles
                : tiled.calibration.attention_forward_tiles) = *p;
      const HeldOut tiles = Errors(held, tiled);
      const HeldOut single = Errors(held, run.gpu);
      std::printf(
          "attention %s fold %d: efficiency %.3f, score %.1f ps, diagonal %.1f ps, element %.2f "
          "ps, wave %.2f us, "
          "latency %.2f us; held-out median %.1f%% p90 %.1f%% (single efficiency: %.1f%% / "
          "%.1f%%)\n",
          backward ? "backward" : "forward", fold, p->matmul_efficiency, p->score_ps,
          p->masked_score_ps, p->element_ps, p->wave_us, p->latency_us, 100 * tiles.median,
          100 * tiles.p90, 100 * single.median, 100 * single.p90);
      // The bar for attention on the H100 profile's held-out shapes (issue 42).
      EXPECT_LE(tiles.median, 0.08) << (backward ? "backward" : "forward") << " fold " << fold;
      EXPECT_LE(tiles.p90, 0.15) << (backward ? "backward" : "forward") << " fold " << fold;
      EXPECT_LT(tiles.median, single.median / 3);
      // The fitted rates are physical: the products at most the tensor peak, and the softmax's
      // time per score within a factor 2 of FlashAttention-3's special-function rate on H100
      // (3.9 TFLOPS over 132 SMs: 34 ps an exponential per SM).
      EXPECT_LE(p->matmul_efficiency, 1.0);
      EXPECT_GT(p->matmul_efficiency, 0.3);
      EXPECT_GT(p->score_ps, 34.0 / 2);
      EXPECT_LT(p->score_ps, 34.0 * 2);
    }
  }
}

// The Hopper files ship cuDNN's tiles as loom fit finds them on the committed run's attention
// kernels (profile and grid together), to the 4 significant digits loom fit writes.
TEST(AttentionTiles, TheHopperFilesShipTheFitOfTheCommittedRun) {
  H100Run run;
  ASSERT_NO_FATAL_FAILURE(LoadH100Run(&run));
  for (const char* file : {"h100-sxm5-80gb.json", "h200-sxm-141gb.json"}) {
    Result<GpuSpec> gpu = LoadGpuSpec(kRoot + "/hardware/gpus/" + file);
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    for (bool backward : {false, true}) {
      std::vector<AttentionTiming> timings = Timings(run.profile, backward);
      for (const AttentionTiming& t : Timings(run.grid, backward)) timings.push_back(t);
      Result<AttentionTileParams> fit = FitAttentionTiles(timings, run.gpu);
      ASSERT_TRUE(fit.ok()) << fit.status().message();
      const std::optional<AttentionTileParams>& shipped =
          backward ? gpu->calibration.attention_backward_tiles
                   : gpu->calibration.attention_forward_tiles;
      ASSERT_TRUE(shipped.has_value()) << file;
      const auto near = [](double a, double b) { return std::abs(a - b) <= 5e-4 * std::abs(b); };
      EXPECT_TRUE(near(shipped->matmul_efficiency, fit->matmul_efficiency)) << file;
      EXPECT_TRUE(near(shipped->score_ps, fit->score_ps)) << file << " " << fit->score_ps;
      EXPECT_TRUE(near(shipped->masked_score_ps, fit->masked_score_ps)) << file;
      EXPECT_TRUE(near(shipped->element_ps, fit->element_ps)) << file;
      EXPECT_TRUE(near(shipped->wave_us, fit->wave_us)) << file;
      EXPECT_TRUE(near(shipped->latency_us, fit->latency_us)) << file;
    }
  }
}

TEST(AttentionTiles, TheComputeModelUsesThePassesTheCalibrationHas) {
  Result<GpuSpec> file = LoadGpuSpec(kRoot + "/hardware/gpus/h100-sxm5-80gb.json");
  ASSERT_TRUE(file.ok()) << file.status().message();
  GpuSpec untiled = *file;
  untiled.calibration.attention_forward_tiles.reset();
  untiled.calibration.attention_backward_tiles.reset();
  untiled.calibration.flash2_forward_tiles.reset();
  untiled.calibration.flash2_backward_tiles.reset();
  const GpuSpec* gpu = &untiled;
  AttentionShape fwd = Shape(4, 16, 2048, 128, true, false);
  fwd.family = AttentionFamily::kCudnn;
  AttentionShape bwd = fwd;
  bwd.backward = true;
  const double fwd_before = RooflineComputeModel(*gpu).Attention(fwd).ToSeconds();
  const double bwd_before = RooflineComputeModel(*gpu).Attention(bwd).ToSeconds();
  GpuSpec tiled = *gpu;
  tiled.calibration.attention_forward_tiles = AttentionTileParams{.matmul_efficiency = 0.9,
                                                                  .score_ps = 35,
                                                                  .masked_score_ps = 20,
                                                                  .wave_us = 1,
                                                                  .latency_us = 10};
  RooflineComputeModel model(tiled);
  const double expected = AttentionTileSeconds(
      CountAttentionTiles(fwd, tiled.sm_count, *tiled.PeakTflops(Dtype::kBf16) * 1e12),
      *tiled.calibration.attention_forward_tiles);
  EXPECT_NEAR(model.Attention(fwd).ToSeconds(), expected, 1e-9);
  EXPECT_NE(model.Attention(fwd).ToSeconds(), fwd_before);
  // The backward has no tiles: the single efficiency as before.
  EXPECT_DOUBLE_EQ(model.Attention(bwd).ToSeconds(), bwd_before);
  // The tiles are cuDNN's: FlashAttention-2's kernel keeps the single efficiency (its rate)...
  AttentionShape flash = fwd;
  flash.family = AttentionFamily::kFlashAttention2;
  EXPECT_DOUBLE_EQ(model.Attention(flash).ToSeconds(), fwd_before);
  // ...until the file has its own tiles (attention_tiles_flash2), which are its and only its.
  GpuSpec flash_tiled = tiled;
  flash_tiled.calibration.flash2_forward_tiles =
      AttentionTileParams{.matmul_efficiency = 0.5, .score_ps = 60, .latency_us = 5};
  const RooflineComputeModel with_flash(flash_tiled);
  EXPECT_NEAR(
      with_flash.Attention(flash).ToSeconds(),
      AttentionTileSeconds(CountAttentionTiles(flash, flash_tiled.sm_count,
                                               *flash_tiled.PeakTflops(Dtype::kBf16) * 1e12),
                           *flash_tiled.calibration.flash2_forward_tiles),
      1e-9);
  EXPECT_DOUBLE_EQ(with_flash.Attention(fwd).ToSeconds(), model.Attention(fwd).ToSeconds());
}

// A sliding window (FlashAttention's window_size (window - 1, 0)) skips the kv blocks wholly before
// it: forward, head dim 64, 128 x 128 blocks, seq 1024 and window 256: query block i visits blocks
// i - 2 .. i (1, 2, then 3 each), 21 in all against the causal 36. A window as long as the sequence
// is no window.
TEST(AttentionTiles, AWindowSkipsTheBlocksBeforeIt) {
  AttentionShape a = Shape(1, 132, 1024, 64, true, false);
  a.window = 256;
  EXPECT_DOUBLE_EQ(CountAttentionTiles(a, 132, 989e12).scores, 21.0 * 128 * 128);
  AttentionShape whole = a;
  whole.window = 1024;
  const AttentionShape causal = Shape(1, 132, 1024, 64, true, false);
  EXPECT_DOUBLE_EQ(CountAttentionTiles(whole, 132, 989e12).scores,
                   CountAttentionTiles(causal, 132, 989e12).scores);
  EXPECT_DOUBLE_EQ(CountAttentionTiles(causal, 132, 989e12).scores, 36.0 * 128 * 128);
  // The backward visits the same band from the keys' side; its kernel FLOPs count the band too:
  // w (w + 1) / 2 + (n - w) w of the n^2 scores.
  AttentionShape bwd = a;
  bwd.backward = true;
  AttentionShape bwd_causal = causal;
  bwd_causal.backward = true;
  EXPECT_LT(CountAttentionTiles(bwd, 132, 989e12).scores,
            0.75 * CountAttentionTiles(bwd_causal, 132, 989e12).scores);
  const double n = 1024, w = 256;
  EXPECT_NEAR(AttentionKernelFlops(a) / AttentionKernelFlops(causal),
              (w * (w + 1) / 2 + (n - w) * w) / (n * (n + 1) / 2), 1e-12);
  EXPECT_EQ(AttentionModelFlops(a) * 4, AttentionModelFlops(causal));
}

}  // namespace
}  // namespace loom
