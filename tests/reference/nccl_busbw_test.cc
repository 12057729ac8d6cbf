// NcclCommModel with the shipped cluster files against nccl-tests all-reduce busbw on one 8-GPU
// node (tests/reference/nccl_allreduce_8gpu.csv: NCCL 2.18.5, Azure AI-benchmarking-guide) and
// across nodes (tests/reference/nccl_allreduce_multinode.csv, sources in its header).
// The communication calibration in hardware/clusters/ must be what FitCommCalibration derives
// from those tables, so that no number in a cluster file is typed in by hand; the accuracy target
// (issues 4 and 18) is a mean |busbw error| of at most 8% from 16 MiB on each GPU and table.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cost/comm_fit.h"
#include "cost/nccl_model.h"
#include "reference/comm_reference.h"
#include "reference/reference_csv.h"
#include "spec/cluster.h"

namespace loom {
namespace {

constexpr int64_t kRanks = 8;
constexpr int64_t kTargetFromBytes = int64_t{16} << 20;  // issue 4: 16 MiB to 8 GiB
constexpr double kTargetMape = 0.08;

struct TableRow {
  int64_t size_bytes = 0;
  double a100_busbw_GBps = 0;
  double h100_busbw_GBps = 0;
};

std::vector<TableRow> ReadTable() {
  Result<CsvTable> table =
      ReadReferenceCsv(std::string(LOOM_SOURCE_DIR) + "/tests/reference/nccl_allreduce_8gpu.csv");
  EXPECT_TRUE(table.ok()) << table.status().message();
  std::vector<TableRow> rows;
  for (size_t i = 0; table.ok() && i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    rows.push_back({r.Int("size_bytes"), r.Number("a100_busbw_GBps"), r.Number("h100_busbw_GBps")});
    EXPECT_TRUE(r.Finish().ok()) << r.Finish().message();
  }
  return rows;
}

ClusterSpec Shipped(const std::string& name) {
  Result<ClusterSpec> cluster =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/" + name);
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  return cluster.ok() ? *cluster : ClusterSpec{};
}

std::vector<CommReferenceRun> ReferenceRuns(std::string_view cluster) {
  Result<std::vector<CommReferenceRun>> runs =
      LoadCommReferenceRuns(std::string(LOOM_SOURCE_DIR) + "/tests/reference", cluster);
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : std::vector<CommReferenceRun>{};
}

// The shipped calibration is FitCommCalibration on every published run of the cluster (one node
// and several), and says so in fitted_on.
void ExpectShippedCalibrationIsTheFit(const std::string& cluster_file, std::string_view cluster) {
  const ClusterSpec shipped = Shipped(cluster_file);
  Result<CommCalibration> fit = FitReferenceCommCalibration(ReferenceRuns(cluster), shipped);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const CommCalibration& want = *fit;
  const CommCalibration& got = shipped.calibration;
  // The files hold the fit rounded to 4 significant digits (WithCommCalibration).
  auto near = [](std::optional<double> a, std::optional<double> b) {
    return a.has_value() == b.has_value() &&
           (!a || std::abs(*a - *b) <= 5e-4 * std::abs(*b) + 1e-12);
  };
  EXPECT_TRUE(near(got.intra_node_busbw_fraction, want.intra_node_busbw_fraction));
  EXPECT_TRUE(near(got.inter_node_busbw_fraction, want.inter_node_busbw_fraction));
  EXPECT_TRUE(near(got.nvls_busbw_fraction, want.nvls_busbw_fraction));
  EXPECT_TRUE(near(got.intra_node_extra_latency_us, want.intra_node_extra_latency_us));
  EXPECT_TRUE(near(got.inter_node_extra_latency_us, want.inter_node_extra_latency_us));
  EXPECT_EQ(got.fitted_on, want.fitted_on);
  std::printf(
      "%s fit: intra fraction %.6g, inter fraction %.6g, nvls fraction %.6g, intra extra latency "
      "%.6g us, "
      "inter extra latency %.6g us\n",
      cluster_file.c_str(), want.intra_node_busbw_fraction.value_or(-1),
      want.inter_node_busbw_fraction.value_or(-1), want.nvls_busbw_fraction.value_or(-1),
      want.intra_node_extra_latency_us.value_or(-1), want.inter_node_extra_latency_us.value_or(-1));
}

TEST(NcclBusbwReference, ShippedDgxA100CalibrationIsTheFitOfItsPublishedRuns) {
  ExpectShippedCalibrationIsTheFit("dgx-a100.json", "dgx-a100");
}

TEST(NcclBusbwReference, ShippedDgxH100CalibrationIsTheFitOfItsPublishedRuns) {
  ExpectShippedCalibrationIsTheFit("dgx-h100.json", "dgx-h100");
}

TEST(NcclBusbwReference, HgxH200ShipsTheDgxH100Calibration) {
  const CommCalibration h100 = Shipped("dgx-h100.json").calibration;
  const CommCalibration h200 = Shipped("hgx-h200.json").calibration;
  EXPECT_EQ(h200.nvls_busbw_fraction, h100.nvls_busbw_fraction);
  EXPECT_EQ(h200.intra_node_extra_latency_us, h100.intra_node_extra_latency_us);
  EXPECT_EQ(h200.intra_node_busbw_fraction, h100.intra_node_busbw_fraction);
  EXPECT_EQ(h200.inter_node_busbw_fraction, h100.inter_node_busbw_fraction);
  EXPECT_EQ(h200.inter_node_extra_latency_us, h100.inter_node_extra_latency_us);
  EXPECT_EQ(h200.fitted_on, h100.fitted_on);
}

// The bus bandwidth |model| predicts for |kind| of |bytes| over |group|, in nccl-tests' convention.
double PredictedBusbw(const NcclCommModel& model, CollectiveKind kind, int64_t bytes,
                      GroupPlacement group) {
  return static_cast<double>(bytes) * BusBandwidthFactor(kind, group.ranks) /
         (model.CollectiveUs(kind, bytes, group) * 1e3);
}

// Every published multi-node run of |cluster| against the shipped model; returns the mean |busbw
// error| from 16 MiB.
double ScoreMultiNode(const std::string& cluster_file, std::string_view cluster) {
  const NcclCommModel model(Shipped(cluster_file));
  double sum = 0;
  int rows = 0;
  for (const CommReferenceRun& r : ReferenceRuns(cluster)) {
    if (r.table != kMultiNodeAllReduceTable) continue;
    const GroupPlacement group{*r.run.ranks, *r.run.ranks / *r.run.nodes};
    for (const NcclTestsRow& row : r.run.rows) {
      if (row.size_bytes < kTargetFromBytes) continue;
      const double predicted =
          PredictedBusbw(model, CollectiveKind::kAllReduce, row.size_bytes, group);
      const double error = (predicted - row.in_place->busbw_GBps) / row.in_place->busbw_GBps;
      std::printf("%s %-32s %3lld x %lld %12lld B  predicted %8.2f  measured %8.2f  %+6.1f%%\n",
                  cluster_file.c_str(), r.source.c_str(), static_cast<long long>(group.Nodes()),
                  static_cast<long long>(group.ranks_per_node),
                  static_cast<long long>(row.size_bytes), predicted, row.in_place->busbw_GBps,
                  100 * error);
      sum += std::abs(error);
      ++rows;
    }
  }
  EXPECT_GT(rows, 0);
  return rows == 0 ? 0 : sum / rows;
}

// Issue 18: the multi-node table within 8% (mean |busbw error|) on each cluster with the fitted
// inter-node calibration.
TEST(NcclBusbwReference, DgxA100MultiNodeAllReduceBusbwWithin8Percent) {
  EXPECT_LE(ScoreMultiNode("dgx-a100.json", "dgx-a100"), kTargetMape);
}

TEST(NcclBusbwReference, DgxH100MultiNodeAllReduceBusbwWithin8Percent) {
  EXPECT_LE(ScoreMultiNode("dgx-h100.json", "dgx-h100"), kTargetMape);
}

// Prints every row and returns the mean |busbw error| over rows from 16 MiB.
double PrintAndScore(const std::string& cluster_file, bool a100) {
  const NcclCommModel model(Shipped(cluster_file));
  const GroupPlacement node = PlaceGroup(kRanks, 1, kRanks);
  double target_sum = 0, small_sum = 0;
  int target_rows = 0, small_rows = 0;
  std::printf("%s, all-reduce over 8 GPUs of one node\n%12s  %-12s  %10s  %10s  %8s\n",
              cluster_file.c_str(), "size_bytes", "choice", "predicted", "measured", "error");
  for (const TableRow& r : ReadTable()) {
    const double measured = a100 ? r.a100_busbw_GBps : r.h100_busbw_GBps;
    const double predicted = PredictedBusbw(model, CollectiveKind::kAllReduce, r.size_bytes, node);
    const double error = (predicted - measured) / measured;
    const NcclChoice choice = model.Choose(CollectiveKind::kAllReduce, r.size_bytes, node);
    const std::string name = std::string(kNcclAlgorithmNames.Name(choice.algorithm)) + "/" +
                             std::string(kNcclProtocolNames.Name(choice.protocol));
    const bool target = r.size_bytes >= kTargetFromBytes;
    std::printf("%12lld  %-12s  %10.2f  %10.2f  %+7.1f%%%s\n", static_cast<long long>(r.size_bytes),
                name.c_str(), predicted, measured, 100 * error,
                target ? "" : "  (below 16 MiB, not in the target)");
    (target ? target_sum : small_sum) += std::abs(error);
    ++(target ? target_rows : small_rows);
  }
  std::printf("MAPE 16 MiB..8 GiB: %.2f%% over %d rows; below 16 MiB: %.2f%% over %d rows\n",
              100 * target_sum / target_rows, target_rows,
              small_rows ? 100 * small_sum / small_rows : 0.0, small_rows);
  EXPECT_EQ(target_rows, 5);
  return target_sum / target_rows;
}

TEST(NcclBusbwReference, DgxA100AllReduceBusbwWithin8PercentFrom16MiB) {
  EXPECT_LE(PrintAndScore("dgx-a100.json", /*a100=*/true), kTargetMape);
}

TEST(NcclBusbwReference, DgxH100AllReduceBusbwWithin8PercentFrom16MiB) {
  EXPECT_LE(PrintAndScore("dgx-h100.json", /*a100=*/false), kTargetMape);
}

// The H100 rows from 16 MiB are NVLS, and with Ring within the node calibrated by the Hopper node
// table (365-367 GB/s busbw against NVLS's 470-480) the model runs every one of them with NVLS, as
// NCCL did; over 4 GPUs or fewer it runs Ring (NCCL's tuner never picks NVLS there).
TEST(NcclBusbwReference, DgxH100RunsAllReducesFrom16MiBWithNvlsOverMoreThanFourGpus) {
  const NcclCommModel model(Shipped("dgx-h100.json"));
  int checked = 0;
  for (const TableRow& r : ReadTable()) {
    if (r.size_bytes < kTargetFromBytes) continue;
    EXPECT_EQ(model.Choose(CollectiveKind::kAllReduce, r.size_bytes, PlaceGroup(kRanks, 1, kRanks))
                  .algorithm,
              NcclAlgorithm::kNvls)
        << r.size_bytes;
    EXPECT_EQ(
        model.Choose(CollectiveKind::kAllReduce, r.size_bytes, PlaceGroup(4, 1, kRanks)).algorithm,
        NcclAlgorithm::kRing)
        << r.size_bytes;
    ++checked;
  }
  EXPECT_EQ(checked, 5);
  EXPECT_EQ(model.Choose(CollectiveKind::kAllReduce, int64_t{1} << 30, PlaceGroup(5, 1, kRanks))
                .algorithm,
            NcclAlgorithm::kNvls);
}

// Every row of the Hopper node table (8x H200: all-reduce over 4-8 GPUs with NVLS and with it
// disabled, all-gather and reduce-scatter) against the shipped DGX H100 model, run as NCCL ran it;
// the mean |busbw error| within 8 %, and each all-gather and reduce-scatter, which NCCL runs as a
// Ring, within 5 % of the disabled-NVLS all-reduce's 367 GB/s fabric.
TEST(NcclBusbwReference, HopperNodeCollectivesWithin8Percent) {
  const ClusterSpec cluster = Shipped("dgx-h100.json");
  const NcclCommModel nvls(cluster, true), ring(cluster, false);
  double sum = 0;
  int rows = 0;
  for (const CommReferenceRun& r : ReferenceRuns("dgx-h100")) {
    if (r.table != kHopperNodeTable) continue;
    const NcclCommModel& model = r.run.nvls_disabled ? ring : nvls;
    const std::optional<CollectiveKind> kind = CollectiveOf(r.run.test);
    ASSERT_TRUE(kind.has_value());
    const GroupPlacement group = PlaceGroup(*r.run.ranks, 1, cluster.gpus_per_node);
    for (const NcclTestsRow& row : r.run.rows) {
      const double predicted = PredictedBusbw(model, *kind, row.size_bytes, group);
      const double error = (predicted - row.in_place->busbw_GBps) / row.in_place->busbw_GBps;
      const NcclChoice choice = model.Choose(*kind, row.size_bytes, group);
      std::printf(
          "%-16s %d ranks %-14s %12lld B  %-12s predicted %8.2f  measured %8.2f  %+6.1f%%\n",
          std::string(kNcclTestNames.Name(r.run.test)).c_str(), static_cast<int>(group.ranks),
          r.run.nvls_disabled ? "nvls_disabled" : "default", static_cast<long long>(row.size_bytes),
          (std::string(kNcclAlgorithmNames.Name(choice.algorithm)) + "/" +
           std::string(kNcclProtocolNames.Name(choice.protocol)))
              .c_str(),
          predicted, row.in_place->busbw_GBps, 100 * error);
      if (*kind != CollectiveKind::kAllReduce) {
        EXPECT_EQ(choice.algorithm, NcclAlgorithm::kRing);
        EXPECT_LE(std::abs(error), 0.05);
      }
      if (r.run.nvls_disabled) {
        EXPECT_NE(choice.algorithm, NcclAlgorithm::kNvls);
      }
      sum += std::abs(error);
      ++rows;
    }
  }
  EXPECT_EQ(rows, 14);
  EXPECT_LE(sum / rows, kTargetMape);
}

}  // namespace
}  // namespace loom
