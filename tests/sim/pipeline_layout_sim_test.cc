// Pipeline layouts in the simulator (issue 21): the embedding and the output layer make the first
// and last stage heavier, and a layer fewer there balances the pipeline, as Llama 3 405B ran.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "sim_test_support.h"
#include "spec/pipeline_layout.h"
#include "spec/strategy.h"

namespace loom {
namespace {

// Llama 3 405B's layout (Dubey et al. 2024, Section 3.3.2) on a quarter of its GPUs: tp 8,
// pp 16, dp 32, 1F1B, |first| and |last| layers on the end stages, 8 on each other.
Strategy Layout(int64_t first, int64_t last) {
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 32;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 32 * 16;
  s.seq_len = 8192;
  s.zero_stage = 1;
  s.first_stage_layers = first;
  s.last_stage_layers = last;
  return s;
}

SimulationResult Simulate(const Inputs& in, const Strategy& s) {
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimulationResult{};
}

double MaxCompute(const SimulationResult& r, int32_t from, int32_t to) {
  double most = 0;
  for (const StageResult& stage : r.stages) {
    if (stage.stage >= from && stage.stage <= to) most = std::max(most, stage.compute_s);
  }
  return most;
}

TEST(PipelineLayoutSim, OneLayerFewerOnTheEndStagesBalancesTheEmbeddingAndHead) {
  const Inputs in = Load("models/llama3-405b.json", "hardware/clusters/dgx-h100.json", 512);
  const SimulationResult balanced = Simulate(in, Layout(7, 7));
  const SimulationResult heavy_last = Simulate(in, Layout(6, 8));
  ASSERT_EQ(balanced.stages.size(), 16u);
  ASSERT_EQ(heavy_last.stages.size(), 16u);
  // 7 layers with the output layer weigh no more than 8 layers; 8 with it weigh more.
  EXPECT_LE(MaxCompute(balanced, 15, 15), MaxCompute(balanced, 1, 14));
  EXPECT_LE(MaxCompute(balanced, 0, 0), MaxCompute(balanced, 1, 14));
  EXPECT_GT(MaxCompute(heavy_last, 15, 15), MaxCompute(heavy_last, 1, 14));
  EXPECT_LT(balanced.step_time_s, heavy_last.step_time_s);
}

// Meta's interleaved layout: 8 chunks a stage, the first chunk holding only the embedding and the
// last only the output layer and loss. The explicit layout and the derived one are one strategy,
// and interleaving shortens the step against 1F1B, as its smaller bubble says it should.
TEST(PipelineLayoutSim, EmptyEndChunksSimulateAsTheExplicitLayout) {
  const Inputs in = Load("models/llama3-405b.json", "hardware/clusters/dgx-h100.json", 512);
  Strategy derived = Layout(7, 7);
  derived.schedule = ScheduleKind::kInterleaved;
  derived.vpp = 8;
  Strategy explicit_layout = derived;
  explicit_layout.first_stage_layers = 0;
  explicit_layout.last_stage_layers = 0;
  Result<std::vector<int64_t>> layout = ParsePipelineLayout("E|(t|)*126L", 16);
  ASSERT_TRUE(layout.ok());
  explicit_layout.layout = *layout;
  const SimulationResult a = Simulate(in, derived);
  const SimulationResult b = Simulate(in, explicit_layout);
  EXPECT_DOUBLE_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_LT(a.step_time_s, Simulate(in, Layout(7, 7)).step_time_s);
}

}  // namespace
}  // namespace loom
