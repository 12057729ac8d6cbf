#include "cost/nccl_model.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kGiB = kKiB * kKiB * kKiB;

// DGX A100 as the shipped file has it, without calibration: NVLink 300 GB/s, 8 x 200 Gb/s NICs.
ClusterSpec DgxA100() {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.intra_node = {IntraNodeFabric::kNvSwitch, 300, 0.6, false};
  c.inter_node.nics_per_node = 8;
  c.inter_node.nic_bandwidth_Gbps = 200;
  c.inter_node.oversubscription = 1;
  return c;
}

// DGX H100: NVLink 450 GB/s with NVLink SHARP, 8 x 400 Gb/s NICs.
ClusterSpec DgxH100Cluster() {
  ClusterSpec c = DgxA100();
  c.intra_node = {IntraNodeFabric::kNvSwitch, 450, 0.6, true};
  c.inter_node.nic_bandwidth_Gbps = 400;
  return c;
}

const NcclChoice* Find(const std::vector<NcclChoice>& choices, NcclAlgorithm a, NcclProtocol p) {
  for (const NcclChoice& c : choices) {
    if (c.algorithm == a && c.protocol == p) return &c;
  }
  return nullptr;
}

const GroupPlacement kOneNode = PlaceGroup(8, 1, 8);

// The CTAs of NCCL's kernel come from the key of the algorithm it runs: NVLS inside an H100 node
// of more than four ranks, Ring/Tree inside a node otherwise, the inter-node count across nodes.
TEST(NcclCtas, ReadsTheClusterKeyOfTheAlgorithmNcclRuns) {
  ClusterSpec h100 = DgxH100Cluster();
  h100.intra_node.nccl_channels = 24;
  h100.intra_node.nvls_channels = 16;
  h100.inter_node.nccl_channels = 12;
  const NcclCtaCount nvls = NcclCtas(h100, CollectiveKind::kReduceScatter, {8, 8});
  EXPECT_EQ(nvls.ctas, 16);
  EXPECT_EQ(nvls.key, "intra_node.nvls_channels");
  const NcclCtaCount ring = NcclCtas(h100, CollectiveKind::kAllReduce, {4, 4});
  EXPECT_EQ(ring.ctas, 24);
  EXPECT_EQ(ring.key, "intra_node.nccl_channels");
  const NcclCtaCount across = NcclCtas(h100, CollectiveKind::kAllGather, {16, 8});
  EXPECT_EQ(across.ctas, 12);
  EXPECT_EQ(across.key, "inter_node.nccl_channels");
  EXPECT_TRUE(NcclCtas(h100, CollectiveKind::kAllToAll, {8, 8}).key.empty());
  EXPECT_TRUE(NcclCtas(h100, CollectiveKind::kAllReduce, {1, 1}).key.empty());
  // A file that does not say: no count, and the key it lacks.
  const NcclCtaCount unsaid = NcclCtas(DgxA100(), CollectiveKind::kAllReduce, {8, 8});
  EXPECT_FALSE(unsaid.ctas);
  EXPECT_EQ(unsaid.key, "intra_node.nccl_channels");
}

// The HBM traffic of NCCL's kernels per byte of message, from the primitives each algorithm runs
// (nccl_model.h): a ring all-reduce of 8 passes 14 chunks of S/8 through FIFOs (written and read)
// besides reading its source and writing its destination once.
TEST(NcclHbm, RingAndNvlsTrafficPerByteOfMessage) {
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kAllReduce, NcclAlgorithm::kRing, 8),
                   2 + 4 * 14.0 / 16);
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kAllReduce, NcclAlgorithm::kRing, 2), 4);
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kAllGather, NcclAlgorithm::kRing, 8),
                   23.0 / 8);
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kReduceScatter, NcclAlgorithm::kRing, 8),
                   23.0 / 8);
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kAllReduce, NcclAlgorithm::kNvls, 8), 6);
  EXPECT_DOUBLE_EQ(NcclHbmBytesPerByte(CollectiveKind::kAllGather, NcclAlgorithm::kNvls, 8), 3);
}

// An all-reduce over a DGX A100's NVLink at the measured 229 GB/s bus bandwidth (the shipped
// calibration: 0.763 of 300) moves S/t = 131 GB/s of message and 5.5 times that through each
// GPU's HBM: about 0.4 of the 1.79 TB/s a streaming kernel reaches. One rank a node moves what its
// NIC's 25 GB/s allows, a few percent; all-to-all and a group of one take none.
TEST(NcclHbm, AnNvlinkAllReduceTakesAboutTwoFifthsOfAnA100sHbm) {
  ClusterSpec cluster = DgxA100();
  cluster.calibration.intra_node_busbw_fraction = 0.763;
  GpuSpec a100;
  a100.hbm_bandwidth_GBps = 2039;
  a100.calibration.memory_bandwidth_fraction = 0.88;
  const NcclCommModel model(cluster);
  const double share = NcclHbmShare(model, a100, CollectiveKind::kAllReduce, kOneNode);
  EXPECT_NEAR(share, 5.5 * 0.763 * 300 * 8 / 14 / (2039 * 0.88), 0.01);
  EXPECT_GT(share, 0.35);
  EXPECT_LT(share, 0.45);
  const double across = NcclHbmShare(model, a100, CollectiveKind::kAllReduce, {16, 1});
  EXPECT_GT(across, 0);
  EXPECT_LT(across, 0.1);
  EXPECT_EQ(NcclHbmShare(model, a100, CollectiveKind::kAllToAll, kOneNode), 0);
  EXPECT_EQ(NcclHbmShare(model, a100, CollectiveKind::kAllReduce, {1, 1}), 0);
}

TEST(NcclCommModel, A100AllReduceFlipsFromRingLlToRingSimpleAsSizeGrows) {
  NcclCommModel model(DgxA100());
  NcclChoice small = model.Choose(CollectiveKind::kAllReduce, 4 * kKiB, kOneNode);
  NcclChoice large = model.Choose(CollectiveKind::kAllReduce, kGiB, kOneNode);
  EXPECT_EQ(small.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(small.protocol, NcclProtocol::kLl);
  EXPECT_EQ(large.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
}

TEST(NcclCommModel, H100AllReduceFlipsFromRingLlToNvls) {
  NcclCommModel model(DgxH100Cluster());
  EXPECT_EQ(model.Choose(CollectiveKind::kAllReduce, 4 * kKiB, kOneNode).protocol,
            NcclProtocol::kLl);
  NcclChoice large = model.Choose(CollectiveKind::kAllReduce, kGiB, kOneNode);
  EXPECT_EQ(large.algorithm, NcclAlgorithm::kNvls);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
}

TEST(NcclCommModel, MultiNodeAllReduceFlipsFromTreeToRingSimple) {
  NcclCommModel model(DgxA100());
  const GroupPlacement sixteen_nodes = PlaceGroup(128, 1, 8);
  EXPECT_EQ(model.Choose(CollectiveKind::kAllReduce, 64 * kKiB, sixteen_nodes).algorithm,
            NcclAlgorithm::kTree);
  NcclChoice large = model.Choose(CollectiveKind::kAllReduce, 4 * kGiB, sixteen_nodes);
  EXPECT_EQ(large.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
}

TEST(NcclCommModel, RingLatencyCountsNvlinkStepsInANode) {
  NcclCommModel model(DgxA100());
  std::vector<NcclChoice> choices = model.Choices(CollectiveKind::kAllReduce, 0, kOneNode);
  // baseLat 8.4 + 2(n-1) = 14 NVLink steps of 3.4 us (NCCL 2.20.3, Ring/Simple).
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kSimple)->latency_us,
                   8.4 + 14 * 3.4);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl)->latency_us,
                   6.6 + 14 * 0.6);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl128)->latency_us,
                   14.0 + 14 * 1.9);
}

TEST(NcclCommModel, RingLatencyCountsInterNodeStepsOverTheNetwork) {
  NcclCommModel model(DgxA100());
  const GroupPlacement two_nodes = PlaceGroup(16, 1, 8);
  // All-gather: n-1 = 15 steps, nodes-1 = 1 over the network (2.7 us); the 14 others over NVLink,
  // raised to NCCL's 1 us network overhead.
  std::vector<NcclChoice> gather = model.Choices(CollectiveKind::kAllGather, 0, two_nodes);
  EXPECT_DOUBLE_EQ(Find(gather, NcclAlgorithm::kRing, NcclProtocol::kLl)->latency_us,
                   6.6 + 14 * 1.0 + 1 * 2.7);
  // All-reduce Simple: 30 steps, 2 across; x1.4 ring plateau across nodes.
  std::vector<NcclChoice> reduce = model.Choices(CollectiveKind::kAllReduce, 0, two_nodes);
  EXPECT_DOUBLE_EQ(Find(reduce, NcclAlgorithm::kRing, NcclProtocol::kSimple)->latency_us,
                   (8.4 + 28 * 3.4 + 2 * 14.0) * 1.4);
}

TEST(NcclCommModel, TreeLatencyIsTwiceTheChainInANodePlusLogNodesNetworkHops) {
  NcclCommModel model(DgxA100());
  std::vector<NcclChoice> choices =
      model.Choices(CollectiveKind::kAllReduce, 0, PlaceGroup(32, 1, 8));
  // 4 nodes: 2 * (7 NVLink hops of 0.6 + log2(4) = 2 network hops of 5.0) + baseLat 6.8.
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kTree, NcclProtocol::kLl)->latency_us,
                   6.8 + 2 * (7 * 0.6 + 2 * 5.0));
}

TEST(NcclCommModel, RingSimpleMovesBusBytesAtTheLinkBandwidth) {
  NcclCommModel model(DgxA100());
  NcclChoice ring = *Find(model.Choices(CollectiveKind::kAllReduce, kGiB, kOneNode),
                          NcclAlgorithm::kRing, NcclProtocol::kSimple);
  EXPECT_DOUBLE_EQ(ring.algbw_GBps, 300.0 * 8 / 14);
  EXPECT_NEAR(ring.time_us, 56.0 + static_cast<double>(kGiB) * 14 / 8 / 300e3, 1e-6);
}

TEST(NcclCommModel, ProtocolsScaleTheRingBandwidthLikeNccl) {
  NcclCommModel model(DgxA100());
  std::vector<NcclChoice> choices = model.Choices(CollectiveKind::kAllGather, kGiB, kOneNode);
  const double ratio = 8.0 / 7.0;  // n / (n-1)
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl)->algbw_GBps,
                   300.0 / 3 * ratio);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl128)->algbw_GBps,
                   300.0 * 0.92 * ratio);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kSimple)->algbw_GBps,
                   300.0 * ratio);
}

TEST(NcclCommModel, TreeIsOnlyConsideredForAllReduce) {
  NcclCommModel model(DgxA100());
  EXPECT_NE(Find(model.Choices(CollectiveKind::kAllReduce, kGiB, kOneNode), NcclAlgorithm::kTree,
                 NcclProtocol::kSimple),
            nullptr);
  EXPECT_EQ(Find(model.Choices(CollectiveKind::kReduceScatter, kGiB, kOneNode),
                 NcclAlgorithm::kTree, NcclProtocol::kSimple),
            nullptr);
}

TEST(NcclCommModel, NvlsNeedsNvlinkSharpAndOneNode) {
  NcclCommModel a100(DgxA100());
  NcclCommModel h100(DgxH100Cluster());
  EXPECT_FALSE(a100.NvlsAvailable(CollectiveKind::kAllReduce, kOneNode));
  EXPECT_TRUE(h100.NvlsAvailable(CollectiveKind::kAllReduce, kOneNode));
  EXPECT_TRUE(h100.NvlsAvailable(CollectiveKind::kAllGather, kOneNode));
  EXPECT_TRUE(h100.NvlsAvailable(CollectiveKind::kReduceScatter, kOneNode));
  EXPECT_FALSE(h100.NvlsAvailable(CollectiveKind::kAllToAll, kOneNode));
  EXPECT_FALSE(h100.NvlsAvailable(CollectiveKind::kAllReduce, PlaceGroup(16, 1, 8)));
}

// NCCL picks NVLS over more than 4 GPUs of a node only (Ring at 4 on 8x H200,
// nccl_hopper_1node.csv), and never with NCCL_NVLS_ENABLE=0, nor NVLSTree across nodes.
TEST(NcclCommModel, NvlsNeedsMoreThanFourRanksAndCanBeDisabled) {
  NcclCommModel h100(DgxH100Cluster());
  EXPECT_FALSE(h100.NvlsAvailable(CollectiveKind::kAllReduce, PlaceGroup(2, 1, 8)));
  EXPECT_FALSE(h100.NvlsAvailable(CollectiveKind::kAllReduce, PlaceGroup(4, 1, 8)));
  EXPECT_TRUE(h100.NvlsAvailable(CollectiveKind::kAllReduce, PlaceGroup(5, 1, 8)));
  EXPECT_NE(h100.Choose(CollectiveKind::kAllReduce, kGiB, PlaceGroup(4, 1, 8)).algorithm,
            NcclAlgorithm::kNvls);
  NcclCommModel disabled(DgxH100Cluster(), /*nvls_enabled=*/false);
  EXPECT_FALSE(disabled.NvlsAvailable(CollectiveKind::kAllReduce, kOneNode));
  for (const GroupPlacement group : {kOneNode, PlaceGroup(16, 1, 8)}) {
    for (const NcclChoice& c : disabled.Choices(CollectiveKind::kAllReduce, kGiB, group)) {
      EXPECT_NE(c.algorithm, NcclAlgorithm::kNvls);
      EXPECT_NE(c.algorithm, NcclAlgorithm::kNvlsTree);
    }
  }
  EXPECT_EQ(disabled.BulkTerms(CollectiveKind::kAllReduce, kGiB, kOneNode).path,
            CommPath::kIntraNode);
}

TEST(NcclCommModel, NvlsLatencyAndBandwidthAreNcclsAndTheCalibration) {
  ClusterSpec cluster = DgxH100Cluster();
  cluster.calibration.nvls_busbw_fraction = 0.5;
  cluster.calibration.intra_node_extra_latency_us = 10;
  NcclChoice nvls =
      *Find(NcclCommModel(cluster).Choices(CollectiveKind::kAllReduce, kGiB, kOneNode),
            NcclAlgorithm::kNvls, NcclProtocol::kSimple);
  EXPECT_DOUBLE_EQ(nvls.latency_us, 23.0 + 10.0);
  EXPECT_DOUBLE_EQ(nvls.algbw_GBps, 450.0 * 0.5 * 5 / 6);
}

TEST(NcclCommModel, PatServesAllGatherAcrossSingleGpuNodesAtMidSizes) {
  NcclCommModel model(DgxH100Cluster());
  const GroupPlacement one_per_node = PlaceGroup(64, 8, 8);
  ASSERT_EQ(one_per_node.ranks_per_node, 1);
  const std::vector<NcclChoice> choices =
      model.Choices(CollectiveKind::kAllGather, 0, one_per_node);
  const NcclChoice* pat = Find(choices, NcclAlgorithm::kPat, NcclProtocol::kSimple);
  ASSERT_NE(pat, nullptr);
  // NCCL 2.23: 8 + log2(64) * 14 / 3.5 + 64 * 2.8 us.
  EXPECT_DOUBLE_EQ(pat->latency_us, 8 + 6 * 14.0 / 3.5 + 64 * 2.8);
  EXPECT_EQ(model.Choose(CollectiveKind::kAllGather, kKiB * kKiB, one_per_node).algorithm,
            NcclAlgorithm::kPat);
  EXPECT_EQ(Find(model.Choices(CollectiveKind::kAllGather, 0, PlaceGroup(64, 1, 8)),
                 NcclAlgorithm::kPat, NcclProtocol::kSimple),
            nullptr);
  EXPECT_EQ(Find(model.Choices(CollectiveKind::kAllReduce, 0, one_per_node), NcclAlgorithm::kPat,
                 NcclProtocol::kSimple),
            nullptr);
}

TEST(NcclCommModel, PcieNodesHaveNoLl128AndUsePciLatencies) {
  ClusterSpec cluster = DgxA100();
  cluster.intra_node = {IntraNodeFabric::kPcie, 32, 1.0, false};
  std::vector<NcclChoice> choices =
      NcclCommModel(cluster).Choices(CollectiveKind::kAllReduce, 0, kOneNode);
  EXPECT_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl128), nullptr);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kSimple)->latency_us,
                   8.4 + 14 * 5.7);
}

TEST(NcclCommModel, CalibrationScalesBandwidthAndAddsLatencyToLl128AndSimpleOnly) {
  ClusterSpec cluster = DgxA100();
  cluster.calibration.intra_node_busbw_fraction = 0.5;
  cluster.calibration.intra_node_extra_latency_us = 100;
  std::vector<NcclChoice> choices =
      NcclCommModel(cluster).Choices(CollectiveKind::kAllReduce, 0, kOneNode);
  const NcclChoice* simple = Find(choices, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  EXPECT_DOUBLE_EQ(simple->algbw_GBps, 150.0 * 8 / 14);
  EXPECT_DOUBLE_EQ(simple->latency_us, 56.0 + 100);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl128)->latency_us,
                   40.6 + 100);
  EXPECT_DOUBLE_EQ(Find(choices, NcclAlgorithm::kRing, NcclProtocol::kLl)->latency_us, 15.0);
}

TEST(NcclCommModel, InterNodeBandwidthOfOneRankPerNodeIsTheGpusNicShare) {
  ClusterSpec cluster = DgxA100();
  cluster.calibration.inter_node_busbw_fraction = 0.8;
  NcclCommModel model(cluster);
  // 16 nodes, one rank each (stride 8): 8 NICs x 200 Gb/s over 8 GPUs = 25 GB/s each, x0.8.
  EXPECT_DOUBLE_EQ(Find(model.Choices(CollectiveKind::kAllGather, 0, PlaceGroup(16, 8, 8)),
                        NcclAlgorithm::kRing, NcclProtocol::kSimple)
                       ->algbw_GBps,
                   25.0 * 0.8 * 16 / 15);
}

// nccl-tests' bus bandwidth of the collective the model picks for an 8 GiB all-reduce.
double AllReduceBusbw(const NcclCommModel& model, GroupPlacement group) {
  const int64_t bytes = 8 * kGiB;
  return static_cast<double>(bytes) * BusBandwidthFactor(CollectiveKind::kAllReduce, group.ranks) /
         (model.CollectiveUs(CollectiveKind::kAllReduce, bytes, group) * 1e3);
}

TEST(NcclCommModel, AllReduceOverSixteenSingleRankNodesReachesAboutOneNic) {
  NcclCommModel model(DgxA100());
  const double busbw = AllReduceBusbw(model, PlaceGroup(16, 8, 8));
  EXPECT_GT(busbw, 0.9 * 25.0);
  EXPECT_LE(busbw, 25.0);
}

TEST(NcclCommModel, AllReduceOverTwoNodesOfEightRanksReachesAboutEightNics) {
  ClusterSpec cluster = DgxA100();
  cluster.calibration.inter_node_busbw_fraction = 0.8;
  NcclCommModel model(cluster);
  const GroupPlacement two_nodes = PlaceGroup(16, 1, 8);
  // A ring crosses each node boundary on all 8 members' NICs: 8 x 25 GB/s x0.8 = 160 GB/s, below
  // NVLink's 300.
  EXPECT_DOUBLE_EQ(Find(model.Choices(CollectiveKind::kAllReduce, 8 * kGiB, two_nodes),
                        NcclAlgorithm::kRing, NcclProtocol::kSimple)
                       ->algbw_GBps,
                   160.0 * 16 / 30);
  // The fastest choice reaches at least those 8 NICs' bus bandwidth (a 2-node tree more).
  EXPECT_GT(AllReduceBusbw(model, two_nodes), 0.95 * 160.0);
  // Four ranks per node (tp 2): half of it.
  EXPECT_DOUBLE_EQ(Find(model.Choices(CollectiveKind::kAllReduce, 8 * kGiB, PlaceGroup(8, 2, 8)),
                        NcclAlgorithm::kRing, NcclProtocol::kSimple)
                       ->algbw_GBps,
                   80.0 * 8 / 14);
}

TEST(NcclCommModel, ManyRanksPerNodeAreBoundedByNvlink) {
  ClusterSpec cluster = DgxA100();
  cluster.inter_node.nic_bandwidth_Gbps = 800;  // 8 x 100 GB/s of NICs, more than NVLink's 300
  NcclCommModel model(cluster);
  EXPECT_DOUBLE_EQ(Find(model.Choices(CollectiveKind::kAllGather, 8 * kGiB, PlaceGroup(32, 1, 8)),
                        NcclAlgorithm::kRing, NcclProtocol::kSimple)
                       ->algbw_GBps,
                   300.0 * 32 / 31);
}

TEST(NcclCommModel, H100AllReduceAcrossNodesRunsNvlsTree) {
  NcclCommModel model(DgxH100Cluster());
  // 2 nodes swap their reduced data over all 16 NICs: more than NVLS's 450 x 5/6 within the node.
  NcclChoice two = model.Choose(CollectiveKind::kAllReduce, 8 * kGiB, PlaceGroup(16, 1, 8));
  EXPECT_EQ(two.algorithm, NcclAlgorithm::kNvlsTree);
  EXPECT_DOUBLE_EQ(two.algbw_GBps, 450.0 * 5 / 6);
  EXPECT_DOUBLE_EQ(two.latency_us, 23.0 + 2 * 1 * 14.0);
  // Beyond 2 nodes the members' 8 x 50 GB/s of NICs bound it, as they bound a ring.
  const double eight_nodes =
      Find(model.Choices(CollectiveKind::kAllReduce, 8 * kGiB, PlaceGroup(64, 1, 8)),
           NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple)
          ->algbw_GBps;
  EXPECT_DOUBLE_EQ(eight_nodes, 400.0 * 64 / 126);
  // One rank per node has no NVLS part.
  for (const NcclChoice& c :
       model.Choices(CollectiveKind::kAllReduce, 8 * kGiB, PlaceGroup(4, 8, 8))) {
    EXPECT_NE(c.algorithm, NcclAlgorithm::kNvlsTree);
  }
}

TEST(NcclCommModel, AllToAllInOneNodeSendsToEachPeerOverNvlink) {
  NcclCommModel model(DgxA100());
  const int64_t bytes = kGiB;
  // 8.4 + 7 sends of 3.4 us; 7/8 of the bytes leave the GPU at 300 GB/s.
  EXPECT_NEAR(model.CollectiveUs(CollectiveKind::kAllToAll, bytes, kOneNode),
              8.4 + 7 * 3.4 + static_cast<double>(bytes) * 7 / 8 / 300e3, 1e-6);
}

TEST(NcclCommModel, AllToAllAcrossNodesIsLimitedByTheRemoteShareOverTheNic) {
  NcclCommModel model(DgxA100());
  const int64_t bytes = kGiB;
  // 2 nodes: 7 local peers (3.4 us), 8 remote (14 us); 8/16 of the bytes cross the 25 GB/s NIC.
  EXPECT_NEAR(model.CollectiveUs(CollectiveKind::kAllToAll, bytes, PlaceGroup(16, 1, 8)),
              8.4 + 7 * 3.4 + 8 * 14.0 + static_cast<double>(bytes) * 8 / 16 / 25e3, 1e-6);
}

TEST(NcclCommModel, PointToPointPaysOneSimpleStepOfItsLink) {
  NcclCommModel model(DgxA100());
  EXPECT_NEAR(model.PointToPointUs(kGiB, false), 8.4 + 3.4 + static_cast<double>(kGiB) / 300e3,
              1e-6);
  EXPECT_NEAR(model.PointToPointUs(kGiB, true), 8.4 + 14.0 + static_cast<double>(kGiB) / 25e3,
              1e-6);
  EXPECT_EQ(model.PointToPoint(kGiB, true), SimTime::FromMicros(model.PointToPointUs(kGiB, true)));
}

TEST(NcclCommModel, AGroupOfOneRankCostsNothing) {
  NcclCommModel model(DgxH100Cluster());
  EXPECT_EQ(model.Collective(CollectiveKind::kAllReduce, kGiB, PlaceGroup(1, 1, 8)),
            SimTime::Zero());
  EXPECT_TRUE(model.Choices(CollectiveKind::kAllReduce, kGiB, PlaceGroup(1, 1, 8)).empty());
}

TEST(NcclCommModel, CollectiveIsTheFastestChoice) {
  NcclCommModel model(DgxH100Cluster());
  for (int64_t bytes : {int64_t{1024}, 64 * kKiB, kGiB}) {
    const double time_us = model.CollectiveUs(CollectiveKind::kAllReduce, bytes, kOneNode);
    for (const NcclChoice& c : model.Choices(CollectiveKind::kAllReduce, bytes, kOneNode)) {
      EXPECT_LE(time_us, c.time_us) << bytes;
    }
    EXPECT_EQ(model.Collective(CollectiveKind::kAllReduce, bytes, kOneNode),
              SimTime::FromMicros(time_us));
  }
}

TEST(NcclCommModel, BulkTermsAddUpToTheLargeMessageTime) {
  ClusterSpec cluster = DgxH100Cluster();
  cluster.calibration.nvls_busbw_fraction = 0.7;
  cluster.calibration.intra_node_extra_latency_us = 40;
  NcclCommModel model(cluster);
  LinearTimeTerms terms = model.BulkTerms(CollectiveKind::kAllReduce, 8 * kGiB, kOneNode);
  EXPECT_EQ(terms.path, CommPath::kNvls);
  EXPECT_DOUBLE_EQ(terms.nccl_latency_us, 23.0);
  EXPECT_NEAR(terms.nccl_latency_us + 40 + terms.nominal_transfer_us / 0.7,
              model.CollectiveUs(CollectiveKind::kAllReduce, 8 * kGiB, kOneNode), 1e-6);
}

TEST(NcclCommModel, BulkTermsOfAMultiNodeRingUseTheNetworkPath) {
  NcclCommModel model(DgxA100());
  LinearTimeTerms terms = model.BulkTerms(CollectiveKind::kAllGather, kGiB, PlaceGroup(16, 1, 8));
  EXPECT_EQ(terms.path, CommPath::kInterNode);
  // 8 ranks per node: 8 NIC shares of 25 GB/s.
  EXPECT_DOUBLE_EQ(terms.nominal_transfer_us, static_cast<double>(kGiB) / (200e3 * 16 / 15));
}

TEST(NcclCommModel, BulkTermsOfAMultiNodeNvlsTreeAddUpToItsTime) {
  ClusterSpec cluster = DgxH100Cluster();
  cluster.calibration.inter_node_busbw_fraction = 0.9;
  cluster.calibration.inter_node_extra_latency_us = 30;
  NcclCommModel model(cluster);
  const GroupPlacement group = PlaceGroup(64, 1, 8);
  LinearTimeTerms terms = model.BulkTerms(CollectiveKind::kAllReduce, 8 * kGiB, group);
  EXPECT_EQ(terms.path, CommPath::kInterNode);
  EXPECT_NEAR(terms.nccl_latency_us + 30 + terms.nominal_transfer_us / 0.9,
              model.CollectiveUs(CollectiveKind::kAllReduce, 8 * kGiB, group), 1e-6);
}

}  // namespace
}  // namespace loom
