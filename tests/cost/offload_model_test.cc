#include "cost/offload_model.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace loom {
namespace {

// 8 GPUs per node, 32 GB/s of PCIe per GPU, 400 GB/s of node DRAM: 50 GB/s of it per GPU.
ClusterSpec TestCluster() {
  ClusterSpec c;
  c.file = "clusters/test.json";
  c.gpus_per_node = 8;
  c.host.pcie_bandwidth_GBps = 32;
  c.host.memory_bandwidth_GBps = 400;
  return c;
}

Strategy Offloaded(Offload offload, Dtype dtype = Dtype::kBf16,
                   Optimizer optimizer = Optimizer::kAdam) {
  Strategy s;
  s.dp = 8;
  s.zero_stage = offload == Offload::kOptimizerAndParams ? 3 : 1;
  s.offload = offload;
  s.dtype = dtype;
  s.optimizer = optimizer;
  return s;
}

OffloadCost CostOf(const ClusterSpec& cluster, const Strategy& s, int64_t shard) {
  Result<OffloadCost> cost = CostOptimizerOffload(cluster, s, shard);
  EXPECT_TRUE(cost.ok()) << (cost.ok() ? "" : cost.status().message());
  return cost.ok() ? *cost : OffloadCost{};
}

TEST(CpuOptimizerStepTraffic, CpuAdamReadsSixteenAndWritesFourteenBytes) {
  // bf16 + Adam: r weight, gradient (fp32 buffer), m, v; w weight, m, v and the bf16 copy.
  const MemoryShape adam = CpuOptimizerStepTraffic(
      1000, BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, false), Optimizer::kAdam);
  EXPECT_EQ(adam.bytes_read, 16'000);
  EXPECT_EQ(adam.bytes_written, 14'000);
  // 2-byte gradients are read as they arrived.
  const MemoryShape half = CpuOptimizerStepTraffic(
      1000, BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, true), Optimizer::kAdam);
  EXPECT_EQ(half.bytes_read, 14'000);
  // SGD with momentum r(8 + 4) w(8 + 2); Adafactor r(4 + 2 * 4) w(4 + 2); fp32 writes no copy.
  const MemoryShape sgd = CpuOptimizerStepTraffic(
      1000, BytesPerParameter(Dtype::kBf16, Optimizer::kSgd, false), Optimizer::kSgd);
  EXPECT_EQ(sgd.bytes_read, 12'000);
  EXPECT_EQ(sgd.bytes_written, 10'000);
  const MemoryShape adafactor = CpuOptimizerStepTraffic(
      1000, BytesPerParameter(Dtype::kBf16, Optimizer::kAdafactor, false), Optimizer::kAdafactor);
  EXPECT_EQ(adafactor.bytes_read, 12'000);
  EXPECT_EQ(adafactor.bytes_written, 6'000);
  const MemoryShape fp32 = CpuOptimizerStepTraffic(
      1000, BytesPerParameter(Dtype::kFp32, Optimizer::kAdam, false), Optimizer::kAdam);
  EXPECT_EQ(fp32.bytes_read, 16'000);
  EXPECT_EQ(fp32.bytes_written, 12'000);
}

TEST(CpuOptimizerStepTraffic, HugeCountsSaturate) {
  const MemoryShape t = CpuOptimizerStepTraffic(
      int64_t{1} << 61, BytesPerParameter(Dtype::kBf16, Optimizer::kAdam, false), Optimizer::kAdam);
  EXPECT_EQ(t.bytes_read, std::numeric_limits<int64_t>::max());
}

TEST(CostOptimizerOffload, Bf16AdamShardOfOneBillionParameters) {
  const OffloadCost cost = CostOf(TestCluster(), Offloaded(Offload::kOptimizer), 1'000'000'000);
  // 4e9 gradient bytes at 32 GB/s; 30e9 CPU bytes at 400 / 8 GB/s; 2e9 weight bytes at 32 GB/s.
  EXPECT_EQ(cost.grad_to_host.nanos(), 125'000'000);
  EXPECT_EQ(cost.cpu_step.nanos(), 600'000'000);
  EXPECT_EQ(cost.params_to_gpu.nanos(), 62'500'000);
}

TEST(CostOptimizerOffload, FollowsThePrecisionRecipeAndTheOptimizer) {
  const ClusterSpec cluster = TestCluster();
  Strategy bf16_reduce = Offloaded(Offload::kOptimizer);
  bf16_reduce.grad_reduce_in_bf16 = true;
  const OffloadCost half = CostOf(cluster, bf16_reduce, 1'000'000'000);
  EXPECT_EQ(half.grad_to_host.nanos(), 62'500'000);  // 2e9 bytes at 32 GB/s
  EXPECT_EQ(half.cpu_step.nanos(), 560'000'000);     // 28e9 bytes at 50 GB/s
  EXPECT_EQ(
      CostOf(cluster, Offloaded(Offload::kOptimizer, Dtype::kBf16, Optimizer::kSgd), 1'000'000'000)
          .cpu_step.nanos(),
      440'000'000);  // 22e9 bytes
  EXPECT_EQ(CostOf(cluster, Offloaded(Offload::kOptimizer, Dtype::kBf16, Optimizer::kAdafactor),
                   1'000'000'000)
                .cpu_step.nanos(),
            360'000'000);  // 18e9 bytes
  const OffloadCost fp32 =
      CostOf(cluster, Offloaded(Offload::kOptimizer, Dtype::kFp32), 1'000'000'000);
  EXPECT_EQ(fp32.grad_to_host.nanos(), 125'000'000);
  EXPECT_EQ(fp32.cpu_step.nanos(), 560'000'000);       // 28e9 bytes, no 2-byte copy
  EXPECT_EQ(fp32.params_to_gpu.nanos(), 125'000'000);  // 4-byte weights
}

TEST(CostOptimizerOffload, TheGpusOfANodeShareItsMemoryBandwidth) {
  ClusterSpec four = TestCluster();
  four.gpus_per_node = 4;
  EXPECT_EQ(CostOf(four, Offloaded(Offload::kOptimizer), 1'000'000'000).cpu_step.nanos(),
            300'000'000);
}

TEST(CostOptimizerOffload, ShippedDgxA100StepsAtItsShareOfTwoEpycSockets) {
  Result<ClusterSpec> a100 =
      LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/dgx-a100.json");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  ASSERT_EQ(a100->host.memory_bandwidth_GBps, 409.6);
  // 512e6 parameters: 15.36e9 CPU bytes at 409.6 / 8 = 51.2 GB/s = 0.3 s; 2.048e9 gradient bytes
  // at 31.5 GB/s = 65015873.0 ns.
  const OffloadCost cost = CostOf(*a100, Offloaded(Offload::kOptimizer), 512'000'000);
  EXPECT_EQ(cost.cpu_step.nanos(), 300'000'000);
  EXPECT_EQ(cost.grad_to_host.nanos(), 65'015'873);
  for (const char* name : {"dgx-h100.json", "hgx-h200.json"}) {
    Result<ClusterSpec> c =
        LoadClusterSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/clusters/" + name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->host.memory_bandwidth_GBps, 614.4) << name;
  }
}

TEST(CostOptimizerOffload, ParameterOffloadSendsNoWeightsBackAfterTheStep) {
  const OffloadCost cost =
      CostOf(TestCluster(), Offloaded(Offload::kOptimizerAndParams), 1'000'000'000);
  EXPECT_EQ(cost.grad_to_host.nanos(), 125'000'000);
  EXPECT_EQ(cost.cpu_step.nanos(), 600'000'000);
  EXPECT_EQ(cost.params_to_gpu.nanos(), 0);
}

TEST(CostOptimizerOffload, NoOffloadCostsNothingAndNeedsNoHostBandwidth) {
  ClusterSpec cluster = TestCluster();
  cluster.host.memory_bandwidth_GBps.reset();
  const OffloadCost cost = CostOf(cluster, Offloaded(Offload::kNone), 1'000'000'000);
  EXPECT_EQ(cost.grad_to_host + cost.cpu_step + cost.params_to_gpu, SimTime());
}

TEST(CostOptimizerOffload, MissingMemoryBandwidthNamesTheFileAndKey) {
  ClusterSpec cluster = TestCluster();
  cluster.host.memory_bandwidth_GBps.reset();
  Result<OffloadCost> cost = CostOptimizerOffload(cluster, Offloaded(Offload::kOptimizer), 1000);
  ASSERT_FALSE(cost.ok());
  EXPECT_EQ(cost.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(cost.status().message().find(
                "clusters/test.json: host.memory_bandwidth_GBps is missing; --offload "
                "optimizer steps the optimizer on the CPUs"),
            std::string::npos)
      << cost.status().message();
  EXPECT_NE(cost.status().message().find("add \"memory_bandwidth_GBps\""), std::string::npos);
}

TEST(CostOptimizerOffload, BadInputsAreErrors) {
  ClusterSpec no_pcie = TestCluster();
  no_pcie.host.pcie_bandwidth_GBps = 0;
  Result<OffloadCost> pcie = CostOptimizerOffload(no_pcie, Offloaded(Offload::kOptimizer), 1000);
  ASSERT_FALSE(pcie.ok());
  EXPECT_NE(pcie.status().message().find("clusters/test.json: host.pcie_bandwidth_GBps is 0"),
            std::string::npos);
  Result<OffloadCost> negative =
      CostOptimizerOffload(TestCluster(), Offloaded(Offload::kOptimizer), -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("cannot be negative"), std::string::npos);
  ClusterSpec slow = TestCluster();
  slow.host.memory_bandwidth_GBps = 1e-9;
  Result<OffloadCost> range =
      CostOptimizerOffload(slow, Offloaded(Offload::kOptimizer), 1'000'000'000);
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("past the simulator's clock range"), std::string::npos);
}

TEST(CostParameterFetch, BringsTheLayerShardOverPcie) {
  // 218112000 bf16 parameters: 436224000 bytes at 32 GB/s = 13632000 ns; fp32 twice that.
  Result<SimTime> fetch =
      CostParameterFetch(TestCluster(), Offloaded(Offload::kOptimizerAndParams), 218'112'000);
  ASSERT_TRUE(fetch.ok()) << fetch.status().message();
  EXPECT_EQ(fetch->nanos(), 13'632'000);
  Result<SimTime> fp32 = CostParameterFetch(
      TestCluster(), Offloaded(Offload::kOptimizerAndParams, Dtype::kFp32), 218'112'000);
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->nanos(), 27'264'000);
}

TEST(CostParameterFetch, OnlyParameterOffloadFetches) {
  Result<SimTime> fetch = CostParameterFetch(TestCluster(), Offloaded(Offload::kOptimizer), 1000);
  ASSERT_FALSE(fetch.ok());
  EXPECT_NE(fetch.status().message().find("--offload optimizer keeps the weights on the GPU"),
            std::string::npos)
      << fetch.status().message();
}

}  // namespace
}  // namespace loom
