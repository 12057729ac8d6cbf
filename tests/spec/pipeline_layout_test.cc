// Pipeline layouts: Megatron-core's --pipeline-model-parallel-layout syntax, the chunks
// LayersPerVirtualStage gives for uneven stages, and the rules on both (issue 21).

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/pipeline_layout.h"
#include "spec/scenario.h"
#include "spec/strategy.h"

namespace loom {
namespace {

ModelSpec Llama405b() {
  Result<ModelSpec> model =
      LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-405b.json");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : ModelSpec{};
}

ClusterSpec H100s(int64_t nodes) {
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-h100.json", nodes);
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return cluster.ok() ? *cluster : ClusterSpec{};
}

// Llama 3 405B as Meta ran it (Dubey et al. 2024, Section 3.3.2): tp 8, pp 16, cp 1, dp 128 on
// 16,384 GPUs, 126 layers with one fewer on the first and last stage, interleaved.
Strategy Llama405bRun(int64_t vpp) {
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 128;
  s.sp = true;
  s.vpp = vpp;
  s.schedule = ScheduleKind::kInterleaved;
  s.micro_batch = 1;
  s.global_batch = 2048;
  s.seq_len = 8192;
  s.first_stage_layers = 7;
  s.last_stage_layers = 7;
  s.zero_stage = 1;
  return s;
}

TEST(PipelineLayout, TextRoundTripsThroughMegatronSyntax) {
  const std::vector<int64_t> llama = [] {
    std::vector<int64_t> v(128, 1);
    v.front() = 0;
    v.back() = 0;
    return v;
  }();
  EXPECT_EQ(PipelineLayoutText(llama), "E|(t|)*126L");
  std::vector<int64_t> stages(16, 8);
  stages.front() = 7;
  stages.back() = 7;
  EXPECT_EQ(PipelineLayoutText(stages), "Et*7|(t*8|)*14t*7L");
  EXPECT_EQ(PipelineLayoutText({4}), "Et*4L");
  for (const std::vector<int64_t>& layers :
       {llama, stages, std::vector<int64_t>{3, 4, 4, 4, 4, 4, 4, 3},
        std::vector<int64_t>{1, 2, 2, 1}}) {
    Result<std::vector<int64_t>> parsed = ParsePipelineLayout(PipelineLayoutText(layers), 2);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, layers) << PipelineLayoutText(layers);
  }
  // Megatron's own examples: cosmetic commas, "x*n" and "(...)*n".
  Result<std::vector<int64_t>> commas = ParsePipelineLayout("Ettt|(tt|)*2,t|L", 5);
  ASSERT_TRUE(commas.ok()) << commas.status().ToString();
  EXPECT_EQ(*commas, (std::vector<int64_t>{3, 2, 2, 1, 0}));
}

TEST(PipelineLayout, ParserRefusesWhatMegatronRefusesNamingTheFix) {
  const struct {
    const char* text;
    int64_t pp;
    const char* says;
  } cases[] = {
      {"t|tL", 2, "starts with E"},
      {"Et|t", 2, "ends with L"},
      {"Et|Et|tL", 3, "comes once, first"},
      {"Et|tLt", 2, "must be the last"},
      {"Et|tm|L", 3, "multi-token prediction"},
      {"Et|x|tL", 3, "is not a layer"},
      {"Et|t|tL", 2, "not a multiple of --pp 2"},
      {"E(t|*3L", 1, "needs a \")*n\""},
      {"E(t|)*99999999L", 1, "count from 0 to 2^20"},
  };
  for (const auto& c : cases) {
    Result<std::vector<int64_t>> parsed = ParsePipelineLayout(c.text, c.pp);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos)
        << c.text << ": " << parsed.status().message();
  }
}

// 7 layers on the first and last stage over 8 chunks: the first chunk of the first stage holds
// only the embedding, the last chunk of the last stage only the loss; Meta's layout exactly.
TEST(PipelineLayout, LlamaStagesOfSevenOverEightChunksLeaveTheEndChunksEmpty) {
  const ModelSpec model = Llama405b();
  const Strategy s = Llama405bRun(8);
  EXPECT_TRUE(StrategyViolations(s, model, H100s(2048)).empty());
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, model.num_layers);
  ASSERT_EQ(layers.size(), 128u);
  EXPECT_EQ(std::accumulate(layers.begin(), layers.end(), int64_t{0}), 126);
  EXPECT_EQ(layers.front(), 0);
  EXPECT_EQ(layers.back(), 0);
  for (size_t v = 1; v + 1 < layers.size(); ++v) EXPECT_EQ(layers[v], 1) << v;
  EXPECT_EQ(PipelineLayoutText(layers), "E|(t|)*126L");
}

// With 2 chunks a 7-layer first stage puts 3 beside the embedding and 4 after; the last stage 4
// then 3 beside the loss; the 8-layer stages between 4 and 4.
TEST(PipelineLayout, UnevenStagesSplitTheirChunksLighterTowardTheEnds) {
  const ModelSpec model = Llama405b();
  const Strategy s = Llama405bRun(2);
  EXPECT_TRUE(StrategyViolations(s, model, H100s(2048)).empty());
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, model.num_layers);
  ASSERT_EQ(layers.size(), 32u);
  EXPECT_EQ(layers[0], 3);   // stage 0, chunk 0
  EXPECT_EQ(layers[16], 4);  // stage 0, chunk 1
  EXPECT_EQ(layers[15], 4);  // stage 15, chunk 0
  EXPECT_EQ(layers[31], 3);  // stage 15, chunk 1
  for (int64_t stage = 1; stage < 15; ++stage) {
    EXPECT_EQ(layers[stage], 4);
    EXPECT_EQ(layers[16 + stage], 4);
  }
}

TEST(PipelineLayout, ExplicitLayoutIsCheckedAgainstTheModelAndDegrees) {
  const ModelSpec model = Llama405b();
  const ClusterSpec cluster = H100s(2048);
  Strategy s = Llama405bRun(8);
  s.first_stage_layers = 0;
  s.last_stage_layers = 0;
  Result<std::vector<int64_t>> layout = ParsePipelineLayout("E|(t|)*126L", 16);
  ASSERT_TRUE(layout.ok());
  s.layout = *layout;
  EXPECT_TRUE(StrategyViolations(s, model, cluster).empty());
  EXPECT_EQ(LayersPerVirtualStage(s, model.num_layers), *layout);

  const auto violation = [&](const Strategy& bad) {
    const std::vector<StrategyViolation> v = StrategyViolations(bad, model, cluster);
    return v.empty() ? std::string() : v.front().message;
  };
  Strategy wrong_count = s;
  wrong_count.vpp = 4;
  EXPECT_NE(violation(wrong_count).find("makes 64"), std::string::npos) << violation(wrong_count);
  Strategy empty_middle = s;
  empty_middle.layout[5] = 0;
  empty_middle.layout[6] = 2;
  EXPECT_NE(violation(empty_middle).find("only the first and the last virtual stage may be empty"),
            std::string::npos);
  Strategy too_many = s;
  too_many.layout[5] = 2;
  EXPECT_NE(violation(too_many).find("places 127 transformer layers"), std::string::npos)
      << violation(too_many);
  Strategy both = s;
  both.first_stage_layers = 7;
  EXPECT_NE(violation(both).find("drop the stage counts, or the layout"), std::string::npos);
}

// On the V-shaped schedules a layout lists the virtual stages in the model's order, which the V
// runs down the stages and back: stage 0 holds the first and the last (VirtualStageOf). The
// zero-bubble repository's padded ZB-V (--allow-padding-num-layers, Qi et al.'s Table 6 runs)
// leaves both chunks of stage 0 with the embedding and the loss alone.
TEST(PipelineLayout, AVShapedLayoutRunsDownTheStagesAndBack) {
  const ModelSpec model = Llama405b();
  const ClusterSpec cluster = H100s(2048);
  Strategy s = Llama405bRun(2);
  s.schedule = ScheduleKind::kZbV;
  s.first_stage_layers = 0;
  s.last_stage_layers = 0;
  // 126 layers over 32 virtual stages in model order: the ends empty, 6 of 5 and 24 of 4.
  std::vector<int64_t> layout(32, 4);
  layout.front() = layout.back() = 0;
  for (size_t v = 1; v <= 6; ++v) layout[v] = 5;
  ASSERT_EQ(std::accumulate(layout.begin(), layout.end(), int64_t{0}), 126);
  s.layout = layout;
  EXPECT_TRUE(StrategyViolations(s, model, cluster).empty());
  EXPECT_EQ(LayersPerVirtualStage(s, model.num_layers), layout);
  EXPECT_EQ(VirtualStageOf(16, ScheduleKind::kZbV, 0, 1), 31);
  EXPECT_EQ(VirtualStageOf(16, ScheduleKind::kZbV, 15, 1), 16);
  EXPECT_EQ(VirtualStageOf(16, ScheduleKind::kDualPipeV, 3, 1), 28);
  EXPECT_EQ(VirtualStageOf(16, ScheduleKind::kInterleaved, 3, 1), 19);
  // A middle virtual stage left empty is named where the V runs it: virtual stage 20 is the
  // second chunk of stage 11.
  Strategy empty = s;
  empty.layout[20] = 0;
  empty.layout[21] = 8;
  bool named = false;
  for (const StrategyViolation& v : StrategyViolations(empty, model, cluster)) {
    named = named || v.message.find("virtual stage 20 (stage 11, chunk 1) holds 0 layers") !=
                         std::string::npos;
  }
  EXPECT_TRUE(named);
  // Without a layout, first and last stage counts split in halves onto the V's ends: stage 0's
  // second chunk is the last virtual stage, stage 15's the seventeenth.
  Strategy counts = Llama405bRun(2);
  counts.schedule = ScheduleKind::kZbV;
  counts.first_stage_layers = 4;
  counts.last_stage_layers = 10;  // 4 + 10 + 14 * 8 = 126
  ASSERT_TRUE(StrategyViolations(counts, model, cluster).empty());
  const std::vector<int64_t> layers = LayersPerVirtualStage(counts, model.num_layers);
  EXPECT_EQ(layers[0], 2);
  EXPECT_EQ(layers[31], 2);
  EXPECT_EQ(layers[15], 5);
  EXPECT_EQ(layers[16], 5);
  EXPECT_EQ(layers[1], 4);
  EXPECT_EQ(layers[30], 4);
}

// A scenario's strategy keeps the layout (in Megatron-core's syntax) and the micro-batch group.
TEST(PipelineLayout, ScenarioStrategyRoundTripsTheLayoutAndGroup) {
  Strategy s = Llama405bRun(8);
  s.first_stage_layers = 0;
  s.last_stage_layers = 0;
  s.layout = *ParsePipelineLayout("E|(t|)*126L", 16);
  s.microbatch_group = 32;
  const nlohmann::ordered_json json = StrategyJson(s);
  EXPECT_EQ(json["pipeline_layout"], "E|(t|)*126L");
  const nlohmann::json plain = nlohmann::json::parse(json.dump());
  JsonReader reader(plain, "scenario.json", "strategy");
  Strategy back;
  ReadStrategyObject(reader, &back);
  ASSERT_TRUE(reader.Finish(UnknownKeys::kError).ok());
  EXPECT_EQ(back.layout, s.layout);
  EXPECT_EQ(back.microbatch_group, 32);
  EXPECT_FALSE(StrategyJson(Llama405bRun(8)).contains("pipeline_layout"));  // none given: no key

  nlohmann::json bad = plain;
  bad["pipeline_layout"] = "E|t|xL";
  JsonReader bad_reader(bad, "scenario.json", "strategy");
  ReadStrategyObject(bad_reader, &back);
  const Status status = bad_reader.Finish(UnknownKeys::kError);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("pipeline_layout"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("scenario.json"), std::string::npos) << status.message();
}

// Megatron-LM's interleaved schedule needs groups of at least pp micro-batches, not a multiple of
// pp: 2048 / (1 * 128) = 16 micro-batches on 16 stages pass; 24 need a group of 24.
TEST(PipelineLayout, InterleavedNeedsAValidMicrobatchGroupNotDivisibility) {
  const ModelSpec model = Llama405b();
  const ClusterSpec cluster = H100s(2048);
  Strategy s = Llama405bRun(2);
  s.global_batch = 24 * 128;
  std::vector<StrategyViolation> v = StrategyViolations(s, model, cluster);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].flag, "--schedule");
  EXPECT_NE(v[0].message.find("use --microbatch-group 24"), std::string::npos) << v[0].message;
  s.microbatch_group = 24;
  EXPECT_TRUE(StrategyViolations(s, model, cluster).empty());
  s.microbatch_group = 20;  // leaves 4 < pp
  EXPECT_FALSE(StrategyViolations(s, model, cluster).empty());
  s.microbatch_group = 0;
  s.global_batch = 8 * 128;  // 8 micro-batches < pp
  v = StrategyViolations(s, model, cluster);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].message.find("is below pp"), std::string::npos) << v[0].message;
  Strategy one_f_one_b = Llama405bRun(1);
  one_f_one_b.schedule = ScheduleKind::k1F1B;
  one_f_one_b.microbatch_group = 16;
  v = StrategyViolations(one_f_one_b, model, cluster);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].flag, "--microbatch-group");
  EXPECT_NE(v[0].message.find("belong to the interleaved schedule"), std::string::npos)
      << v[0].message;
}

}  // namespace
}  // namespace loom
