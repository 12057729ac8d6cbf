// The fidelity report's inputs: every reference table loads with the rows its source publishes,
// and every case becomes a strategy loom accepts (a case loom rejected would be a failed row).

#include "reference/fidelity_cases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/attention_tables.h"
#include "reference/comm_reference.h"
#include "reference/fidelity_tables.h"
#include "reference/gemm_reference.h"
#include "spec/cluster.h"

namespace loom {
namespace {

const ReferencePaths& Paths() {
  static const ReferencePaths paths = SourceTreePaths(LOOM_SOURCE_DIR);
  return paths;
}

void ExpectValid(const StepCase& c) {
  Status valid = ValidateStrategy(c.strategy, c.model, c.cluster);
  EXPECT_TRUE(valid.ok()) << c.name << ": " << valid.message();
  EXPECT_EQ(c.strategy.WorldSize(), c.cluster.TotalGpus().value_or(0)) << c.name;
}

TEST(ReferenceCsv, SkipsCommentsAndReadsHeaderAndRows) {
  Result<CsvTable> table = ReadReferenceCsv(Paths().tables_dir + "/narayanan2021_table1.csv");
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table->columns.size(), 13u);
  EXPECT_EQ(table->columns.front(), "params_b");
  ASSERT_EQ(table->rows.size(), 10u);
  EXPECT_EQ(table->rows[0][10], "");  // no layers_per_virtual_stage: 1F1B
  EXPECT_EQ(table->rows[5][10], "5");
}

TEST(ReferenceCsv, MissingFileIsNotFound) {
  Result<CsvTable> table = ReadReferenceCsv(Paths().tables_dir + "/no_such_table.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), Status::Code::kNotFound);
  EXPECT_NE(table.status().message().find("no_such_table.csv"), std::string::npos);
}

TEST(FidelityCases, KorthikantiTable5HasTwoValidStrategiesPerModel) {
  Result<std::vector<StepCase>> cases = LoadKorthikantiIterationCases(Paths());
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases->size(), 8u);
  for (const StepCase& c : *cases) ExpectValid(c);
  // 175B (Table 3): tp 8, pp 8, 64 GPUs, 3 virtual stages; full recompute first, then selective +
  // sp.
  const StepCase& full = (*cases)[2];
  const StepCase& selective = (*cases)[3];
  EXPECT_EQ(full.name, "175B full recompute");
  EXPECT_EQ(full.strategy.recompute, Recompute::kFull);
  EXPECT_FALSE(full.strategy.sp);
  EXPECT_EQ(selective.strategy.recompute, Recompute::kSelective);
  EXPECT_TRUE(selective.strategy.sp);
  EXPECT_EQ(full.kernels.attention, AttentionKernel::kUnfused);  // Megatron-LM of 2022
  EXPECT_TRUE(full.kernels.dropout);
  EXPECT_EQ(full.strategy.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(full.strategy.vpp, 3);
  EXPECT_EQ(full.strategy.dp, 1);
  EXPECT_EQ(full.cluster.nodes, 8);
  EXPECT_DOUBLE_EQ(full.measured, 18.13);
  EXPECT_DOUBLE_EQ(selective.measured, 13.75);
  EXPECT_EQ((*cases)[7].strategy.schedule, ScheduleKind::k1F1B);  // 1T: one virtual stage
}

TEST(FidelityCases, KorthikantiTable4HasFiveValidLayerSettings) {
  Result<LayerCases> cases = LoadKorthikantiLayerCases(Paths());
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases->settings.size(), 5u);
  EXPECT_EQ(cases->model.hidden_size, 6144);
  EXPECT_EQ(cases->model.num_heads, 64);
  for (const LayerSetting& s : cases->settings) {
    EXPECT_EQ(s.strategy.tp, 8) << s.name;
    EXPECT_EQ(s.strategy.micro_batch, 4) << s.name;
    Status valid = ValidateStrategy(s.strategy, cases->model, cases->cluster);
    EXPECT_TRUE(valid.ok()) << s.name << ": " << valid.message();
  }
  EXPECT_TRUE(cases->settings[4].strategy.sp);
  EXPECT_EQ(cases->settings[4].strategy.recompute, Recompute::kSelective);
  EXPECT_DOUBLE_EQ(cases->settings[2].backward_ms, 19.5);
}

TEST(FidelityCases, NarayananTable1HasTenValidStrategies) {
  Result<std::vector<StepCase>> cases = LoadNarayananCases(Paths());
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases->size(), 10u);
  for (const StepCase& c : *cases) {
    ExpectValid(c);
    EXPECT_EQ(c.strategy.recompute, Recompute::kFull) << c.name;
  }
  // 530B: 105 layers over pp 35 with one layer per virtual stage: 3 chunks per stage.
  const StepCase& c530 = (*cases)[8];
  EXPECT_EQ(c530.name, "529.6B (2520 GPUs)");
  EXPECT_EQ(c530.strategy.vpp, 3);
  EXPECT_EQ(c530.strategy.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ((*cases)[9].strategy.schedule, ScheduleKind::k1F1B);
}

TEST(FidelityCases, AllReduceRowsFrom16MiBOnOneNode) {
  Result<std::vector<AllReduceCase>> a100 =
      LoadAllReduceCases(Paths(), "dgx-a100.json", "a100_busbw_GBps");
  Result<std::vector<AllReduceCase>> h100 =
      LoadAllReduceCases(Paths(), "dgx-h100.json", "h100_busbw_GBps");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  ASSERT_EQ(a100->size(), 5u);
  ASSERT_EQ(h100->size(), 5u);
  EXPECT_EQ(a100->front().name, "16 MiB");
  EXPECT_EQ(a100->front().bytes, int64_t{16} << 20);
  EXPECT_EQ(a100->back().name, "8 GiB");
  EXPECT_DOUBLE_EQ(h100->back().busbw_GBps, 478.87);
  EXPECT_EQ(h100->back().cluster.TotalGpus(), 8);
}

TEST(FidelityCases, UnknownColumnNamesTheTableAndColumn) {
  Result<std::vector<AllReduceCase>> cases =
      LoadAllReduceCases(Paths(), "dgx-a100.json", "b200_busbw_GBps");
  ASSERT_FALSE(cases.ok());
  EXPECT_NE(cases.status().message().find("nccl_allreduce_8gpu.csv"), std::string::npos);
  EXPECT_NE(cases.status().message().find("b200_busbw_GBps"), std::string::npos);
}

// Narayanan et al. 2021, eq. 3, for GPT-3 175B (the 96-layer model of Brown et al. 2020) at a
// batch of 1536: 96 * 1536 * 2048 * 96 * 12288^2 = 4.37741e18, times (1 + 2048/73728 +
// 51200/18874368) = 1.030491, is 4.51097e18 FLOPs per iteration.
TEST(FidelityTables, NarayananFlopsFollowEquation3) {
  Result<ModelSpec> model = MegatronGpt(96, 12288, 96, "gpt3");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Strategy s;
  s.global_batch = 1536;
  const double expected = 96.0 * 1536 * 2048 * 96 * 12288.0 * 12288.0 *
                          (1 + 2048.0 / (6 * 12288) + 51200.0 / (16.0 * 96 * 12288));
  EXPECT_DOUBLE_EQ(NarayananIterationFlops(*model, s), expected);
  EXPECT_NEAR(NarayananIterationFlops(*model, s) / 1e18, 4.51097, 1e-5);
}

// Korthikanti et al. 2022 ran Megatron-LM with the asynchronous backward of column-parallel
// linears (739cb43d has it); costing every collective as blocking makes each row slower, the
// table too slow on average, and is what Narayanan et al. 2021's earlier code did.
TEST(FidelityTables, KorthikantisRunsOverlapTheBackwardsCollectives) {
  Result<std::vector<StepCase>> cases = LoadKorthikantiIterationCases(Paths());
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  std::vector<StepCase> blocking = *cases;
  for (StepCase& c : blocking) {
    ASSERT_TRUE(c.framework.has_value());
    EXPECT_TRUE(c.framework->tp_backward_overlap) << c.name;
    c.framework = MegatronOfSc21(*c.framework);
  }
  const FidelityTable overlapped = PredictIterationTimes(*cases);
  const FidelityTable blocked = PredictIterationTimes(blocking);
  ASSERT_EQ(overlapped.Failed(), 0);
  for (size_t i = 0; i < overlapped.rows.size(); ++i) {
    EXPECT_LT(overlapped.rows[i].predicted, blocked.rows[i].predicted) << overlapped.rows[i].name;
  }
  EXPECT_LE(overlapped.InSample().mape_pct, 3.0);
  EXPECT_GT(blocked.InSample().bias_pct, overlapped.InSample().bias_pct + 2.0);
  Result<std::vector<StepCase>> narayanan = LoadNarayananCases(Paths());
  ASSERT_TRUE(narayanan.ok()) << narayanan.status().message();
  for (const StepCase& c : *narayanan) EXPECT_FALSE(c.framework->tp_backward_overlap) << c.name;
}

TEST(FidelityTables, RejectedCaseIsAFailedRowWithTheMessage) {
  Result<std::vector<StepCase>> cases = LoadKorthikantiIterationCases(Paths());
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  StepCase c = cases->front();
  c.strategy.tp = 3;
  FidelityTable table = PredictIterationTimes({c});
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_FALSE(table.rows[0].ok());
  EXPECT_NE(table.rows[0].error.find("--tp 3"), std::string::npos) << table.rows[0].error;
  EXPECT_EQ(table.Failed(), 1);
  EXPECT_DOUBLE_EQ(table.MapePct(), 0.0);
}

TEST(FidelityTables, MapeSkipsFailedRows) {
  FidelityTable table{
      "t", "t", "s", {{"a", 110, 100, ""}, {"b", 80, 100, ""}, {"c", 0, 100, "rejected"}}};
  EXPECT_EQ(table.Failed(), 1);
  EXPECT_DOUBLE_EQ(table.rows[1].ErrorPct(), -20.0);
  EXPECT_DOUBLE_EQ(table.MapePct(), 15.0);
  EXPECT_DOUBLE_EQ(table.MaxAbsErrorPct(), 20.0);
}

TEST(FidelityTables, SummariesGiveMapeMaxAndBiasForBothColumns) {
  FidelityTable table{
      "t", "t", "s", {{"a", 110, 100, ""}, {"b", 80, 100, ""}, {"c", 0, 100, "rejected"}}};
  table.rows[0].loso_predicted = 130;
  table.rows[1].loso_predicted = 100;
  const ErrorSummary in = table.InSample();
  EXPECT_DOUBLE_EQ(in.mape_pct, 15.0);
  EXPECT_DOUBLE_EQ(in.max_abs_pct, 20.0);
  EXPECT_DOUBLE_EQ(in.bias_pct, -5.0);
  const ErrorSummary loso = table.LeaveOneSourceOut();
  EXPECT_DOUBLE_EQ(loso.mape_pct, 15.0);
  EXPECT_DOUBLE_EQ(loso.max_abs_pct, 30.0);
  EXPECT_DOUBLE_EQ(loso.bias_pct, 15.0);
}

// A source measured in parts (llm-foundry's README tables) reports each part's errors apart, in
// the order the parts first appear, over its predicted rows; a table without parts has none.
TEST(FidelityTables, PartsSummarizeTheirOwnRows) {
  FidelityTable table{"t",
                      "t",
                      "s",
                      {{"a", 110, 100, ""},
                       {"b", 80, 100, ""},
                       {"c", 0, 100, "rejected"},
                       {"d", 100, 100, ""},
                       {"e", 130, 100, ""}}};
  EXPECT_TRUE(table.ByPart().empty());
  for (FidelityRow& r : table.rows) r.loso_predicted = r.predicted;
  table.rows[0].part = table.rows[1].part = table.rows[2].part = "h100";
  table.rows[3].part = table.rows[4].part = "a100";
  table.rows[4].loso_predicted = 90;
  const std::vector<FidelityTable::Part> parts = table.ByPart();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "h100");
  EXPECT_EQ(parts[0].rows, 2);
  EXPECT_DOUBLE_EQ(parts[0].in_sample.mape_pct, 15.0);
  EXPECT_DOUBLE_EQ(parts[0].in_sample.bias_pct, -5.0);
  EXPECT_EQ(parts[1].name, "a100");
  EXPECT_DOUBLE_EQ(parts[1].in_sample.mape_pct, 15.0);
  EXPECT_DOUBLE_EQ(parts[1].in_sample.bias_pct, 15.0);
  EXPECT_DOUBLE_EQ(parts[1].loso.bias_pct, -5.0);
}

// Issue 18: the leave-one-source-out column refits exactly the calibrations fitted on the table's
// file. No calibration is fitted on a step-time table, so its two columns agree; the nccl-tests
// tables are the only source of their clusters' values, so without them the model falls back to
// the nominal bandwidths, and its predictions move.
TEST(FidelityReport, LeaveOneSourceOutRefitsOnlyWhatTheTableCalibrated) {
  Result<std::vector<FidelityTable>> tables = BuildFidelityReport(Paths());
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  int refitted = 0;
  for (const FidelityTable& t : *tables) {
    EXPECT_FALSE(t.source_file.empty()) << t.name;
    ASSERT_FALSE(t.rows.empty()) << t.name;
    bool moved = false;
    // The corpus of measured steps lists the rows loom cannot express as failed, by design.
    const bool corpus = t.name.rfind("steptime_", 0) == 0;
    for (const FidelityRow& r : t.rows) {
      if (!corpus) {
        ASSERT_TRUE(r.ok()) << t.name << " " << r.name << ": " << r.error;
      }
      moved |= r.loso_predicted != r.predicted;
    }
    EXPECT_EQ(moved, t.refitted) << t.name;
    refitted += t.refitted ? 1 : 0;
    if (t.name.rfind("korthikanti", 0) == 0 || t.name.rfind("narayanan", 0) == 0) {
      EXPECT_FALSE(t.refitted) << t.name;
    }
  }
  // the single-node and multi-node nccl-tests tables of A100 and H100, the Hopper node table, the
  // two GEMM tables the GPU files are fitted on, Megatron's attention on A100 (the A100 files'
  // gemm_memory_bandwidth_fraction) and the FlashAttention-2 paper's A100 and H100 figures (the
  // families' attention tiles)
  EXPECT_EQ(refitted, 10);
}

// The multi-node tables hold runs from several sites (clusters, VM fleets); each site's rows are
// also predicted from a fit without them, which moves every row, and the site column is filled.
TEST(FidelityReport, MultiNodeTablesLeaveEachSiteOut) {
  Result<std::vector<FidelityTable>> tables = BuildFidelityReport(Paths());
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  int with_sites = 0;
  for (const FidelityTable& t : *tables) {
    const bool multi_node = t.source_file == kMultiNodeAllReduceTable;
    const bool gemm_table = t.source_file == kCublasLtTable || t.source_file == kGemmShapesTable;
    EXPECT_EQ(t.site_refitted, multi_node || gemm_table) << t.name;
    if (gemm_table) continue;  // FidelityReport.GemmTablesLeaveEachTableAndSourceOut
    if (!t.site_refitted) continue;
    ++with_sites;
    for (const FidelityRow& r : t.rows) {
      EXPECT_FALSE(r.site.empty()) << t.name << " " << r.name;
      EXPECT_GT(r.site_loso_predicted, 0) << t.name << " " << r.name;
      EXPECT_NE(r.site_loso_predicted, r.predicted) << t.name << " " << r.name;
    }
  }
  EXPECT_EQ(with_sites, 2);
}

// The GEMM tables (issue 42, mechanism 5): every public GEMM on the GPU file it calibrates, its
// rate in-sample within 10 % on the median, each table and each source refitted without it (the
// columns move), A100's Azure rows left to the datasheet where the A100 rows left cannot fit the
// model's four unknowns; and the committed H100 run's
// grid, on which nothing is fitted, at the sustained ceiling within issue 42's held-out target
// (median 5 %, p90 10 % of the kernel time).
// Whether |r|, a GEMM table row named "<gpu> <dtype> MxNxK ...", is an A100 fp16 GEMM predicted at
// its operand and result bytes over |a100|'s (the A100 file's) GEMM HBM bandwidth.
bool BoundByBytesOnA100(const FidelityRow& r, const GpuSpec& a100) {
  long long m = 0, n = 0, k = 0;
  if (r.name.rfind("a100-sxm4-80gb fp16 ", 0) != 0 ||
      std::sscanf(r.name.c_str(), "a100-sxm4-80gb fp16 %lldx%lldx%lld", &m, &n, &k) != 3)
    return false;
  const std::optional<double>& fraction = a100.calibration.gemm_memory_bandwidth_fraction;
  if (!fraction) return false;
  const double bytes =
      2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  const double us = 1e6 * bytes / (a100.hbm_bandwidth_GBps * 1e9 * *fraction);
  return std::fabs(r.predicted - us) < 1e-3 * us;
}

TEST(FidelityReport, GemmTablesLeaveEachTableAndSourceOut) {
  Result<std::vector<FidelityTable>> tables = BuildFidelityReport(Paths());
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  Result<GpuSpec> a100 = LoadGpuSpec(Paths().gpus_dir + "/a100-sxm4-80gb.json");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  std::vector<std::string> names;
  for (const FidelityTable& t : *tables) {
    if (t.name.rfind("gemm_", 0) != 0) continue;
    names.push_back(t.name);
    EXPECT_EQ(t.unit, "us");
    EXPECT_LT(t.InSample().median_abs_pct, 10.0) << t.name;
    if (t.name == "gemm_h100_run_grid") {
      EXPECT_FALSE(t.refitted);
      ASSERT_EQ(t.rows.size(), 106u);
      std::vector<double> errors;
      for (const FidelityRow& r : t.rows) errors.push_back(std::fabs(r.ErrorPct()));
      std::sort(errors.begin(), errors.end());
      EXPECT_LE(errors[errors.size() / 2], 5.0);
      EXPECT_LE(errors[(errors.size() * 9) / 10], 10.0);
      continue;
    }
    EXPECT_TRUE(t.refitted) << t.name;
    EXPECT_TRUE(t.site_refitted) << t.name;
    for (const FidelityRow& r : t.rows) {
      EXPECT_FALSE(r.site.empty()) << r.name;
      // A GEMM whose bytes bound it is timed by gemm_memory_bandwidth_fraction, which is fitted on
      // another table (Megatron's attention): leaving a GEMM source out moves it only where the
      // refit's math time exceeds its bytes' time.
      const bool bound_by_bytes = BoundByBytesOnA100(r, *a100);
      EXPECT_TRUE(r.loso_predicted != r.predicted || bound_by_bytes) << t.name << " " << r.name;
      EXPECT_TRUE(r.site_loso_predicted != r.predicted || bound_by_bytes)
          << t.name << " " << r.name;
      // A100 has nine rows, eight of them Azure's: without gemm_cublaslt.csv three are left, and
      // without Azure one, too few to fit; without mamf-finder eight, which fit.
      const bool a100_azure = r.site == "azure" && r.name.rfind("a100-sxm4-80gb", 0) == 0;
      EXPECT_EQ(r.name.find("[left out: datasheet") != std::string::npos, a100_azure) << r.name;
    }
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"gemm_cublaslt", "gemm_shapes", "gemm_h100_run_grid"}));
}

// Megatron's unfused attention on an A100 (Dao et al. 2022, Appendix E.6): every measurement a
// row, each pass predicted from the workload's own kernels, so that a combined row is its
// forward's and backward's sum, dropout adds kernels, and the padding mask, which loom does not
// cost, changes nothing; the A100 files' GEMM HBM fraction is fitted on it, so its
// leave-one-source-out column predicts without it (the memory-bound GEMMs faster).
TEST(FidelityReport, MegatronAttentionOnA100IsTheWorkloadsUnfusedKernels) {
  Result<std::vector<FidelityTable>> tables = BuildFidelityReport(Paths());
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const auto table = std::find_if(tables->begin(), tables->end(), [](const FidelityTable& t) {
    return t.name == "flashattention1_megatron_a100";
  });
  ASSERT_NE(table, tables->end());
  EXPECT_TRUE(table->refitted);
  ASSERT_EQ(table->rows.size(), 60u);  // 12 tables of N = 128 .. 2048
  std::map<std::string, double> predicted;
  for (const FidelityRow& r : table->rows) {
    EXPECT_GT(r.predicted, 0) << r.name;
    EXPECT_LT(r.loso_predicted, r.predicted) << r.name;
    predicted[r.name] = r.predicted;
  }
  // Table 18-20: no dropout, no mask; 15-17 dropout; 12-14 mask.
  for (const char* n : {"128", "2048"}) {
    const std::string at = std::string(" N=") + n;
    EXPECT_NEAR(predicted["Table 20 combined" + at],
                predicted["Table 18 forward" + at] + predicted["Table 19 backward" + at], 1e-9);
    EXPECT_GT(predicted["Table 15 forward dropout" + at], predicted["Table 18 forward" + at]);
    EXPECT_EQ(predicted["Table 12 forward mask" + at], predicted["Table 18 forward" + at]);
  }
}

// The FlashAttention-2 paper's figures as fidelity tables: on the A100 (Figure 4) its 23 readable
// FlashAttention-2 bars and 24 bars of the Triton port, on the H100 (Figure 7) 24 FlashAttention-2
// bars, each loom's forward plus backward over the figure's FLOPs. Their tiles are fitted on them:
// without the fit (one attention_efficiency for every shape) the rate is flat where the kernels'
// grows with the sequence and the head dimension, and the error is several times larger.
TEST(FidelityReport, FlashAttentionFiguresFitTheFamiliesTiles) {
  Result<std::vector<FidelityTable>> tables = PredictAttentionFigureTables(Paths());
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  ASSERT_EQ(tables->size(), 2u);
  const FidelityTable& a100 = (*tables)[0];
  const FidelityTable& h100 = (*tables)[1];
  EXPECT_EQ(a100.name, "flashattention2_a100_fig4");
  EXPECT_EQ(h100.name, "flashattention2_h100_fig7");
  EXPECT_EQ(a100.rows.size(), 23u + 24u);
  EXPECT_EQ(h100.rows.size(), 24u);
  for (const FidelityTable* t : {&a100, &h100}) {
    EXPECT_TRUE(t->refitted) << t->name;
    std::map<std::string, FidelityRow> rows;
    for (const FidelityRow& r : t->rows) rows[r.name] = r;
    EXPECT_LT(t->InSample().mape_pct, 8.0) << t->name;
    EXPECT_GT(t->LeaveOneSourceOut().mape_pct, 2 * t->InSample().mape_pct) << t->name;
    // The fitted rate grows with the sequence, as the measured one does.
    EXPECT_LT(rows["flash2 d128 causal seq 512"].predicted,
              rows["flash2 d128 causal seq 16384"].predicted)
        << t->name;
  }
  std::map<std::string, FidelityRow> rows;
  for (const FidelityRow& r : a100.rows) rows[r.name] = r;
  EXPECT_EQ(rows["flash2 d128 causal seq 16384"].measured, 189);
  EXPECT_EQ(rows["triton d128 causal seq 16384"].measured, 80);
  EXPECT_EQ(rows.count("flash2 d128 seq 512"), 0u);  // covered by the figure's legend
  // The Triton port at about half FlashAttention-2's rate.
  EXPECT_LT(rows["triton d128 causal seq 4096"].predicted,
            0.6 * rows["flash2 d128 causal seq 4096"].predicted);
}

// Whether |tiles| are |want| as the files round them (4 significant digits, AttentionTilesJson).
void ExpectTilesRoundTo(const std::optional<AttentionTileParams>& tiles,
                        const AttentionTileParams& want, const std::string& what) {
  ASSERT_TRUE(tiles.has_value()) << what;
  EXPECT_NEAR(tiles->matmul_efficiency, want.matmul_efficiency, 1e-3) << what;
  EXPECT_NEAR(tiles->score_ps, want.score_ps, 1e-3 * want.score_ps + 1e-9) << what;
  EXPECT_NEAR(tiles->masked_score_ps, want.masked_score_ps, 1e-3 * want.masked_score_ps + 1e-9)
      << what;
  EXPECT_NEAR(tiles->element_ps, want.element_ps, 1e-3 * want.element_ps + 1e-9) << what;
  EXPECT_NEAR(tiles->wave_us, want.wave_us, 1e-3 * want.wave_us + 1e-9) << what;
  EXPECT_NEAR(tiles->latency_us, want.latency_us, 1e-3 * want.latency_us + 1e-9) << what;
}

// The shipped files hold those fits: the A100s (both memory sizes, one chip) FlashAttention-2's
// and the Triton port's tiles from Figure 4, the H100 and the H200 (one die) FlashAttention-2's
// from Figure 7 and the Triton port's from Figure 7 with Figure 4's ratios (FitTritonTilesOnH100);
// each file names the figures in fitted_on.
TEST(AttentionTables, TheGpuFilesShipTheFiguresFits) {
  struct Shipped {
    std::string file;
    std::string_view figure;
    std::vector<AttentionFamily> families;
    bool hopper = false;  // the Triton port's tiles carried over from the A100
  };
  const std::vector<Shipped> shipped = {
      {Paths().gpus_dir + "/a100-sxm4-80gb.json",
       kFlashAttentionA100Figure,
       {AttentionFamily::kFlashAttention2, AttentionFamily::kTriton}},
      {Paths().tables_dir + "/steptime/gpus/a100-sxm4-40gb.json",
       kFlashAttentionA100Figure,
       {AttentionFamily::kFlashAttention2, AttentionFamily::kTriton}},
      {Paths().gpus_dir + "/h100-sxm5-80gb.json",
       kFlashAttentionH100Figure,
       {AttentionFamily::kFlashAttention2, AttentionFamily::kTriton},
       true},
      {Paths().gpus_dir + "/h200-sxm-141gb.json",
       kFlashAttentionH100Figure,
       {AttentionFamily::kFlashAttention2, AttentionFamily::kTriton},
       true},
  };
  for (const Shipped& s : shipped) {
    Result<GpuSpec> gpu = LoadGpuSpec(s.file);
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    const std::vector<std::string>& on = gpu->calibration.fitted_on;
    EXPECT_NE(std::find(on.begin(), on.end(), s.figure), on.end()) << s.file;
    if (s.hopper) {
      EXPECT_NE(std::find(on.begin(), on.end(), kFlashAttentionA100Figure), on.end()) << s.file;
    }
    for (AttentionFamily family : s.families) {
      const bool carried = s.hopper && family == AttentionFamily::kTriton;
      Result<AttentionTilePasses> fit =
          carried ? FitTritonTilesOnH100(Paths(), *gpu)
                  : FitAttentionFigureTiles(Paths(), s.figure, *gpu, family);
      ASSERT_TRUE(fit.ok()) << fit.status().message();
      const std::string what = s.file + " " + std::string(kAttentionFamilyNames.Name(family));
      for (const bool backward : {false, true}) {
        ExpectTilesRoundTo(gpu->calibration.AttentionTiles(family, backward),
                           backward ? fit->backward : fit->forward,
                           what + (backward ? " backward" : " forward"));
      }
    }
  }
}

// The Triton port on the H100, which no benchmark measured, is each FlashAttention-2 bar of Figure
// 7 times the port's rate over FlashAttention-2's at the same shape on the A100 (Figure 4): 23
// bars (Figure 4's legend covers FlashAttention-2 at d128 seq 512, not causal). The tiles fitted
// on them reproduce them (8.8 % mean, 16.4 % max |error|, as the A100's own fit: -15 to +18 %), and
// put the port at 40-70 % of FlashAttention-2 on the H100 as on the
// A100, not at FlashAttention-2's rate, which llm-foundry's H100 rows ran at before (27 % too fast
// on the mean, and the more so the longer the sequence).
TEST(AttentionTables, TheTritonPortOnTheH100CarriesTheA100sRatio) {
  Result<std::vector<TransferredBar>> bars = TritonBarsOnH100(Paths());
  ASSERT_TRUE(bars.ok()) << bars.status().message();
  ASSERT_EQ(bars->size(), 23u);
  const TransferredBar* d128 = nullptr;
  for (const TransferredBar& b : *bars) {
    if (b.head_dim == 128 && b.causal && b.seq == 16384) d128 = &b;
    EXPECT_FALSE(b.head_dim == 128 && !b.causal && b.seq == 512);
  }
  ASSERT_NE(d128, nullptr);
  // Figure 7: FlashAttention-2 d128 causal 16k on the H100 at 328; Figure 4: 189 and 80 on the
  // A100.
  EXPECT_NEAR(d128->tflops, 328.0 * 80.0 / 189.0, 1e-9);
  Result<GpuSpec> h100 = LoadGpuSpec(Paths().gpus_dir + "/h100-sxm5-80gb.json");
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  const RooflineComputeModel compute(*h100);
  for (const TransferredBar& b : *bars) {
    const double triton =
        FigureTflops(compute, b.head_dim, b.causal, b.seq, AttentionFamily::kTriton);
    EXPECT_NEAR(triton, b.tflops, 0.2 * b.tflops)
        << "d" << b.head_dim << (b.causal ? " causal" : "") << " seq " << b.seq;
    const double flash2 =
        FigureTflops(compute, b.head_dim, b.causal, b.seq, AttentionFamily::kFlashAttention2);
    EXPECT_LT(triton, 0.75 * flash2) << "seq " << b.seq;
    EXPECT_GT(triton, 0.35 * flash2) << "seq " << b.seq;
  }
}

// The A100 files' gemm_memory_bandwidth_fraction is the fit on the FlashAttention paper's
// benchmark of Megatron's attention, and the GEMMs it bounds reach less of HBM than a streaming
// kernel: without the mechanism (the fraction unset) the GPU-bound rows are too fast.
TEST(AttentionTables, TheA100FilesShipTheFitOfMegatronsAttentionGemms) {
  Result<double> fit = FitMegatronAttentionGemmFraction(Paths());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  for (const std::string& file : {Paths().gpus_dir + "/a100-sxm4-80gb.json",
                                  Paths().tables_dir + "/steptime/gpus/a100-sxm4-40gb.json"}) {
    Result<GpuSpec> gpu = LoadGpuSpec(file);
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    const ComputeCalibration& c = gpu->calibration;
    ASSERT_TRUE(c.gemm_memory_bandwidth_fraction.has_value()) << file << ": the fit is " << *fit;
    EXPECT_NEAR(*c.gemm_memory_bandwidth_fraction, *fit, 5e-4) << file;
    EXPECT_LT(*c.gemm_memory_bandwidth_fraction, c.memory_bandwidth_fraction.value_or(1.0) - 0.2)
        << file;
    EXPECT_NE(
        std::find(c.fitted_on.begin(), c.fitted_on.end(), "flashattention1_megatron_a100.csv"),
        c.fitted_on.end())
        << file;
  }
  Result<FidelityTable> table = PredictMegatronAttentionTable(Paths());
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_TRUE(table->refitted);
  // The rows the fit saw: unmasked forward and backward at N >= 1024.
  int fitted = 0;
  for (const FidelityRow& r : table->rows) {
    if (r.name.find("mask") != std::string::npos || r.name.find("combined") != std::string::npos)
      continue;
    if (r.name.find("N=1024") == std::string::npos && r.name.find("N=2048") == std::string::npos)
      continue;
    ++fitted;
    EXPECT_LT(std::abs(r.predicted / r.measured - 1.0), 0.2) << r.name;
    EXPECT_LT(r.loso_predicted, r.predicted) << r.name;
  }
  EXPECT_EQ(fitted, 8);
}

TEST(FidelityReport, WithoutTheMultiNodeTableNoInterNodeValueIsFitted) {
  Result<ClusterSpec> cluster = LoadClusterSpec(Paths().clusters_dir + "/dgx-h100.json");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  Result<std::vector<CommReferenceRun>> runs =
      LoadCommReferenceRuns(Paths().tables_dir, "dgx-h100");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  Result<CommCalibration> all = FitReferenceCommCalibration(*runs, *cluster);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_TRUE(all->inter_node_busbw_fraction.has_value());
  Result<CommCalibration> without =
      FitReferenceCommCalibration(*runs, *cluster, kMultiNodeAllReduceTable);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_FALSE(without->inter_node_busbw_fraction.has_value());
  EXPECT_FALSE(without->inter_node_extra_latency_us.has_value());
  EXPECT_TRUE(without->nvls_busbw_fraction.has_value());
  EXPECT_EQ(without->fitted_on, (std::vector<std::string>{std::string(kSingleNodeAllReduceTable),
                                                          std::string(kHopperNodeTable)}));
  // Without the Hopper node table no run times Ring within the node.
  Result<CommCalibration> no_ring = FitReferenceCommCalibration(*runs, *cluster, kHopperNodeTable);
  ASSERT_TRUE(no_ring.ok()) << no_ring.status().message();
  EXPECT_FALSE(no_ring->intra_node_busbw_fraction.has_value());
  EXPECT_TRUE(all->intra_node_busbw_fraction.has_value());
}

TEST(FidelityReport, MultiNodeRowsWithTuningAreNotFitted) {
  Result<std::vector<CommReferenceRun>> runs =
      LoadCommReferenceRuns(Paths().tables_dir, "dgx-h100");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  for (const CommReferenceRun& r : *runs) {
    EXPECT_EQ(r.source.find("_tuned"), std::string::npos) << r.source;
    EXPECT_EQ(r.source.find("_ring"), std::string::npos) << r.source;
  }
}

}  // namespace
}  // namespace loom
