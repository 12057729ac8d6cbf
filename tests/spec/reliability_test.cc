#include "spec/reliability.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/cluster.h"

namespace loom {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

nlohmann::json Cluster() {
  return nlohmann::json::parse(R"({
    "schema": "loom.cluster/1", "name": "Test cluster", "gpu": "../gpus/gpu.json",
    "gpus_per_node": 8,
    "intra_node": {"fabric": "nvswitch", "bandwidth_GBps": 300, "latency_us": 1},
    "inter_node": {"nics_per_node": 8, "nic_bandwidth_Gbps": 200, "latency_us": 3,
                   "topology": "fat-tree", "oversubscription": 1},
    "host": {"pcie_bandwidth_GBps": 32, "cpu_memory_bytes": 1000},
    "reliability": {
      "gpu_failures_per_1000_gpu_days": 0.3, "host_failures_per_1000_node_days": 0.4,
      "nic_failures_per_1000_nic_days": 0.01, "network_failures_per_1000_node_days": 0.3,
      "software_failures_per_1000_node_days": 0.6, "source": "made up for a test",
      "checkpoint_write_GBps": 2000, "checkpoint_read_GBps": 1500, "restart_s": 600
    }
  })");
}

// Writes |cluster| beside a GPU file, in a folder of the test's own, and loads it.
Result<ClusterSpec> Load(const nlohmann::json& cluster, std::string* path) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "loom_reliability_test" / info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "gpus");
  std::filesystem::create_directories(dir / "clusters");
  std::ofstream(dir / "gpus" / "gpu.json") << R"({
    "schema": "loom.gpu/1", "name": "Test GPU", "sm_count": 100, "memory_bytes": 1000,
    "hbm_bandwidth_GBps": 2000, "l2_cache_bytes": 100, "peak_tflops": {"bf16": 300},
    "nvlink_bandwidth_GBps": 300})";
  *path = (dir / "clusters" / "cluster.json").string();
  std::ofstream(*path) << cluster.dump();
  return LoadClusterSpec(*path);
}

std::string ErrorOf(const nlohmann::json& cluster, std::string* path) {
  Result<ClusterSpec> loaded = Load(cluster, path);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? std::string() : loaded.status().message();
}

TEST(Reliability, ReadsEveryKey) {
  std::string path;
  Result<ClusterSpec> loaded = Load(Cluster(), &path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(loaded->reliability.has_value());
  const Reliability& r = *loaded->reliability;
  EXPECT_DOUBLE_EQ(r.gpu_failures_per_1000_gpu_days, 0.3);
  EXPECT_DOUBLE_EQ(r.host_failures_per_1000_node_days, 0.4);
  EXPECT_DOUBLE_EQ(r.nic_failures_per_1000_nic_days, 0.01);
  EXPECT_DOUBLE_EQ(r.network_failures_per_1000_node_days, 0.3);
  EXPECT_DOUBLE_EQ(r.software_failures_per_1000_node_days, 0.6);
  EXPECT_EQ(r.source, "made up for a test");
  EXPECT_EQ(r.checkpoint_write_GBps, 2000);
  EXPECT_EQ(r.checkpoint_read_GBps, 1500);
  EXPECT_EQ(r.restart_s, 600);
}

TEST(Reliability, IsAbsentWithoutTheObject) {
  nlohmann::json cluster = Cluster();
  cluster.erase("reliability");
  std::string path;
  Result<ClusterSpec> loaded = Load(cluster, &path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->reliability.has_value());
}

TEST(Reliability, TheStorageAndRestartKeysAreOptional) {
  nlohmann::json cluster = Cluster();
  for (const char* key : {"checkpoint_write_GBps", "checkpoint_read_GBps", "restart_s"})
    cluster["reliability"].erase(key);
  std::string path;
  Result<ClusterSpec> loaded = Load(cluster, &path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->reliability->checkpoint_write_GBps.has_value());
  EXPECT_FALSE(loaded->reliability->restart_s.has_value());
}

TEST(Reliability, AMissingRateNamesTheFileAndTheKey) {
  nlohmann::json cluster = Cluster();
  cluster["reliability"].erase("nic_failures_per_1000_nic_days");
  std::string path;
  const std::string message = ErrorOf(cluster, &path);
  EXPECT_TRUE(Contains(message, path + ": reliability.nic_failures_per_1000_nic_days: is missing; "
                                       "add \"nic_failures_per_1000_nic_days\""));
}

TEST(Reliability, ANegativeRateIsAnError) {
  nlohmann::json cluster = Cluster();
  cluster["reliability"]["gpu_failures_per_1000_gpu_days"] = -1;
  std::string path;
  const std::string message = ErrorOf(cluster, &path);
  EXPECT_TRUE(Contains(message, path + ": reliability.gpu_failures_per_1000_gpu_days: is -1"));
}

TEST(Reliability, RatesThatAreAllZeroAreAnError) {
  nlohmann::json cluster = Cluster();
  for (const char* key : {"gpu_failures_per_1000_gpu_days", "host_failures_per_1000_node_days",
                          "nic_failures_per_1000_nic_days", "network_failures_per_1000_node_days",
                          "software_failures_per_1000_node_days"})
    cluster["reliability"][key] = 0;
  std::string path;
  const std::string message = ErrorOf(cluster, &path);
  EXPECT_TRUE(Contains(message, path + ": reliability: has every failure rate 0"));
}

TEST(Reliability, AMissingSourceAndAZeroBandwidthAreErrors) {
  nlohmann::json cluster = Cluster();
  cluster["reliability"].erase("source");
  cluster["reliability"]["checkpoint_write_GBps"] = 0;
  std::string path;
  const std::string message = ErrorOf(cluster, &path);
  EXPECT_TRUE(Contains(message, path + ": reliability.source: is missing"));
  EXPECT_TRUE(Contains(message, path + ": reliability.checkpoint_write_GBps: is 0"));
}

TEST(Reliability, AnUnknownKeyIsAnError) {
  nlohmann::json cluster = Cluster();
  cluster["reliability"]["restart_minutes"] = 10;
  std::string path;
  const std::string message = ErrorOf(cluster, &path);
  EXPECT_TRUE(Contains(message, path + ": reliability.restart_minutes"));
}

}  // namespace
}  // namespace loom
