#include "probe/probe_runner.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "probe/fake_benches.h"

namespace loom {
namespace {

using testing::FakeCollectiveBench;
using testing::FakeKernelBench;
using testing::FakeLauncher;

const std::vector<std::string> kTwoNodeHosts = {"a", "a", "b", "b"};

std::vector<ProbePoint> SmallSweep() {
  return {
      GemmShape{4096, 4096, 4096, 1, Dtype::kBf16},
      GemmShape{4096, 4096, 4096, 1, Dtype::kFp8},  // unsupported on the fake GPU
      GemmShape{8192, 1024, 4096, 1, Dtype::kBf16},
      AttentionShape{1, 32, 8, 4096, 4096, 128, 128, true, false, Dtype::kBf16},
      MemoryPoint{MemoryKernel::kCopy, 64 << 20},
      MemoryPoint{MemoryKernel::kRmsNorm, 64 << 20},
      HostPoint{HostMeasure::kLaunch, 0},
      HostPoint{HostMeasure::kHostToDevice, 64 << 20},
      CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 1024},
      CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 2048},
      CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 4096},
      CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kIntraNode, 1024},
      CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kIntraNode, 2048},
  };
}

ProbeRunOptions Options(const std::string& name) {
  ProbeRunOptions o;
  o.output_path = ::testing::TempDir() + name;
  std::remove(o.output_path.c_str());
  o.settings.repeats = 5;
  o.date = "2026-11-22";
  return o;
}

size_t Entries(const Profile& p) {
  return p.samples.size() + p.host_samples.size() + p.collectives.size() + p.failures.size();
}

TEST(RunProbe, RecordsEveryPointSampleOrFailure) {
  FakeKernelBench kernels;
  FakeCollectiveBench collectives;
  FakeLauncher launcher(kTwoNodeHosts);
  const ProbeRunOptions o = Options("probe_records.json");
  Result<ProbeSummary> s =
      RunProbe(SmallSweep(), kernels.Facts(), launcher, &kernels, &collectives, o, {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->measured, 12);
  EXPECT_EQ(s->failed, 1);
  Result<Profile> p = ReadProfile(o.output_path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->samples.size(), 5u);
  EXPECT_EQ(p->host_samples.size(), 2u);
  ASSERT_EQ(p->collectives.size(), 5u);
  ASSERT_EQ(p->failures.size(), 1u);
  EXPECT_EQ(p->failures[0].point, "gemm 4096x4096x4096 fp8 [cublasLt]");
  EXPECT_NE(p->failures[0].error.find("fp8 GEMMs need compute capability 8.9"), std::string::npos);
  EXPECT_EQ(p->hosts, kTwoNodeHosts);
  EXPECT_EQ(p->device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p->samples[3].label, "copy");
  // Fake spread: +-10 % around the time, so the median is the time and p10 < median < p90.
  EXPECT_LT(*p->samples[0].p10_us, p->samples[0].median_us);
  EXPECT_GT(*p->samples[0].p90_us, p->samples[0].median_us);
  const CollectiveSample& intra = p->collectives[3];
  EXPECT_EQ(intra.group, ProbeGroup::kIntraNode);
  EXPECT_EQ(intra.ranks, 2);
  EXPECT_EQ(intra.nodes, 1);
  EXPECT_EQ(p->collectives[0].ranks, 4);
  EXPECT_EQ(p->collectives[0].count, 256);
  EXPECT_EQ(launcher.barriers, 1);
}

TEST(RunProbe, FileIsAValidProfileAfterEveryPoint) {
  FakeKernelBench kernels;
  FakeLauncher launcher({"a"});
  const ProbeRunOptions o = Options("probe_valid_each.json");
  std::vector<ProbePoint> points = SmallSweep();
  points.resize(8);  // kernels and host points only
  int checked = 0;
  kernels.before_each = [&](int calls) {
    Result<Profile> p = ReadProfile(o.output_path);
    ASSERT_TRUE(p.ok()) << "before measurement " << calls << ": " << p.status().message();
    EXPECT_EQ(Entries(*p), static_cast<size_t>(calls)) << "before measurement " << calls;
    ++checked;
  };
  ASSERT_TRUE(RunProbe(points, kernels.Facts(), launcher, &kernels, nullptr, o, {}).ok());
  EXPECT_EQ(checked, 7);  // every measurement but the failing fp8 GEMM, which fails before the hook
}

TEST(RunProbe, KilledProbeResumesWhereItStopped) {
  const ProbeRunOptions first = Options("probe_resume.json");
  FakeLauncher launcher(kTwoNodeHosts);
  {
    FakeKernelBench kernels;
    FakeCollectiveBench collectives;
    kernels.before_each = [](int calls) {
      if (calls == 4) throw std::runtime_error("killed");
    };
    EXPECT_THROW(
        RunProbe(SmallSweep(), kernels.Facts(), launcher, &kernels, &collectives, first, {}),
        std::runtime_error);
  }
  Result<Profile> partial = ReadProfile(first.output_path);
  ASSERT_TRUE(partial.ok()) << partial.status().message();
  EXPECT_EQ(Entries(*partial), 4u);

  ProbeRunOptions again = first;
  again.resume = true;
  again.date = "2026-11-23";
  FakeKernelBench kernels;
  FakeCollectiveBench collectives;
  Result<ProbeSummary> s =
      RunProbe(SmallSweep(), kernels.Facts(), launcher, &kernels, &collectives, again, {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->resumed, 4);
  EXPECT_EQ(kernels.calls, 4);      // the other 4 kernel and host points
  EXPECT_EQ(collectives.calls, 5);  // none were measured before the kill
  Result<Profile> full = ReadProfile(first.output_path);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(Entries(*full), SmallSweep().size());
  EXPECT_EQ(full->date, "2026-11-22");  // a resumed profile keeps the date it was started
}

TEST(RunProbe, ExistingProfileWithoutResumeIsAnError) {
  FakeKernelBench kernels;
  FakeLauncher launcher({"a"});
  const ProbeRunOptions o = Options("probe_exists.json");
  std::vector<ProbePoint> points = {HostPoint{HostMeasure::kLaunch, 0}};
  ASSERT_TRUE(RunProbe(points, kernels.Facts(), launcher, &kernels, nullptr, o, {}).ok());
  Result<ProbeSummary> s = RunProbe(points, kernels.Facts(), launcher, &kernels, nullptr, o, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("probe_exists.json: exists; pass --resume"),
            std::string::npos);
}

TEST(RunProbe, ResumeOnAnotherGpuIsRefused) {
  FakeKernelBench kernels;
  FakeLauncher launcher({"a"});
  ProbeRunOptions o = Options("probe_other_gpu.json");
  std::vector<ProbePoint> points = {HostPoint{HostMeasure::kLaunch, 0}};
  ASSERT_TRUE(RunProbe(points, kernels.Facts(), launcher, &kernels, nullptr, o, {}).ok());
  DeviceFacts other = kernels.Facts();
  other.device.name = "NVIDIA A100-SXM4-80GB";
  o.resume = true;
  Result<ProbeSummary> s = RunProbe(points, other, launcher, &kernels, nullptr, o, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(
                "device.name is \"NVIDIA H100 80GB HBM3\" but this GPU is \"NVIDIA A100"),
            std::string::npos)
      << s.status().message();
}

TEST(RunProbe, RetryFailedMeasuresRecordedFailuresAgain) {
  FakeLauncher launcher({"a"});
  ProbeRunOptions o = Options("probe_retry.json");
  std::vector<ProbePoint> points = {GemmShape{1024, 1024, 1024, 1, Dtype::kFp8}};
  FakeKernelBench old_gpu;
  ASSERT_TRUE(RunProbe(points, old_gpu.Facts(), launcher, &old_gpu, nullptr, o, {}).ok());
  o.resume = true;
  o.retry_failed = true;
  FakeKernelBench fixed;
  fixed.fp8_unsupported = false;
  Result<ProbeSummary> s = RunProbe(points, fixed.Facts(), launcher, &fixed, nullptr, o, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->measured, 1);
  Result<Profile> p = ReadProfile(o.output_path);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->samples.size(), 1u);
  EXPECT_TRUE(p->failures.empty());
}

TEST(RunProbe, HungCollectiveAbortsItsGroupAndTheSweepGoesOn) {
  FakeKernelBench kernels;
  FakeCollectiveBench collectives;
  collectives.hang_bytes =
      2048;  // the world all-reduce of 2 KiB hangs; so would intra_node's, not reached
  FakeLauncher launcher(kTwoNodeHosts);
  std::vector<ProbePoint> points = SmallSweep();
  points.pop_back();  // intra_node 2048
  const ProbeRunOptions o = Options("probe_hang.json");
  std::vector<std::string> failed_progress;
  Result<ProbeSummary> s = RunProbe(points, kernels.Facts(), launcher, &kernels, &collectives, o,
                                    [&](const ProbeProgress& p) {
                                      if (p.failed) failed_progress.push_back(p.point);
                                    });
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->hangs.size(), 1u);
  EXPECT_NE(s->hangs[0].find("all_reduce of 2048 B over group world: did not finish within 120 s"),
            std::string::npos)
      << s->hangs[0];
  EXPECT_EQ(s->abandoned, 1);       // world 4 KiB
  EXPECT_EQ(collectives.calls, 3);  // world 1 KiB, world 2 KiB (hung), intra_node 1 KiB
  EXPECT_EQ(failed_progress.back(), "all_reduce world 4 ranks 2048 B");
  Result<Profile> p = ReadProfile(o.output_path);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->collectives.size(), 2u);
  EXPECT_EQ(p->failures.back().point, "all_reduce world 4 ranks 2048 B");
}

}  // namespace
}  // namespace loom
