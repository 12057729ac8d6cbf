#include "plan/goodput.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "plan/plan_test_support.h"
#include "spec/state_bytes.h"

namespace loom {
namespace {

// Rates chosen to count by hand: 1 per 1000 GPU-days, 2 (host), 3 (network) and 4 (software) per
// 1000 node-days, 0.5 per 1000 NIC-days.
Reliability HandRates() {
  Reliability r;
  r.gpu_failures_per_1000_gpu_days = 1;
  r.host_failures_per_1000_node_days = 2;
  r.network_failures_per_1000_node_days = 3;
  r.software_failures_per_1000_node_days = 4;
  r.nic_failures_per_1000_nic_days = 0.5;
  r.source = "a test";
  return r;
}

// A cluster of nodes of 8 GPUs and 4 NICs with HandRates, 0.1 GB/s of storage each way and a
// 600 s restart.
ClusterSpec HandCluster() {
  ClusterSpec c;
  c.file = "hand.json";
  c.gpus_per_node = 8;
  c.inter_node.nics_per_node = 4;
  c.reliability = HandRates();
  c.reliability->checkpoint_write_GBps = 0.1;
  c.reliability->checkpoint_read_GBps = 0.1;
  c.reliability->restart_s = 600;
  return c;
}

Strategy OnGpus(int64_t gpus) {
  Strategy s;
  s.dp = gpus;
  return s;
}

TEST(Goodput, JobFailureRateSumsTheRatesOfEveryPartOfTheJob) {
  // 12 GPUs on nodes of 8 span ceil(12 / 8) = 2 nodes and their 2 x 4 = 8 NICs:
  //   12 x 1 + 2 x (2 + 3 + 4) + 8 x 0.5 = 12 + 18 + 4 = 34 failures per 1000 days = 0.034 a day,
  //   MTBF = 86400 / 0.034 = 2,541,176.47 s (29.41 days).
  const JobFailures f = FailuresOfJob(HandRates(), 12, 8, 4);
  EXPECT_EQ(f.gpus, 12);
  EXPECT_EQ(f.nodes, 2);
  EXPECT_EQ(f.nics, 8);
  EXPECT_DOUBLE_EQ(f.failures_per_day, 0.034);
  EXPECT_NEAR(f.MtbfSeconds(), 2541176.47, 0.01);
}

TEST(Goodput, YoungIntervalIsItsClosedForm) {
  // sqrt(2 x 50 s x 10000 s) = sqrt(10^6) = 1000 s.
  EXPECT_DOUBLE_EQ(YoungInterval(50, 10000), 1000);
}

TEST(Goodput, DalyIntervalIsItsClosedForm) {
  // delta = 50 s, M = 10000 s: delta / (2M) = 1/400, its square root 1/20.
  //   tau = 1000 x (1 + (1/3)(1/20) + (1/9)(1/400)) - 50 = 1000 + 16.6667 + 0.2778 - 50 = 966.944
  //   s.
  EXPECT_NEAR(DalyInterval(50, 10000), 1000 + 1000.0 / 60 + 1000.0 / 3600 - 50, 1e-9);
  EXPECT_NEAR(DalyInterval(50, 10000), 966.9444, 1e-4);
  // A checkpoint of at least 2M: Daly's tau = M.
  EXPECT_DOUBLE_EQ(DalyInterval(20000, 10000), 10000);
  EXPECT_DOUBLE_EQ(DalyInterval(30000, 10000), 10000);
}

TEST(Goodput, GoodputFallsWithTheFailureRateAsDalysWallTimeSays) {
  // tau = 1000 s, delta = 50 s, R = 100 s; goodput = tau / (M e^(R/M) (e^((tau + delta)/M) - 1)).
  // M = 10000 s: e^0.01 = 1.0100502, e^0.105 - 1 = 0.1107106,
  //   10000 x 1.0100502 x 0.1107106 = 1118.233, goodput = 1000 / 1118.233 = 0.894268.
  EXPECT_NEAR(DalyGoodput(1000, 50, 100, 10000), 0.894268, 1e-6);
  // Twice the failure rate, M = 5000 s: e^0.02 = 1.0202013, e^0.21 - 1 = 0.2336781,
  //   5000 x 1.0202013 x 0.2336781 = 1191.993, goodput = 1000 / 1191.993 = 0.838931.
  EXPECT_NEAR(DalyGoodput(1000, 50, 100, 5000), 0.838931, 1e-6);
  // Without failures it tends to tau / (tau + delta) = 1000 / 1050 = 0.952381.
  EXPECT_NEAR(DalyGoodput(1000, 50, 100, 1e12), 1000.0 / 1050, 1e-6);
}

TEST(Goodput, CheckpointHoldsWeightsAndOptimizerStatesNotGradients) {
  // bf16 with Adam: 2-byte weights + 12 bytes of fp32 master, momentum and variance = 14 bytes.
  Strategy s = OnGpus(8);
  Result<int64_t> bytes = CheckpointBytes(1'000'000'000, s);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, 14'000'000'000);
  // fp32 with SGD: the weight and optimizer bytes BytesPerParameter keeps, the gradient's left out.
  s.dtype = Dtype::kFp32;
  s.optimizer = Optimizer::kSgd;
  const StateBytesPerParam per = BytesPerParameter(s);
  bytes = CheckpointBytes(1'000'000'000, s);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, (per.weight + per.optimizer) * 1'000'000'000);
}

TEST(Goodput, EstimateChainsTheJobTheCheckpointAndDalysInterval) {
  const ClusterSpec cluster = HandCluster();
  Result<GoodputEstimate> e = EstimateGoodput(cluster, 1'000'000'000, OnGpus(12));
  ASSERT_TRUE(e.ok()) << e.status().message();
  // 14 GB over 0.1 GB/s: 140 s to write and to read; recovery 600 + 140 = 740 s.
  EXPECT_NEAR(*e->checkpoint_write_s, 140, 1e-9);
  EXPECT_NEAR(*e->checkpoint_read_s, 140, 1e-9);
  EXPECT_NEAR(*e->recovery_s, 740, 1e-9);
  const double mtbf = 86400 / 0.034;
  EXPECT_NEAR(e->mtbf_s, mtbf, 1e-6);
  EXPECT_NEAR(*e->young_interval_s, YoungInterval(140, e->mtbf_s), 1e-6);
  EXPECT_NEAR(*e->daly_interval_s, DalyInterval(140, e->mtbf_s), 1e-6);
  EXPECT_NEAR(*e->goodput, DalyGoodput(*e->daly_interval_s, 140, 740, e->mtbf_s), 1e-12);
  EXPECT_TRUE(e->missing.empty());
  // More GPUs fail more often: 64 GPUs on 8 nodes lose more to failures than 12 on 2.
  Result<GoodputEstimate> larger = EstimateGoodput(cluster, 1'000'000'000, OnGpus(64));
  ASSERT_TRUE(larger.ok());
  EXPECT_LT(*larger->goodput, *e->goodput);
}

TEST(Goodput, AMissingKeyLeavesWhatItDecidesUnsetAndIsNamed) {
  ClusterSpec cluster = HandCluster();
  cluster.reliability->restart_s.reset();
  Result<GoodputEstimate> e = EstimateGoodput(cluster, 1'000'000'000, OnGpus(12));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->daly_interval_s.has_value());  // needs only the write bandwidth and the MTBF
  EXPECT_FALSE(e->recovery_s.has_value());
  EXPECT_FALSE(e->goodput.has_value());
  ASSERT_EQ(e->missing.size(), 1u);
  EXPECT_EQ(e->missing.front(), "restart_s");
  const Status check = CheckGoodputInputs(cluster);
  ASSERT_FALSE(check.ok());
  EXPECT_NE(check.message().find("hand.json: reliability.restart_s is missing"), std::string::npos)
      << check.message();
}

TEST(Goodput, AClusterWithoutReliabilityIsAnErrorThatNamesTheFile) {
  ClusterSpec cluster = HandCluster();
  cluster.reliability.reset();
  Result<GoodputEstimate> e = EstimateGoodput(cluster, 1'000'000'000, OnGpus(12));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("hand.json: has no \"reliability\" object"),
            std::string::npos)
      << e.status().message();
  EXPECT_FALSE(CheckGoodputInputs(cluster).ok());
}

TEST(Goodput, ShippedDgxH100HasTheLlama3FleetsFailureRate) {
  // The shipped rates are Llama 3 405B's 419 interruptions in 54 days on 16,384 GPUs, divided back
  // out by component: the whole fleet must fail 419 / 54 = 7.759 times a day, MTBF 3.093 h.
  const Inputs in = Load("models/llama3-405b.json", 2048);
  ASSERT_TRUE(in.cluster.reliability.has_value());
  const JobFailures f = FailuresOfJob(*in.cluster.reliability, 16384, 8, 8);
  EXPECT_EQ(f.nodes, 2048);
  EXPECT_NEAR(f.failures_per_day, 419.0 / 54, 419.0 / 54 * 1e-5);
  EXPECT_NEAR(f.MtbfSeconds() / 3600, 54.0 * 24 / 419, 1e-4);
}

}  // namespace
}  // namespace loom
