#include "reference/attention_tables.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cost/compute_model.h"
#include "reference/reference_csv.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

constexpr const char* kTable = "flashattention1_megatron_a100.csv";

// The benchmark's attention: 8 heads of 64 (hidden 512), batch 16 (Appendix E.6).
constexpr int64_t kHeads = 8;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kBatch = 16;

// The fit's rows: forward and backward without the padding mask (which loom does not cost), at
// sequences of 1024 and 2048. Below, the calls are near the host's floor: at N = 128 each takes
// 0.24-0.45 ms for 0.03-0.06 ms of kernels, so launches, not the GPU, set their time. The combined
// tables are the sum of the two passes, measured again: not counted twice.
constexpr int64_t kMinFitSeq = 1024;

bool CoreForwardOp(OpName name) {
  return name == OpName::kAttentionScores || name == OpName::kAttentionSoftmax ||
         name == OpName::kAttentionDropout || name == OpName::kAttentionContext ||
         name == OpName::kAttentionContextCopy;
}

bool CoreBackwardOp(OpName name) {
  return name == OpName::kAttentionContextDgradProbs ||
         name == OpName::kAttentionContextDgradValues || name == OpName::kAttentionDropoutGrad ||
         name == OpName::kAttentionSoftmaxGrad || name == OpName::kAttentionScoresDgradQuery ||
         name == OpName::kAttentionScoresDgradKey;
}

double KernelSeconds(const Op& op, const RooflineComputeModel& model) {
  if (const GemmShape* g = std::get_if<GemmShape>(&op.shape)) return model.Gemm(*g).ToSeconds();
  if (const MemoryShape* m = std::get_if<MemoryShape>(&op.shape))
    return model.MemoryBound(*m).ToSeconds();
  return 0;
}

// The core attention of one layer at |seq|, forward and/or backward, in ms.
Result<double> CoreMs(const ModelSpec& model, const RooflineComputeModel& compute, int64_t seq,
                      bool dropout, bool forward, bool backward) {
  Strategy s;
  s.micro_batch = kBatch;
  s.global_batch = kBatch;
  s.seq_len = seq;
  s.dtype = Dtype::kFp16;
  LayerOpsOptions o = MegatronLayerKernels();
  o.dropout = dropout;
  o.causal = false;
  Result<LayerOps> ops = BuildTransformerLayerOps(model, s, o);
  if (!ops.ok()) return ops.status();
  double seconds = 0;
  for (const Op& op : ops->forward) {
    if (forward && CoreForwardOp(op.name)) seconds += KernelSeconds(op, compute);
  }
  for (const Op& op : ops->backward_input) {
    if (backward && CoreBackwardOp(op.name)) seconds += KernelSeconds(op, compute);
  }
  return seconds * 1e3;
}

// One measurement of the table.
struct Measurement {
  std::string number, pass;
  bool dropout = false, masking = false;
  int64_t seq = 0;
  double ms = 0;
};

Result<std::vector<Measurement>> ReadTable(const ReferencePaths& paths) {
  Result<CsvTable> csv = ReadReferenceCsv(paths.tables_dir + "/" + kTable);
  if (!csv.ok()) return csv.status();
  std::vector<Measurement> rows;
  for (size_t i = 0; i < csv->rows.size(); ++i) {
    RowReader r(*csv, i);
    Measurement m;
    m.number = r.Text("table");
    m.pass = r.Text("pass");
    m.dropout = r.Text("dropout") == "1";
    m.masking = r.Text("masking") == "1";
    m.seq = r.Int("seq");
    m.ms = r.Number("ms");
    LOOM_RETURN_IF_ERROR(r.Finish());
    if (m.pass != "forward" && m.pass != "backward" && m.pass != "combined") {
      return Status::InvalidArgument(csv->file + ": row " + std::to_string(i + 1) + ": pass is \"" +
                                     m.pass + "\"; use forward, backward or combined");
    }
    rows.push_back(std::move(m));
  }
  return rows;
}

Result<double> PredictMs(const ModelSpec& model, const GpuSpec& gpu, const Measurement& m) {
  return CoreMs(model, RooflineComputeModel(gpu), m.seq, m.dropout, m.pass != "backward",
                m.pass != "forward");
}

// What the table's predictions read: its measurements, the A100-40GB file it was measured on and
// the benchmark's one-layer model.
struct AttentionInputs {
  std::vector<Measurement> rows;
  GpuSpec gpu;
  ModelSpec model;
};

Result<AttentionInputs> LoadAttentionInputs(const ReferencePaths& paths) {
  Result<std::vector<Measurement>> rows = ReadTable(paths);
  if (!rows.ok()) return rows.status();
  Result<GpuSpec> gpu = LoadGpuSpec(paths.tables_dir + "/steptime/gpus/a100-sxm4-40gb.json");
  if (!gpu.ok()) return gpu.status();
  Result<ModelSpec> model = MegatronGpt(kHeads, kHeads * kHeadDim, 1, kTable);
  if (!model.ok()) return model.status();
  return AttentionInputs{std::move(*rows), std::move(*gpu), std::move(*model)};
}

// The GPU as the fit would leave it without this table: its GEMM fraction unset, so memory-bound
// GEMMs stream at memory_bandwidth_fraction.
GpuSpec WithoutTheFit(GpuSpec gpu) {
  gpu.calibration.gemm_memory_bandwidth_fraction.reset();
  std::erase(gpu.calibration.fitted_on, std::string(kTable));
  return gpu;
}

bool FittedOnTheTable(const GpuSpec& gpu) {
  const std::vector<std::string>& on = gpu.calibration.fitted_on;
  return std::find(on.begin(), on.end(), kTable) != on.end();
}

}  // namespace

Result<double> FitMegatronAttentionGemmFraction(const ReferencePaths& paths) {
  Result<AttentionInputs> in = LoadAttentionInputs(paths);
  if (!in.ok()) return in.status();
  std::vector<Measurement> fit;
  for (const Measurement& m : in->rows) {
    if (!m.masking && m.pass != "combined" && m.seq >= kMinFitSeq) fit.push_back(m);
  }
  if (fit.empty()) return Status::InvalidArgument(kTable + std::string(": no row to fit"));
  GpuSpec gpu = WithoutTheFit(in->gpu);
  // Sum of squared log errors at |fraction|; one unknown, so a golden-section search over it.
  const auto cost = [&](double fraction) -> Result<double> {
    gpu.calibration.gemm_memory_bandwidth_fraction = fraction;
    double sum = 0;
    for (const Measurement& m : fit) {
      Result<double> ms = PredictMs(in->model, gpu, m);
      if (!ms.ok()) return ms.status();
      sum += std::pow(std::log(*ms / m.ms), 2);
    }
    return sum;
  };
  const double golden = (std::sqrt(5.0) - 1.0) / 2.0;
  double lo = 0.05, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double a = hi - golden * (hi - lo), b = lo + golden * (hi - lo);
    Result<double> ca = cost(a), cb = cost(b);
    if (!ca.ok()) return ca.status();
    if (!cb.ok()) return cb.status();
    (*ca < *cb ? hi : lo) = *ca < *cb ? b : a;
  }
  return (lo + hi) / 2.0;
}

namespace {

// Figures 4 and 7's setting (Dao 2023, Section 4.1): hidden 2048 as heads of |head_dim|, 16k tokens
// per call, bf16; the forward shape of one bar.
AttentionShape FigureShape(int64_t head_dim, bool causal, int64_t seq, AttentionFamily family) {
  AttentionShape a;
  a.batch = 16384 / seq;
  a.heads = a.kv_heads = 2048 / head_dim;
  a.seq_q = a.seq_kv = seq;
  a.head_dim_qk = a.head_dim_v = head_dim;
  a.causal = causal;
  a.family = family;
  return a;
}

// The figures' FLOPs of forward and backward (Section 4.1): 4 seq^2 head_dim heads a sequence,
// halved when causal, the backward 2.5 times the forward.
double FigureFlops(const AttentionShape& a) {
  const double forward = 4.0 * static_cast<double>(a.batch * a.heads * a.seq_q) *
                         static_cast<double>(a.seq_kv * a.head_dim_qk) * (a.causal ? 0.5 : 1.0);
  return 3.5 * forward;
}

// loom's forward plus backward of |forward|, in TFLOP/s of the figures' FLOPs.
double PredictedTflops(const RooflineComputeModel& compute, const AttentionShape& forward) {
  AttentionShape backward = forward;
  backward.backward = true;
  const double seconds =
      compute.Attention(forward).ToSeconds() + compute.Attention(backward).ToSeconds();
  return FigureFlops(forward) / seconds / 1e12;
}

// One bar of a figure's table.
struct FigureBar {
  int64_t head_dim = 0;
  bool causal = false;
  int64_t seq = 0;
  std::string method;
  double tflops = 0;
};

Result<std::vector<FigureBar>> ReadFigure(const ReferencePaths& paths, std::string_view file) {
  Result<CsvTable> csv = ReadReferenceCsv(paths.tables_dir + "/" + std::string(file));
  if (!csv.ok()) return csv.status();
  std::vector<FigureBar> bars;
  for (size_t i = 0; i < csv->rows.size(); ++i) {
    RowReader r(*csv, i);
    FigureBar b;
    b.head_dim = r.Int("head_dim");
    const std::string causal = r.Text("causal");
    b.seq = r.Int("seq");
    b.method = r.Text("method");
    b.tflops = r.Number("tflops");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const std::string where = csv->file + ": row " + std::to_string(i + 1);
    if (causal != "true" && causal != "false")
      return Status::InvalidArgument(where + ": causal is \"" + causal + "\"; use true or false");
    b.causal = causal == "true";
    if (b.head_dim <= 0 || 2048 % b.head_dim != 0 || b.seq <= 0 || 16384 % b.seq != 0) {
      return Status::InvalidArgument(where +
                                     ": head_dim must divide 2048 and seq 16384 (the figure's "
                                     "setting: hidden 2048, 16k tokens)");
    }
    if (!(b.tflops > 0)) return Status::InvalidArgument(where + ": tflops must be positive");
    bars.push_back(std::move(b));
  }
  return bars;
}

// The figures' method of each family loom models.
std::string_view MethodOf(AttentionFamily family) {
  return family == AttentionFamily::kTriton ? "flash1_triton" : "flash2";
}

// The GPU without what was fitted on |file|: no FlashAttention-2 or Triton tiles, so both run at
// attention_efficiency (the Triton port has no rate of its own there).
GpuSpec WithoutFigureFit(GpuSpec gpu, std::string_view file) {
  ComputeCalibration& c = gpu.calibration;
  c.flash2_forward_tiles.reset();
  c.flash2_backward_tiles.reset();
  c.triton_forward_tiles.reset();
  c.triton_backward_tiles.reset();
  std::erase(c.fitted_on, std::string(file));
  return gpu;
}

// The figure of each GPU: Figure 4 on the A100, Figure 7 on the H100.
struct AttentionFigure {
  std::string_view file, gpu_file, title;
  std::vector<AttentionFamily> families;
};
const AttentionFigure kFigures[] = {
    {kFlashAttentionA100Figure,
     "a100-sxm4-80gb.json",
     "Figure 4, one A100 80GB SXM4",
     {AttentionFamily::kFlashAttention2, AttentionFamily::kTriton}},
    {kFlashAttentionH100Figure,
     "h100-sxm5-80gb.json",
     "Figure 7, one H100 80GB SXM5",
     {AttentionFamily::kFlashAttention2}},
};

}  // namespace

double BackwardMatmulRatio(AttentionFamily family) {
  // FlashAttention-2 "reaching up to 73% of the theoretical max throughput in the forward pass,
  // and up to 63% ... in the backward pass" (Dao 2023, Section 4.1); it is "around 1.3-1.5x faster
  // than FlashAttention in Triton in the forward pass and around 2x faster in the backward pass"
  // (the same section), so the Triton port's backward reaches 63/2 % against its forward's 73/1.4
  // %.
  if (family == AttentionFamily::kTriton) return (0.63 / 2.0) / (0.73 / 1.4);
  return 0.63 / 0.73;
}

Result<AttentionTilePasses> FitAttentionFigureTiles(const ReferencePaths& paths,
                                                    std::string_view file, const GpuSpec& gpu,
                                                    AttentionFamily family) {
  Result<std::vector<FigureBar>> bars = ReadFigure(paths, file);
  if (!bars.ok()) return bars.status();
  std::vector<AttentionTiming> timings;
  for (const FigureBar& b : *bars) {
    if (b.method != MethodOf(family)) continue;
    const AttentionShape a = FigureShape(b.head_dim, b.causal, b.seq, family);
    timings.push_back({a, FigureFlops(a) / (b.tflops * 1e12)});
  }
  Result<AttentionTilePasses> fit =
      FitAttentionTilesOverPasses(timings, gpu, BackwardMatmulRatio(family));
  if (!fit.ok()) {
    return Status::InvalidArgument(std::string(file) + ": " +
                                   std::string(kAttentionFamilyNames.Name(family)) + ": " +
                                   fit.status().message());
  }
  return fit;
}

double FigureTflops(const RooflineComputeModel& compute, int64_t head_dim, bool causal, int64_t seq,
                    AttentionFamily family) {
  return PredictedTflops(compute, FigureShape(head_dim, causal, seq, family));
}

Result<std::vector<TransferredBar>> TritonBarsOnH100(const ReferencePaths& paths) {
  Result<std::vector<FigureBar>> a100 = ReadFigure(paths, kFlashAttentionA100Figure);
  if (!a100.ok()) return a100.status();
  Result<std::vector<FigureBar>> h100 = ReadFigure(paths, kFlashAttentionH100Figure);
  if (!h100.ok()) return h100.status();
  auto rate = [](const std::vector<FigureBar>& bars, const FigureBar& at,
                 std::string_view method) -> std::optional<double> {
    for (const FigureBar& b : bars) {
      if (b.method == method && b.head_dim == at.head_dim && b.causal == at.causal &&
          b.seq == at.seq)
        return b.tflops;
    }
    return std::nullopt;
  };
  const std::string_view flash2 = MethodOf(AttentionFamily::kFlashAttention2);
  const std::string_view triton = MethodOf(AttentionFamily::kTriton);
  std::vector<TransferredBar> out;
  for (const FigureBar& b : *h100) {
    if (b.method != flash2) continue;
    const std::optional<double> a100_flash2 = rate(*a100, b, flash2);
    const std::optional<double> a100_triton = rate(*a100, b, triton);
    if (!a100_flash2 || !a100_triton) continue;
    out.push_back({b.head_dim, b.causal, b.seq, b.tflops * *a100_triton / *a100_flash2});
  }
  return out;
}

Result<AttentionTilePasses> FitTritonTilesOnH100(const ReferencePaths& paths, const GpuSpec& gpu) {
  Result<std::vector<TransferredBar>> bars = TritonBarsOnH100(paths);
  if (!bars.ok()) return bars.status();
  std::vector<AttentionTiming> timings;
  for (const TransferredBar& b : *bars) {
    const AttentionShape a = FigureShape(b.head_dim, b.causal, b.seq, AttentionFamily::kTriton);
    timings.push_back({a, FigureFlops(a) / (b.tflops * 1e12)});
  }
  Result<AttentionTilePasses> fit =
      FitAttentionTilesOverPasses(timings, gpu, BackwardMatmulRatio(AttentionFamily::kTriton));
  if (!fit.ok()) {
    return Status::InvalidArgument(
        std::string(kFlashAttentionH100Figure) + " with " + std::string(kFlashAttentionA100Figure) +
        "'s Triton-to-FlashAttention-2 ratios: " + fit.status().message());
  }
  return fit;
}

Result<std::vector<FidelityTable>> PredictAttentionFigureTables(const ReferencePaths& paths) {
  std::vector<FidelityTable> tables;
  for (const AttentionFigure& figure : kFigures) {
    Result<std::vector<FigureBar>> bars = ReadFigure(paths, figure.file);
    if (!bars.ok()) return bars.status();
    Result<GpuSpec> gpu = LoadGpuSpec(paths.gpus_dir + "/" + std::string(figure.gpu_file));
    if (!gpu.ok()) return gpu.status();
    const std::vector<std::string>& on = gpu->calibration.fitted_on;
    const bool refit = std::find(on.begin(), on.end(), figure.file) != on.end();
    const RooflineComputeModel compute(*gpu);
    const RooflineComputeModel without(WithoutFigureFit(*gpu, figure.file));
    FidelityTable table;
    const std::string stem(figure.file.substr(0, figure.file.rfind('.')));
    table.name = stem;
    table.title = "Fused attention forward + backward (Dao 2023, FlashAttention-2, " +
                  std::string(figure.title) +
                  ": hidden 2048, 16k tokens), TFLOP/s, each family loom models; its tiles in "
                  "hardware/gpus/" +
                  std::string(figure.gpu_file) +
                  " are fitted on this figure (attention_tiles_<family>), so the "
                  "leave-one-source-out column is attention_efficiency's one rate";
    table.unit = "TFLOP/s";
    table.source_file = std::string(figure.file);
    table.refitted = refit;
    for (const FigureBar& b : *bars) {
      for (AttentionFamily family : figure.families) {
        if (b.method != MethodOf(family)) continue;
        const AttentionShape a = FigureShape(b.head_dim, b.causal, b.seq, family);
        FidelityRow row;
        row.name = std::string(kAttentionFamilyNames.Name(family)) + " d" +
                   std::to_string(b.head_dim) + (b.causal ? " causal" : "") + " seq " +
                   std::to_string(b.seq);
        row.measured = b.tflops;
        row.predicted = PredictedTflops(compute, a);
        row.loso_predicted = PredictedTflops(without, a);
        table.rows.push_back(std::move(row));
      }
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

Result<FidelityTable> PredictMegatronAttentionTable(const ReferencePaths& paths) {
  Result<AttentionInputs> in = LoadAttentionInputs(paths);
  if (!in.ok()) return in.status();
  // The file's GEMM fraction is fitted on this table: its leave-one-source-out column drops it.
  const bool refit = FittedOnTheTable(in->gpu);
  const GpuSpec without = WithoutTheFit(in->gpu);
  FidelityTable table;
  table.name = "flashattention1_megatron_a100";
  table.title =
      "Megatron-LM's unfused attention on one A100-SXM4-40GB (Dao et al. 2022, FlashAttention, "
      "Appendix E.6 Tables 9-20: batch 16, 8 heads of 64, fp16, not causal), ms per call; loom "
      "does not cost the padding mask";
  table.unit = "ms";
  table.source_file = kTable;
  table.refitted = refit;
  for (const Measurement& m : in->rows) {
    Result<double> predicted = PredictMs(in->model, in->gpu, m);
    if (!predicted.ok()) return predicted.status();
    Result<double> loso = refit ? PredictMs(in->model, without, m) : predicted;
    if (!loso.ok()) return loso.status();
    FidelityRow row;
    row.name = "Table " + m.number + " " + m.pass + (m.dropout ? " dropout" : "") +
               (m.masking ? " mask" : "") + " N=" + std::to_string(m.seq);
    row.measured = m.ms;
    row.predicted = *predicted;
    row.loso_predicted = *loso;
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace loom
