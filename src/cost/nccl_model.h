#ifndef LOOM_COST_NCCL_MODEL_H_
#define LOOM_COST_NCCL_MODEL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/sim_time.h"
#include "cost/comm_model.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// The algorithms of NCCL's tuner that loom models, in NCCL's order (ties go to the first).
enum class NcclAlgorithm { kTree, kRing, kNvls, kNvlsTree, kPat };
inline constexpr EnumNames<NcclAlgorithm, 5> kNcclAlgorithmNames({{
    {NcclAlgorithm::kTree, "Tree"},
    {NcclAlgorithm::kRing, "Ring"},
    {NcclAlgorithm::kNvls, "NVLS"},
    {NcclAlgorithm::kNvlsTree, "NVLSTree"},
    {NcclAlgorithm::kPat, "PAT"},
}});

enum class NcclProtocol { kLl, kLl128, kSimple };
inline constexpr EnumNames<NcclProtocol, 3> kNcclProtocolNames({{
    {NcclProtocol::kLl, "LL"},
    {NcclProtocol::kLl128, "LL128"},
    {NcclProtocol::kSimple, "Simple"},
}});

// The link whose bandwidth limits a transfer, and so the calibration values that apply to it:
// intra_node_* / inter_node_* / nvls_busbw_fraction (NVLS shares intra_node_extra_latency_us).
enum class CommPath { kIntraNode, kInterNode, kNvls };

// One way NCCL can run a collective, with its cost under the model.
struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;  // NCCL's latency, plus the calibrated extra latency
  double algbw_GBps = 0;  // the transfer takes bytes / algbw
  double time_us = 0;
  // The link whose calibrated fraction scales algbw, and the one whose extra latency is in
  // latency_us (none for LL, which takes no extra latency).
  CommPath path = CommPath::kIntraNode;
  CommPath latency_path = CommPath::kIntraNode;
};

// The time of a bulk transfer split into what a fit solves for:
//   time_us = nccl_latency_us + extra latency of LatencyPath() + nominal_transfer_us / fraction of
//   |path|.
struct LinearTimeTerms {
  CommPath path = CommPath::kIntraNode;
  // The path whose extra latency applies when it is not |path|: NVLSTree crosses the network
  // whichever link bounds its bandwidth.
  std::optional<CommPath> latency_path;
  // Whether the extra latency applies at all: not to the LL protocol.
  bool extra_latency = true;
  double nccl_latency_us = 0;      // NCCL's latency model alone, no calibration
  double nominal_transfer_us = 0;  // bytes over the nominal (uncalibrated) bandwidth

  CommPath LatencyPath() const { return latency_path.value_or(path); }
};

// The CTAs NCCL's kernel for |kind| over |group| runs on |cluster|, one per channel (NCCL
// ncclLaunchKernel, src/enqueue.cc: a grid of one block per channel of the plan): the cluster
// file's intra_node.nvls_channels where NCCL runs NVLS (NcclCommModel::NvlsAvailable), its
// intra_node or inter_node nccl_channels otherwise; |key| names the one it read. All of them, as
// NCCL uses for the bucket-sized messages of training (it runs fewer channels below some hundreds
// of KiB per rank). |ctas| is nullopt where the file does not say; |key| is empty for a group of
// one rank and for all-to-all (NCCL's p2p kernels), which hold none here.
struct NcclCtaCount {
  std::optional<int64_t> ctas;
  std::string_view key;
};
NcclCtaCount NcclCtas(const ClusterSpec& cluster, CollectiveKind kind, GroupPlacement group);

// NCCL's own cost model (the tuner of src/graph/tuning.cc, NCCL 2.20.3; PAT, added in 2.23, from a
// later 2.2x release), per collective: for every (algorithm, protocol) pair NCCL could use, a base
// latency plus per-step
// hardware latencies (intra-node steps over NVLink or PCI, inter-node steps over the network) plus
// bytes over the algorithm bandwidth (bus bandwidth times NCCL's ratio); NCCL's tuner runs the
// fastest, and so does this model.
//   Ring: all-reduce, all-gather, reduce-scatter; LL, LL128 (NVLink only), Simple.
//   Tree: all-reduce; LL, LL128, Simple.
//   NVLS: all-reduce, all-gather, reduce-scatter within one node whose NVSwitches have NVLink
//         SHARP (intra_node.nvlink_sharp); Simple.
//   NVLSTree: all-reduce across such nodes with at least 2 ranks on each: NVLS inside the node,
//         a tree between nodes; Simple.
//   PAT:  all-gather, reduce-scatter across nodes with one GPU per node; Simple.
// All-to-all runs as NCCL runs it, point-to-point sends to every peer: n-1 steps of send latency
// and (n-1)/n of the bytes, the remote share over the NIC and the local share over NVLink.
// The bus bandwidth is the nominal bandwidth of the cluster file (intra_node.bandwidth_GBps in a
// node; across nodes the NICs the group reaches, below) times the calibrated fraction, 1 where
// the file has no "calibration".
// Across nodes a group crosses the node boundary on the NICs of its own members: NCCL's graph
// search (src/graph/search.cc) builds a ring's or tree's channels through the NIC closest to each
// GPU, one channel per NIC pair, and its tuner (src/graph/tuning.cc) charges busBw = nChannels x
// the per-channel bandwidth. So a group with k ranks on each node moves its inter-node traffic over
// k GPUs' shares of the node's NICs (one rail NIC each on DGX systems): its bus bandwidth is
// min(k x NIC share x inter-node fraction, intra-node bus bandwidth), the intra-node bandwidth
// bounding the NVLink hops between the k members. The sibling groups of the node (the other tp
// ranks' data-parallel groups, say) use the other NICs at the same time, which is why the share is
// per GPU. Tree and PAT take the same bandwidth; NVLSTree doubles it for 2 nodes, as NCCL's tuner
// does (the 2 nodes swap their reduced data once each way).
// Not modelled: NCCL's per-channel caps, the CPU vendor (NCCL's network overhead is taken as
// Intel's), CollNet, and the cluster's latency_us keys (the latencies are NCCL's tables).
class NcclCommModel : public CommModel {
 public:
  // |nvls_enabled| false is NCCL run with NCCL_NVLS_ENABLE=0: neither NVLS nor NVLSTree.
  explicit NcclCommModel(const ClusterSpec& cluster, bool nvls_enabled = true);

  SimTime Collective(CollectiveKind kind, int64_t bytes, GroupPlacement group) const override;
  SimTime PointToPoint(int64_t bytes, bool across_nodes) const override;

  // Collective() and PointToPoint() in microseconds, before rounding to nanoseconds.
  double CollectiveUs(CollectiveKind kind, int64_t bytes, GroupPlacement group) const;
  double PointToPointUs(int64_t bytes, bool across_nodes) const;

  // Every (algorithm, protocol) pair NCCL considers for |kind| over |group|, costed for |bytes|
  // (nccl-tests' size convention), in NCCL's order. Empty for all-to-all (not a tuned
  // collective) and for a group of one rank.
  std::vector<NcclChoice> Choices(CollectiveKind kind, int64_t bytes, GroupPlacement group) const;

  // The fastest of Choices(), the first of equals, as NCCL's tuner picks.
  // REQUIRES: kind != kAllToAll, group.ranks >= 2.
  NcclChoice Choose(CollectiveKind kind, int64_t bytes, GroupPlacement group) const;

  // The cost of |kind| with the algorithm NCCL uses for large messages (NVLS within a node and
  // NVLSTree across nodes where available, else Ring; point-to-point for all-to-all) and the Simple
  // protocol, split for fitting.
  // CollectiveUs() equals it wherever that choice is the fastest. REQUIRES: group.ranks >= 2.
  LinearTimeTerms BulkTerms(CollectiveKind kind, int64_t bytes, GroupPlacement group) const;
  // PointToPointUs() split the same way.
  LinearTimeTerms PointToPointTerms(int64_t bytes, bool across_nodes) const;
  // |choice| (one of Choices() for |bytes|) split the same way: what a fit uses for a row the
  // model runs with another algorithm or protocol than the bulk one.
  LinearTimeTerms ChoiceTerms(const NcclChoice& choice, int64_t bytes) const;

  // Whether NCCL runs |kind| over |group| with NVLS on this cluster: within one node whose
  // NVSwitches have NVLink SHARP, over more than kNvlsMinRanks ranks. NCCL sets up the multicast
  // group for fewer but its tuner never picks NVLS there (8x H200, NCCL 2.27.7: Ring at 4 GPUs,
  // NVLS from 5, stas00/ml-engineering network/README.md at 744d01e1, section SHARP; NVIDIA's GB200
  // NVL partition guide: partitions of four GPUs or fewer "will not benefit from multicast").
  bool NvlsAvailable(CollectiveKind kind, GroupPlacement group) const;
  static constexpr int64_t kNvlsMinRanks = 4;

 private:
  double NominalGBps(CommPath path) const;
  double BandwidthGBps(CommPath path) const;
  double ExtraLatencyUs(CommPath path) const;
  // The group's bus bandwidth on |path|: across nodes its members' NIC shares (see the class
  // comment); nominal, or times the calibrated fraction.
  double GroupNominalGBps(CommPath path, GroupPlacement group) const;
  double GroupBandwidthGBps(CommPath path, GroupPlacement group) const;
  CommPath NetworkPath(GroupPlacement group) const;
  bool NvlsTreeAvailable(CollectiveKind kind, GroupPlacement group) const;
  // NCCL's NVLSTree latency over |group|'s nodes.
  static double NvlsTreeLatencyUs(GroupPlacement group);
  // NVLSTree's algorithm bandwidth and the path that bounds it; |nominal| leaves out calibration.
  std::pair<CommPath, double> NvlsTreeAlgbw(GroupPlacement group, bool nominal) const;
  // |path| scales the bandwidth and |latency_path| (|path| when absent) names the extra latency.
  NcclChoice Costed(NcclAlgorithm algorithm, NcclProtocol protocol, double nccl_latency_us,
                    double algbw_GBps, CommPath path, int64_t bytes,
                    std::optional<CommPath> latency_path = std::nullopt) const;
  void AddRing(CollectiveKind kind, int64_t bytes, GroupPlacement group,
               std::vector<NcclChoice>* out) const;
  void AddTree(int64_t bytes, GroupPlacement group, std::vector<NcclChoice>* out) const;
  double RingLatencyUs(CollectiveKind kind, GroupPlacement group, NcclProtocol protocol) const;
  double AllToAllLatencyUs(GroupPlacement group) const;
  LinearTimeTerms AllToAllTerms(int64_t bytes, GroupPlacement group) const;

  int intra_link_;  // row of NCCL's hardware latency table: NVLink or PCI
  bool nvlink_sharp_;
  double nominal_intra_GBps_;
  double nominal_nic_GBps_;
  CommCalibration calibration_;
};

// HBM bytes one rank's memory serves per byte of |kind|'s message (nccl-tests' size convention)
// under |algorithm| over |ranks| ranks, counted from the primitives NCCL's kernels run
// (NVIDIA/nccl 5067397c, src/device/all_reduce.h, all_gather.h, reduce_scatter.h) with buffers
// the user has not registered, so every transfer passes through the receiver's connection FIFO:
// a step writes the FIFO (the sender, over NVLink or the NIC's DMA) and the receiver reads it
// back; a send reads the user's source, a final step writes the user's destination.
//   Ring all-reduce: directSend, n-2 x directRecvReduceDirectSend, directRecvReduceCopyDirectSend,
//     n-2 x directRecvCopyDirectSend, directRecv on chunks of S/n: source read S, destination
//     written S, 2(n-1) chunks through the FIFO (written and read): 2 + 4(n-1)/n per byte.
//   Ring all-gather and reduce-scatter: n-1 chunks through the FIFO, one chunk (all-gather) or
//     all n (reduce-scatter) read from the source, n chunks (all-gather) or one (reduce-scatter)
//     written to the destination: (3n-1)/n per byte.
//   NVLS (NVLink SHARP): the source scattered into the multicast buffer (read S, written S), the
//     switch's multimem load-reduce reading it (S) and its multicast store writing the result
//     (S), then gathered out (read S, written S): 6 per byte for all-reduce; all-gather and
//     reduce-scatter half of that, 3.
//   Tree and PAT are counted as Ring (they pass each chunk through FIFOs as often, within a
//     factor NCCL's chunking sets); they run across nodes, where the NIC bounds their rate.
// REQUIRES: ranks >= 2, kind != kAllToAll.
double NcclHbmBytesPerByte(CollectiveKind kind, NcclAlgorithm algorithm, int64_t ranks);

// The share of its GPU's HBM bandwidth (|gpu|'s datasheet bandwidth times its streaming
// memory_bandwidth_fraction) that |kind| over |group| takes while it runs alone at the rate
// |model| gives a bulk message (kHbmShareMessageBytes, the scale of a gradient bucket or a
// layer's weights): NcclHbmBytesPerByte of the algorithm NCCL picks times its algbw. At most 0.9;
// 0 for a group of one rank and for all-to-all.
inline constexpr int64_t kHbmShareMessageBytes = int64_t{256} << 20;
double NcclHbmShare(const NcclCommModel& model, const GpuSpec& gpu, CollectiveKind kind,
                    GroupPlacement group);

}  // namespace loom

#endif  // LOOM_COST_NCCL_MODEL_H_
