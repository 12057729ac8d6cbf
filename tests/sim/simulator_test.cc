#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "sim/trace.h"
#include "workload/activation_memory.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

std::string Shipped(const std::string& relative) { return std::string(LOOM_SOURCE_DIR) + "/" + relative; }

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
};

Inputs Load(const std::string& model, const std::string& cluster, int64_t nodes) {
  Result<ModelSpec> m = LoadModelSpec(Shipped(model));
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ClusterSpec> c = LoadClusterSpec(Shipped(cluster), nodes);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return {*m, *c};
}

Strategy Gpt3Interleaved() {
  Strategy s;
  s.tp = 8;
  s.pp = 8;
  s.dp = 2;
  s.vpp = 2;
  s.sp = true;
  s.schedule = ScheduleKind::kInterleaved;
  s.recompute = Recompute::kSelective;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.seq_len = 2048;
  s.zero_stage = 1;
  return s;
}

TEST(Simulator, SameInputGivesIdenticalResultsAndTrace) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Result<SimulationResult> a = SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved());
  Result<SimulationResult> b = SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->timeline.makespan, b->timeline.makespan);
  EXPECT_EQ(ChromeTraceJson(a->step.graph, a->timeline, &a->memory),
            ChromeTraceJson(b->step.graph, b->timeline, &b->memory));
}

TEST(Simulator, MfuIsModelFlopsOverStepTimeGpusAndPeak) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double model_flops = ModelFlopsPerToken(in.model, 2048).training * 64 * 2048;
  EXPECT_NEAR(r->mfu, model_flops / (r->step_time_s * 128 * 312e12), 1e-12);
  EXPECT_NEAR(r->tokens_per_s, 64.0 * 2048 / r->step_time_s, 1e-6);
  // Selective recompute replays only the attention core: HFU a little above MFU.
  EXPECT_GT(r->hfu, r->mfu);
  EXPECT_LT(r->hfu, r->mfu * 1.05);
  EXPECT_EQ(r->stages.size(), 8u);
  const StepBreakdown& b = r->breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.optimizer_s, r->step_time_s, 1e-6);
  // The critical path has no gaps: its tasks' times add up to the step.
  const CriticalPathSummary& c = r->critical_path;
  EXPECT_NEAR(c.compute_s + c.tp_comm_s + c.pp_comm_s + c.dp_comm_s + c.optimizer_s, r->step_time_s, 1e-6);
  EXPECT_GT(c.tp_comm_s, 0);
  EXPECT_GT(c.optimizer_s, 0);
}

TEST(Simulator, FullRecomputeCostsTimeAndSavesMemory) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy selective = Gpt3Interleaved();
  Strategy full = selective;
  full.recompute = Recompute::kFull;
  Result<SimulationResult> a = SimulateTrainingStep(in.model, in.cluster, selective);
  Result<SimulationResult> b = SimulateTrainingStep(in.model, in.cluster, full);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(b->step_time_s, a->step_time_s);
  EXPECT_LT(b->peak_memory_bytes, a->peak_memory_bytes);
  EXPECT_GT(b->hfu, b->mfu * 1.2);  // the whole forward again: 4/3 of the model FLOPs
}

TEST(Simulator, FullModeMatchesTheSymmetricStep) {
  Inputs in = Load("models/megatron-22b.json", "hardware/clusters/dgx-a100.json", 4);
  Strategy s;
  s.tp = 8;
  s.pp = 2;
  s.dp = 2;
  s.micro_batch = 1;
  s.global_batch = 16;
  Result<SimulationResult> one = SimulateTrainingStep(in.model, in.cluster, s);
  SimulationOptions full;
  full.full = true;
  Result<SimulationResult> all = SimulateTrainingStep(in.model, in.cluster, s, full);
  ASSERT_TRUE(one.ok() && all.ok());
  EXPECT_EQ(all->step.graph.num_ranks(), 4);
  EXPECT_EQ(one->timeline.makespan, all->timeline.makespan);
}

// Korthikanti et al. 2022, Section 4.2.3 (tests/reference/korthikanti2022_activation_formulas.md):
// with 1F1B the first stage holds p micro-batches of its L/p layers, L layers' worth in all; the
// interleaved schedule multiplies this by 1 + (p-1)/(p*v). The simulator must reach these peaks
// from the schedule, with the per-layer bytes of the workload; the embedding's few bytes per
// micro-batch (token ids) come on top.
TEST(Simulator, FirstStageActivationPeakFollowsKorthikanti) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  s.dp = 1;
  s.global_batch = 16;
  Result<ActivationBytes> layer = LayerActivationBytes(in.model, s);
  Result<LayerOps> embedding = BuildEmbeddingOps(in.model, s);
  ASSERT_TRUE(layer.ok() && embedding.ok());
  const int64_t embedding_kept = SumActivationBytes(*embedding).kept;
  const int64_t p = s.pp, layers = in.model.num_layers;
  for (int64_t v : {1, 2, 3}) {
    s.vpp = v;
    s.schedule = v == 1 ? ScheduleKind::k1F1B : ScheduleKind::kInterleaved;
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
    ASSERT_TRUE(r.ok()) << r.status().message();
    // 1F1B: p chunk sets of L/p layers. Interleaved: the warm-up of 2(p-1) + (v-1)p forwards plus
    // the one in flight, of L/(pv) layers each: L (1 + (p-1)/(pv)).
    const int64_t layer_sets = v == 1 ? layers : (v * p + p - 1) * layers / (p * v);
    const int64_t peak = r->memory.ranks[0].peak_bytes_by_pool[r->step.activations];
    EXPECT_GE(peak, layer_sets * layer->kept) << "vpp " << v;
    EXPECT_LE(peak, layer_sets * layer->kept + s.global_batch * embedding_kept) << "vpp " << v;
  }
}

TEST(Simulator, InvalidStrategyListsEveryViolation) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  s.tp = 3;
  s.global_batch = 63;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--tp 3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--global-batch 63"), std::string::npos) << r.status().message();
}

TEST(Simulator, LatentAttentionIsReportedAsUnsupported) {
  Inputs in = Load("models/deepseek-v3.json", "hardware/clusters/dgx-h100.json", 64);
  Strategy s;
  s.tp = 8;
  s.pp = 1;
  s.dp = 64;
  s.ep = 64;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.seq_len = 4096;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("latent attention"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace loom
