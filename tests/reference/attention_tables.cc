#include "reference/attention_tables.h"

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

}  // namespace

Result<FidelityTable> PredictMegatronAttentionTable(const ReferencePaths& paths) {
  Result<CsvTable> csv = ReadReferenceCsv(paths.tables_dir + "/" + kTable);
  if (!csv.ok()) return csv.status();
  Result<GpuSpec> gpu = LoadGpuSpec(paths.tables_dir + "/steptime/gpus/a100-sxm4-40gb.json");
  if (!gpu.ok()) return gpu.status();
  Result<ModelSpec> model = MegatronGpt(kHeads, kHeads * kHeadDim, 1, kTable);
  if (!model.ok()) return model.status();
  const RooflineComputeModel compute(*gpu);
  FidelityTable table;
  table.name = "flashattention1_megatron_a100";
  table.title =
      "Megatron-LM's unfused attention on one A100-SXM4-40GB (Dao et al. 2022, FlashAttention, "
      "Appendix E.6 Tables 9-20: batch 16, 8 heads of 64, fp16, not causal), ms per call; loom "
      "does not cost the padding mask";
  table.unit = "ms";
  table.source_file = kTable;
  for (size_t i = 0; i < csv->rows.size(); ++i) {
    RowReader r(*csv, i);
    const std::string number = r.Text("table"), pass = r.Text("pass");
    const bool dropout = r.Text("dropout") == "1", masking = r.Text("masking") == "1";
    const int64_t seq = r.Int("seq");
    const double ms = r.Number("ms");
    LOOM_RETURN_IF_ERROR(r.Finish());
    if (pass != "forward" && pass != "backward" && pass != "combined") {
      return Status::InvalidArgument(csv->file + ": row " + std::to_string(i + 1) + ": pass is \"" +
                                     pass + "\"; use forward, backward or combined");
    }
    Result<double> predicted =
        CoreMs(*model, compute, seq, dropout, pass != "backward", pass != "forward");
    if (!predicted.ok()) return predicted.status();
    FidelityRow row;
    row.name = "Table " + number + " " + pass + (dropout ? " dropout" : "") +
               (masking ? " mask" : "") + " N=" + std::to_string(seq);
    row.measured = ms;
    row.predicted = *predicted;
    row.loso_predicted = row.predicted;
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace loom
