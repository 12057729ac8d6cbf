#include "cost/attention_tiles.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "cost/linear_solve.h"

namespace loom {

int64_t AttentionForwardBlockKv(int64_t head_dim) { return head_dim <= 64 ? 128 : 64; }

namespace {

int64_t TileCeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kv blocks a forward CTA over query block |i| visits: causal masking aligned at the bottom
// right (query j sees keys up to j + seq_kv - seq_q) and, with a window, the window's keys before
// that (FlashAttention skips the blocks wholly outside it: Dao-AILab/flash-attention 2.3's
// window_size), at least one.
int64_t ForwardBlocks(const AttentionShape& a, int64_t i, int64_t bq, int64_t bkv, int64_t nkv) {
  if (!a.causal) return nkv;
  const int64_t offset = a.seq_kv - a.seq_q;
  const int64_t last_key = std::min(a.seq_kv, (i + 1) * bq + offset);
  const int64_t first_key = a.window > 0 ? std::max<int64_t>(0, i * bq + offset - a.window + 1) : 0;
  return std::clamp<int64_t>(TileCeilDiv(last_key, bkv) - first_key / bkv, 1, nkv);
}

// The query blocks a backward CTA over kv block |j| visits: those with a query at or after its
// first key (bottom-right aligned) and, with a window, within the window after its last key, at
// least one.
int64_t BackwardBlocks(const AttentionShape& a, int64_t j, int64_t bq, int64_t bkv, int64_t nq) {
  if (!a.causal) return nq;
  const int64_t offset = a.seq_kv - a.seq_q;
  const int64_t first_query = std::max<int64_t>(0, j * bkv - offset);
  const int64_t end_block =
      a.window > 0 ? std::min(nq, ((j + 1) * bkv - 1 - offset + a.window - 1) / bq + 1) : nq;
  return std::clamp<int64_t>(end_block - first_query / bq, 1, nq);
}

}  // namespace

AttentionTileWork CountAttentionTiles(const AttentionShape& a, int64_t sm_count,
                                      double peak_flops_per_s) {
  const bool bwd = a.backward;
  const int64_t bq = bwd ? kAttentionBackwardBlockQ : kAttentionForwardBlockQ;
  const int64_t bkv = bwd ? kAttentionBackwardBlockKv : AttentionForwardBlockKv(a.head_dim_qk);
  const int64_t nq = TileCeilDiv(a.seq_q, bq);
  const int64_t nkv = TileCeilDiv(a.seq_kv, bkv);
  // Blocks per CTA along the loop, and the diagonal blocks among them (each CTA that is cut by
  // the diagonal computes max(bq, bkv) / min(bq, bkv) blocks or fewer on it; counted per CTA).
  const int64_t ctas_per_head = bwd ? nkv : nq;
  double blocks = 0;
  int64_t longest = 0;
  for (int64_t c = 0; c < ctas_per_head; ++c) {
    const int64_t n = bwd ? BackwardBlocks(a, c, bq, bkv, nq) : ForwardBlocks(a, c, bq, bkv, nkv);
    blocks += static_cast<double>(n);
    longest = std::max(longest, n);
  }
  const double heads = static_cast<double>(a.batch * a.heads);
  const double sms = static_cast<double>(sm_count);
  const double total_blocks = blocks * heads;
  // A grid smaller than the GPU, or one CTA far longer than the rest, ends with its longest CTA.
  const double per_sm = std::max(total_blocks / sms, static_cast<double>(longest));
  const double scale = per_sm / (total_blocks / sms);
  const double block_scores = static_cast<double>(bq * bkv);
  // A window shorter than the keys cuts each CTA on a second diagonal, its lower edge.
  const double edges = a.window > 0 && a.window < a.seq_kv ? 2.0 : 1.0;
  const double diagonal_per_cta =
      a.causal ? edges * static_cast<double>(std::max(bq, bkv) / std::min(bq, bkv)) : 0.0;
  const double diagonal_blocks = diagonal_per_cta * static_cast<double>(ctas_per_head) * heads;
  const double flops_per_score = (bwd ? 10.0 : 4.0) * static_cast<double>(a.head_dim_qk);

  AttentionTileWork w;
  w.ctas = ctas_per_head * a.batch * a.heads;
  w.scores = per_sm * block_scores;
  w.masked_scores = std::min(w.scores, diagonal_blocks / sms * scale * block_scores);
  w.matmul_s_at_peak = w.scores * flops_per_score / (peak_flops_per_s / sms);
  w.waves = static_cast<double>(TileCeilDiv(w.ctas, sm_count));
  w.elements = heads * static_cast<double>(a.seq_q * a.head_dim_qk);
  return w;
}

double AttentionTileSeconds(const AttentionTileWork& w, const AttentionTileParams& p) {
  return w.matmul_s_at_peak / p.matmul_efficiency + w.scores * p.score_ps * 1e-12 +
         w.masked_scores * p.masked_score_ps * 1e-12 + w.elements * p.element_ps * 1e-12 +
         w.waves * p.wave_us * 1e-6 + p.latency_us * 1e-6;
}

namespace {

constexpr int kTileTerms = 6;
using TileRow = std::array<double, kTileTerms>;

// The terms of AttentionTileSeconds per unit of each fitted value, in seconds.
TileRow TileTerms(const AttentionTileWork& w) {
  return {w.matmul_s_at_peak, w.scores * 1e-12, w.masked_scores * 1e-12,
          w.elements * 1e-12, w.waves * 1e-6,   1e-6};
}

// Least squares of sum_i ((x . rows_i - y_i) / y_i)^2 over the terms |free| (others fixed at
// |x|'s values); Gaussian elimination with partial pivoting on the normal equations. Returns false
// when they are singular.
bool SolveTileFit(const std::vector<TileRow>& rows, const std::vector<double>& y,
                  const std::array<bool, kTileTerms>& free, TileRow& x) {
  std::vector<int> index;
  for (int t = 0; t < kTileTerms; ++t) {
    if (free[t]) index.push_back(t);
  }
  const size_t n = index.size();
  std::vector<std::vector<double>> normal(n, std::vector<double>(n, 0.0));
  std::vector<double> rhs(n, 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    double rest = y[i];
    for (int t = 0; t < kTileTerms; ++t) {
      if (!free[t]) rest -= x[t] * rows[i][t];
    }
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) normal[a][b] += w * rows[i][index[a]] * rows[i][index[b]];
      rhs[a] += w * rows[i][index[a]] * rest;
    }
  }
  std::vector<double> solution;
  if (!SolveLinear(std::move(normal), std::move(rhs), &solution)) return false;
  for (size_t a = 0; a < n; ++a) x[index[a]] = solution[a];
  return true;
}

}  // namespace

namespace {

// The least-squares fit of |rows| to |y| with the model's constraints: a term that fits negative is
// dropped (it would buy error elsewhere with a time below zero) and the efficiency held at most 1
// (x[0] = 1 / efficiency at least 1), refitting until neither happens.
Result<TileRow> FitTileRows(const std::vector<TileRow>& rows, const std::vector<double>& y) {
  std::array<bool, kTileTerms> free{};
  free.fill(true);
  TileRow x{};
  for (int round = 0; round <= kTileTerms; ++round) {
    if (!SolveTileFit(rows, y, free, x)) {
      return Status::InvalidArgument(
          "the attention timings do not determine the tile model (too few distinct shapes: vary "
          "the sequence, heads, head dim and causal masking)");
    }
    bool changed = false;
    if (free[0] && x[0] < 1.0) {
      x[0] = 1.0;
      free[0] = false;
      changed = true;
    }
    for (int t = 1; t < kTileTerms; ++t) {
      if (free[t] && x[t] < 0) {
        x[t] = 0;
        free[t] = false;
        changed = true;
      }
    }
    if (!changed) break;
  }
  if (!(x[0] > 0)) return Status::InvalidArgument("the attention fit found no tensor-core rate");
  return x;
}

AttentionTileParams ParamsOf(const TileRow& x) {
  AttentionTileParams p;
  p.matmul_efficiency = 1.0 / x[0];
  p.score_ps = x[1];
  p.masked_score_ps = x[2];
  p.element_ps = x[3];
  p.wave_us = x[4];
  p.latency_us = x[5];
  return p;
}

Result<double> PeakOf(const GpuSpec& gpu, Dtype dtype) {
  const std::optional<double> peak = gpu.PeakTflops(dtype);
  if (!peak) {
    return Status::InvalidArgument("the GPU file of " + gpu.name + " has no " +
                                   std::string(kDtypeNames.Name(dtype)) +
                                   " peak to fit attention at");
  }
  return *peak * 1e12;
}

}  // namespace

Result<AttentionTileParams> FitAttentionTiles(std::span<const AttentionTiming> timings,
                                              const GpuSpec& gpu) {
  if (timings.size() < kMinAttentionTileSamples) {
    return Status::InvalidArgument(
        "fitting attention tiles needs at least 10 timings of one pass; got " +
        std::to_string(timings.size()));
  }
  const bool backward = timings.front().shape.backward;
  const Dtype dtype = timings.front().shape.dtype;
  LOOM_ASSIGN_OR_RETURN(const double peak, PeakOf(gpu, dtype));
  std::vector<TileRow> rows;
  std::vector<double> y;
  for (const AttentionTiming& t : timings) {
    if (t.shape.backward != backward || t.shape.dtype != dtype) {
      return Status::InvalidArgument(
          "attention tiles are fitted one pass and one dtype at a time; the timings mix them");
    }
    if (!(t.seconds > 0)) return Status::InvalidArgument("an attention timing is not positive");
    rows.push_back(TileTerms(CountAttentionTiles(t.shape, gpu.sm_count, peak)));
    y.push_back(t.seconds);
  }
  LOOM_ASSIGN_OR_RETURN(const TileRow x, FitTileRows(rows, y));
  return ParamsOf(x);
}

Result<AttentionTilePasses> FitAttentionTilesOverPasses(std::span<const AttentionTiming> timings,
                                                        const GpuSpec& gpu,
                                                        double backward_matmul_ratio) {
  if (timings.size() < kMinAttentionTileSamples) {
    return Status::InvalidArgument(
        "fitting attention tiles needs at least 10 timings of forward and backward together; "
        "got " +
        std::to_string(timings.size()));
  }
  if (!(backward_matmul_ratio > 0 && backward_matmul_ratio <= 1)) {
    return Status::InvalidArgument(
        "the backward's share of the forward's tensor-core efficiency must be in (0, 1]");
  }
  const Dtype dtype = timings.front().shape.dtype;
  LOOM_ASSIGN_OR_RETURN(const double peak, PeakOf(gpu, dtype));
  std::vector<TileRow> rows;
  std::vector<double> y;
  for (const AttentionTiming& t : timings) {
    if (t.shape.backward || t.shape.dtype != dtype) {
      return Status::InvalidArgument(
          "forward-and-backward timings are keyed by their forward shape, one dtype; the timings "
          "mix them");
    }
    if (!(t.seconds > 0)) return Status::InvalidArgument("an attention timing is not positive");
    AttentionShape backward = t.shape;
    backward.backward = true;
    TileRow row = TileTerms(CountAttentionTiles(t.shape, gpu.sm_count, peak));
    TileRow back = TileTerms(CountAttentionTiles(backward, gpu.sm_count, peak));
    back[0] /= backward_matmul_ratio;
    for (int i = 0; i < kTileTerms; ++i) row[i] += back[i];
    rows.push_back(row);
    y.push_back(t.seconds);
  }
  LOOM_ASSIGN_OR_RETURN(TileRow x, FitTileRows(rows, y));
  AttentionTilePasses out{ParamsOf(x), ParamsOf(x)};
  out.backward.matmul_efficiency = out.forward.matmul_efficiency * backward_matmul_ratio;
  return out;
}

}  // namespace loom
