#include "probe/probe_estimate.h"

#include <algorithm>
#include <string>
#include <variant>

#include "core/dtype.h"
#include "cost/comm_model.h"
#include "cost/compute_model.h"

namespace loom {
namespace {

// Empty kernels per timed run of the launch point (kLaunchesPerRepeat,
// probe/cuda/cuda_kernel_bench.cc).
constexpr double kLaunchesPerRun = 100;

// What one point costs: its runs and its set-up.
struct PointCost {
  double run_s = 0;    // one timed (or warm-up) run
  double setup_s = 0;  // fills and set-up, once
};

// The rotated copies of |bytes_per_copy| the probe allocates (RotationCount, probe/bench.h).
double RotatedCopies(int64_t bytes_per_copy, int64_t l2_bytes, bool rotate) {
  return static_cast<double>(RotationCount(bytes_per_copy, l2_bytes, rotate));
}

// One collective operation of |point| on |cluster|, costed by |comm| (the cluster's model).
Result<double> CollectiveSeconds(const CollectivePoint& point, const ClusterSpec& cluster,
                                 const RingCommModel& comm) {
  const int64_t per_node = cluster.gpus_per_node;
  const std::optional<int64_t> nodes = cluster.nodes;
  if (point.group != ProbeGroup::kIntraNode && !nodes) {
    return Status::InvalidArgument(
        cluster.file + ": the " + std::string(kProbeGroupNames.Name(point.group)) +
        " collectives span every node, and the file has no \"nodes\"; add it");
  }
  GroupPlacement group{per_node, per_node};
  if (point.group == ProbeGroup::kWorld) group = {per_node * *nodes, per_node};
  if (point.group == ProbeGroup::kRails) group = {*nodes, 1};
  switch (point.collective) {
    case ProfiledCollective::kAllReduce:
      return comm.Collective(CollectiveKind::kAllReduce, point.size_bytes, group).ToSeconds();
    case ProfiledCollective::kReduceScatter:
      return comm.Collective(CollectiveKind::kReduceScatter, point.size_bytes, group).ToSeconds();
    case ProfiledCollective::kAllToAll:
      return comm.Collective(CollectiveKind::kAllToAll, point.size_bytes, group).ToSeconds();
    // A pipelined ring broadcast moves what an all-gather of the same size does, within (n-1)/n.
    case ProfiledCollective::kAllGather:
    case ProfiledCollective::kBroadcast:
      return comm.Collective(CollectiveKind::kAllGather, point.size_bytes, group).ToSeconds();
    case ProfiledCollective::kSendRecv:
      return comm.PointToPoint(point.size_bytes, group.Nodes() > 1).ToSeconds();
  }
  return 0.0;
}

// Fills the set-up of a kernel point whose copies hold |copy_bytes|, |fill_bytes| of them random.
PointCost WithFill(double run_s, int64_t copy_bytes, int64_t fill_bytes, const GpuSpec& gpu,
                   bool rotate) {
  const double copies = RotatedCopies(copy_bytes, gpu.l2_cache_bytes, rotate);
  return {run_s,
          kPointSetupS + copies * static_cast<double>(fill_bytes) / (gpu.hbm_bandwidth_GBps * 1e9)};
}

PointCost GemmCost(const GemmShape& g, const RooflineComputeModel& model, const GpuSpec& gpu,
                   bool rotate) {
  if (!gpu.PeakTflops(g.dtype)) return {0, kPointSetupS};
  const int64_t inputs = g.batch * (g.m * g.k + g.k * g.n) * BytesPerElement(g.dtype);
  return WithFill(model.GemmKernel(g).ToSeconds(), inputs, inputs, gpu, rotate);
}

// Random inputs: Q, K, V, and for the backward dO; each rotation set also holds O (and for the
// backward dQ, dK, dV), as sdpa_bench.cc allocates them.
PointCost AttentionCost(const AttentionShape& a, const RooflineComputeModel& model,
                        const GpuSpec& gpu, bool rotate) {
  const int64_t element = BytesPerElement(a.dtype);
  const int64_t q = a.batch * a.heads * a.seq_q * a.head_dim_qk * element;
  const int64_t kv = a.batch * a.kv_heads * a.seq_kv * (a.head_dim_qk + a.head_dim_v) * element;
  const int64_t o = a.batch * a.heads * a.seq_q * a.head_dim_v * element;
  const int64_t fill = q + kv + (a.backward ? o : 0);
  const int64_t set = fill + o + (a.backward ? q + kv : 0);
  PointCost cost = WithFill(model.Attention(a).ToSeconds(), set, fill, gpu, rotate);
  cost.setup_s += kAttentionGraphBuildS;
  return cost;
}

PointCost MemoryCost(const MemoryPoint& m, const RooflineComputeModel& model, const GpuSpec& gpu,
                     bool rotate) {
  const MemoryShape traffic = MemoryKernelTraffic(m.kernel, m.bytes);
  return WithFill(model.MemoryBound(traffic).ToSeconds(),
                  traffic.bytes_read + traffic.bytes_written, traffic.bytes_read, gpu, rotate);
}

PointCost HostCost(const HostPoint& h, const ClusterSpec& cluster) {
  const GpuSpec& gpu = cluster.gpu;
  if (h.measure == HostMeasure::kLaunch) {
    return {kLaunchesPerRun * gpu.calibration.kernel_overhead_us * 1e-6, kPointSetupS};
  }
  const double pcie_bytes_per_s = cluster.host.pcie_bandwidth_GBps * 1e9;
  return {pcie_bytes_per_s > 0 ? static_cast<double>(h.bytes) / pcie_bytes_per_s : 0, kPointSetupS};
}

}  // namespace

Result<ProbeDurationEstimate> EstimateProbeDuration(const std::vector<ProbePoint>& points,
                                                    const BenchSettings& settings,
                                                    const ClusterSpec& cluster) {
  const GpuSpec& gpu = cluster.gpu;
  if (gpu.hbm_bandwidth_GBps <= 0) {
    return Status::InvalidArgument(
        gpu.file + ": hbm_bandwidth_GBps is missing; the probe's estimate needs it");
  }
  const RooflineComputeModel model(gpu);
  const RingCommModel comm(cluster);
  const double runs = static_cast<double>(settings.warmup + settings.repeats);
  ProbeDurationEstimate estimate;
  for (const ProbePoint& point : points) {
    double seconds = 0;
    if (const CollectivePoint* c = std::get_if<CollectivePoint>(&point)) {
      LOOM_ASSIGN_OR_RETURN(double operation_s, CollectiveSeconds(*c, cluster, comm));
      const double batch = static_cast<double>(OperationsPerBatch(c->size_bytes));
      const double operations =
          static_cast<double>(settings.warmup) + static_cast<double>(settings.repeats) * batch;
      // Out of place and in place; the send and receive buffers' fill at the HBM bandwidth.
      seconds = kPointSetupS + 2 * operations * operation_s +
                2 * static_cast<double>(c->size_bytes) / (gpu.hbm_bandwidth_GBps * 1e9);
    } else {
      PointCost cost;
      if (const GemmShape* g = std::get_if<GemmShape>(&point))
        cost = GemmCost(*g, model, gpu, settings.rotate_inputs);
      if (const AttentionShape* a = std::get_if<AttentionShape>(&point)) {
        cost = AttentionCost(*a, model, gpu, settings.rotate_inputs);
      }
      if (const MemoryPoint* m = std::get_if<MemoryPoint>(&point)) {
        cost = MemoryCost(*m, model, gpu, settings.rotate_inputs);
      }
      if (const HostPoint* h = std::get_if<HostPoint>(&point)) cost = HostCost(*h, cluster);
      seconds = cost.setup_s + runs * cost.run_s;
    }
    estimate.kind_s[point.index()] += seconds;
    ++estimate.kind_points[point.index()];
    estimate.total_s += seconds;
  }
  return estimate;
}

}  // namespace loom
