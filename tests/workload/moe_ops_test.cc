// The MoE routing model (capacity factor, imbalance) and expert tensor parallelism, from the
// router's load model up to the expert GEMMs, the dispatcher's collectives and the parameters.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op/op.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"
#include "workload/moe_routing.h"
#include "workload/shipped_model.h"

namespace loom {
namespace {

// Mixtral 8x7B's router (8 experts, top-2) on one rank routing 4096 tokens: 8192 rows, a mean of
// 1024 per expert.
MoeRouting Mixtral(int64_t ep, double imbalance, double capacity_factor = 0) {
  MoeRouting r;
  r.experts = 8;
  r.top_k = 2;
  r.local_experts = 8 / ep;
  r.ep = ep;
  r.etp = 1;
  r.routed_rows = 8192;
  r.imbalance = imbalance;
  r.capacity_factor = capacity_factor;
  return r;
}

// "batch x rows" for every group, largest first.
std::string Groups(const ExpertLoad& load) {
  std::string out;
  for (const ExpertRowGroup& g : load.groups) {
    out += (out.empty() ? "" : ", ") + std::to_string(g.experts) + "x" + std::to_string(g.rows);
  }
  return out;
}

TEST(BusiestRankLoad, ABalancedDroplessRouterSpreadsRowsEvenly) {
  MoeRouting r = Mixtral(1, 1.0);
  r.routed_rows = 8194;  // 2 of the 8 experts take one row more
  const ExpertLoad load = BusiestRankLoad(r);
  EXPECT_EQ(Groups(load), "2x1025, 6x1024");
  EXPECT_EQ(load.rows, 8194);
  EXPECT_EQ(load.received_rows, 8194);
  EXPECT_EQ(load.sent_rows, 8194);
  EXPECT_EQ(DroppedTokenFraction(r), 0.0);
}

TEST(BusiestRankLoad, TheBusiestExpertTakesImbalanceTimesTheMean) {
  // ep 8, one expert per rank: the busiest rank receives 1024 * imbalance rows from each of the
  // 8 routing ranks.
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 1.0)).rows, 8192);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 1.2)).rows, 9830);  // 8 * 1228.8 = 9830.4
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 2.0)).rows, 16384);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 2.0)).received_rows, 16384);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 2.0)).sent_rows, 8192);
  // ep 1: the busiest expert takes 2048 rows, the other 7 share the remaining 6144 evenly.
  const ExpertLoad one_rank = BusiestRankLoad(Mixtral(1, 2.0));
  EXPECT_EQ(Groups(one_rank), "1x2048, 5x878, 2x877");
  EXPECT_EQ(one_rank.rows, 8192);
}

TEST(BusiestRankLoad, AnExpertTakesAtMostEveryToken) {
  // top-2 over 8 experts: an expert sees at most the 4096 tokens, 4 times the mean.
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 10.0)).rows, 8 * 4096);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 10.0)).rows, BusiestRankLoad(Mixtral(8, 4.0)).rows);
}

TEST(BusiestRankLoad, CapacityFactorOneCutsTheBusiestExpertToTheMean) {
  // Capacity ceil(1.0 * 8192 / 8) = 1024 per routing rank: the busiest expert's 2048 rows are cut
  // to 1024; the others (6/7 of the mean, 877.7 rows) fit. Kept: 1024 + 6144 = 7168 of 8192.
  const ExpertLoad load = BusiestRankLoad(Mixtral(8, 2.0, 1.0));
  EXPECT_EQ(load.rows, 8192);
  EXPECT_EQ(load.received_rows, 8192);
  EXPECT_EQ(load.sent_rows, 7168);
  EXPECT_DOUBLE_EQ(DroppedTokenFraction(Mixtral(8, 2.0, 1.0)), 0.125);
  EXPECT_EQ(Groups(BusiestRankLoad(Mixtral(1, 2.0, 1.0))), "1x1024, 5x878, 2x877");
  // Megatron rounds the capacity up: ceil(1024 * 1.1) = 1127.
  EXPECT_DOUBLE_EQ(DroppedTokenFraction(Mixtral(8, 2.0, 1.1)), 1.0 - (1127.0 + 6144.0) / 8192.0);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 2.0, 1.1)).rows, 8 * 1127);
}

TEST(BusiestRankLoad, CapacityBelowTheMeanDropsFromEveryExpert) {
  // Capacity ceil(0.5 * 1024) = 512 for every expert, balanced: half of the rows are dropped.
  EXPECT_DOUBLE_EQ(DroppedTokenFraction(Mixtral(8, 1.0, 0.5)), 0.5);
  EXPECT_EQ(BusiestRankLoad(Mixtral(8, 1.0, 0.5)).rows, 8 * 512);
}

TEST(BusiestRankLoad, ALargeCapacityFactorIsDropless) {
  const ExpertLoad capped = BusiestRankLoad(Mixtral(2, 2.0, 4.0));
  const ExpertLoad dropless = BusiestRankLoad(Mixtral(2, 2.0));
  EXPECT_EQ(Groups(capped), Groups(dropless));
  EXPECT_EQ(capped.sent_rows, 8192);
  EXPECT_EQ(DroppedTokenFraction(Mixtral(2, 2.0, 4.0)), 0.0);
  EXPECT_EQ(DroppedTokenFraction(Mixtral(2, 2.0)), 0.0);
}

TEST(BusiestRankLoad, ExpertTensorParallelRanksGatherTheirPeersRows) {
  MoeRouting r = Mixtral(4, 1.0);
  r.etp = 2;
  r.routed_rows = 4096;
  const ExpertLoad load = BusiestRankLoad(r);
  EXPECT_EQ(load.received_rows, 4096);
  EXPECT_EQ(load.rows, 8192);
  EXPECT_EQ(Groups(load), "2x4096");
}

Strategy MoeStrategy(int64_t tp, int64_t ep, int64_t etp, double imbalance = 1.0,
                     double capacity_factor = 0) {
  Strategy s;
  s.tp = tp;
  s.sp = tp > 1;
  s.ep = ep;
  s.etp = etp;
  s.seq_len = 4096;
  s.moe_imbalance = imbalance;
  s.moe_capacity_factor = capacity_factor;
  return s;
}

LayerOps Build(const Strategy& s) {
  Result<LayerOps> ops = BuildTransformerLayerOps(Shipped("mixtral-8x7b"), s);
  EXPECT_TRUE(ops.ok()) << (ops.ok() ? "" : ops.status().message());
  return ops.ok() ? *ops : LayerOps();
}

std::vector<GemmShape> GemmsOf(const std::vector<Op>& ops, OpName name) {
  std::vector<GemmShape> gemms;
  for (const Op& op : ops) {
    if (op.name == name) gemms.push_back(std::get<GemmShape>(op.shape));
  }
  return gemms;
}

int64_t FlopsOf(const std::vector<Op>& ops, OpName name) {
  int64_t flops = 0;
  for (const Op& op : ops) {
    if (op.name == name) flops += OpFlops(op);
  }
  return flops;
}

// "all_to_all ep 123, ..." for the collectives of the MoE block of |ops| (forward or B): from the
// router (or the unpermute's gradient) to the residual (or the norm's gradient).
std::string MoeCollectives(const std::vector<Op>& ops) {
  std::string out;
  bool moe = false;
  for (const Op& op : ops) {
    if (op.name == OpName::kRouter || op.name == OpName::kMoeUnpermuteGrad) moe = true;
    if (op.name == OpName::kMlpResidual || op.name == OpName::kPostAttentionNormGrad) moe = false;
    if (!moe || op.kind != OpKind::kCollective) continue;
    const auto& c = std::get<CollectiveShape>(op.shape);
    out += (out.empty() ? "" : ", ") + std::string(kCollectiveKindNames.Name(c.kind)) + " " +
           std::string(kCommGroupNames.Name(c.group)) + " " + std::to_string(c.bytes);
  }
  return out;
}

TEST(MoeImbalance, MoreImbalanceGivesTheBusiestRankMoreExpertRowsAndFlops) {
  // Mixtral, tp 1, ep 8: one expert per rank; 8192 rows balanced, 9830 at 1.2, 16384 at 2.
  int64_t previous_flops = 0;
  for (auto [imbalance, rows] : {std::pair{1.0, 8192}, {1.2, 9830}, {2.0, 16384}}) {
    const LayerOps ops = Build(MoeStrategy(1, 8, 0, imbalance));
    const std::vector<GemmShape> up = GemmsOf(ops.forward, OpName::kExpertUp);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_EQ(up[0].m, rows) << imbalance;
    const int64_t flops =
        FlopsOf(ops.forward, OpName::kExpertUp) + FlopsOf(ops.forward, OpName::kExpertDown);
    EXPECT_EQ(flops, 2LL * 3 * rows * 4096 * 14336);
    EXPECT_GT(flops, previous_flops);
    previous_flops = flops;
    // The busiest rank receives all its rows through the all-to-all.
    const std::string a2a = "all_to_all ep " + std::to_string(int64_t{rows} * 4096 * 2);
    EXPECT_EQ(MoeCollectives(ops.forward), a2a + ", " + a2a);
  }
}

TEST(MoeCapacity, CapacityFactorOneWithImbalanceTwoDropsTheExcess) {
  // Capacity 1024 rows per routing rank: the busiest expert processes 8 * 1024 = 8192 rows
  // instead of 16384; the rank permutes only the 7168 rows it keeps.
  const LayerOps ops = Build(MoeStrategy(1, 8, 0, 2.0, 1.0));
  const std::vector<GemmShape> up = GemmsOf(ops.forward, OpName::kExpertUp);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].m, 8192);
  EXPECT_EQ(GemmsOf(ops.backward_weight, OpName::kExpertUpWgrad)[0].k, 8192);
  for (const Op& op : ops.forward) {
    if (op.name == OpName::kMoePermute) {
      EXPECT_EQ(std::get<MemoryShape>(op.shape).bytes_written, 7168LL * 4096 * 2);
    }
  }
  const std::string a2a = "all_to_all ep " + std::to_string(8192LL * 4096 * 2);
  EXPECT_EQ(MoeCollectives(ops.forward), a2a + ", " + a2a);
  // A capacity the busiest expert never reaches changes nothing.
  EXPECT_EQ(GemmsOf(Build(MoeStrategy(1, 8, 0, 2.0, 3.0)).forward, OpName::kExpertUp)[0].m, 16384);
}

TEST(MoeExpertTensorParallel, EtpOneWithTpTwoKeepsExpertsWholeAndGathersNothing) {
  // tp 2 with sp, etp 1, ep 8: each rank routes its 2048 tokens (4096 rows) to the 8 experts; the
  // busiest rank's one expert gets 4096 rows, unsplit: 2 * 14336 gate+up columns.
  const LayerOps ops = Build(MoeStrategy(2, 8, 1));
  const std::vector<GemmShape> up = GemmsOf(ops.forward, OpName::kExpertUp);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].m, 4096);
  EXPECT_EQ(up[0].n, 2 * 14336);
  EXPECT_EQ(up[0].k, 4096);
  EXPECT_EQ(GemmsOf(ops.forward, OpName::kExpertDown)[0].k, 14336);
  const std::string a2a = "all_to_all ep " + std::to_string(4096LL * 4096 * 2);
  EXPECT_EQ(MoeCollectives(ops.forward), a2a + ", " + a2a);
  EXPECT_EQ(MoeCollectives(ops.backward_input), a2a + ", " + a2a);
}

TEST(MoeExpertTensorParallel, TheExpertGatherRunsOverTheEtpGroup) {
  // tp 1, etp 2, ep 4: 8192 rows routed and received, 16384 gathered over etp for the 2 local
  // experts (8192 each), each split over 2 ranks: 14336 / 2 columns.
  const LayerOps ops = Build(MoeStrategy(1, 4, 2));
  const std::vector<GemmShape> up = GemmsOf(ops.forward, OpName::kExpertUp);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].batch, 2);
  EXPECT_EQ(up[0].m, 8192);
  EXPECT_EQ(up[0].n, 14336);
  const std::string a2a = "all_to_all ep " + std::to_string(8192LL * 4096 * 2);
  const std::string gathered = std::to_string(16384LL * 4096 * 2);
  EXPECT_EQ(MoeCollectives(ops.forward),
            a2a + ", all_gather etp " + gathered + ", reduce_scatter etp " + gathered + ", " + a2a);
  EXPECT_EQ(MoeCollectives(ops.backward_input),
            a2a + ", all_gather etp " + gathered + ", reduce_scatter etp " + gathered + ", " + a2a);
}

// Mixtral 8x7B on tp 2: per layer qkv 4096 * 6144 / 2, out 4096 * 4096 / 2, two norms, the
// router 8 * 4096; 32 layers, two vocabulary shards of 32000 / 2 * 4096 and the final norm.
constexpr int64_t kMixtralTp2Dense =
    32 * (12'582'912 + 8'388'608 + 8'192 + 32'768) + 2 * 65'536'000 + 4'096;
constexpr int64_t kMixtralExpert = 3LL * 4096 * 14336;  // 176160768

Strategy World64(int64_t tp, int64_t etp) {
  Strategy s = MoeStrategy(tp, 8, etp);
  s.dp = 64 / tp;
  s.zero_stage = 1;
  return s;
}

TEST(MoeExpertTensorParallel, RoutedExpertsSplitOverEtpAndShardOverExpertDp) {
  const ModelSpec m = Shipped("mixtral-8x7b");
  // tp 2, etp 1, ep 8, dp 32: one whole expert per layer; expert dp = 2 * 32 / 8 = 8.
  Result<RankModelStates> whole = ModelStatesPerRank(m, World64(2, 1), 0);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->parameters.dense, kMixtralTp2Dense);
  EXPECT_EQ(whole->parameters.expert, 32 * kMixtralExpert);
  const int64_t optimizer = BytesPerParameter(World64(2, 1)).optimizer;
  EXPECT_EQ(whole->gpu.optimizer,
            optimizer * ((kMixtralTp2Dense + 31) / 32 + 32 * kMixtralExpert / 8));
  // etp = tp = 2: half of each expert, expert dp = 2 * 32 / 16 = 4.
  Result<RankModelStates> split = ModelStatesPerRank(m, World64(2, 0), 0);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->parameters.expert, 16 * kMixtralExpert);
  EXPECT_EQ(split->gpu.optimizer,
            optimizer * ((kMixtralTp2Dense + 31) / 32 + 16 * kMixtralExpert / 4));
  EXPECT_EQ(World64(2, 1).ExpertDp(), 8);
  EXPECT_EQ(World64(2, 0).ExpertDp(), 4);
}

TEST(MoeExpertTensorParallel, AnExpertGridThatDoesNotDivideTheRanksIsAnError) {
  Strategy s = MoeStrategy(2, 4, 1);
  s.dp = 3;  // 2 * 3 = 6 ranks cannot hold ep * etp = 4
  Result<RankModelStates> states = ModelStatesPerRank(Shipped("mixtral-8x7b"), s, 0);
  ASSERT_FALSE(states.ok());
  EXPECT_NE(states.status().message().find(
                "--tp 2 * --dp 3 * --cp 1 must be a positive multiple of --ep 4 * --etp 1"),
            std::string::npos)
      << states.status().message();
}

}  // namespace
}  // namespace loom
