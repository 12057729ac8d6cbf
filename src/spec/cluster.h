#ifndef LOOM_SPEC_CLUSTER_H_
#define LOOM_SPEC_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/status.h"
#include "spec/gpu_calibration.h"
#include "spec/reliability.h"

namespace loom {

// Datasheet description of one GPU (hardware/gpus/*.json, schema "loom.gpu/1").
struct GpuSpec {
  std::string name;
  std::string file;
  int64_t sm_count = 0;
  int64_t memory_bytes = 0;
  double hbm_bandwidth_GBps = 0;
  int64_t l2_cache_bytes = 0;
  // Dense tensor-core peaks in TFLOP/s (no sparsity); nullopt where the GPU lacks the format.
  std::optional<double> bf16_tflops, fp16_tflops, fp8_tflops, tf32_tflops, fp32_tflops;
  // NVLink bandwidth of one GPU, one direction.
  double nvlink_bandwidth_GBps = 0;
  // CUDA compute capability (8.0 A100, 9.0 H100/H200, 10.0 B200/GB200): frameworks choose their
  // attention kernel by it (FrameworkProfile::fused_attention). Optional; nullopt: not stated.
  std::optional<double> compute_capability;
  // Fitted compute-model parameters (the file's optional "calibration" object).
  ComputeCalibration calibration;

  // The dense peak for |dtype|, or nullopt if the datasheet has none.
  std::optional<double> PeakTflops(Dtype dtype) const;
};

enum class IntraNodeFabric { kNvSwitch, kPcie };
inline constexpr EnumNames<IntraNodeFabric, 2> kFabricNames({{
    {IntraNodeFabric::kNvSwitch, "nvswitch"},
    {IntraNodeFabric::kPcie, "pcie"},
}});

enum class NetworkTopology { kFatTree, kRailOptimized };
inline constexpr EnumNames<NetworkTopology, 2> kTopologyNames({{
    {NetworkTopology::kFatTree, "fat-tree"},
    {NetworkTopology::kRailOptimized, "rail-optimized"},
}});

struct IntraNode {
  IntraNodeFabric fabric = IntraNodeFabric::kNvSwitch;
  double bandwidth_GBps = 0;  // per GPU, one direction
  double latency_us = 0;
  // The NVSwitches reduce and multicast in the switch (NVLink SHARP, third-generation NVSwitch:
  // H100/H200 HGX boards, not A100), which lets NCCL run its NVLS algorithm. Optional, false.
  bool nvlink_sharp = false;
  // CTAs (one per channel) of an NCCL collective kernel inside a node: Ring and Tree
  // ("nccl_channels", NCCL_DEBUG=INFO's "coll channels") and NVLS ("nvls_channels"). Each holds
  // an SM while the collective runs (sim/engine.h). Optional: absent, loom does not slow the
  // compute that runs beside such collectives, and says so.
  std::optional<int64_t> nccl_channels = std::nullopt;
  std::optional<int64_t> nvls_channels = std::nullopt;
};

struct InterNode {
  int64_t nics_per_node = 0;
  double nic_bandwidth_Gbps = 0;  // one NIC, one direction, line rate
  double latency_us = 0;
  NetworkTopology topology = NetworkTopology::kFatTree;
  double oversubscription = 1.0;  // >= 1; 1 = full bisection bandwidth
  // CTAs of an NCCL collective kernel whose group spans nodes (IntraNode::nccl_channels).
  std::optional<int64_t> nccl_channels = std::nullopt;
};

// Fitted parameters of the communication model (NcclCommModel): the cluster file's optional
// "calibration" object, every value from a public table or a profile named in |source|. A value
// left out takes its nominal default: the full link bandwidth (fraction 1) and NCCL's own
// latencies (no extra latency).
struct CommCalibration {
  // Fraction of the nominal bus bandwidth that Ring, Tree, all-to-all and send/recv reach inside
  // a node (of intra_node.bandwidth_GBps) and across nodes (of the GPU's share of its node's NICs).
  std::optional<double> intra_node_busbw_fraction;
  std::optional<double> inter_node_busbw_fraction;
  // Fraction of NCCL's nominal NVLS bandwidth (intra_node.bandwidth_GBps) that NVLS reaches.
  std::optional<double> nvls_busbw_fraction;
  // Time per collective beyond NCCL's latency model (pipeline fill, channel ramp-up), added to the
  // LL128 and Simple protocols of collectives within a node (NVLS included) or spanning nodes.
  std::optional<double> intra_node_extra_latency_us;
  std::optional<double> inter_node_extra_latency_us;
  // Where the numbers come from.
  std::string source;
  // The reference tables the values were fitted on, as the file names of tests/reference/
  // ("nccl_allreduce_8gpu.csv"): what a leave-one-source-out check must refit without. Empty when
  // the values were not fitted on a published table.
  std::vector<std::string> fitted_on;
};

struct Host {
  double pcie_bandwidth_GBps = 0;  // GPU <-> host, one direction, per GPU
  int64_t cpu_memory_bytes = 0;    // per node
  // CPU DRAM bandwidth of the node, all sockets, reads and writes together: what a CPU optimizer
  // step (ZeRO-Offload) is bound by. Optional; only offload needs it.
  std::optional<double> memory_bandwidth_GBps;
};

// Nodes of one GPU type within a heterogeneous cluster (one entry of the file's "node_groups").
struct NodeGroup {
  GpuSpec gpu;
  int64_t nodes = 0;  // of ClusterSpec::gpus_per_node GPUs each
};

// A cluster (hardware/clusters/*.json, schema "loom.cluster/1"): nodes of identical GPUs, or with
// "node_groups" groups of nodes of different GPUs (A100 and H100 nodes in one fleet).
struct ClusterSpec {
  std::string name;
  std::string file;
  // The GPU of every node; in a heterogeneous cluster the first group's (what the uses that need
  // one GPU for the whole cluster, a describe or a fit, take). Whatever runs on particular ranks
  // takes the GPU of their group instead: GpuOfRank here, GpuOfStage (spec/stage_gpus.h).
  GpuSpec gpu;
  // Heterogeneous clusters: the file's "node_groups", in its order, in place of its "gpu" and
  // "nodes"; empty for a cluster of one GPU type. The groups hold consecutive GPU ranks in that
  // order (group 0 ranks [0, nodes_0 * gpus_per_node), group 1 the next, ...), |gpu| is the first
  // group's GPU and |nodes| the groups' sum. Everything else in the file is the whole cluster's:
  // gpus_per_node, the fabrics and the host. A mixed fleet shares one network (the NICs, the
  // switches and their calibration), so inter_node holds; its NVLink differs per GPU generation,
  // so intra_node.bandwidth_GBps is the fastest group's and each group's collectives run at the
  // lesser of it and its GPU's nvlink_bandwidth_GBps (sim/stage_models.h). Still shared, an
  // approximation: nvlink_sharp, the intra-node calibration, the host's PCIe and CPU memory.
  std::vector<NodeGroup> node_groups;
  // GPUs in one node (host): what the per-node keys below (NICs, host memory) are shared by.
  int64_t gpus_per_node = 0;
  // GPUs that reach one another over NVLink switches (the scale-up domain): the file's optional
  // "nvlink_domain_gpus", a multiple of gpus_per_node; unset means one node. Larger than a node
  // only on rack-scale NVLink systems (GB200 NVL72: 72 GPUs on 18 compute trays of 4).
  std::optional<int64_t> nvlink_domain_gpus;
  std::optional<int64_t> nodes;  // from the file's "nodes" or the command line
  IntraNode intra_node;
  InterNode inter_node;
  Host host;
  CommCalibration calibration;
  // What one GPU-hour of this cluster costs, in US dollars (the file's optional
  // "price_per_gpu_hour_usd"): `loom plan` turns GPU-hours into dollars with it. Unset: no price.
  std::optional<double> price_per_gpu_hour_usd;
  // Failure rates, checkpoint storage and restart time (the file's optional "reliability"
  // object): what `loom simulate`'s goodput and `loom plan --objective goodput` need. Unset: none.
  std::optional<Reliability> reliability;

  // gpus_per_node * nodes, or nullopt when the node count is not known.
  std::optional<int64_t> TotalGpus() const;
  // The node group that holds GPU rank |rank| (an index into node_groups), 0 in a cluster of one
  // GPU type. A rank past the groups' last GPU gets the last group. REQUIRES: rank >= 0.
  int64_t NodeGroupOfRank(int64_t rank) const;
  // The GPU of rank |rank|: its node group's, or |gpu| in a cluster of one GPU type.
  const GpuSpec& GpuOfRank(int64_t rank) const;
  // GPUs of one NVLink domain: nvlink_domain_gpus, or gpus_per_node when unset. A communicator
  // whose members share a domain runs over NVLink (the "intra_node" keys, the model's intra-node
  // path); one that spans domains runs over the NICs. Tensor and expert-tensor parallelism stay
  // within it. Host-side quantities (NIC share, PCIe or C2C link, CPU memory) stay per node.
  int64_t NvlinkDomainGpus() const;
  // The tensor-parallel degrees that split evenly within an NVLink domain: the divisors of
  // NvlinkDomainGpus(), ascending. What `loom plan` searches and `loom probe --for-model` measures
  // shapes for.
  std::vector<int64_t> TensorParallelDegrees() const;
};

// How messages name the hardware: a cluster by its file, else its name, else "the cluster"; a GPU
// by its name (or "the GPU") followed by its file in parentheses when it has one.
std::string ClusterRef(const ClusterSpec& cluster);
std::string GpuRef(const GpuSpec& gpu);
// The cluster's GPUs by name for a title: its GPU's name, or with node groups the groups' names
// joined by " + " in the file's order.
std::string GpuNames(const ClusterSpec& cluster);

// Reads a GPU file.
Result<GpuSpec> LoadGpuSpec(const std::string& path);

// Reads a cluster file and the GPU files it names (paths relative to the cluster file's folder).
// |nodes|, when given, overrides the file's "nodes"; with "node_groups" it may only lower their
// sum (the ranks then fill the groups in the file's order).
Result<ClusterSpec> LoadClusterSpec(const std::string& path,
                                    std::optional<int64_t> nodes = std::nullopt);

}  // namespace loom

#endif  // LOOM_SPEC_CLUSTER_H_
