#include "cost/comm_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/nccl_model.h"

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

::testing::AssertionResult RelativelyNear(std::optional<double> got, double want,
                                          double tolerance = 1e-6) {
  if (got && std::abs(*got - want) <= tolerance * std::abs(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << (got ? std::to_string(*got) : "nothing") << ", want " << want;
}

ClusterSpec Cluster(double nvlink_GBps, double nic_Gbps, bool sharp) {
  ClusterSpec c;
  c.file = "test-cluster.json";
  c.gpus_per_node = 8;
  c.intra_node = {IntraNodeFabric::kNvSwitch, nvlink_GBps, 0.6, sharp};
  c.inter_node.nics_per_node = 8;
  c.inter_node.nic_bandwidth_Gbps = nic_Gbps;
  c.inter_node.oversubscription = 1;
  return c;
}

// A run of |test| over |ranks| ranks whose times are what |model| predicts, at sizes 1 MiB to
// 8 GiB in steps of 4x.
NcclTestsRun SyntheticRun(const NcclCommModel& model, NcclTest test, int64_t ranks,
                          int64_t per_node) {
  NcclTestsRun run;
  run.file = std::string(kNcclTestNames.Name(test)) + ".txt";
  run.test = test;
  run.ranks = ranks;
  run.nodes = ranks / per_node;
  const GroupPlacement group{ranks, per_node};
  std::optional<CollectiveKind> kind = CollectiveOf(test);
  for (int64_t size = kMiB; size <= 8192 * kMiB; size *= 4) {
    const double time_us = kind ? model.CollectiveUs(*kind, size, group)
                                : model.PointToPointUs(size, group.Nodes() > 1);
    const double factor = kind ? BusBandwidthFactor(*kind, ranks) : 1.0;
    NcclTestsRow row;
    row.size_bytes = size;
    row.in_place =
        NcclTestsTiming{time_us, size / (time_us * 1e3), size * factor / (time_us * 1e3)};
    row.where = run.file + ":" + std::to_string(run.rows.size() + 1);
    run.rows.push_back(row);
  }
  return run;
}

TEST(FitCommCalibration, RecoversIntraNodeRingCalibrationFromTheModelsOwnTimes) {
  ClusterSpec truth = Cluster(300, 200, false);
  truth.calibration.intra_node_busbw_fraction = 0.8;
  truth.calibration.intra_node_extra_latency_us = 50;
  const NcclCommModel model(truth);
  CommFitOptions options;
  options.min_fit_bytes = 64 * kMiB;  // from here Ring/Simple is the fastest choice
  Result<CommFit> fit = FitCommCalibration({SyntheticRun(model, NcclTest::kAllReduce, 8, 8)},
                                           Cluster(300, 200, false), options);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_busbw_fraction, 0.8));
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_extra_latency_us, 50));
  EXPECT_EQ(fit->fitted_keys,
            (std::vector<std::string>{"intra_node_busbw_fraction", "intra_node_extra_latency_us"}));
  EXPECT_LT(fit->busbw_mape, 1e-9);
}

TEST(FitCommCalibration, RecoversNvlsAndRingFractionsWithTheirSharedLatency) {
  ClusterSpec truth = Cluster(450, 400, true);
  truth.calibration.nvls_busbw_fraction = 0.7;
  truth.calibration.intra_node_busbw_fraction = 0.85;
  truth.calibration.intra_node_extra_latency_us = 30;
  const NcclCommModel model(truth);
  Result<CommFit> fit = FitCommCalibration({SyntheticRun(model, NcclTest::kAllReduce, 8, 8),
                                            SyntheticRun(model, NcclTest::kAllToAll, 8, 8)},
                                           Cluster(450, 400, true));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(RelativelyNear(fit->calibration.nvls_busbw_fraction, 0.7));
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_busbw_fraction, 0.85));
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_extra_latency_us, 30));
  EXPECT_EQ(fit->calibration.inter_node_busbw_fraction, std::nullopt);
}

// NCCL_NVLS_ENABLE=0 runs time Ring where NCCL would run NVLS: the fit costs them without NVLS, and
// two large sizes of their own fix the Ring fraction once the NVLS run's sizes fix the latency the
// two paths share.
TEST(FitCommCalibration, RecoversTheRingFractionFromTwoSizesRunWithNvlsDisabled) {
  ClusterSpec truth = Cluster(450, 400, true);
  truth.calibration.nvls_busbw_fraction = 0.7;
  truth.calibration.intra_node_busbw_fraction = 0.8;
  truth.calibration.intra_node_extra_latency_us = 30;
  const NcclCommModel nvls(truth), ring(truth, /*nvls_enabled=*/false);
  NcclTestsRun disabled = SyntheticRun(ring, NcclTest::kAllReduce, 8, 8);
  disabled.nvls_disabled = true;
  disabled.file = "all_reduce_nvls_off.txt";
  disabled.rows.erase(disabled.rows.begin(), disabled.rows.end() - 2);  // 2 and 8 GiB
  Result<CommFit> fit = FitCommCalibration(
      {SyntheticRun(nvls, NcclTest::kAllReduce, 8, 8), disabled}, Cluster(450, 400, true));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(RelativelyNear(fit->calibration.nvls_busbw_fraction, 0.7));
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_busbw_fraction, 0.8));
  EXPECT_TRUE(RelativelyNear(fit->calibration.intra_node_extra_latency_us, 30));
  for (const CommFitRow& row : fit->rows) {
    if (row.where.rfind("all_reduce_nvls_off.txt", 0) == 0) {
      EXPECT_EQ(row.predicted_choice, "Ring/Simple");
    }
  }
  // Without the NVLS run nothing fixes the latency, and two sizes cannot separate it.
  Result<CommFit> alone = FitCommCalibration({disabled}, Cluster(450, 400, true));
  ASSERT_FALSE(alone.ok());
  EXPECT_TRUE(Contains(alone.status().message(), "2 distinct size(s)"));
}

TEST(FitCommCalibration, RecoversInterNodeCalibrationFromTwoNodeRuns) {
  ClusterSpec truth = Cluster(300, 200, false);
  truth.calibration.inter_node_busbw_fraction = 0.9;
  truth.calibration.inter_node_extra_latency_us = 20;
  const NcclCommModel model(truth);
  CommFitOptions options;
  // With 8 ranks per node the ring crosses nodes on 8 NICs, so LL128 still wins at 64 MiB: fit
  // the sizes where Simple does.
  options.min_fit_bytes = 256 * kMiB;
  Result<CommFit> fit = FitCommCalibration({SyntheticRun(model, NcclTest::kAllReduce, 16, 8),
                                            SyntheticRun(model, NcclTest::kSendRecv, 16, 8)},
                                           Cluster(300, 200, false), options);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(RelativelyNear(fit->calibration.inter_node_busbw_fraction, 0.9));
  EXPECT_TRUE(RelativelyNear(fit->calibration.inter_node_extra_latency_us, 20));
  EXPECT_EQ(fit->calibration.intra_node_busbw_fraction, std::nullopt);
}

TEST(FitCommCalibration, ReportsEveryRowAndScoresOnlyTheFittedOnes) {
  ClusterSpec truth = Cluster(300, 200, false);
  truth.calibration.intra_node_busbw_fraction = 0.8;
  const NcclCommModel model(truth);
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllGather, 8, 8);
  run.rows[0].in_place->time_us *= 2;  // 1 MiB: below the fitted sizes
  run.rows[0].in_place->busbw_GBps /= 2;
  CommFitOptions options;
  options.min_fit_bytes = 64 * kMiB;
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false), options);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->rows.size(), run.rows.size());
  EXPECT_FALSE(fit->rows[0].fitted);
  EXPECT_NEAR(fit->rows[0].time_residual, -0.5, 1e-6);
  EXPECT_NEAR(fit->rows[0].busbw_error, 1.0, 1e-6);
  EXPECT_TRUE(fit->rows.back().fitted);
  EXPECT_EQ(fit->rows.back().predicted_choice, "Ring/Simple");
  EXPECT_EQ(fit->rows.back().where, "all_gather_perf.txt:7");
  EXPECT_LT(fit->busbw_mape, 1e-6);
}

TEST(FitCommCalibration, NegativeExtraLatencyIsClampedToZero) {
  ClusterSpec truth = Cluster(300, 200, false);
  truth.calibration.intra_node_busbw_fraction = 0.8;
  const NcclCommModel model(truth);
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllGather, 8, 8);
  for (NcclTestsRow& row : run.rows)
    row.in_place->time_us -= 20;  // faster than NCCL's latency allows
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->calibration.intra_node_extra_latency_us, 0.0);
  ASSERT_TRUE(fit->calibration.intra_node_busbw_fraction.has_value());
  EXPECT_LE(*fit->calibration.intra_node_busbw_fraction, 1.0);
}

TEST(FitCommCalibration, FewerThanThreeSizesIsRefused) {
  const NcclCommModel model(Cluster(300, 200, false));
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllReduce, 8, 8);
  run.rows.resize(4);  // 1, 4, 16 and 64 MiB: two sizes from 16 MiB
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(),
                       "all_reduce_perf.txt: 2 distinct size(s) of at least 16777216 bytes "
                       "within a node; the fit needs at least 3"));
}

TEST(FitCommCalibration, NonPositiveTimeNamesTheRow) {
  const NcclCommModel model(Cluster(300, 200, false));
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllReduce, 8, 8);
  run.rows[2].in_place->time_us = 0;
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(
      Contains(fit.status().message(), "all_reduce_perf.txt:3: size 16777216 B, time 0 us"));
}

TEST(FitCommCalibration, RankCountThatDoesNotFillNodesIsRefused) {
  const NcclCommModel model(Cluster(300, 200, false));
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllReduce, 8, 8);
  run.ranks = 12;
  run.nodes.reset();
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "12 ranks do not fill whole nodes of 8 GPUs"));
  run.nodes = 1;
  fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(
      Contains(fit.status().message(), "12 ranks on 1 node(s) do not match test-cluster.json"));
}

TEST(FitCommCalibration, RunWithoutRankCountIsRefused) {
  const NcclCommModel model(Cluster(300, 200, false));
  NcclTestsRun run = SyntheticRun(model, NcclTest::kAllReduce, 8, 8);
  run.ranks.reset();
  Result<CommFit> fit = FitCommCalibration({run}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "all_reduce_perf.txt: states no rank count"));
}

TEST(FitCommCalibration, MeasurementsFasterThanTheNominalLinkAreRefused) {
  const NcclCommModel fast(Cluster(600, 200, false));
  Result<CommFit> fit = FitCommCalibration({SyntheticRun(fast, NcclTest::kAllReduce, 8, 8)},
                                           Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "times the nominal bandwidth of test-cluster.json"));
  EXPECT_TRUE(Contains(fit.status().message(), "correct the bandwidth keys"));
}

TEST(FitCommCalibration, NoRunsIsRefused) {
  Result<CommFit> fit = FitCommCalibration({}, Cluster(300, 200, false));
  ASSERT_FALSE(fit.ok());
  EXPECT_TRUE(Contains(fit.status().message(), "no nccl-tests runs to fit"));
}

CommFit FittedIntraNode() {
  CommFit fit;
  fit.calibration.intra_node_busbw_fraction = 0.761575;
  fit.calibration.intra_node_extra_latency_us = 90.49987;
  fit.calibration.source = "a test";
  fit.fitted_keys = {"intra_node_busbw_fraction", "intra_node_extra_latency_us"};
  return fit;
}

TEST(WithCommCalibration, AddsARoundedCalibrationBeforeSources) {
  nlohmann::ordered_json file =
      nlohmann::ordered_json::parse(R"({"schema": "loom.cluster/1", "host": {},
                                                                   "sources": {}})");
  nlohmann::ordered_json out = WithCommCalibration(file, FittedIntraNode());
  std::vector<std::string> keys;
  for (const auto& [key, value] : out.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "host", "calibration", "sources"}));
  EXPECT_EQ(
      out["calibration"].dump(),
      R"({"intra_node_busbw_fraction":0.7616,"intra_node_extra_latency_us":90.5,"source":"a test"})");
}

TEST(WithCommCalibration, KeepsKeysItDidNotFitWithTheirSourceAndPutsSourceLast) {
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(
      R"({"calibration": {"source": "old", "inter_node_busbw_fraction": 0.9,)"
      R"( "intra_node_busbw_fraction": 0.5}})");
  nlohmann::ordered_json out = WithCommCalibration(file, FittedIntraNode());
  EXPECT_EQ(
      out["calibration"].dump(),
      R"({"inter_node_busbw_fraction":0.9,"intra_node_busbw_fraction":0.7616,)"
      R"("intra_node_extra_latency_us":90.5,)"
      R"("source":"a test Kept from the earlier calibration (inter_node_busbw_fraction): old"})");
}

TEST(WithCommCalibration, WrittenFileLoadsWithTheFittedValues) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "loom_comm_fit_test";
  std::filesystem::create_directories(dir);
  std::ifstream shipped(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-a100.json");
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(shipped);
  file["gpu"] = std::string(LOOM_SOURCE_DIR) + "/hardware/gpus/a100-sxm4-80gb.json";
  std::ofstream(dir / "cluster.json") << WithCommCalibration(file, FittedIntraNode()).dump(2);
  Result<ClusterSpec> cluster = LoadClusterSpec((dir / "cluster.json").string());
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(cluster->calibration.intra_node_busbw_fraction, 0.7616);
  EXPECT_EQ(cluster->calibration.intra_node_extra_latency_us, 90.5);
  // The shipped file's inter-node values are kept, and the source says where they come from.
  EXPECT_EQ(cluster->calibration.source.rfind(
                "a test Kept from the earlier calibration (inter_node_busbw_fraction", 0),
            0u)
      << cluster->calibration.source;
  EXPECT_TRUE(cluster->calibration.inter_node_busbw_fraction.has_value());
}

}  // namespace
}  // namespace loom
