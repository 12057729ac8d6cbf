#include "cost/nccl_model.h"

#include <algorithm>

#include "core/memory_access.h"

namespace loom {
namespace {

// Constants of NCCL's tuner, NCCL 2.20.3: NVIDIA/nccl src/graph/tuning.cc at commit b6475625
// (makefiles/version.mk there reads 2.20.3), the release read closest to the NCCL 2.18.5 of
// tests/reference/nccl_allreduce_8gpu.csv. Rows are indexed by these enums.
enum Link { kNvlink = 0, kPci = 1, kNet = 2 };
enum TableAlgorithm { kTreeRow = 0, kRingRow = 1 };

// baseLat, us: [Tree, Ring][LL, LL128, Simple].
constexpr double kBaseLatencyUs[2][3] = {{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}};
// hwLat, us per step: [NVLink, PCI, network][Tree, Ring][LL, LL128, Simple].
constexpr double kHwLatencyUs[3][2][3] = {
    {{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}},
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}},
};
// hwLat[NVLINK][NVLS][Simple]: with baseLat 0 the whole latency of NVLS within one node.
constexpr double kNvlsLatencyUs = 23.0;
// getNetOverhead(): 1 us per network operation on Intel CPUs and by default (loom does not know
// the CPU vendor), tripled for Simple; an inter-node ring's intra-node step is at least this.
constexpr double kNetOverheadUs = 1.0;
// ncclTopoGetAlgoTime(): "Plateau effect of ring", latency x1.4 for a Ring/Simple all-reduce
// across nodes on compute capability >= 8.0. Its size condition (64 B per channel and rank)
// holds for every message where Simple can win, so it is applied throughout.
constexpr double kRingPlateauFactor = 1.4;
// Bus-bandwidth factors of ncclTopoTuneModel().
constexpr double kRingLlFactorAllReduce = 1.0 / 4.0;  // also any ring across nodes
constexpr double kRingLlFactorOther = 1.0 / 3.0;
constexpr double kRingLl128Factor = 0.92;  // 120/128 of the line is payload
constexpr double kRingLl128FactorOneRankPerNode =
    0.7;  // ppn < 2: the GPU sends and receives via its NIC
constexpr double kTreeFactor = 0.92;
constexpr double kTreeLlFactor = 1.0 / 3.8;
constexpr double kTreeLl128FactorOneNode = 7.0 / 9.0;
constexpr double kTreeLl128FactorNodes = 120.0 / 128.0;
constexpr double kTreeAlgbwRatio = 0.5;        // bus to algorithm bandwidth, "ratio = .5"
constexpr double kNvlsAlgbwRatio = 5.0 / 6.0;  // NVLS and NVLSTree
// NVLSTree (all-reduce across nodes with NVLS inside each): baseLat 0, hwLat[NVLINK][NVLSTree]
// [Simple] 23 us once, hwLat[NET][NVLSTree][Simple] 14 us per tree level each way (2.20.3). Its
// bandwidth is the form of NCCL 2.30.7 (src/graph/tuning.cc at commit 5067397c): the members'
// NICs times 2 for 2 nodes (the nodes swap their reduced data once each way) and 1 beyond (a
// double binary tree's inner node forwards its data up and down), times nRanks / nsteps; 2.20.3
// halved the NICs beyond 2 nodes and then took 5/6, which undercuts the ring it replaces there.
// Within the node it runs at NVLS's bandwidth.
constexpr double kNvlsTreeIntraLatencyUs = 23.0;
constexpr double kNvlsTreeNetLatencyUs = 14.0;
// treeCorrectionFactor[protocol][log2(bytes >> 6)]: powers of two from 64 B to 256 MB; 1 beyond.
constexpr int kTreeCorrectionSizes = 23;
constexpr double kTreeCorrection[3][kTreeCorrectionSizes] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};
// PAT is newer than 2.20.3 (added in NCCL 2.23); these are from a later 2.2x src/graph/tuning.cc
// (one with PAT and Blackwell rows). Latency 8 us + log2(nodes) * interLat / 3.5 + ranks * 2.8 us,
// where with one GPU per node interLat is hwLat[NET][Tree][Simple], 14 us in that release; bus
// bandwidth x0.75, used as the algorithm bandwidth.
constexpr double kPatBaseLatencyUs = 8.0;
constexpr double kPatNetLatencyUs = 14.0;
constexpr double kPatLogDivisor = 3.5;
constexpr double kPatPerRankLatencyUs = 2.8;
constexpr double kPatFactor = 0.75;

// floor(log2(value)), 0 for values below 2: NCCL's log2i().
int Log2Floor(int64_t value) {
  int log = 0;
  while (value > 1) {
    value >>= 1;
    ++log;
  }
  return log;
}

// Microseconds to move |bytes| at |GBps| (1 GB/s = 1e3 bytes per microsecond).
double TransferUs(int64_t bytes, double GBps) { return static_cast<double>(bytes) / (GBps * 1e3); }

// Ring steps of |kind| over |ranks| ranks (NCCL's nsteps).
int64_t RingSteps(CollectiveKind kind, int64_t ranks) {
  return kind == CollectiveKind::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
}

// Steps that cross the network. All-reduce: 2(nodes-1), the count of NCCL 2.23; 2.20.3 counted
// 2*nodes, which exceeds nsteps with one rank per node.
int64_t RingInterSteps(CollectiveKind kind, int64_t nodes) {
  return kind == CollectiveKind::kAllReduce ? 2 * (nodes - 1) : nodes - 1;
}

bool ReducesOrGathers(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter;
}

// NcclCommModel::NvlsAvailable on a cluster whose NVSwitches have NVLink SHARP or not.
bool NvlsRuns(bool nvlink_sharp, CollectiveKind kind, GroupPlacement group) {
  return nvlink_sharp && ReducesOrGathers(kind) && group.ranks > NcclCommModel::kNvlsMinRanks &&
         group.Nodes() == 1;
}

}  // namespace

NcclCommModel::NcclCommModel(const ClusterSpec& cluster, bool nvls_enabled)
    : intra_link_(cluster.intra_node.fabric == IntraNodeFabric::kNvSwitch ? kNvlink : kPci),
      nvlink_sharp_(nvls_enabled && cluster.intra_node.fabric == IntraNodeFabric::kNvSwitch &&
                    cluster.intra_node.nvlink_sharp),
      nominal_intra_GBps_(cluster.intra_node.bandwidth_GBps),
      calibration_(cluster.calibration) {
  // Every GPU of a node communicates at once (all its groups run together), so each gets its
  // node's NIC bandwidth over the GPUs per node: one rail NIC per GPU on DGX systems. NICs belong
  // to the host (a GB200 NVL72 tray has its own), so this is gpus_per_node, not the NVLink domain.
  const InterNode& net = cluster.inter_node;
  nominal_nic_GBps_ = static_cast<double>(net.nics_per_node) * net.nic_bandwidth_Gbps / 8.0 /
                      static_cast<double>(cluster.gpus_per_node) / net.oversubscription;
}

double NcclCommModel::NominalGBps(CommPath path) const {
  return path == CommPath::kInterNode ? nominal_nic_GBps_ : nominal_intra_GBps_;
}

double NcclCommModel::BandwidthGBps(CommPath path) const {
  switch (path) {
    case CommPath::kIntraNode:
      return NominalGBps(path) * calibration_.intra_node_busbw_fraction.value_or(1.0);
    case CommPath::kInterNode:
      return NominalGBps(path) * calibration_.inter_node_busbw_fraction.value_or(1.0);
    case CommPath::kNvls:
      return NominalGBps(path) * calibration_.nvls_busbw_fraction.value_or(1.0);
  }
  return NominalGBps(path);
}

double NcclCommModel::GroupNominalGBps(CommPath path, GroupPlacement group) const {
  if (path != CommPath::kInterNode) return NominalGBps(path);
  return NominalGBps(path) * static_cast<double>(group.ranks_per_node);
}

double NcclCommModel::GroupBandwidthGBps(CommPath path, GroupPlacement group) const {
  return GroupNominalGBps(path, group) * BandwidthGBps(path) / NominalGBps(path);
}

double NcclCommModel::ExtraLatencyUs(CommPath path) const {
  return path == CommPath::kInterNode ? calibration_.inter_node_extra_latency_us.value_or(0.0)
                                      : calibration_.intra_node_extra_latency_us.value_or(0.0);
}

// A group spanning nodes moves its data over its members' NICs unless those are together faster
// than the calibrated intra-node bandwidth; the slower one limits it.
CommPath NcclCommModel::NetworkPath(GroupPlacement group) const {
  if (group.Nodes() == 1) return CommPath::kIntraNode;
  return GroupBandwidthGBps(CommPath::kInterNode, group) < BandwidthGBps(CommPath::kIntraNode)
             ? CommPath::kInterNode
             : CommPath::kIntraNode;
}

bool NcclCommModel::NvlsTreeAvailable(CollectiveKind kind, GroupPlacement group) const {
  return nvlink_sharp_ && kind == CollectiveKind::kAllReduce && group.Nodes() > 1 &&
         group.ranks_per_node >= 2;
}

double NcclCommModel::NvlsTreeLatencyUs(GroupPlacement group) {
  return kNvlsTreeIntraLatencyUs +
         2.0 * static_cast<double>(Log2Floor(group.Nodes())) * kNvlsTreeNetLatencyUs;
}

std::pair<CommPath, double> NcclCommModel::NvlsTreeAlgbw(GroupPlacement group, bool nominal) const {
  const double ranks = static_cast<double>(group.ranks);
  const double tree_share = (group.Nodes() <= 2 ? 2.0 : 1.0) * ranks / (2.0 * (ranks - 1.0));
  const double inter = (nominal ? GroupNominalGBps(CommPath::kInterNode, group)
                                : GroupBandwidthGBps(CommPath::kInterNode, group)) *
                       tree_share;
  const double intra = nominal ? NominalGBps(CommPath::kNvls) : BandwidthGBps(CommPath::kNvls);
  // The calibrated bandwidths decide which path bounds it, for the nominal value too.
  const bool inter_bound = GroupBandwidthGBps(CommPath::kInterNode, group) * tree_share <
                           BandwidthGBps(CommPath::kNvls) * kNvlsAlgbwRatio;
  return {inter_bound ? CommPath::kInterNode : CommPath::kNvls,
          inter_bound ? inter : intra * kNvlsAlgbwRatio};
}

bool NcclCommModel::NvlsAvailable(CollectiveKind kind, GroupPlacement group) const {
  return NvlsRuns(nvlink_sharp_, kind, group);
}

NcclCtaCount NcclCtas(const ClusterSpec& cluster, CollectiveKind kind, GroupPlacement group) {
  if (group.ranks < 2 || kind == CollectiveKind::kAllToAll) return {};
  if (group.Nodes() > 1) return {cluster.inter_node.nccl_channels, "inter_node.nccl_channels"};
  if (NvlsRuns(cluster.intra_node.nvlink_sharp, kind, group)) {
    return {cluster.intra_node.nvls_channels, "intra_node.nvls_channels"};
  }
  return {cluster.intra_node.nccl_channels, "intra_node.nccl_channels"};
}

// The measured collectives run slower than NCCL's latencies at mid sizes (pipeline fill, fewer
// channels); the calibrated extra latency carries that for the chunked protocols. LL is latency
// bound, the regime NCCL's constants were set for, and takes none.
NcclChoice NcclCommModel::Costed(NcclAlgorithm algorithm, NcclProtocol protocol,
                                 double nccl_latency_us, double algbw_GBps, CommPath path,
                                 int64_t bytes, std::optional<CommPath> latency_path) const {
  NcclChoice choice;
  choice.algorithm = algorithm;
  choice.protocol = protocol;
  choice.path = path;
  choice.latency_path = latency_path.value_or(path);
  choice.latency_us =
      nccl_latency_us + (protocol == NcclProtocol::kLl ? 0.0 : ExtraLatencyUs(choice.latency_path));
  choice.algbw_GBps = algbw_GBps;
  choice.time_us = choice.latency_us + TransferUs(bytes, algbw_GBps);
  return choice;
}

LinearTimeTerms NcclCommModel::ChoiceTerms(const NcclChoice& choice, int64_t bytes) const {
  LinearTimeTerms terms;
  terms.path = choice.path;
  terms.latency_path = choice.latency_path;
  terms.extra_latency = choice.protocol != NcclProtocol::kLl;
  terms.nccl_latency_us =
      choice.latency_us - (terms.extra_latency ? ExtraLatencyUs(choice.latency_path) : 0.0);
  // The calibrated algbw over the path's calibrated fraction: the nominal algbw.
  const double nominal_algbw =
      choice.algbw_GBps * NominalGBps(choice.path) / BandwidthGBps(choice.path);
  terms.nominal_transfer_us = TransferUs(bytes, nominal_algbw);
  return terms;
}

double NcclCommModel::RingLatencyUs(CollectiveKind kind, GroupPlacement group,
                                    NcclProtocol protocol) const {
  const int p = static_cast<int>(protocol);
  const int64_t nodes = group.Nodes();
  const int64_t steps = RingSteps(kind, group.ranks);
  const int64_t inter_steps = RingInterSteps(kind, nodes);
  double intra_us = kHwLatencyUs[intra_link_][kRingRow][p];
  if (nodes > 1) {
    intra_us = std::max(intra_us, kNetOverheadUs * (protocol == NcclProtocol::kSimple ? 3.0 : 1.0));
  }
  double latency_us = kBaseLatencyUs[kRingRow][p] +
                      static_cast<double>(steps - inter_steps) * intra_us +
                      static_cast<double>(inter_steps) * kHwLatencyUs[kNet][kRingRow][p];
  if (nodes > 1 && kind == CollectiveKind::kAllReduce && protocol == NcclProtocol::kSimple) {
    latency_us *= kRingPlateauFactor;
  }
  return latency_us;
}

void NcclCommModel::AddRing(CollectiveKind kind, int64_t bytes, GroupPlacement group,
                            std::vector<NcclChoice>* out) const {
  const CommPath path = NetworkPath(group);
  const double busbw = GroupBandwidthGBps(path, group);
  const bool multi_node = group.Nodes() > 1;
  const double ratio =
      static_cast<double>(group.ranks) / static_cast<double>(RingSteps(kind, group.ranks));
  const double ll = (multi_node || kind == CollectiveKind::kAllReduce) ? kRingLlFactorAllReduce
                                                                       : kRingLlFactorOther;
  const double ll128 = group.ranks_per_node < 2 ? kRingLl128FactorOneRankPerNode : kRingLl128Factor;
  for (NcclProtocol protocol : {NcclProtocol::kLl, NcclProtocol::kLl128, NcclProtocol::kSimple}) {
    // LL128 is enabled by default only over NVLink (ncclTopoTuneModel, typeIntra <= PATH_NVB).
    if (protocol == NcclProtocol::kLl128 && intra_link_ != kNvlink) continue;
    const double factor = protocol == NcclProtocol::kLl      ? ll
                          : protocol == NcclProtocol::kLl128 ? ll128
                                                             : 1.0;
    out->push_back(Costed(NcclAlgorithm::kRing, protocol, RingLatencyUs(kind, group, protocol),
                          busbw * factor * ratio, path, bytes));
  }
}

void NcclCommModel::AddTree(int64_t bytes, GroupPlacement group,
                            std::vector<NcclChoice>* out) const {
  const int64_t nodes = group.Nodes();
  const CommPath path = NetworkPath(group);
  const double tree_busbw = GroupBandwidthGBps(path, group);
  const int log_size = Log2Floor(bytes >> 6);
  for (NcclProtocol protocol : {NcclProtocol::kLl, NcclProtocol::kLl128, NcclProtocol::kSimple}) {
    if (protocol == NcclProtocol::kLl128 && intra_link_ != kNvlink) continue;
    const int p = static_cast<int>(protocol);
    double busbw = tree_busbw * kTreeFactor;
    if (protocol == NcclProtocol::kLl) busbw *= kTreeLlFactor;
    if (protocol == NcclProtocol::kLl128) {
      busbw *= nodes == 1 ? kTreeLl128FactorOneNode : kTreeLl128FactorNodes;
    }
    double algbw = busbw * kTreeAlgbwRatio;
    if (log_size < kTreeCorrectionSizes) algbw *= kTreeCorrection[p][log_size];
    const double latency_us =
        kBaseLatencyUs[kTreeRow][p] +
        2.0 * (static_cast<double>(group.ranks_per_node - 1) *
                   kHwLatencyUs[intra_link_][kTreeRow][p] +
               static_cast<double>(Log2Floor(nodes)) * kHwLatencyUs[kNet][kTreeRow][p]);
    out->push_back(Costed(NcclAlgorithm::kTree, protocol, latency_us, algbw, path, bytes));
  }
}

std::vector<NcclChoice> NcclCommModel::Choices(CollectiveKind kind, int64_t bytes,
                                               GroupPlacement group) const {
  std::vector<NcclChoice> out;
  if (group.ranks <= 1 || kind == CollectiveKind::kAllToAll) return out;
  if (kind == CollectiveKind::kAllReduce) AddTree(bytes, group, &out);
  AddRing(kind, bytes, group, &out);
  if (NvlsAvailable(kind, group)) {
    out.push_back(Costed(NcclAlgorithm::kNvls, NcclProtocol::kSimple, kNvlsLatencyUs,
                         BandwidthGBps(CommPath::kNvls) * kNvlsAlgbwRatio, CommPath::kNvls, bytes));
  }
  if (NvlsTreeAvailable(kind, group)) {
    const auto [path, algbw] = NvlsTreeAlgbw(group, false);
    out.push_back(Costed(NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple, NvlsTreeLatencyUs(group),
                         algbw, path, bytes, CommPath::kInterNode));
  }
  const bool pat = (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter) &&
                   group.ranks_per_node == 1 && group.Nodes() > 1;
  if (pat) {
    const double latency_us = kPatBaseLatencyUs +
                              Log2Floor(group.Nodes()) * kPatNetLatencyUs / kPatLogDivisor +
                              static_cast<double>(group.ranks) * kPatPerRankLatencyUs;
    const CommPath path = NetworkPath(group);
    out.push_back(Costed(NcclAlgorithm::kPat, NcclProtocol::kSimple, latency_us,
                         GroupBandwidthGBps(path, group) * kPatFactor, path, bytes));
  }
  return out;
}

NcclChoice NcclCommModel::Choose(CollectiveKind kind, int64_t bytes, GroupPlacement group) const {
  std::vector<NcclChoice> choices = Choices(kind, bytes, group);
  NcclChoice best = choices.front();
  for (const NcclChoice& choice : choices) {
    if (choice.time_us < best.time_us) best = choice;
  }
  return best;
}

// One Simple send per peer, the way NCCL runs a grouped all-to-all: a send latency per peer, over
// NVLink (or PCI) to the peers of its node and over the network to the others.
double NcclCommModel::AllToAllLatencyUs(GroupPlacement group) const {
  const int simple = static_cast<int>(NcclProtocol::kSimple);
  return kBaseLatencyUs[kRingRow][simple] +
         static_cast<double>(group.ranks_per_node - 1) *
             kHwLatencyUs[intra_link_][kRingRow][simple] +
         static_cast<double>(group.ranks - group.ranks_per_node) *
             kHwLatencyUs[kNet][kRingRow][simple];
}

// Each rank keeps 1/n of its bytes; the local peers' share crosses NVLink while the remote
// peers' share crosses the NIC, at the same time. The slower of the two is the transfer.
LinearTimeTerms NcclCommModel::AllToAllTerms(int64_t bytes, GroupPlacement group) const {
  const double n = static_cast<double>(group.ranks);
  const double local_bytes =
      static_cast<double>(bytes) * static_cast<double>(group.ranks_per_node - 1) / n;
  const double remote_bytes =
      static_cast<double>(bytes) * static_cast<double>(group.ranks - group.ranks_per_node) / n;
  const double local_us = local_bytes / (BandwidthGBps(CommPath::kIntraNode) * 1e3);
  const double remote_us =
      remote_bytes > 0 ? remote_bytes / (BandwidthGBps(CommPath::kInterNode) * 1e3) : 0.0;
  LinearTimeTerms terms;
  terms.path = remote_us > local_us ? CommPath::kInterNode : CommPath::kIntraNode;
  const double path_bytes = terms.path == CommPath::kInterNode ? remote_bytes : local_bytes;
  terms.nccl_latency_us = AllToAllLatencyUs(group);
  terms.nominal_transfer_us = path_bytes / (NominalGBps(terms.path) * 1e3);
  return terms;
}

LinearTimeTerms NcclCommModel::BulkTerms(CollectiveKind kind, int64_t bytes,
                                         GroupPlacement group) const {
  if (kind == CollectiveKind::kAllToAll) return AllToAllTerms(bytes, group);
  LinearTimeTerms terms;
  if (NvlsAvailable(kind, group)) {
    terms.path = CommPath::kNvls;
    terms.nccl_latency_us = kNvlsLatencyUs;
    terms.nominal_transfer_us = TransferUs(bytes, NominalGBps(CommPath::kNvls) * kNvlsAlgbwRatio);
    return terms;
  }
  if (NvlsTreeAvailable(kind, group)) {
    const auto [path, nominal_algbw] = NvlsTreeAlgbw(group, true);
    terms.path = path;
    terms.latency_path = CommPath::kInterNode;
    terms.nccl_latency_us = NvlsTreeLatencyUs(group);
    terms.nominal_transfer_us = TransferUs(bytes, nominal_algbw);
    return terms;
  }
  const double ratio =
      static_cast<double>(group.ranks) / static_cast<double>(RingSteps(kind, group.ranks));
  terms.path = NetworkPath(group);
  terms.nccl_latency_us = RingLatencyUs(kind, group, NcclProtocol::kSimple);
  terms.nominal_transfer_us = TransferUs(bytes, GroupNominalGBps(terms.path, group) * ratio);
  return terms;
}

// NCCL has no tuning table for send/recv; its sends use the Simple protocol, so a transfer pays
// Ring/Simple's base latency and one Simple step over the link it crosses.
LinearTimeTerms NcclCommModel::PointToPointTerms(int64_t bytes, bool across_nodes) const {
  const int simple = static_cast<int>(NcclProtocol::kSimple);
  LinearTimeTerms terms;
  terms.path = across_nodes ? CommPath::kInterNode : CommPath::kIntraNode;
  terms.nccl_latency_us = kBaseLatencyUs[kRingRow][simple] +
                          kHwLatencyUs[across_nodes ? kNet : intra_link_][kRingRow][simple];
  terms.nominal_transfer_us = TransferUs(bytes, NominalGBps(terms.path));
  return terms;
}

double NcclCommModel::CollectiveUs(CollectiveKind kind, int64_t bytes, GroupPlacement group) const {
  if (group.ranks <= 1) return 0.0;
  if (kind != CollectiveKind::kAllToAll) return Choose(kind, bytes, group).time_us;
  const LinearTimeTerms terms = AllToAllTerms(bytes, group);
  return terms.nccl_latency_us + ExtraLatencyUs(terms.path) +
         terms.nominal_transfer_us * NominalGBps(terms.path) / BandwidthGBps(terms.path);
}

double NcclCommModel::PointToPointUs(int64_t bytes, bool across_nodes) const {
  const LinearTimeTerms terms = PointToPointTerms(bytes, across_nodes);
  return terms.nccl_latency_us + ExtraLatencyUs(terms.path) +
         terms.nominal_transfer_us * NominalGBps(terms.path) / BandwidthGBps(terms.path);
}

SimTime NcclCommModel::Collective(CollectiveKind kind, int64_t bytes, GroupPlacement group) const {
  return SimTime::FromMicros(CollectiveUs(kind, bytes, group));
}

SimTime NcclCommModel::PointToPoint(int64_t bytes, bool across_nodes) const {
  return SimTime::FromMicros(PointToPointUs(bytes, across_nodes));
}

double NcclHbmBytesPerByte(CollectiveKind kind, NcclAlgorithm algorithm, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  const bool nvls = algorithm == NcclAlgorithm::kNvls || algorithm == NcclAlgorithm::kNvlsTree;
  if (kind == CollectiveKind::kAllReduce) return nvls ? 6.0 : 2.0 + 4.0 * (n - 1) / n;
  return nvls ? 3.0 : (3.0 * n - 1) / n;
}

double NcclHbmShare(const NcclCommModel& model, const GpuSpec& gpu, CollectiveKind kind,
                    GroupPlacement group) {
  if (group.ranks < 2 || kind == CollectiveKind::kAllToAll) return 0;
  const double hbm_GBps =
      gpu.hbm_bandwidth_GBps * gpu.calibration.MemoryBandwidthFraction(MemoryAccess::kStreaming);
  if (hbm_GBps <= 0) return 0;
  const NcclChoice choice = model.Choose(kind, kHbmShareMessageBytes, group);
  const double share =
      NcclHbmBytesPerByte(kind, choice.algorithm, group.ranks) * choice.algbw_GBps / hbm_GBps;
  return std::min(0.9, share);
}

}  // namespace loom
