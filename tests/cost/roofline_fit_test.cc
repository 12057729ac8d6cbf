#include "cost/roofline_fit.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

// Times t = overhead + a * w of two classes sharing |overhead_s|.
std::vector<WorkGroup> TwoClasses(double overhead_s, double a0, double a1) {
  std::vector<WorkGroup> groups(2);
  for (double w : {1e-5, 4e-5, 2e-4, 1e-3}) {
    groups[0].work_s.push_back(w);
    groups[0].time_s.push_back(overhead_s + a0 * w);
  }
  for (double w : {3e-5, 3e-4}) {
    groups[1].work_s.push_back(w);
    groups[1].time_s.push_back(overhead_s + a1 * w);
  }
  return groups;
}

TEST(FitSharedOverhead, RecoversOneOverheadAndAnEfficiencyPerClass) {
  SharedOverheadFit fit = FitSharedOverhead(TwoClasses(6e-6, 1.25, 2.0));
  ASSERT_TRUE(fit.determined);
  EXPECT_NEAR(fit.overhead_s, 6e-6, 1e-15);
  EXPECT_NEAR(fit.inverse_efficiency[0], 1.25, 1e-9);
  EXPECT_NEAR(fit.inverse_efficiency[1], 2.0, 1e-9);
  EXPECT_LT(fit.sse, 1e-20);
}

TEST(FitSharedOverhead, AClassOfConstantWorkBorrowsTheOthersOverhead) {
  std::vector<WorkGroup> groups = TwoClasses(6e-6, 1.25, 2.0);
  groups[1] = {{5e-5, 5e-5, 5e-5}, {6e-6 + 2.0 * 5e-5, 6e-6 + 2.0 * 5e-5, 6e-6 + 2.0 * 5e-5}};
  SharedOverheadFit fit = FitSharedOverhead(groups);
  ASSERT_TRUE(fit.determined);
  EXPECT_NEAR(fit.inverse_efficiency[1], 2.0, 1e-9);
  EXPECT_FALSE(FitSharedOverhead({groups[1]}).determined);
}

TEST(FitSharedOverhead, NegativeOverheadIsClampedToZero) {
  // Times that grow faster than the work: the best line crosses below zero.
  WorkGroup g{{1e-5, 2e-5, 4e-5}, {0.5e-5, 1.6e-5, 3.9e-5}};
  SharedOverheadFit fit = FitSharedOverhead({g});
  EXPECT_EQ(fit.overhead_s, 0.0);
  // With no overhead, a = sum(w/t) / sum((w/t)^2).
  double ratio = 0, ratio_squared = 0;
  for (size_t i = 0; i < 3; ++i) {
    ratio += g.work_s[i] / g.time_s[i];
    ratio_squared += (g.work_s[i] / g.time_s[i]) * (g.work_s[i] / g.time_s[i]);
  }
  EXPECT_NEAR(fit.inverse_efficiency[0], ratio / ratio_squared, 1e-12);
}

TEST(CheckInverseEfficiency, NamesTheDatasheetKeyTheSamplesBeat) {
  GpuSpec gpu;
  gpu.file = "gpu.json";
  gpu.bf16_tflops = 989;
  gpu.hbm_bandwidth_GBps = 3350;
  Status s = CheckInverseEfficiency(0.8, "p.json: the gemm bf16 samples", OpKind::kGemm,
                                    Dtype::kBf16, gpu);
  EXPECT_NE(s.message().find(
                "p.json: the gemm bf16 samples run at 1.25x peak_tflops.bf16 of gpu.json (989)"),
            std::string::npos)
      << s.message();
  s = CheckInverseEfficiency(0.5, "the memory samples", OpKind::kMemoryBound, std::nullopt, gpu);
  EXPECT_NE(s.message().find("move bytes at 2x hbm_bandwidth_GBps of gpu.json (3350)"),
            std::string::npos)
      << s.message();
  s = CheckInverseEfficiency(-1, "the attention bf16 samples", OpKind::kAttention, Dtype::kBf16,
                             gpu);
  EXPECT_NE(s.message().find("do not take longer as their work grows"), std::string::npos)
      << s.message();
  EXPECT_TRUE(CheckInverseEfficiency(1.0, "x", OpKind::kGemm, Dtype::kBf16, gpu).ok());
}

}  // namespace
}  // namespace loom
