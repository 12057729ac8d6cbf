#ifndef LOOM_PROBE_SWEEP_H_
#define LOOM_PROBE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "cost/profile.h"
#include "op/op.h"
#include "probe/bench.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {

// What loom probe measures, as --measure names it.
enum class ProbeKind { kGemm, kAttention, kMemory, kHost, kCollectives };
inline constexpr EnumNames<ProbeKind, 5> kProbeKindNames({{
    {ProbeKind::kGemm, "gemm"},
    {ProbeKind::kAttention, "attention"},
    {ProbeKind::kMemory, "memory"},
    {ProbeKind::kHost, "host"},
    {ProbeKind::kCollectives, "collectives"},
}});

struct MemoryPoint {
  MemoryKernel kernel = MemoryKernel::kCopy;
  int64_t bytes = 0;
};

struct HostPoint {
  HostMeasure measure = HostMeasure::kLaunch;
  int64_t bytes = 0;
};

// One measurement of a sweep.
using ProbePoint = std::variant<GemmShape, AttentionShape, MemoryPoint, HostPoint, CollectivePoint>;

// The label a kernel point's sample carries: "cublasLt", "cudnn", or the memory kernel's name.
std::string SampleLabel(const ProbePoint& point);

// The point's ProbePointKey (cost/profile.h); |group_ranks| gives the ranks of a collective's
// group, which is part of its identity (a resume with another world size measures it again). It
// is called for collective points only, so it may be empty for the others.
std::string PointKey(const ProbePoint& point,
                     const std::function<int64_t(ProbeGroup)>& group_ranks);

// The model whose GEMMs and attention a --for-model sweep measures.
struct ModelShapes {
  const ModelSpec* model = nullptr;
  const ClusterSpec* cluster = nullptr;
  int64_t seq_len = 0;
  std::vector<int64_t> micro_batches = {1, 2, 4};
  Dtype dtype = Dtype::kBf16;
};

struct SweepOptions {
  std::vector<ProbeKind> kinds = {ProbeKind::kGemm, ProbeKind::kAttention, ProbeKind::kMemory,
                                  ProbeKind::kHost, ProbeKind::kCollectives};
  // GEMM dtypes of the generic grid; a --for-model sweep uses its model's dtype.
  std::vector<Dtype> gemm_dtypes = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32};
  // When set (model != nullptr), GEMMs and attention are exactly those of the model's layers.
  ModelShapes for_model;
  // Collectives: every size from min to max bytes, doubling, over each of |groups|.
  std::vector<ProfiledCollective> collectives = {
      ProfiledCollective::kAllReduce,     ProfiledCollective::kAllGather,
      ProfiledCollective::kReduceScatter, ProfiledCollective::kAllToAll,
      ProfiledCollective::kBroadcast,     ProfiledCollective::kSendRecv};
  std::vector<ProbeGroup> groups;
  int64_t min_collective_bytes = 8;
  int64_t max_collective_bytes = int64_t{8} << 30;
};

// The points of a sweep, in the order they are measured: GEMMs, attention, memory-bound, host,
// then collectives (each collective's sizes smallest first, group by group).
// - Generic GEMMs, per dtype: squares of 512 to 16384, and for hidden sizes 2048 to 12288 the four
//   GEMMs of a transformer layer's forward (QKV 3h x h, output h x h, MLP up 4h x h, MLP down
//   h x 4h) over 1024 to 16384 tokens.
// - Generic attention (bf16): causal and not, forward and backward, head dims 64 and 128, 16 and
//   32 query heads with MHA and 8-way GQA, sequences 512 to 16384 with batch * seq = 16384 tokens.
// - For a model (--for-model): the distinct GEMM and attention shapes of its transformer layers
//   (a dense one and, for MoE, an expert one), embedding and output head, forward and backward,
//   for every tensor-parallel degree the planner would consider (divisors of the GPUs per node
//   that the model's heads allow, with sequence parallelism above 1) and each micro-batch size.
// - Memory-bound: copy, RMSNorm and SwiGLU over 1 MiB to 4 GiB, doubling.
// - Host: launch overhead; pinned host-to-device and device-to-host copies of 1 MiB to 1 GiB.
// Errors: InvalidArgument for a for-model sweep without a cluster or sequence length, or whose
// model has no valid tensor-parallel degree (naming the model file); collective sizes out of
// order or below 8 bytes.
Result<std::vector<ProbePoint>> PlanSweep(const SweepOptions& options);

}  // namespace loom

#endif  // LOOM_PROBE_SWEEP_H_
