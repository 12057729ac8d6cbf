#include "spec/cluster.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

// Passes when |text| contains |part|; on failure prints both.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/hardware/" + relative;
}

// A fresh folder per test, holding gpus/ and clusters/ like hardware/.
std::filesystem::path TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "loom_cluster_test" /
                              (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "gpus");
  std::filesystem::create_directories(dir / "clusters");
  return dir;
}

std::string WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

nlohmann::json ValidGpu() {
  return nlohmann::json::parse(R"({
    "schema": "loom.gpu/1", "name": "Test GPU", "sm_count": 100, "memory_bytes": 1000,
    "hbm_bandwidth_GBps": 2000, "l2_cache_bytes": 100,
    "peak_tflops": {"bf16": 300, "fp32": 20}, "nvlink_bandwidth_GBps": 300,
    "sources": ["made up for a test"]
  })");
}

nlohmann::json ValidCluster() {
  return nlohmann::json::parse(R"({
    "schema": "loom.cluster/1", "name": "Test cluster", "gpu": "../gpus/gpu.json",
    "gpus_per_node": 8,
    "intra_node": {"fabric": "nvswitch", "bandwidth_GBps": 300, "latency_us": 1},
    "inter_node": {"nics_per_node": 8, "nic_bandwidth_Gbps": 200, "latency_us": 3,
                   "topology": "fat-tree", "oversubscription": 1},
    "host": {"pcie_bandwidth_GBps": 32, "cpu_memory_bytes": 1000},
    "sources": {"gpus_per_node": "made up for a test"}
  })");
}

// Writes |gpu| to dir/gpus/gpu.json and returns the status of loading it.
Status LoadGpu(const nlohmann::json& gpu, std::string* path) {
  *path = WriteFile(TestDir() / "gpus" / "gpu.json", gpu.dump());
  Result<GpuSpec> loaded = LoadGpuSpec(*path);
  return loaded.ok() ? Status::Ok() : loaded.status();
}

// Writes |gpu| and |cluster| next to each other and loads the cluster.
Result<ClusterSpec> LoadCluster(const nlohmann::json& cluster, std::string* path,
                                const nlohmann::json& gpu = ValidGpu(),
                                std::optional<int64_t> nodes = std::nullopt) {
  std::filesystem::path dir = TestDir();
  WriteFile(dir / "gpus" / "gpu.json", gpu.dump());
  *path = WriteFile(dir / "clusters" / "cluster.json", cluster.dump());
  return LoadClusterSpec(*path, nodes);
}

Status ClusterError(const nlohmann::json& cluster, std::string* path) {
  Result<ClusterSpec> loaded = LoadCluster(cluster, path);
  return loaded.ok() ? Status::Ok() : loaded.status();
}

TEST(GpuSpec, LoadsH100WithDatasheetPeaks) {
  Result<GpuSpec> gpu = LoadGpuSpec(Shipped("gpus/h100-sxm5-80gb.json"));
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu->sm_count, 132);
  EXPECT_EQ(gpu->memory_bytes, 81559LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gpu->hbm_bandwidth_GBps, 3350);
  EXPECT_EQ(gpu->l2_cache_bytes, 50LL * 1024 * 1024);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kBf16), 989);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp16), 989);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp8), 1979);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kTf32), 494);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp32), 67);
  EXPECT_DOUBLE_EQ(gpu->nvlink_bandwidth_GBps, 450);
  EXPECT_EQ(gpu->compute_capability, 9.0);
  EXPECT_EQ(gpu->file, Shipped("gpus/h100-sxm5-80gb.json"));
}

TEST(GpuSpec, A100HasNoFp8Peak) {
  Result<GpuSpec> gpu = LoadGpuSpec(Shipped("gpus/a100-sxm4-80gb.json"));
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu->fp8_tflops, std::nullopt);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp8), std::nullopt);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kBf16), 312);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kTf32), 156);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp32), 19.5);
  EXPECT_EQ(gpu->sm_count, 108);
  EXPECT_EQ(gpu->memory_bytes, 81920LL * 1024 * 1024);
  EXPECT_EQ(gpu->l2_cache_bytes, 40LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gpu->hbm_bandwidth_GBps, 2039);
  EXPECT_DOUBLE_EQ(gpu->nvlink_bandwidth_GBps, 300);
}

TEST(GpuSpec, H200HasH100PeaksAndMoreMemory) {
  Result<GpuSpec> gpu = LoadGpuSpec(Shipped("gpus/h200-sxm-141gb.json"));
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu->memory_bytes, 143771LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gpu->hbm_bandwidth_GBps, 4800);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kBf16), 989);
  EXPECT_EQ(gpu->PeakTflops(Dtype::kFp8), 1979);
  EXPECT_EQ(gpu->sm_count, 132);
}

TEST(GpuSpec, PeakTflopsReturnsTheFieldOfEachDtype) {
  GpuSpec gpu;
  gpu.bf16_tflops = 1;
  gpu.fp16_tflops = 2;
  gpu.tf32_tflops = 4;
  gpu.fp32_tflops = 5;
  EXPECT_EQ(gpu.PeakTflops(Dtype::kBf16), 1);
  EXPECT_EQ(gpu.PeakTflops(Dtype::kFp16), 2);
  EXPECT_EQ(gpu.PeakTflops(Dtype::kFp8), std::nullopt);
  EXPECT_EQ(gpu.PeakTflops(Dtype::kTf32), 4);
  EXPECT_EQ(gpu.PeakTflops(Dtype::kFp32), 5);
}

TEST(GpuSpec, MissingFileNamesThePathAndAShippedFile) {
  std::string path = (TestDir() / "gpus" / "nope.json").string();
  Result<GpuSpec> gpu = LoadGpuSpec(path);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(Contains(gpu.status().message(), path + ": no such file"));
  EXPECT_TRUE(Contains(gpu.status().message(), "hardware/gpus/h100-sxm5-80gb.json"));
}

TEST(GpuSpec, NotJsonIsRejectedWithTheFileName) {
  std::string path = WriteFile(TestDir() / "gpus" / "gpu.json", "{\"schema\": \"loom.gpu/1\",");
  Result<GpuSpec> gpu = LoadGpuSpec(path);
  ASSERT_FALSE(gpu.ok());
  EXPECT_TRUE(Contains(gpu.status().message(), path + ": not valid JSON"));
  EXPECT_TRUE(Contains(gpu.status().message(), "fix the syntax"));
}

TEST(GpuSpec, WrongTypeNamesTheKeyAndTheFix) {
  nlohmann::json json = ValidGpu();
  json["sm_count"] = "132";
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": sm_count: must be an integer, got string"));
  EXPECT_TRUE(Contains(status.message(), "without quotes"));
}

TEST(GpuSpec, ZeroAndNegativeSizesAreRejected) {
  nlohmann::json json = ValidGpu();
  json["memory_bytes"] = 0;
  json["hbm_bandwidth_GBps"] = -1;
  json["l2_cache_bytes"] = -5;
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(),
                       path + ": memory_bytes: is 0; it must be between 1 and 1125899906842624"));
  EXPECT_TRUE(Contains(status.message(), path + ": hbm_bandwidth_GBps: is -1; it must be"));
  EXPECT_TRUE(
      Contains(status.message(),
               path + ": l2_cache_bytes: is -5; it must be between 1 and 1125899906842624"));
}

// The compute capability is optional (frameworks choose their attention kernel by it); a value
// that is not a positive number names the key.
TEST(GpuSpec, ComputeCapabilityIsOptionalAndChecked) {
  nlohmann::json json = ValidGpu();
  std::string path;
  EXPECT_TRUE(LoadGpu(json, &path).ok());
  json["compute_capability"] = "9.0";
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": compute_capability")) << status.message();
  json["compute_capability"] = 0;
  status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": compute_capability")) << status.message();
}

TEST(GpuSpec, MissingKeySaysWhatToAdd) {
  nlohmann::json json = ValidGpu();
  json.erase("nvlink_bandwidth_GBps");
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(
      Contains(status.message(),
               path + ": nvlink_bandwidth_GBps: is missing; add \"nvlink_bandwidth_GBps\""));
}

TEST(GpuSpec, UnknownKeySuggestsTheClosestKnownKey) {
  nlohmann::json json = ValidGpu();
  json.erase("sm_count");
  json["sm_cout"] = 100;
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(),
                       path + ": sm_cout: is not a known key; did you mean \"sm_count\"?"));
}

TEST(GpuSpec, UnknownPeakFormatListsTheKnownOnes) {
  nlohmann::json json = ValidGpu();
  json["peak_tflops"]["int8"] = 600;
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": peak_tflops.int8: is not a known key"));
  EXPECT_TRUE(Contains(status.message(), "bf16, fp16, fp32, fp8, tf32"));
}

TEST(GpuSpec, ZeroPeakSaysToOmitTheFormat) {
  nlohmann::json json = ValidGpu();
  json["peak_tflops"]["fp8"] = 0;
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": peak_tflops.fp8: is 0; omit the key"));
}

TEST(GpuSpec, EmptyPeaksAreRejected) {
  nlohmann::json json = ValidGpu();
  json["peak_tflops"] = nlohmann::json::object();
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": peak_tflops: names no format; add"));
}

TEST(GpuSpec, WrongSchemaNamesTheExpectedOne) {
  nlohmann::json json = ValidGpu();
  json["schema"] = "loom.cluster/1";
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": schema: is \"loom.cluster/1\""));
  EXPECT_TRUE(Contains(status.message(), "\"schema\": \"loom.gpu/1\""));
}

TEST(GpuSpec, MissingSchemaSaysWhatToAdd) {
  nlohmann::json json = ValidGpu();
  json.erase("schema");
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(
      Contains(status.message(), path + ": schema: is missing; add \"schema\": \"loom.gpu/1\""));
}

TEST(GpuSpec, SourcesMustBeStrings) {
  nlohmann::json json = ValidGpu();
  json["sources"] = {{"sm_count", 3}};
  std::string path;
  Status status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": sources: must be an array of strings"));
}

TEST(GpuSpec, ReportsEveryProblemOfAFileAtOnce) {
  nlohmann::json json = ValidGpu();
  json["sm_count"] = 0;
  json["name"] = "";
  Status status;
  std::string path;
  status = LoadGpu(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": sm_count: is 0"));
  EXPECT_TRUE(Contains(status.message(), path + ": name: is empty"));
}

TEST(ClusterSpec, LoadsDgxH100WithItsGpu) {
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("clusters/dgx-h100.json"));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->gpu.PeakTflops(Dtype::kBf16), 989);
  EXPECT_EQ(cluster->gpu.sm_count, 132);
  EXPECT_EQ(cluster->gpus_per_node, 8);
  EXPECT_EQ(cluster->nodes, std::nullopt);
  EXPECT_EQ(cluster->TotalGpus(), std::nullopt);
  EXPECT_EQ(cluster->intra_node.fabric, IntraNodeFabric::kNvSwitch);
  EXPECT_DOUBLE_EQ(cluster->intra_node.bandwidth_GBps, 450);
  EXPECT_DOUBLE_EQ(cluster->intra_node.latency_us, 0.6);
  EXPECT_EQ(cluster->inter_node.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(cluster->inter_node.nic_bandwidth_Gbps, 400);
  EXPECT_DOUBLE_EQ(cluster->inter_node.latency_us, 2.7);
  EXPECT_EQ(cluster->inter_node.topology, NetworkTopology::kRailOptimized);
  EXPECT_DOUBLE_EQ(cluster->inter_node.oversubscription, 1);
  EXPECT_DOUBLE_EQ(cluster->host.pcie_bandwidth_GBps, 63.0);
  EXPECT_EQ(cluster->host.cpu_memory_bytes, 2LL << 40);
  EXPECT_EQ(cluster->file, Shipped("clusters/dgx-h100.json"));
}

TEST(ClusterSpec, LoadsDgxA100WithAnA100WithoutFp8) {
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("clusters/dgx-a100.json"));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->gpu.PeakTflops(Dtype::kFp8), std::nullopt);
  EXPECT_EQ(cluster->gpu.PeakTflops(Dtype::kBf16), 312);
  EXPECT_EQ(cluster->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(cluster->intra_node.bandwidth_GBps, 300);
  EXPECT_DOUBLE_EQ(cluster->inter_node.nic_bandwidth_Gbps, 200);
  EXPECT_EQ(cluster->inter_node.topology, NetworkTopology::kRailOptimized);
  EXPECT_DOUBLE_EQ(cluster->host.pcie_bandwidth_GBps, 31.5);
}

TEST(ClusterSpec, LoadsHgxH200WithAnH200) {
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("clusters/hgx-h200.json"));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->gpu.memory_bytes, 143771LL * 1024 * 1024);
  EXPECT_EQ(cluster->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(cluster->inter_node.nic_bandwidth_Gbps, 400);
}

TEST(ClusterSpec, NodesOverrideGivesTotalGpus) {
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("clusters/dgx-h100.json"), 4);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->nodes, 4);
  EXPECT_EQ(cluster->TotalGpus(), 32);
}

TEST(ClusterSpec, NodesOverrideReplacesTheFilesNodes) {
  nlohmann::json json = ValidCluster();
  json["nodes"] = 2;
  std::string path;
  Result<ClusterSpec> from_file = LoadCluster(json, &path);
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  EXPECT_EQ(from_file->TotalGpus(), 16);
  Result<ClusterSpec> overridden = LoadCluster(json, &path, ValidGpu(), 3);
  ASSERT_TRUE(overridden.ok()) << overridden.status().ToString();
  EXPECT_EQ(overridden->TotalGpus(), 24);
}

TEST(ClusterSpec, NodesOverrideBelowOneIsRejected) {
  for (int64_t nodes : {0, -2}) {
    std::string path = Shipped("clusters/dgx-h100.json");
    Result<ClusterSpec> cluster = LoadClusterSpec(path, nodes);
    ASSERT_FALSE(cluster.ok());
    EXPECT_EQ(cluster.status().code(), Status::Code::kInvalidArgument);
    EXPECT_TRUE(Contains(cluster.status().message(), path + ": the node count"));
    EXPECT_TRUE(Contains(cluster.status().message(),
                         "is " + std::to_string(nodes) + "; it must be between 1 and 1048576"));
  }
}

TEST(ClusterSpec, NodesInTheFileBelowOneIsRejected) {
  nlohmann::json json = ValidCluster();
  json["nodes"] = 0;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": nodes: is 0; it must be between 1 and 1048576"));
}

TEST(ClusterSpec, TotalGpusMultipliesNodesByGpusPerNode) {
  ClusterSpec cluster;
  cluster.gpus_per_node = 4;
  EXPECT_EQ(cluster.TotalGpus(), std::nullopt);
  cluster.nodes = 5;
  EXPECT_EQ(cluster.TotalGpus(), 20);
}

TEST(ClusterSpec, MissingFileNamesThePathAndAShippedFile) {
  std::string path = (TestDir() / "clusters" / "nope.json").string();
  Result<ClusterSpec> cluster = LoadClusterSpec(path);
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(Contains(cluster.status().message(), path + ": no such file"));
  EXPECT_TRUE(Contains(cluster.status().message(), "hardware/clusters/dgx-h100.json"));
}

TEST(ClusterSpec, NotJsonIsRejectedWithTheFileName) {
  std::string path = WriteFile(TestDir() / "clusters" / "cluster.json", "[1, 2]");
  Result<ClusterSpec> cluster = LoadClusterSpec(path);
  ASSERT_FALSE(cluster.ok());
  EXPECT_TRUE(Contains(cluster.status().message(), path + ": the top level is a JSON array"));
}

TEST(ClusterSpec, WrongTypeNamesTheKey) {
  nlohmann::json json = ValidCluster();
  json["gpus_per_node"] = "8";
  json["intra_node"]["bandwidth_GBps"] = "fast";
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": gpus_per_node: must be an integer, got string"));
  EXPECT_TRUE(Contains(status.message(),
                       path + ": intra_node.bandwidth_GBps: must be a number, got string"));
}

TEST(ClusterSpec, ZeroAndNegativeSizesAreRejected) {
  nlohmann::json json = ValidCluster();
  json["inter_node"]["nics_per_node"] = 0;
  json["inter_node"]["nic_bandwidth_Gbps"] = 0;
  json["host"]["cpu_memory_bytes"] = -1;
  json["intra_node"]["latency_us"] = -0.5;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(),
                       path + ": inter_node.nics_per_node: is 0; it must be between 1 and 4096"));
  EXPECT_TRUE(Contains(status.message(),
                       path + ": inter_node.nic_bandwidth_Gbps: is 0; it must be greater than 0"));
  EXPECT_TRUE(Contains(
      status.message(),
      path + ": host.cpu_memory_bytes: is -1; it must be between 1 and 36028797018963968"));
  EXPECT_TRUE(Contains(status.message(), path + ": intra_node.latency_us: is -0.5; it must be"));
}

TEST(ClusterSpec, HostMemoryBandwidthIsOptionalAndPositive) {
  std::string path;
  Result<ClusterSpec> without = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_EQ(without->host.memory_bandwidth_GBps, std::nullopt);
  nlohmann::json json = ValidCluster();
  json["host"]["memory_bandwidth_GBps"] = 409.6;
  Result<ClusterSpec> with = LoadCluster(json, &path);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->host.memory_bandwidth_GBps, 409.6);
  json["host"]["memory_bandwidth_GBps"] = 0;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(),
                       path + ": host.memory_bandwidth_GBps: is 0; it must be greater than 0"));
}

TEST(ClusterSpec, NvlinkDomainDefaultsToTheNodeAndSetsTheTensorParallelDegrees) {
  std::string path;
  Result<ClusterSpec> node = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->NvlinkDomainGpus(), 8);
  EXPECT_EQ(node->TensorParallelDegrees(), (std::vector<int64_t>{1, 2, 4, 8}));
  nlohmann::json json = ValidCluster();
  json["gpus_per_node"] = 4;
  json["nvlink_domain_gpus"] = 16;
  Result<ClusterSpec> rack = LoadCluster(json, &path);
  ASSERT_TRUE(rack.ok()) << rack.status().ToString();
  EXPECT_EQ(rack->gpus_per_node, 4);
  EXPECT_EQ(rack->NvlinkDomainGpus(), 16);
  EXPECT_EQ(rack->TensorParallelDegrees(), (std::vector<int64_t>{1, 2, 4, 8, 16}));
}

TEST(ClusterSpec, NvlinkDomainMustBeWholeNodesOverNvswitch) {
  std::string path;
  nlohmann::json json = ValidCluster();
  json["gpus_per_node"] = 4;
  json["nvlink_domain_gpus"] = 6;
  EXPECT_TRUE(
      Contains(ClusterError(json, &path).message(),
               path + ": nvlink_domain_gpus: is 6, not a multiple of gpus_per_node (4); an NVLink "
                      "domain is whole nodes: use 4 times the nodes"));
  json["nvlink_domain_gpus"] = 0;
  EXPECT_TRUE(Contains(ClusterError(json, &path).message(),
                       path + ": nvlink_domain_gpus: is 0; it must be between 1"));
  json["nvlink_domain_gpus"] = 8;
  json["intra_node"]["fabric"] = "pcie";
  EXPECT_TRUE(Contains(
      ClusterError(json, &path).message(),
      path + ": nvlink_domain_gpus: is 8, more than one node of 4, but intra_node.fabric is not "
             "\"nvswitch\"; only NVLink switches join nodes into one domain"));
}

TEST(ClusterSpec, EveryShippedClusterLoadsWithCitedSources) {
  int64_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Shipped("clusters"))) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    Result<ClusterSpec> cluster = LoadClusterSpec(entry.path().string());
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    EXPECT_EQ(cluster->NvlinkDomainGpus() % cluster->gpus_per_node, 0) << entry.path();
    std::ifstream in(entry.path());
    const nlohmann::json json = nlohmann::json::parse(in);
    EXPECT_TRUE(json.contains("sources")) << entry.path();
  }
  EXPECT_GE(files, 9);
}

TEST(ClusterSpec, Gb200Nvl72IsTraysOfFourInOneDomainOf72) {
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("clusters/gb200-nvl72.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gpus_per_node, 4);
  EXPECT_EQ(c->NvlinkDomainGpus(), 72);
  EXPECT_EQ(c->inter_node.nics_per_node, 4);
  EXPECT_EQ(c->gpu.PeakTflops(Dtype::kBf16), 2500);
  Result<ClusterSpec> dgx = LoadClusterSpec(Shipped("clusters/dgx-b200.json"));
  ASSERT_TRUE(dgx.ok()) << dgx.status().ToString();
  EXPECT_EQ(dgx->NvlinkDomainGpus(), 8);
  EXPECT_EQ(dgx->gpu.PeakTflops(Dtype::kBf16), 2250);
  EXPECT_EQ(dgx->gpu.memory_bytes, int64_t{183359} * 1024 * 1024);
}

TEST(ClusterSpec, PricePerGpuHourIsOptionalPositiveAndBounded) {
  std::string path;
  Result<ClusterSpec> without = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_EQ(without->price_per_gpu_hour_usd, std::nullopt);
  nlohmann::json json = ValidCluster();
  json["price_per_gpu_hour_usd"] = 2.49;
  Result<ClusterSpec> with = LoadCluster(json, &path);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->price_per_gpu_hour_usd, 2.49);
  json["price_per_gpu_hour_usd"] = 0;
  EXPECT_TRUE(Contains(ClusterError(json, &path).message(),
                       path + ": price_per_gpu_hour_usd: is 0; it must be greater than 0"));
  // A price per month, not per hour: outside any GPU-hour's price, reported with the bound.
  json["price_per_gpu_hour_usd"] = 1800;
  ASSERT_TRUE(LoadCluster(json, &path).ok());
  json["price_per_gpu_hour_usd"] = 18000;
  EXPECT_TRUE(Contains(ClusterError(json, &path).message(),
                       path + ": price_per_gpu_hour_usd: is 18000; it must be between"));
  json["price_per_gpu_hour_usd"] = "2.49";
  EXPECT_TRUE(Contains(ClusterError(json, &path).message(),
                       path + ": price_per_gpu_hour_usd: must be a number"));
}

TEST(ClusterSpec, UnknownKeySuggestsTheClosestKnownKey) {
  nlohmann::json json = ValidCluster();
  json["intra_node"].erase("bandwidth_GBps");
  json["intra_node"]["bandwith_GBps"] = 300;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": intra_node.bandwith_GBps: is not a known key; "
                                                "did you mean \"bandwidth_GBps\"?"));
}

TEST(ClusterSpec, UnrelatedUnknownKeyListsTheKnownKeys) {
  nlohmann::json json = ValidCluster();
  json["rack_count"] = 4;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": rack_count: is not a known key; remove it"));
  EXPECT_TRUE(Contains(status.message(), "gpus_per_node"));
}

TEST(ClusterSpec, BadFabricListsTheChoices) {
  nlohmann::json json = ValidCluster();
  json["intra_node"]["fabric"] = "nvlink";
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": intra_node.fabric: is \"nvlink\"; it must be "
                                                "one of nvswitch|pcie"));
}

TEST(ClusterSpec, BadTopologyListsTheChoices) {
  nlohmann::json json = ValidCluster();
  json["inter_node"]["topology"] = "dragonfly";
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": inter_node.topology: is \"dragonfly\"; it must "
                                                "be one of fat-tree|rail-optimized"));
}

TEST(ClusterSpec, MissingGpuFileNamesTheClusterTheKeyAndTheResolvedPath) {
  nlohmann::json json = ValidCluster();
  json["gpu"] = "../gpus/b200.json";
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path);
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.status().code(), Status::Code::kNotFound);
  std::string resolved =
      (std::filesystem::path(path).parent_path().parent_path() / "gpus" / "b200.json").string();
  EXPECT_TRUE(Contains(cluster.status().message(),
                       path + ": gpu: \"../gpus/b200.json\" resolves to " + resolved));
  EXPECT_TRUE(Contains(cluster.status().message(), "relative to the cluster file's folder"));
}

TEST(ClusterSpec, GpuFileErrorsNameTheGpuFile) {
  nlohmann::json gpu = ValidGpu();
  gpu["sm_count"] = -1;
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(ValidCluster(), &path, gpu);
  ASSERT_FALSE(cluster.ok());
  std::string gpu_path =
      (std::filesystem::path(path).parent_path().parent_path() / "gpus" / "gpu.json").string();
  EXPECT_TRUE(Contains(cluster.status().message(), path + ": gpu: the GPU file " + gpu_path));
  EXPECT_TRUE(Contains(cluster.status().message(), gpu_path + ": sm_count: is -1"));
}

TEST(ClusterSpec, ReportsClusterAndGpuErrorsTogether) {
  nlohmann::json gpu = ValidGpu();
  gpu["sm_count"] = -1;
  nlohmann::json cluster = ValidCluster();
  cluster["gpus_per_node"] = 0;
  std::string path;
  Result<ClusterSpec> loaded = LoadCluster(cluster, &path, gpu);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), path + ": gpus_per_node: is 0"));
  EXPECT_TRUE(Contains(loaded.status().message(), "gpu.json: sm_count: is -1"));
}

TEST(ClusterSpec, WrongSchemaNamesTheExpectedOne) {
  nlohmann::json json = ValidCluster();
  json["schema"] = "loom.gpu/1";
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": schema: is \"loom.gpu/1\""));
  EXPECT_TRUE(Contains(status.message(), "\"schema\": \"loom.cluster/1\""));
}

TEST(ClusterSpec, OversubscriptionBelowOneIsRejected) {
  nlohmann::json json = ValidCluster();
  json["inter_node"]["oversubscription"] = 0.5;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": inter_node.oversubscription: is 0.5; it must "
                                                "be >= 1 (1 = full bisection bandwidth)"));
}

TEST(ClusterSpec, OversubscriptionIsRequired) {
  nlohmann::json json = ValidCluster();
  json["inter_node"].erase("oversubscription");
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": inter_node.oversubscription: is missing; add "
                                                "\"oversubscription\": 1"));
}

TEST(ClusterSpec, ReadsOversubscriptionAboveOne) {
  nlohmann::json json = ValidCluster();
  json["inter_node"]["oversubscription"] = 2;
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_DOUBLE_EQ(cluster->inter_node.oversubscription, 2);
}

TEST(ClusterSpec, IntraNodeFasterThanTheGpusNvlinkIsRejected) {
  nlohmann::json json = ValidCluster();
  json["intra_node"]["bandwidth_GBps"] = 500;
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": intra_node.bandwidth_GBps (500) exceeds the "
                                                "NVLink bandwidth of"));
  EXPECT_TRUE(Contains(status.message(), "lower bandwidth_GBps"));
}

TEST(ClusterSpec, PcieFabricDoesNotNeedNvlink) {
  nlohmann::json gpu = ValidGpu();
  gpu["nvlink_bandwidth_GBps"] = 0;
  nlohmann::json json = ValidCluster();
  json["intra_node"]["fabric"] = "pcie";
  json["intra_node"]["bandwidth_GBps"] = 32;
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path, gpu);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->intra_node.fabric, IntraNodeFabric::kPcie);
  EXPECT_DOUBLE_EQ(cluster->gpu.nvlink_bandwidth_GBps, 0);
}

TEST(ClusterSpec, AcceptsAnAbsoluteGpuPath) {
  nlohmann::json json = ValidCluster();
  json["gpu"] = Shipped("gpus/h100-sxm5-80gb.json");
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->gpu.sm_count, 132);
}

TEST(ClusterSpec, NvlinkSharpDefaultsToFalse) {
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_FALSE(cluster->intra_node.nvlink_sharp);
}

TEST(ClusterSpec, ShippedH100AndH200HaveNvlinkSharpAndA100DoesNot) {
  for (const auto& [file, sharp] : {std::pair<std::string, bool>{"clusters/dgx-a100.json", false},
                                    {"clusters/dgx-h100.json", true},
                                    {"clusters/hgx-h200.json", true}}) {
    Result<ClusterSpec> cluster = LoadClusterSpec(Shipped(file));
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    EXPECT_EQ(cluster->intra_node.nvlink_sharp, sharp) << file;
  }
}

TEST(ClusterSpec, NvlinkSharpOnPcieIsRejected) {
  nlohmann::json gpu = ValidGpu();
  nlohmann::json json = ValidCluster();
  json["intra_node"]["fabric"] = "pcie";
  json["intra_node"]["nvlink_sharp"] = true;
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path, gpu);
  ASSERT_FALSE(cluster.ok());
  EXPECT_TRUE(
      Contains(cluster.status().message(),
               path + ": intra_node.nvlink_sharp: is true but the fabric is not \"nvswitch\""));
}

TEST(ClusterSpec, NcclChannelsAreReadAndOptional) {
  std::string path;
  Result<ClusterSpec> plain = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->intra_node.nccl_channels || plain->intra_node.nvls_channels ||
               plain->inter_node.nccl_channels);
  Result<ClusterSpec> h100 = LoadClusterSpec(Shipped("clusters/dgx-h100.json"));
  ASSERT_TRUE(h100.ok()) << h100.status().ToString();
  EXPECT_EQ(h100->intra_node.nccl_channels, 24);
  EXPECT_EQ(h100->intra_node.nvls_channels, 16);
  EXPECT_EQ(h100->inter_node.nccl_channels, 16);
}

TEST(ClusterSpec, NcclChannelsOutOfRangeOrNvlsWithoutSharpAreRejected) {
  nlohmann::json json = ValidCluster();
  json["intra_node"]["nvls_channels"] = 16;
  json["inter_node"]["nccl_channels"] = 65;
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path);
  ASSERT_FALSE(cluster.ok());
  EXPECT_TRUE(Contains(cluster.status().message(),
                       path + ": intra_node.nvls_channels: is set but nvlink_sharp is not true"))
      << cluster.status().message();
  EXPECT_TRUE(Contains(cluster.status().message(), "inter_node.nccl_channels"))
      << cluster.status().message();
}

TEST(ClusterSpec, CalibrationIsReadAndAbsentValuesStayUnset) {
  nlohmann::json json = ValidCluster();
  json["calibration"] = {{"intra_node_busbw_fraction", 0.75},
                         {"intra_node_extra_latency_us", 90.5},
                         {"source", "a test table"}};
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(json, &path);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->calibration.intra_node_busbw_fraction, 0.75);
  EXPECT_EQ(cluster->calibration.intra_node_extra_latency_us, 90.5);
  EXPECT_EQ(cluster->calibration.inter_node_busbw_fraction, std::nullopt);
  EXPECT_EQ(cluster->calibration.nvls_busbw_fraction, std::nullopt);
  EXPECT_EQ(cluster->calibration.inter_node_extra_latency_us, std::nullopt);
  EXPECT_EQ(cluster->calibration.source, "a test table");
}

TEST(ClusterSpec, ClusterWithoutCalibrationHasNoCalibratedValue) {
  std::string path;
  Result<ClusterSpec> cluster = LoadCluster(ValidCluster(), &path);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->calibration.intra_node_busbw_fraction, std::nullopt);
  EXPECT_EQ(cluster->calibration.source, "");
}

TEST(ClusterSpec, CalibrationFractionAboveOneSaysToFixTheBandwidth) {
  nlohmann::json json = ValidCluster();
  json["calibration"] = {{"nvls_busbw_fraction", 1.2}, {"source", "x"}};
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(
      Contains(status.message(), path + ": calibration.nvls_busbw_fraction: is 1.2; a fraction of "
                                        "the nominal bandwidth must be at most 1"));
}

TEST(ClusterSpec, CalibrationNeedsASourceAndAValue) {
  nlohmann::json json = ValidCluster();
  json["calibration"] = nlohmann::json::object();
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(Contains(status.message(), path + ": calibration.source: is missing"));
  EXPECT_TRUE(Contains(status.message(), path + ": calibration: has no value"));
}

TEST(ClusterSpec, CalibrationRejectsNegativeLatencyAndMisspelledKeys) {
  nlohmann::json json = ValidCluster();
  json["calibration"] = {
      {"inter_node_extra_latency_us", -1}, {"intra_node_busbw_fractoin", 0.5}, {"source", "x"}};
  std::string path;
  Status status = ClusterError(json, &path);
  EXPECT_TRUE(
      Contains(status.message(), path + ": calibration.inter_node_extra_latency_us: is -1"));
  EXPECT_TRUE(Contains(status.message(),
                       "calibration.intra_node_busbw_fractoin: is not a known key; did you "
                       "mean \"intra_node_busbw_fraction\"?"));
}

// A cluster of two node groups: |fast_nodes| nodes of gpus/fast.json, then |slow_nodes| of
// gpus/slow.json (ValidGpu at half the rates), written beside it.
Result<ClusterSpec> LoadTwoGroups(nlohmann::json cluster, std::string* path,
                                  std::optional<int64_t> nodes = std::nullopt) {
  std::filesystem::path dir = TestDir();
  nlohmann::json slow = ValidGpu();
  slow["name"] = "Slow GPU";
  slow["peak_tflops"]["bf16"] = 150;
  WriteFile(dir / "gpus" / "fast.json", ValidGpu().dump());
  WriteFile(dir / "gpus" / "slow.json", slow.dump());
  *path = WriteFile(dir / "clusters" / "cluster.json", cluster.dump());
  return LoadClusterSpec(*path, nodes);
}

nlohmann::json TwoGroups() {
  nlohmann::json cluster = ValidCluster();
  cluster.erase("gpu");
  cluster["node_groups"] = nlohmann::json::parse(
      R"([{"gpu": "../gpus/fast.json", "nodes": 2}, {"gpu": "../gpus/slow.json", "nodes": 3}])");
  return cluster;
}

TEST(ClusterSpec, NodeGroupsHoldConsecutiveRanksInTheFilesOrder) {
  std::string path;
  Result<ClusterSpec> c = LoadTwoGroups(TwoGroups(), &path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->node_groups.size(), 2u);
  EXPECT_EQ(c->node_groups[0].nodes, 2);
  EXPECT_EQ(c->node_groups[1].gpu.name, "Slow GPU");
  EXPECT_EQ(c->nodes, 5);  // the groups' sum
  EXPECT_EQ(c->TotalGpus(), 40);
  EXPECT_EQ(c->gpu.name, "Test GPU");  // the first group's
  // 2 nodes of 8: ranks 0-15 fast, 16-39 slow.
  EXPECT_EQ(c->NodeGroupOfRank(15), 0);
  EXPECT_EQ(c->NodeGroupOfRank(16), 1);
  EXPECT_EQ(c->GpuOfRank(39).PeakTflops(Dtype::kBf16), 150);
  EXPECT_EQ(c->GpuOfRank(0).PeakTflops(Dtype::kBf16), 300);
  EXPECT_EQ(GpuNames(*c), "Test GPU + Slow GPU");
}

TEST(ClusterSpec, NodesOverrideMayOnlyLowerTheNodeGroupsSum) {
  std::string path;
  Result<ClusterSpec> fewer = LoadTwoGroups(TwoGroups(), &path, 3);
  ASSERT_TRUE(fewer.ok()) << fewer.status().ToString();
  EXPECT_EQ(fewer->TotalGpus(), 24);
  Result<ClusterSpec> more = LoadTwoGroups(TwoGroups(), &path, 6);
  ASSERT_FALSE(more.ok());
  EXPECT_TRUE(Contains(more.status().message(),
                       path + ": the node count given to run on (--nodes) is 6, more than the 5 "
                              "nodes its node_groups hold; use --nodes 5 or fewer"));
}

TEST(ClusterSpec, GpuBesideNodeGroupsNamesTheKeyAndTheFix) {
  nlohmann::json cluster = TwoGroups();
  cluster["gpu"] = "../gpus/fast.json";
  cluster["nodes"] = 4;
  std::string path;
  Result<ClusterSpec> c = LoadTwoGroups(cluster, &path);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(),
                       path + ": gpu: is given with \"node_groups\", which names each group's "
                              "GPU and node count itself; remove \"gpu\", or remove "
                              "\"node_groups\" for a cluster of one GPU type"));
  EXPECT_TRUE(Contains(c.status().message(), path + ": nodes: is given with \"node_groups\""));
}

TEST(ClusterSpec, EmptyOrMistypedNodeGroupsSayWhatAGroupIs) {
  for (const char* groups : {"[]", "{}", "\"fast\""}) {
    nlohmann::json cluster = TwoGroups();
    cluster["node_groups"] = nlohmann::json::parse(groups);
    std::string path;
    Result<ClusterSpec> c = LoadTwoGroups(cluster, &path);
    ASSERT_FALSE(c.ok()) << groups;
    EXPECT_TRUE(Contains(c.status().message(),
                         path + ": node_groups: is " +
                             (std::string(groups) == "[]" ? "empty" : "not an array") +
                             "; it must be a non-empty array of {\"gpu\": "
                             "\"../gpus/<file>.json\", \"nodes\": <count>}"))
        << groups;
  }
}

TEST(ClusterSpec, BadNodeGroupEntriesNameTheEntryAndTheKey) {
  nlohmann::json cluster = TwoGroups();
  cluster["node_groups"][0]["nodes"] = 0;
  cluster["node_groups"][1]["nodes"] = -2;
  cluster["node_groups"][1]["gpus"] = "x";
  std::string path;
  Result<ClusterSpec> c = LoadTwoGroups(cluster, &path);
  ASSERT_FALSE(c.ok());
  const std::string message = c.status().message();
  EXPECT_TRUE(Contains(message, path + ": node_groups[0].nodes: "));
  EXPECT_TRUE(Contains(message, path + ": node_groups[1].nodes: "));
  EXPECT_TRUE(Contains(message, path + ": node_groups[1].gpus"));
  nlohmann::json not_object = TwoGroups();
  not_object["node_groups"][1] = 4;
  Result<ClusterSpec> n = LoadTwoGroups(not_object, &path);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(Contains(n.status().message(), path + ": node_groups[1]: is not an object"));
}

TEST(ClusterSpec, UnknownNodeGroupGpuFileNamesTheEntryAndTheResolvedPath) {
  nlohmann::json cluster = TwoGroups();
  cluster["node_groups"][1]["gpu"] = "../gpus/missing.json";
  std::string path;
  Result<ClusterSpec> c = LoadTwoGroups(cluster, &path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(Contains(c.status().message(),
                       path + ": node_groups[1].gpu: \"../gpus/missing.json\" resolves to "));
  EXPECT_TRUE(Contains(c.status().message(),
                       "which is not a file; the path is relative to the "
                       "cluster file's folder"));
}

// The NVSwitch may run at the fastest group's NVLink; faster than every group's is an error.
TEST(ClusterSpec, NodeGroupsIntraNodeBandwidthIsBoundByTheFastestGroupsNvlink) {
  nlohmann::json cluster = TwoGroups();
  cluster["intra_node"]["bandwidth_GBps"] = 300;  // fast.json's and slow.json's NVLink
  std::string path;
  EXPECT_TRUE(LoadTwoGroups(cluster, &path).ok());
  cluster["intra_node"]["bandwidth_GBps"] = 400;
  Result<ClusterSpec> c = LoadTwoGroups(cluster, &path);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(),
                       "intra_node.bandwidth_GBps (400) exceeds the NVLink "
                       "bandwidth of "));
}

TEST(ClusterSpec, ShippedMixedClusterIsFourH100NodesThenFourA100Nodes) {
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("clusters/mixed-h100-a100.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->node_groups.size(), 2u);
  EXPECT_EQ(c->TotalGpus(), 64);
  EXPECT_EQ(c->GpuOfRank(31).PeakTflops(Dtype::kBf16), 989);  // H100
  EXPECT_EQ(c->GpuOfRank(32).PeakTflops(Dtype::kBf16), 312);  // A100
  EXPECT_EQ(c->gpu.name, c->node_groups[0].gpu.name);
  EXPECT_DOUBLE_EQ(c->intra_node.bandwidth_GBps, 450);
}

}  // namespace
}  // namespace loom
