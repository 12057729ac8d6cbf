#ifndef LOOM_COST_GEMM_TILES_H_
#define LOOM_COST_GEMM_TILES_H_

#include <array>
#include <cstdint>

#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// The output tile of one thread block (CTA).
struct GemmTile {
  int64_t m = 0;
  int64_t n = 0;
};

// The CTA tiles cuBLAS chooses among for tensor-core GEMMs, from the most efficient to the least:
// 256x128 and 128x256, 256x64 and 64x256, 128x128, 128x64 and 64x128, 64x64 — NVIDIA Deep Learning
// Performance Guide, "Matrix Multiplication Background", Section 2.3 "Typical Tile Dimensions in
// cuBLAS and Performance"; the same threadblock shapes CUTLASS's profiler instantiates for sm80 and
// sm90 tensor-op GEMMs (python/cutlass_library/generator.py, GenerateSM80_TensorOp_16816 and the
// sm90 tile descriptions).
inline constexpr std::array<GemmTile, 8> kGemmTileCandidates = {
    {{256, 128}, {128, 256}, {256, 64}, {64, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};

// The grid's square 128x128 tile, the middle of its ranking: where the compute fit's starting
// points put the operand loads (FitComputeJointly, cost/roofline_fit.h).
inline constexpr GemmTile kGemmMiddleTile = kGemmTileCandidates[4];
static_assert(kGemmMiddleTile.m == 128 && kGemmMiddleTile.n == 128);

// Split-K factors (CUTLASS efficient_gemm.md, "Parallelized Reductions": the K dimension of one
// output tile split over several CTAs whose partial sums are reduced): tried only while the output
// tiles alone leave SMs idle, and only while each slice keeps at least kMinSplitKSlice of K.
inline constexpr std::array<int64_t, 4> kSplitKCandidates = {1, 2, 4, 8};
inline constexpr int64_t kMinSplitKSlice = 256;

// The rates a GEMM kernel runs at on one GPU, per SM, for one dtype: what ChooseGemmTile needs, in
// a form that costs a few multiplications per candidate.
struct GemmRates {
  int64_t sm_count = 1;
  int64_t element_bytes = 2;
  // sm_count / (dense peak * efficiency): seconds per tensor-core FLOP on one SM.
  double seconds_per_flop = 0;
  // sm_count / operand bandwidth: seconds per operand byte one SM loads into shared memory and the
  // main loop does not hide; 0 when the calibration has no operand bandwidth.
  double seconds_per_operand_byte = 0;
  // Time of each wave that does not grow with K: the main loop's prologue, which fills the
  // shared-memory pipeline before the first MMA, and the epilogue, which stores the tile after the
  // last (CUTLASS efficient_gemm.md, "Software Pipelining" and "Epilogue"); 0 when not fitted.
  double seconds_per_wave = 0;
  // 1 / achieved HBM bandwidth, for split-K's partial sums.
  double seconds_per_hbm_byte = 0;
  // A calibration from before issue 18 names one tile (gemm_tile_m/n); {0, 0}: choose.
  GemmTile fixed_tile;
};

// How one GEMM runs: the tile and split-K chosen, its waves, and the work of its main loop.
struct GemmTileChoice {
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  int64_t split_k = 1;
  int64_t waves = 0;
  // Per SM over all waves: tensor-core FLOPs and operand bytes (tile_m + tile_n) * k_slice loaded.
  double flops_per_sm = 0;
  double operand_bytes_per_sm = 0;
  // fp32 partial sums of split-K written and read back: 2 * 4 * (split_k - 1) * m * n * batch.
  double split_k_bytes = 0;
  // waves * seconds_per_wave, flops_per_sm, operand_bytes_per_sm and split_k_bytes at the rates
  // given.
  double time_s = 0;
};

// The rates of |dtype| on |gpu| from its datasheet and calibration (efficiency 1, no operand term
// and full HBM bandwidth where the calibration lacks a value).
// REQUIRES: |gpu| has a peak for |dtype|.
GemmRates GemmRatesOf(const GpuSpec& gpu, Dtype dtype);

// Like cuBLAS's heuristic, the candidate (tile of kGemmTileCandidates, split-K of
// kSplitKCandidates) of least predicted time, the earlier candidate on a tie. One candidate's time:
//   waves = ceil(batch * ceil(m / tile_m) * ceil(n / tile_n) * split_k / sm_count)
//   time  = waves * (seconds_per_wave + k_slice * (2 * tile_m * tile_n * seconds_per_flop
//                    + (tile_m + tile_n) * element_bytes * seconds_per_operand_byte))
//           + split_k_bytes * seconds_per_hbm_byte,       k_slice = ceil(k / split_k).
// A smaller tile quantises M, N and the waves more finely but loads more operand bytes per FLOP
// (arithmetic intensity 2 * tile_m * tile_n / (tile_m + tile_n) per element), which is why the
// guide ranks it less efficient. No allocation; a few dozen operations per candidate.
// REQUIRES: every size of |gemm| > 0.
GemmTileChoice ChooseGemmTile(const GemmShape& gemm, const GemmRates& rates);
GemmTileChoice ChooseGemmTile(const GemmShape& gemm, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_GEMM_TILES_H_
