// Pipeline layouts in the launch settings (issue 21): what Megatron-LM's flags for uneven stages
// can say, what needs --pipeline-model-parallel-layout, and what DeepSpeed refuses.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "plan/deepspeed_config.h"
#include "plan/flag_tables.h"
#include "plan/megatron_args.h"
#include "plan/planner.h"
#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/pipeline_layout.h"
#include "spec/strategy.h"

namespace loom {
namespace {

using Args = std::vector<std::string>;

ModelSpec Llama405b() {
  Result<ModelSpec> model =
      LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-405b.json");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : ModelSpec{};
}

// Meta's run (Dubey et al. 2024, Section 3.3.2): tp 8, pp 16, dp 128, 7 layers on the end stages.
Strategy Llama405bRun(int64_t vpp) {
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 128;
  s.sp = true;
  s.vpp = vpp;
  s.schedule = vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  s.global_batch = 2048;
  s.seq_len = 8192;
  s.zero_stage = 1;
  s.first_stage_layers = 7;
  s.last_stage_layers = 7;
  return s;
}

std::optional<std::string> ValueOfFlag(const Args& args, const std::string& flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end() || it + 1 == args.end()) return std::nullopt;
  return *(it + 1);
}

bool HasLayoutFlag(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

// Every flag in the table Megatron-LM's own parser gave at the flag tables' commit.
void ExpectMegatronParses(const Args& args) {
  const std::vector<std::string> problems = MegatronProblems(args);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

// 7 layers over 8 chunks: the first chunk holds only the embedding. Megatron-core's
// --decoder-first-pipeline-num-layers needs 7 divisible by 8, so the layout flag says it, alone:
// validate_args refuses it beside --num-virtual-stages-per-pipeline-rank.
TEST(PipelineLayoutEmit, UnevenChunksBecomeMegatronsLayoutFlagFromCoreV013) {
  const ModelSpec model = Llama405b();
  const Strategy s = Llama405bRun(8);
  EXPECT_TRUE(NeedsLayoutFlag(model, s));
  Result<Args> args = MegatronArguments(model, s);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(ValueOfFlag(*args, "--pipeline-model-parallel-layout"), "E|(t|)*126L");
  EXPECT_FALSE(HasLayoutFlag(*args, "--num-virtual-stages-per-pipeline-rank"));
  EXPECT_FALSE(HasLayoutFlag(*args, "--decoder-first-pipeline-num-layers"));
  EXPECT_FALSE(HasLayoutFlag(*args, "--decoder-last-pipeline-num-layers"));
  EXPECT_FALSE(HasLayoutFlag(
      *args, "--microbatch-group-size-per-virtual-pipeline-stage"));  // 16 micro-batches: pp's
  EXPECT_EQ(MinimumMegatronVersion(*args), MegatronVersion::kCore013);
  ExpectMegatronParses(*args);
  // What the flag says parses back to what was simulated.
  Result<std::vector<int64_t>> back =
      ParsePipelineLayout(*ValueOfFlag(*args, "--pipeline-model-parallel-layout"), s.pp);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, LayersPerVirtualStage(s, model.num_layers));

  MegatronOptions old;
  old.version = MegatronVersion::kCore012;
  Result<Args> refused = MegatronArguments(model, s, old);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("needs core_v0.13"), std::string::npos)
      << refused.status().message();
}

// 6 and 8 layers over 2 chunks split evenly: Megatron's uneven-stage flags say it, on any release.
TEST(PipelineLayoutEmit, EvenChunksKeepTheUnevenStageFlags) {
  const ModelSpec model = Llama405b();
  Strategy s = Llama405bRun(2);
  s.first_stage_layers = 6;
  s.last_stage_layers = 8;
  EXPECT_FALSE(NeedsLayoutFlag(model, s));
  Result<Args> args = MegatronArguments(model, s);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(ValueOfFlag(*args, "--num-virtual-stages-per-pipeline-rank"), "2");
  EXPECT_EQ(ValueOfFlag(*args, "--decoder-first-pipeline-num-layers"), "6");
  EXPECT_EQ(ValueOfFlag(*args, "--decoder-last-pipeline-num-layers"), "8");
  EXPECT_FALSE(HasLayoutFlag(*args, "--pipeline-model-parallel-layout"));
  ExpectMegatronParses(*args);
}

// 24 micro-batches on 16 stages: Megatron runs them in one group of 24, not its default of pp.
TEST(PipelineLayoutEmit, MicrobatchGroupIsEmittedWhenItIsNotPp) {
  const ModelSpec model = Llama405b();
  Strategy s = Llama405bRun(2);
  s.global_batch = 24 * 128;
  s.microbatch_group = 24;
  Result<Args> args = MegatronArguments(model, s);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(ValueOfFlag(*args, "--microbatch-group-size-per-virtual-pipeline-stage"), "24");
  ExpectMegatronParses(*args);
}

// The command: loom plan --model models/llama3-405b.json --cluster
// hardware/clusters/dgx-h100.json --gpus 16384 --global-batch 2048 --seq 8192 --fix
// tp=8,pp=16,cp=1,schedule=interleaved. Its plans have 7 layers on the first and last stage and
// 8 between, and the best one's layout flag reads back as the layers simulated.
TEST(PipelineLayoutEmit, Llama405bInterleavedPlansUseSevenEightLayoutsMegatronParses) {
  const ModelSpec model = Llama405b();
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json", 2048);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  SearchRequest request;
  request.gpus = 16384;
  request.global_batch = 2048;
  request.seq_len = 8192;
  Result<Constraints> fixed = ParseConstraints("tp=8,pp=16,cp=1,schedule=interleaved", "--fix");
  ASSERT_TRUE(fixed.ok());
  request.fixed = *fixed;
  PlanOptions options;
  options.threads = 2;
  options.top_k = 5;
  Result<PlanReport> report = Plan(model, *cluster, request, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_FALSE(report->ranked.empty());
  for (const RankedPlan& plan : report->ranked) {
    EXPECT_EQ(plan.strategy.first_stage_layers, 7);
    EXPECT_EQ(plan.strategy.last_stage_layers, 7);
  }
  const Strategy& best = report->ranked.front().strategy;
  Result<Args> args = MegatronArguments(model, best);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  ExpectMegatronParses(*args);
  const std::optional<std::string> layout = ValueOfFlag(*args, "--pipeline-model-parallel-layout");
  ASSERT_TRUE(layout.has_value()) << "vpp " << best.vpp;
  Result<std::vector<int64_t>> back = ParsePipelineLayout(*layout, best.pp);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, LayersPerVirtualStage(best, model.num_layers));
}

// Megatron-DeepSpeed's pipeline engine splits the layers itself (partition_balanced: 8 layers on
// each of the first 14 stages, 7 on the last two): a layout of Meta's, lighter at both ends, is
// refused with the split to use.
TEST(PipelineLayoutEmit, DeepSpeedRefusesALayoutOtherThanItsOwnSplit) {
  const ModelSpec model = Llama405b();
  Strategy s = Llama405bRun(1);
  s.first_stage_layers = 0;
  s.last_stage_layers = 0;
  Result<std::vector<int64_t>> layout = ParsePipelineLayout("Et*7|(t*8|)*14t*7L", 16);
  ASSERT_TRUE(layout.ok());
  s.layout = *layout;
  s.grad_accumulation = DeepSpeedGradAccumulation(s);
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("layers per stage 7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7: "
                                         "Megatron-DeepSpeed's pipeline engine splits the 126 "
                                         "layers over 16 stages as "
                                         "8,8,8,8,8,8,8,8,8,8,8,8,8,8,7,7"),
            std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace loom
