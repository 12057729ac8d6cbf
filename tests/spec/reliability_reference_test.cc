// The shipped reliability rates against the published table they come from.

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "reference/reference_csv.h"
#include "spec/cluster.h"

namespace loom {
namespace {

std::string Source(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

// Llama 3 405B's fleet (tests/reference/llama3_interruptions.csv): 16,384 GPUs and NICs on 2,048
// nodes for 54 days.
constexpr double kGpuDays = 16384.0 * 54;
constexpr double kNodeDays = 2048.0 * 54;
constexpr double kNicDays = 16384.0 * 54;

TEST(ReliabilityReference, Llama3TableCountsTheFourHundredNineteenInterruptions) {
  Result<CsvTable> table = ReadReferenceCsv(Source("tests/reference/llama3_interruptions.csv"));
  ASSERT_TRUE(table.ok()) << table.status().message();
  int64_t total = 0;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader row(*table, i);
    total += row.Int("count");
    ASSERT_TRUE(row.Finish().ok()) << row.Finish().message();
  }
  EXPECT_EQ(table->rows.size(), 18u);
  EXPECT_EQ(total, 419);
}

TEST(ReliabilityReference, DgxH100RatesAreTheLlama3CountsOverComponentDays) {
  Result<CsvTable> table = ReadReferenceCsv(Source("tests/reference/llama3_interruptions.csv"));
  ASSERT_TRUE(table.ok()) << table.status().message();
  std::map<std::string, int64_t> by_component;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader row(*table, i);
    by_component[row.Text("component")] += row.Int("count");
  }
  EXPECT_EQ(by_component.size(), 5u);
  Result<ClusterSpec> cluster = LoadClusterSpec(Source("hardware/clusters/dgx-h100.json"));
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ASSERT_TRUE(cluster->reliability.has_value());
  const Reliability& r = *cluster->reliability;
  // The file holds six significant digits.
  const auto expect_rate = [](double shipped, double derived) {
    EXPECT_NEAR(shipped, derived, derived * 1e-5);
  };
  expect_rate(r.gpu_failures_per_1000_gpu_days, by_component["gpu"] / kGpuDays * 1000);
  expect_rate(r.host_failures_per_1000_node_days, by_component["host"] / kNodeDays * 1000);
  expect_rate(r.nic_failures_per_1000_nic_days, by_component["nic"] / kNicDays * 1000);
  expect_rate(r.network_failures_per_1000_node_days, by_component["network"] / kNodeDays * 1000);
  expect_rate(r.software_failures_per_1000_node_days, by_component["software"] / kNodeDays * 1000);
}

}  // namespace
}  // namespace loom
