// The corpus of measured steps (issue 41): every row of every source is a loom case or refused with
// its reason, each measured quantity becomes seconds per step as MAPPING.md says, and the ordering
// of a job's alternatives counts pairs and regret as defined.

#include "reference/steptime_cases.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reference/fidelity_tables.h"
#include "reference/steptime_intervals.h"
#include "reference/steptime_tables.h"

namespace loom {
namespace {

const Corpus& TheCorpus() {
  static const Corpus* corpus = [] {
    Result<Corpus> c = LoadStepTimeCorpus(SourceTreePaths(LOOM_SOURCE_DIR));
    EXPECT_TRUE(c.ok()) << c.status().message();
    return new Corpus(c.ok() ? *c : Corpus{});
  }();
  return *corpus;
}

const CorpusCase* Find(const std::string& source, const std::string& name_start) {
  for (const CorpusCase& c : TheCorpus().cases) {
    if (c.source == source && c.step.name.rfind(name_start, 0) == 0) return &c;
  }
  return nullptr;
}

TEST(StepTimeCorpus, EveryRowIsACaseOrRefusedWithItsReason) {
  // Rows each source publishes (the Zero Bubble tables: one per schedule column).
  const std::map<std::string, size_t> published = {{"vtrain_ground_truth_single.csv", 1440},
                                                   {"vtrain_ground_truth_multi.csv", 109},
                                                   {"narayanan2021_table2_ptdp_vs_zero3.csv", 12},
                                                   {"qi2024_zero_bubble_table3_5.csv", 12 * 4},
                                                   {"qi2024_zero_bubble_table6_zbv.csv", 9 * 2},
                                                   {"mosaicml_llmfoundry_mpt_throughput.csv", 216}};
  std::map<std::string, size_t> seen;
  for (const CorpusCase& c : TheCorpus().cases) {
    ++seen[c.source];
    EXPECT_GT(c.step.measured, 0) << c.step.name;
    EXPECT_FALSE(c.job.empty()) << c.step.name;
  }
  for (const RefusedRow& r : TheCorpus().refused) {
    ++seen[r.source];
    EXPECT_FALSE(r.reason.empty()) << r.row;
  }
  EXPECT_EQ(seen, published);
  for (const char* source : kCorpusSources) EXPECT_EQ(seen.count(source), 1u) << source;
}

TEST(StepTimeCorpus, MeasuredQuantitiesBecomeSecondsPerStep) {
  // vTrain: milliseconds (single, row 1: 2 GPUs, tp1 pp2 dp1, mb 8).
  const CorpusCase* v =
      Find("vtrain_ground_truth_single.csv", "h1024 L24 s1024, 2 GPUs, batch 16: tp1 pp2 dp1 mb8");
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->step.measured, 0.372160408);
  // llm-foundry: global_batch_tokens / tput_tokens_s (MPT-70B on 512 H100).
  const CorpusCase* f = Find("mosaicml_llmfoundry_mpt_throughput.csv",
                             "MPT-70b h100_80gb amp_bf16, seq 2048, 512 GPUs");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->step.measured, 8388608.0 / 515636.0);
  // Zero Bubble: micro-batches x micro-batch over (samples per GPU per second x GPUs).
  const CorpusCase* z =
      Find("qi2024_zero_bubble_table3_5.csv", "1.5B, 8 GPUs, 24 micro-batches of 6: 1f1b");
  ASSERT_NE(z, nullptr);
  EXPECT_DOUBLE_EQ(z->step.measured, 24.0 * 6.0 / (11.8 * 8.0));
  // Narayanan Table 2: the paper's FLOPs (eq. 3) over TFLOP/s x GPUs.
  const CorpusCase* n =
      Find("narayanan2021_table2_ptdp_vs_zero3.csv", "174.6B, 384 GPUs, batch 1536: ptdp");
  ASSERT_NE(n, nullptr);
  EXPECT_DOUBLE_EQ(n->step.measured,
                   NarayananIterationFlops(n->step.model, n->step.strategy) / (153e12 * 384));
}

TEST(StepTimeCorpus, StrategiesFollowTheMapping) {
  const CorpusCase* v =
      Find("vtrain_ground_truth_single.csv", "h1024 L24 s1024, 8 GPUs, batch 32: tp2 pp2 dp2 mb4");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->step.strategy.tp, 2);
  EXPECT_EQ(v->step.model.vocab_size, 50432);  // 50257 padded to 128 x tp 2
  EXPECT_EQ(v->step.strategy.recompute, Recompute::kFull);
  EXPECT_EQ(v->step.strategy.dtype, Dtype::kFp16);
  EXPECT_FALSE(v->step.strategy.overlap_grad_reduce);  // no gradient bucketing
  const CorpusCase* z =
      Find("qi2024_zero_bubble_table3_5.csv", "1.5B, 8 GPUs, 24 micro-batches of 6: zb-h1");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->step.strategy.schedule, ScheduleKind::kZbH1);
  EXPECT_EQ(z->step.strategy.pp, 8);
  // 22 layers = 8 stages x 3 - 2: the first and last stage hold 2.
  EXPECT_EQ(z->step.strategy.first_stage_layers, 2);
  EXPECT_EQ(z->step.strategy.last_stage_layers, 2);
  // The paper's script (pretrain_zero_bubble.sh @ 425b42e5) has no --use-flash-attn and no
  // --untie-embeddings-and-output-weights: Megatron's unfused attention, tied embeddings.
  EXPECT_EQ(z->step.kernels.attention, AttentionKernel::kUnfused);
  EXPECT_TRUE(z->step.kernels.dropout);
  EXPECT_TRUE(z->step.model.tie_word_embeddings);
  EXPECT_EQ(z->step.model.max_position_embeddings, 2048);
  // ZB-V pads 30 layers to 32 over 16 x 2 chunks and takes the padding off the first and last
  // chunk (get_offset, megatron/model/transformer.py @ 425b42e5): both of stage 0's.
  const CorpusCase* v2 =
      Find("qi2024_zero_bubble_table6_zbv.csv", "6.2B, 16 GPUs, 48 micro-batches of 6: zb-v");
  ASSERT_NE(v2, nullptr);
  std::vector<int64_t> padded(32, 1);
  padded.front() = padded.back() = 0;
  EXPECT_EQ(v2->step.strategy.layout, padded);
  EXPECT_EQ(v2->step.strategy.schedule, ScheduleKind::kZbV);
  const CorpusCase* f = Find("mosaicml_llmfoundry_mpt_throughput.csv",
                             "MPT-70b h100_80gb amp_bf16, seq 2048, 512 GPUs");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->step.strategy.zero_stage, 3);  // FULL_SHARD
  EXPECT_EQ(f->step.strategy.dp, 512);
  EXPECT_EQ(f->step.model.vocab_size, 50368);
  const CorpusCase* z3 =
      Find("narayanan2021_table2_ptdp_vs_zero3.csv", "174.6B, 768 GPUs, batch 1536: zero3");
  ASSERT_NE(z3, nullptr);
  EXPECT_EQ(z3->step.strategy.zero_stage, 3);
  EXPECT_EQ(z3->step.strategy.dp, 768);
  EXPECT_EQ(z3->step.strategy.micro_batch, 2);
  const CorpusCase* p =
      Find("narayanan2021_table2_ptdp_vs_zero3.csv", "174.6B, 768 GPUs, batch 1536: ptdp");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(z3->job, p->job);  // the two ways of one job
  EXPECT_EQ(p->step.strategy.pp, 12);
}

// llm-foundry's rows run the layers of the scripts that measured them (MAPPING.md): the large-scale
// H100 table's attn_impl flash unpads around FlashAttention-2's variable-length kernel but for its
// 13b and 30b rows, which run the Triton port as every other table does, on the H100 too; every
// row's nn.Linear reduces its bias gradients in kernels of their own, but the fp8 rows' Transformer
// Engine Linear; every row splits QKV.
TEST(StepTimeCorpus, LlmFoundryRowsRunTheKernelsOfTheirScripts) {
  const std::string source = "mosaicml_llmfoundry_mpt_throughput.csv";
  struct Expected {
    std::string row;
    bool unpad, bias_grads;
    AttentionFamily family;
  };
  for (const Expected& e : std::vector<Expected>{
           {"MPT-7b h100_80gb amp_bf16, seq 2048, 128 GPUs", true, true,
            AttentionFamily::kFlashAttention2},
           {"MPT-13b h100_80gb amp_bf16, seq 2048, 128 GPUs", false, true,
            AttentionFamily::kTriton},
           {"MPT-3b h100_80gb amp_fp8, seq 2048, 8 GPUs", false, false, AttentionFamily::kTriton},
           {"MPT-7b h100_80gb amp_bf16, seq 32768, 8 GPUs", false, true, AttentionFamily::kTriton},
           {"MPT-7b a100_40gb bf16, seq 2048, 128 GPUs", false, true, AttentionFamily::kTriton},
       }) {
    const CorpusCase* c = Find(source, e.row);
    ASSERT_NE(c, nullptr) << e.row;
    ASSERT_TRUE(c->step.framework.has_value()) << e.row;
    const FrameworkProfile& f = *c->step.framework;
    EXPECT_EQ(f.name, "llm-foundry") << e.row;
    ASSERT_TRUE(f.layer_kernels.has_value()) << e.row;
    EXPECT_EQ(f.layer_kernels->attention_unpad, e.unpad) << e.row;
    EXPECT_EQ(f.layer_kernels->linear_bias_grads, e.bias_grads) << e.row;
    EXPECT_TRUE(f.layer_kernels->qkv_split_grad_copy) << e.row;
    ASSERT_TRUE(f.fused_attention.has_value()) << e.row;
    EXPECT_EQ(f.fused_attention->family, e.family) << e.row;
  }
}

// vTrain's tp 16 rows span two nodes of 8 GPUs, as Megatron-DeepSpeed ran them: loom takes them
// as a user does, with --allow-cross-node-tp (MAPPING.md, "vTrain"), so no vTrain row is refused
// for tensor parallelism across nodes, and the rows within a node keep the rule.
TEST(StepTimeCorpus, VtrainTensorParallelismAcrossNodesIsACase) {
  const CorpusCase* tp16 = Find("vtrain_ground_truth_multi.csv",
                                "h3072 L30 s2048, 64 GPUs, batch 512: tp16 pp1 dp4 mb32");
  ASSERT_NE(tp16, nullptr);
  EXPECT_EQ(tp16->step.strategy.tp, 16);
  EXPECT_TRUE(tp16->step.strategy.allow_cross_node_tp);
  const CorpusCase* tp8 = Find("vtrain_ground_truth_multi.csv",
                               "h3072 L30 s2048, 64 GPUs, batch 512: tp8 pp1 dp8 mb32");
  ASSERT_NE(tp8, nullptr);
  EXPECT_FALSE(tp8->step.strategy.allow_cross_node_tp);
  for (const RefusedRow& r : TheCorpus().refused) {
    EXPECT_EQ(r.reason.find("allow-cross-node-tp"), std::string::npos) << r.row << ": " << r.reason;
  }
}

// The sources measured in parts name each row's part, for the errors part by part (the issues'
// targets are per llm-foundry table and for Narayanan Table 2's PTD-P rows): llm-foundry's README
// table, Narayanan's scheme; the other sources are one whole.
TEST(StepTimeCorpus, RowsNameThePartOfTheirSource) {
  std::map<std::string, std::map<std::string, int>> parts;
  for (const CorpusCase& c : TheCorpus().cases) ++parts[c.source][c.part];
  EXPECT_EQ(parts["mosaicml_llmfoundry_mpt_throughput.csv"],
            (std::map<std::string, int>{{"a100_40gb_roce", 78},
                                        {"a100_80gb_roce", 61},
                                        {"h100_bf16", 52},
                                        {"h100_bf16_large", 18},
                                        {"h100_fp8", 7}}));
  EXPECT_EQ(parts["narayanan2021_table2_ptdp_vs_zero3.csv"],
            (std::map<std::string, int>{{"ptdp", 6}, {"zero3", 6}}));
  for (const char* whole :
       {"vtrain_ground_truth_single.csv", "vtrain_ground_truth_multi.csv",
        "qi2024_zero_bubble_table3_5.csv", "qi2024_zero_bubble_table6_zbv.csv"}) {
    ASSERT_EQ(parts[whole].size(), 1u) << whole;
    EXPECT_EQ(parts[whole].begin()->first, "") << whole;
  }
}

TEST(StepTimeCorpus, ZeroBubbleH2IsRefusedNotDropped) {
  int64_t h2 = 0;
  for (const RefusedRow& r : TheCorpus().refused) {
    if (r.row.find("zb-h2") != std::string::npos) {
      ++h2;
      EXPECT_NE(r.reason.find("ZB-H2"), std::string::npos) << r.reason;
    }
  }
  EXPECT_EQ(h2, 12);
}

TEST(MegatronVocab, PadsToAMultipleOf128TimesTp) {
  EXPECT_EQ(MegatronPaddedVocab(50257, 1), 50304);
  EXPECT_EQ(MegatronPaddedVocab(50257, 8), 51200);
  EXPECT_EQ(MegatronPaddedVocab(32000, 2), 32000);
}

FidelityRow Row(double predicted, double measured) { return {"", predicted, measured, ""}; }

TEST(CorpusOrdering, CountsPairsInMeasuredOrderAndTheRegretOfLoomsPick) {
  FidelityTable table;
  // Job a: loom orders x < y < z, measured y < x < z: pairs (x,y) wrong, (x,z) and (y,z) right;
  // loom picks x (measured 2.0) where y (1.0) was best: regret 1.0.
  table.rows = {Row(1.0, 2.0),
                Row(1.5, 1.0),
                Row(3.0, 4.0),
                // Job b: in order, regret 0; a failed row and a tie in measured time add no pair.
                Row(1.0, 1.0),
                Row(2.0, 2.0),
                Row(2.5, 2.0),
                {"failed", 0, 0.5, "refused"}};
  const std::vector<std::string> jobs = {"a", "a", "a", "b", "b", "b", "b"};
  const Ordering o = OrderingOf(table, jobs);
  EXPECT_EQ(o.jobs, 2);
  EXPECT_EQ(o.pairs, 3 + 2);
  EXPECT_EQ(o.pairs_in_order, 2 + 2);
  EXPECT_DOUBLE_EQ(o.max_regret, 1.0);
  EXPECT_EQ(o.worst_job, "a");
  EXPECT_DOUBLE_EQ(o.mean_regret, 0.5);
  EXPECT_DOUBLE_EQ(o.InOrderShare(), 0.8);
}

TEST(CorpusOrdering, AJobOfOneRowIsNoJob) {
  FidelityTable table;
  table.rows = {Row(1.0, 2.0), Row(1.0, 3.0)};
  const Ordering o = OrderingOf(table, {"a", "b"});
  EXPECT_EQ(o.jobs, 0);
  EXPECT_EQ(o.pairs, 0);
  EXPECT_DOUBLE_EQ(o.InOrderShare(), 0);
}

// hardware/intervals/step-time.json is the fit of the corpus as loom predicts it now: a change
// that moves the predictions must write the intervals again (a FidelityReport test: it simulates
// the whole corpus, so it runs with the reference tests, not under the sanitizers).
TEST(FidelityReport, ShippedIntervalsAreTheFitOfTheCorpus) {
  const std::vector<FidelityTable> tables = PredictCorpus(TheCorpus());
  const StepIntervalTable fit = FitCorpusIntervals(CorpusResiduals(TheCorpus(), tables));
  const std::string path = std::string(LOOM_SOURCE_DIR) + "/hardware/intervals/step-time.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const nlohmann::json shipped = nlohmann::json::parse(in, nullptr, false);
  const nlohmann::json fitted = nlohmann::json::parse(StepIntervalsJson(fit).dump());
  EXPECT_EQ(shipped, fitted)
      << path
      << " is not the fit of the corpus as loom predicts it now; run "
         "tools/fidelity --write-intervals hardware/intervals/step-time.json";
}

TEST(StepTimeIntervals, WeightedQuantileReachesItsShareOfTheWeight) {
  EXPECT_DOUBLE_EQ(WeightedQuantile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.5), 2);
  EXPECT_DOUBLE_EQ(WeightedQuantile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.9), 4);
  EXPECT_DOUBLE_EQ(WeightedQuantile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.1), 1);
  EXPECT_DOUBLE_EQ(WeightedQuantile({{1, 3}, {2, 1}}, 0.5), 1);
  EXPECT_DOUBLE_EQ(WeightedQuantile({{1, 3}, {2, 1}}, 0.8), 2);
}

Residual Made(const std::string& source, const std::string& regime, double ratio,
              const std::string& job = "", double predicted = 1.0) {
  return {source, job, {regime, regime, regime, "outside"}, predicted, predicted * ratio};
}

TEST(StepTimeIntervals, AHeldOutSourceIsCoveredOnlyWhereTheOthersErrLikeIt) {
  std::vector<Residual> residuals;
  // Sources a and b: loom is right to within -10 %..+10 % in regime r; c errs 2x in regime r.
  for (int i = 0; i < 40; ++i) {
    const double ratio = 0.9 + 0.2 * i / 39.0;
    residuals.push_back(Made("a", "r", ratio));
    residuals.push_back(Made("b", "r", ratio));
  }
  for (int i = 0; i < 10; ++i) residuals.push_back(Made("c", "r", 2.0));
  const std::vector<SourceCoverage> coverage = LeaveOneSourceOutCoverage(residuals);
  ASSERT_EQ(coverage.size(), 3u);
  // c held out: a and b's interval (about 0.92-1.08) misses every 2x row.
  EXPECT_EQ(coverage[2].source, "c");
  EXPECT_EQ(coverage[2].rows, 10);
  EXPECT_EQ(coverage[2].covered, 0);
  EXPECT_NEAR(coverage[2].median_width, 0.16, 0.03);
  EXPECT_EQ(coverage[2].by_level[0], 10);
  // a held out: b and c weigh the same, so the interval stretches to c's 2x and holds a's rows.
  EXPECT_EQ(coverage[0].source, "a");
  EXPECT_GE(coverage[0].Coverage(), 0.75);
  EXPECT_GT(coverage[0].median_width, 0.5);
}

// The held-out source's job ranked three ways: a and b measured regime "slow" at 2x loom's
// prediction and "fast" at 1x, with the same spread. Moving c's rows to their regime's median
// flips the order loom's predictions had right; at p90 about the prediction both rows take the
// same factor and keep it.
TEST(StepTimeIntervals, TheHeldOutJobsAreOrderedAsPredictedAtTheMedianAndAtP90) {
  std::vector<Residual> residuals;
  for (const char* source : {"a", "b"}) {
    for (int i = 0; i < 20; ++i) {
      const double spread = 0.9 + 0.2 * i / 19.0;
      residuals.push_back(Made(source, "slow", 2.0 * spread));
      residuals.push_back(Made(source, "fast", spread));
    }
  }
  residuals.push_back(Made("c", "slow", 1.2, "job", 1.0));        // measured 1.2
  residuals.push_back(Made("c", "fast", 1.4 / 1.5, "job", 1.5));  // measured 1.4
  const std::vector<SourceCoverage> coverage = LeaveOneSourceOutCoverage(residuals);
  ASSERT_EQ(coverage.size(), 3u);
  const SourceCoverage& c = coverage[2];
  ASSERT_EQ(c.source, "c");
  EXPECT_EQ(c.as_predicted.pairs, 1);
  EXPECT_EQ(c.as_predicted.pairs_in_order, 1);
  EXPECT_EQ(c.at_median.pairs_in_order, 0);
  EXPECT_NEAR(c.at_median.mean_regret, 1.4 / 1.2 - 1, 1e-12);
  EXPECT_EQ(c.at_p90.pairs_in_order, 1);
  EXPECT_EQ(c.at_p90.mean_regret, 0);
}

TEST(StepTimeIntervals, ARegimeNoOtherSourceMeasuredFallsBackToACoarserOne) {
  std::vector<Residual> residuals;
  for (int i = 0; i < 30; ++i) {
    residuals.push_back(Made("a", "r", 1.0));
    residuals.push_back(Made("b", "r", 1.0));
  }
  for (int i = 0; i < 5; ++i) residuals.push_back(Made("c", "new", 1.0));
  const std::vector<SourceCoverage> coverage = LeaveOneSourceOutCoverage(residuals);
  ASSERT_EQ(coverage.size(), 3u);
  EXPECT_EQ(coverage[2].by_level[0], 0);
  EXPECT_EQ(coverage[2].by_level[3], 5);  // the envelope of a and b
  EXPECT_EQ(coverage[2].covered, 5);
}

}  // namespace
}  // namespace loom
