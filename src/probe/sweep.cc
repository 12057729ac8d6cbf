#include "probe/sweep.h"

#include <algorithm>
#include <set>

#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

template <typename T>
bool Has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Appends |point| to |to| unless its key is in |seen|.
void AddOnce(const ProbePoint& point, std::set<std::string>* seen, std::vector<ProbePoint>* to) {
  if (seen->insert(PointKey(point, nullptr)).second) to->push_back(point);
}

// Appends the GEMMs and attention of |layer| whose keys are not in |seen| yet. A weight-gradient
// GEMM that accumulates into fp32 (Megatron-LM's default, GradAccumulation::kFused) is measured
// both ways, accumulating and plain, so that the pair shows what the fp32 read-modify-write of C
// costs on the GPU: memory traffic beside the GEMM, or hidden under its main loop.
void CollectShapes(const LayerOps& layer, std::set<std::string>* seen,
                   std::vector<ProbePoint>* gemms, std::vector<ProbePoint>* attention) {
  for (const std::vector<Op>* ops :
       {&layer.forward, &layer.backward_input, &layer.backward_weight}) {
    for (const Op& op : *ops) {
      if (const GemmShape* gemm = std::get_if<GemmShape>(&op.shape)) {
        AddOnce(*gemm, seen, gemms);
        if (!gemm->accumulate_fp32) continue;
        GemmShape plain = *gemm;
        plain.accumulate_fp32 = false;
        AddOnce(plain, seen, gemms);
      } else if (const AttentionShape* a = std::get_if<AttentionShape>(&op.shape)) {
        AddOnce(*a, seen, attention);
      }
    }
  }
}

Status ModelPoints(const ModelShapes& m, std::vector<ProbePoint>* gemms,
                   std::vector<ProbePoint>* attention) {
  const std::string file = m.model->file.empty() ? m.model->name : m.model->file;
  if (m.cluster == nullptr) {
    return Status::InvalidArgument("--for-model " + file +
                                   " needs --cluster: the GPUs per node bound the "
                                   "tensor-parallel degrees whose shapes are measured");
  }
  if (m.seq_len <= 0) {
    return Status::InvalidArgument("--for-model " + file +
                                   " needs --seq: the sequence length sets the GEMMs' "
                                   "token dimension");
  }
  std::set<std::string> seen;
  std::string last_error;
  // The layer builders require the strategy's split rules (workload/layer_ops.h); those of the
  // experts bind only the MoE layers.
  ModelSpec dense = *m.model;
  dense.moe.reset();
  // The degrees the planner searches, each with sequence parallelism above 1.
  for (int64_t tp : m.cluster->TensorParallelDegrees()) {
    for (int64_t micro_batch : m.micro_batches) {
      Strategy s;
      s.tp = tp;
      s.sp = tp > 1;
      s.micro_batch = micro_batch;
      s.global_batch = micro_batch;
      s.seq_len = m.seq_len;
      s.dtype = m.dtype;
      // Layer 0 and the last layer: a dense and, past moe.first_dense_layers, an expert layer.
      for (int64_t layer : {int64_t{0}, m.model->num_layers - 1}) {
        const bool moe = m.model->moe && layer >= m.model->moe->first_dense_layers;
        const std::vector<StrategyViolation> broken =
            LayerSplitViolations(s, moe ? *m.model : dense);
        if (!broken.empty()) {
          last_error = broken.front().message;
          continue;
        }
        Result<LayerOps> ops = BuildTransformerLayerOps(*m.model, s, {.layer = layer});
        if (!ops.ok()) {
          last_error = ops.status().message();
          continue;
        }
        CollectShapes(*ops, &seen, gemms, attention);
      }
      for (auto build : {BuildEmbeddingOps, BuildOutputOps}) {
        if (!LayerSplitViolations(s, dense).empty()) break;
        Result<LayerOps> ops = build(*m.model, s, {});
        if (ops.ok()) CollectShapes(*ops, &seen, gemms, attention);
      }
    }
  }
  if (gemms->empty()) {
    return Status::InvalidArgument(file + ": no tensor-parallel degree up to " +
                                   std::to_string(m.cluster->gpus_per_node) +
                                   " GPUs per node gives valid layer "
                                   "shapes (" +
                                   last_error + ")");
  }
  return Status::Ok();
}

void GenericGemms(const std::vector<Dtype>& dtypes, std::vector<ProbePoint>* out) {
  for (Dtype dtype : dtypes) {
    for (int64_t side = 512; side <= 16384; side *= 2)
      out->push_back(GemmShape{side, side, side, 1, dtype});
    for (int64_t h : {2048, 4096, 5120, 8192, 12288}) {
      for (int64_t tokens = 1024; tokens <= 16384; tokens *= 2) {
        out->push_back(GemmShape{tokens, 3 * h, h, 1, dtype});  // QKV
        out->push_back(GemmShape{tokens, h, h, 1, dtype});      // attention output
        out->push_back(GemmShape{tokens, 4 * h, h, 1, dtype});  // MLP up
        out->push_back(GemmShape{tokens, h, 4 * h, 1, dtype});  // MLP down
      }
    }
  }
}

void GenericAttention(std::vector<ProbePoint>* out) {
  constexpr int64_t kTokens = 16384;
  for (bool backward : {false, true}) {
    for (bool causal : {true, false}) {
      for (int64_t head_dim : {64, 128}) {
        for (int64_t heads : {16, 32}) {
          for (int64_t kv_heads : {heads, heads / 8}) {
            for (int64_t seq = 512; seq <= kTokens; seq *= 2) {
              out->push_back(AttentionShape{kTokens / seq, heads, kv_heads, seq, seq, head_dim,
                                            head_dim, causal, backward, Dtype::kBf16,
                                            AttentionFamily::kCudnn});
            }
          }
        }
      }
    }
  }
}

void MemoryPoints(std::vector<ProbePoint>* out) {
  for (MemoryKernel kernel : {MemoryKernel::kCopy, MemoryKernel::kRmsNorm, MemoryKernel::kSwiGlu}) {
    for (int64_t bytes = kMiB; bytes <= 4096 * kMiB; bytes *= 2)
      out->push_back(MemoryPoint{kernel, bytes});
  }
}

void HostPoints(std::vector<ProbePoint>* out) {
  out->push_back(HostPoint{HostMeasure::kLaunch, 0});
  for (HostMeasure measure : {HostMeasure::kHostToDevice, HostMeasure::kDeviceToHost}) {
    for (int64_t bytes = kMiB; bytes <= 1024 * kMiB; bytes *= 2)
      out->push_back(HostPoint{measure, bytes});
  }
}

}  // namespace

std::string SampleLabel(const ProbePoint& point) {
  if (std::holds_alternative<GemmShape>(point)) return "cublasLt";
  if (std::holds_alternative<AttentionShape>(point)) return "cudnn";
  if (const MemoryPoint* m = std::get_if<MemoryPoint>(&point))
    return std::string(kMemoryKernelNames.Name(m->kernel));
  return "";
}

std::string PointKey(const ProbePoint& point,
                     const std::function<int64_t(ProbeGroup)>& group_ranks) {
  if (const GemmShape* g = std::get_if<GemmShape>(&point))
    return ProbePointKey(*g, SampleLabel(point));
  if (const AttentionShape* a = std::get_if<AttentionShape>(&point))
    return ProbePointKey(*a, SampleLabel(point));
  if (const MemoryPoint* m = std::get_if<MemoryPoint>(&point)) {
    return ProbePointKey(MemoryKernelTraffic(m->kernel, m->bytes), SampleLabel(point));
  }
  if (const HostPoint* h = std::get_if<HostPoint>(&point))
    return ProbePointKey(h->measure, h->bytes);
  const CollectivePoint& c = std::get<CollectivePoint>(point);
  return ProbePointKey(c.collective, c.group, group_ranks(c.group), c.size_bytes);
}

Result<std::vector<ProbePoint>> PlanSweep(const SweepOptions& o) {
  if (o.min_collective_bytes < 8 || o.max_collective_bytes < o.min_collective_bytes) {
    return Status::InvalidArgument("collective sizes must satisfy 8 <= min <= max bytes; got " +
                                   std::to_string(o.min_collective_bytes) + " to " +
                                   std::to_string(o.max_collective_bytes));
  }
  std::vector<ProbePoint> gemms, attention, points;
  if (o.for_model.model != nullptr) {
    LOOM_RETURN_IF_ERROR(ModelPoints(o.for_model, &gemms, &attention));
  } else {
    GenericGemms(o.gemm_dtypes, &gemms);
    GenericAttention(&attention);
  }
  if (Has(o.kinds, ProbeKind::kGemm)) points.insert(points.end(), gemms.begin(), gemms.end());
  if (Has(o.kinds, ProbeKind::kAttention))
    points.insert(points.end(), attention.begin(), attention.end());
  if (Has(o.kinds, ProbeKind::kMemory)) MemoryPoints(&points);
  if (Has(o.kinds, ProbeKind::kHost)) HostPoints(&points);
  if (Has(o.kinds, ProbeKind::kCollectives)) {
    for (ProbeGroup group : o.groups) {
      for (ProfiledCollective collective : o.collectives) {
        for (int64_t bytes = o.min_collective_bytes; bytes <= o.max_collective_bytes; bytes *= 2) {
          points.push_back(CollectivePoint{collective, group, bytes});
        }
      }
    }
  }
  return points;
}

}  // namespace loom
