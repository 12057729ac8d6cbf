#include "reference/attention_tables.h"

#include <algorithm>
#include <cmath>
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

constexpr const char* kFlash2Table = "flashattention2_a100_fig4.csv";

// Figure 4's setting (Dao 2023, Section 4.1): hidden 2048 as heads of |head_dim|, 16k tokens per
// call, bf16. loom's forward and backward kernels of FlashAttention-2 on the A100 file, timed and
// summed; the figure's FLOPs (AttentionKernelFlops: the backward 2.5 times the forward) over that
// time, in TFLOP/s.
double Flash2TflopsPerS(const RooflineComputeModel& compute, int64_t head_dim, bool causal,
                        int64_t seq) {
  AttentionShape a;
  a.batch = 16384 / seq;
  a.heads = a.kv_heads = 2048 / head_dim;
  a.seq_q = a.seq_kv = seq;
  a.head_dim_qk = a.head_dim_v = head_dim;
  a.causal = causal;
  a.family = AttentionFamily::kFlashAttention2;
  AttentionShape b = a;
  b.backward = true;
  const double seconds = compute.Attention(a).ToSeconds() + compute.Attention(b).ToSeconds();
  return (AttentionKernelFlops(a) + AttentionKernelFlops(b)) / seconds / 1e12;
}

}  // namespace

Result<FidelityTable> PredictFlash2A100Table(const ReferencePaths& paths) {
  Result<CsvTable> csv = ReadReferenceCsv(paths.tables_dir + "/" + kFlash2Table);
  if (!csv.ok()) return csv.status();
  Result<GpuSpec> gpu = LoadGpuSpec(paths.gpus_dir + "/a100-sxm4-80gb.json");
  if (!gpu.ok()) return gpu.status();
  const RooflineComputeModel compute(*gpu);
  FidelityTable table;
  table.name = "flashattention2_a100_fig4";
  table.title =
      "FlashAttention-2 forward + backward on one A100 80GB SXM4 (Dao 2023, FlashAttention-2, "
      "Figure 4: hidden 2048, 16k tokens), TFLOP/s; loom's flash2 family with "
      "hardware/gpus/a100-sxm4-80gb.json, fitted on none of it";
  table.unit = "TFLOP/s";
  table.source_file = kFlash2Table;
  for (size_t i = 0; i < csv->rows.size(); ++i) {
    RowReader r(*csv, i);
    const int64_t head_dim = r.Int("head_dim");
    const std::string causal = r.Text("causal");
    const int64_t seq = r.Int("seq");
    const std::string method = r.Text("method");
    const double tflops = r.Number("tflops");
    LOOM_RETURN_IF_ERROR(r.Finish());
    if (causal != "true" && causal != "false") {
      return Status::InvalidArgument(csv->file + ": row " + std::to_string(i + 1) +
                                     ": causal is \"" + causal + "\"; use true or false");
    }
    if (head_dim <= 0 || 2048 % head_dim != 0 || seq <= 0 || 16384 % seq != 0) {
      return Status::InvalidArgument(
          csv->file + ": row " + std::to_string(i + 1) +
          ": head_dim must divide 2048 and seq 16384 (Figure 4's setting)");
    }
    // The other methods are kernels loom has no family for (yet): kept for them.
    if (method != "flash2") continue;
    FidelityRow row;
    row.name = "d" + std::to_string(head_dim) + (causal == "true" ? " causal" : "") + " seq " +
               std::to_string(seq);
    row.measured = tflops;
    row.predicted = Flash2TflopsPerS(compute, head_dim, causal == "true", seq);
    row.loso_predicted = row.predicted;
    table.rows.push_back(std::move(row));
  }
  return table;
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
