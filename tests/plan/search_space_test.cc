#include "plan/search_space.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "plan/plan_test_support.h"

namespace loom {
namespace {

TEST(ParseConstraints, ReadsEveryKindOfValueWithAliasesAndDashes) {
  Result<Constraints> c = ParseConstraints(
      "tp=8,pp=16,mbs=2,zero=1,schedule=interleaved,sp=true,cp-comm=all_gather,"
      "recompute=full,recompute_layers=3,offload=optimizer,tp_comm_overlap=off",
      "--fix");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->tp, 8);
  EXPECT_EQ(c->pp, 16);
  EXPECT_EQ(c->micro_batch, 2);
  EXPECT_EQ(c->zero_stage, 1);
  EXPECT_EQ(c->schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(c->sp, true);
  EXPECT_EQ(c->cp_comm, CpComm::kAllGather);
  EXPECT_EQ(c->recompute, Recompute::kFull);
  EXPECT_EQ(c->recompute_layers, 3);
  EXPECT_EQ(c->offload, Offload::kOptimizer);
  EXPECT_EQ(c->tp_comm_overlap, false);
  EXPECT_FALSE(c->dp.has_value());
}

TEST(ParseConstraints, ErrorsNameThePairAndWhatIsAccepted) {
  Result<Constraints> unknown = ParseConstraints("tp=8,tpp=2", "--fix");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--fix tpp=2: unknown key 'tpp'; keys are tp, pp"),
            std::string::npos)
      << unknown.status().message();
  Result<Constraints> value = ParseConstraints("schedule=1f1bb", "--fix");
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("schedule must be one of gpipe|1f1b|interleaved"),
            std::string::npos)
      << value.status().message();
  Result<Constraints> number = ParseConstraints("tp=eight", "--explain");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.status().message().find("--explain tp=eight: tp must be a whole number"),
            std::string::npos);
  Result<Constraints> pair = ParseConstraints("tp8", "--fix");
  ASSERT_FALSE(pair.ok());
  EXPECT_NE(pair.status().message().find("expected key=value"), std::string::npos);
}

TEST(ConstraintText, ParsesBackToTheSameStrategy) {
  Strategy s;
  s.tp = 4;
  s.pp = 8;
  s.dp = 3;
  s.cp = 2;
  s.vpp = 3;
  s.micro_batch = 2;
  s.schedule = ScheduleKind::kInterleaved;
  s.recompute = Recompute::kFull;
  s.recompute_layers = 2;
  s.zero_stage = 1;
  s.sp = true;
  s.cp_comm = CpComm::kAllGather;
  s.overlap_grad_reduce = true;
  s.first_stage_layers = 5;
  s.last_stage_layers = 3;
  s.microbatch_group = 10;
  Result<Constraints> c = ParseConstraints(ConstraintText(s), "--explain");
  ASSERT_TRUE(c.ok()) << c.status().message();
  Strategy back;
  ApplyConstraints(*c, back);
  EXPECT_EQ(ConstraintText(back), ConstraintText(s));
}

TEST(EnumerateStrategies, EveryLayoutFillsTheGpusAndDividesTheBatch) {
  const Inputs space = Load("models/llama3-70b.json", 8);
  SearchRequest request = Request(64, 128, 8192);
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> layouts;
  for (const Strategy& s : *all) {
    EXPECT_EQ(s.WorldSize(), 64);
    EXPECT_EQ(s.global_batch % (s.dp * s.micro_batch), 0);
    EXPECT_NE(s.schedule, ScheduleKind::kGpipe);
    layouts.insert({s.tp, s.cp, s.pp, s.dp});
  }
  // tp 1..8 within the node, cp 1, 2, 4 (8192 tokens, at least 2048 per rank), pp dividing the
  // rest: the layouts are the (tp, cp, pp) with tp * cp * pp | 64 and dp | 128, i.e. all of them.
  int64_t expected = 0;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t cp : {1, 2, 4}) {
      for (int64_t pp = 1; pp <= 64 / (tp * cp); pp *= 2) ++expected;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(layouts.size()), expected);
}

TEST(EnumerateStrategies, PinnedSettingsReplaceTheirLists) {
  const Inputs space = Load("models/llama3-70b.json", 8);
  SearchRequest request = Request(64, 128, 4096);
  Result<Constraints> fixed =
      ParseConstraints("tp=8,pp=4,cp=1,schedule=interleaved,recompute=selective,zero=1", "--fix");
  ASSERT_TRUE(fixed.ok());
  request.fixed = *fixed;
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  ASSERT_FALSE(all->empty());
  std::set<int64_t> vpps;
  for (const Strategy& s : *all) {
    EXPECT_EQ(s.tp, 8);
    EXPECT_EQ(s.pp, 4);
    EXPECT_EQ(s.dp, 2);
    EXPECT_EQ(s.schedule, ScheduleKind::kInterleaved);
    EXPECT_EQ(s.recompute, Recompute::kSelective);
    EXPECT_EQ(s.zero_stage, 1);
    vpps.insert(s.vpp);
  }
  // 80 layers on 4 stages: 20 per stage, split into 2, 4, 5, 10 or 20 chunks.
  EXPECT_EQ(vpps, (std::set<int64_t>{2, 4, 5, 10, 20}));
}

TEST(EnumerateStrategies, UnevenLayersGetTheMostBalancedFirstAndLastStages) {
  const Inputs space = Load("models/llama3-405b.json", 16);
  SearchRequest request = Request(128, 64, 8192);
  request.fixed = *ParseConstraints("tp=8,pp=16,schedule=1f1b", "--fix");
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  std::set<std::pair<int64_t, int64_t>> splits;
  for (const Strategy& s : *all) splits.insert({s.first_stage_layers, s.last_stage_layers});
  // 126 layers on 16 stages: 14 stages of 8 between ends of 6 + 8, 7 + 7 or 8 + 6 (Llama 3 ran 7 +
  // 7).
  EXPECT_EQ(splits, (std::set<std::pair<int64_t, int64_t>>{{6, 8}, {7, 7}, {8, 6}}));
}

// Interleaved: a 7-layer stage no longer has to divide by vpp (issue 21), so every chunk count of
// the schedule choices (2, 4, 7, 8) gets the most even balanced split, Meta's 7/7 (with 8 chunks
// the first and last chunk hold the embedding and the loss alone); micro-batch counts that pp
// does not divide get the smallest group Megatron-LM accepts.
TEST(EnumerateStrategies, InterleavedSearchesUnevenChunksAndMicrobatchGroups) {
  const Inputs space = Load("models/llama3-405b.json", 16);
  SearchRequest request = Request(128, 24, 8192);  // dp 1: 24 micro-batches of 1 on 16 stages
  request.fixed = *ParseConstraints("tp=8,pp=16,cp=1,schedule=interleaved,micro_batch=1", "--fix");
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  std::set<std::tuple<int64_t, int64_t, int64_t>> splits;
  for (const Strategy& s : *all) {
    splits.insert({s.vpp, s.first_stage_layers, s.last_stage_layers});
    EXPECT_EQ(s.microbatch_group, 24);  // 24 micro-batches: groups of 16 would leave 8 < pp
  }
  EXPECT_EQ(splits, (std::set<std::tuple<int64_t, int64_t, int64_t>>{
                        {2, 7, 7}, {4, 7, 7}, {7, 7, 7}, {8, 7, 7}}));
}

// The V schedules keep whole halves per chunk: 126 layers on 32 stages, 4 a middle stage, leave
// 6 for the ends, split 2/4 or 4/2 (never 3/3).
TEST(EnumerateStrategies, VShapedSchedulesKeepStageCountsDivisibleByTheirTwoChunks) {
  const Inputs space = Load("models/llama3-405b.json", 32);
  SearchRequest request = Request(256, 64, 8192);
  request.fixed = *ParseConstraints("tp=8,pp=32,schedule=dualpipev", "--fix");
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  std::set<std::pair<int64_t, int64_t>> splits;
  for (const Strategy& s : *all) splits.insert({s.first_stage_layers, s.last_stage_layers});
  EXPECT_EQ(splits, (std::set<std::pair<int64_t, int64_t>>{{2, 4}, {4, 2}}));
}

TEST(EnumerateStrategies, MixturesOfExpertsSearchEpWithinTheDataParallelRanks) {
  const Inputs space = Load("models/mixtral-8x7b.json", 2);
  SearchRequest request = Request(16, 64, 4096);
  request.fixed = *ParseConstraints("tp=2,pp=1,cp=1", "--fix");
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_TRUE(all.ok());
  std::set<std::pair<int64_t, int64_t>> expert_layouts;
  for (const Strategy& s : *all) expert_layouts.insert({s.ep, s.etp});
  // dp 8: with etp = tp (0) the experts spread over tp * dp / tp = 8 ranks, with etp 1 over 16; ep
  // divides the 8 experts.
  EXPECT_EQ(expert_layouts, (std::set<std::pair<int64_t, int64_t>>{
                                {1, 0}, {2, 0}, {4, 0}, {8, 0}, {1, 1}, {2, 1}, {4, 1}, {8, 1}}));
}

TEST(EnumerateStrategies, PinnedDegreesThatDoNotDivideTheGpusAreAnError) {
  const Inputs space = Load("models/llama3-70b.json", 8);
  SearchRequest request = Request(64, 128, 4096);
  request.fixed = *ParseConstraints("tp=3", "--fix");
  Result<std::vector<Strategy>> all = EnumerateStrategies(space.model, space.cluster, request);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("tp * cp * pp * dp = 3) do not divide --gpus 64"),
            std::string::npos)
      << all.status().message();
}

// "tp=2,tp=4" or an alias beside its key ("zero=1,zero_stage=2") leave unclear which was meant.
// GPU counts of 8-GPU nodes: --gpus alone unless --min-gpus or --max-gpus widen the question.
std::vector<int64_t> CountsFor(int64_t gpus, int64_t min_gpus, int64_t max_gpus) {
  ClusterSpec cluster;
  cluster.gpus_per_node = 8;
  SearchRequest r = Request(gpus, 64, 1024);
  r.min_gpus = min_gpus;
  r.max_gpus = max_gpus;
  return GpuCounts(r, cluster);
}

TEST(GpuCounts, OnlyTheGpusAskedForUnlessARangeIsGiven) {
  EXPECT_EQ(CountsFor(512, 0, 0), (std::vector<int64_t>{512}));
  EXPECT_EQ(CountsFor(512, 512, 512), (std::vector<int64_t>{512}));
  EXPECT_EQ(CountsFor(512, 128, 0), (std::vector<int64_t>{512, 256, 128}));
  EXPECT_EQ(CountsFor(512, 100, 0),
            (std::vector<int64_t>{512, 256, 128}));  // never below --min-gpus
  EXPECT_EQ(CountsFor(512, 0, 2048), (std::vector<int64_t>{512, 1024, 2048}));
  EXPECT_EQ(CountsFor(512, 0, 2000), (std::vector<int64_t>{512, 1024}));  // never above --max-gpus
  EXPECT_EQ(CountsFor(16, 1, 32), (std::vector<int64_t>{16, 8, 4, 2, 1, 32}));  // under a node too
}

TEST(GpuCounts, AHalvingOrDoublingThatIsNotWholeNodesEndsThatDirection) {
  EXPECT_EQ(CountsFor(24, 1, 0), (std::vector<int64_t>{24}));    // 12 GPUs are 1.5 nodes
  EXPECT_EQ(CountsFor(3, 0, 48), (std::vector<int64_t>{3, 6}));  // 12 GPUs are 1.5 nodes
}

TEST(EnumerateStrategies, MinGpusAddsTheSmallerCountsLayouts) {
  const Inputs in = Load("models/llama3-8b.json", 2);
  SearchRequest request = Request(16, 32, 4096);
  request.fixed = *ParseConstraints("tp=1,pp=1,cp=1,micro_batch=1,recompute=none,zero=0", "--fix");
  Result<std::vector<Strategy>> alone = EnumerateStrategies(in.model, in.cluster, request);
  request.min_gpus = 4;
  Result<std::vector<Strategy>> range = EnumerateStrategies(in.model, in.cluster, request);
  ASSERT_TRUE(alone.ok() && range.ok());
  std::set<int64_t> worlds;
  for (const Strategy& s : *alone) EXPECT_EQ(s.WorldSize(), 16);
  for (const Strategy& s : *range) worlds.insert(s.WorldSize());
  EXPECT_EQ(worlds, (std::set<int64_t>{4, 8, 16}));
}

TEST(ParseConstraints, AKeyGivenTwiceIsAnError) {
  Result<Constraints> twice = ParseConstraints("tp=2,pp=4,tp=4", "--fix");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "--fix tp=4: tp is already set by tp=2; give each key once");
  Result<Constraints> alias = ParseConstraints("zero=1,zero_stage=2", "--fix");
  ASSERT_FALSE(alias.ok());
  EXPECT_EQ(alias.status().message(),
            "--fix zero_stage=2: zero_stage is already set by zero=1; give each key once");
  Result<Constraints> dashes = ParseConstraints("micro-batch=1,mbs=2", "--explain");
  ASSERT_FALSE(dashes.ok());
  EXPECT_NE(dashes.status().message().find("micro_batch is already set by micro-batch=1"),
            std::string::npos);
}

// A pinned degree of 0 divided the GPUs (SIGFPE), and huge ones overflowed their product to 0
// (tests/fuzz/regressions/fix).
TEST(ParseConstraints, DegreesAreBoundedLikeAStrategys) {
  for (const char* text : {"tp=0", "vpp=0", "micro_batch=0", "pp=4294967296", "zero=4"}) {
    Result<Constraints> c = ParseConstraints(text, "--fix");
    EXPECT_FALSE(c.ok()) << text;
  }
  Result<Constraints> zero = ParseConstraints("tp=0", "--fix");
  EXPECT_NE(zero.status().message().find("--fix tp=0: tp must be a whole number from 1 to 1048576"),
            std::string::npos)
      << zero.status().message();
  EXPECT_TRUE(ParseConstraints("etp=0,recompute_layers=0,zero=0", "--fix").ok());
}

}  // namespace
}  // namespace loom
