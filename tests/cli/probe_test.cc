#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/run_loom.h"

namespace loom {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Probe, DryRunListsTheSweepWithoutAGpu) {
  CommandResult r = Loom({"probe", "--dry-run", "--dtypes", "bf16,fp8"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Has(r.out, "gemm            212 points  gemm 512x512x512 bf16 [cublasLt]")) << r.out;
  EXPECT_TRUE(Has(r.out, "attention       192 points")) << r.out;
  EXPECT_TRUE(Has(r.out, "collectives: none on one rank; launch with mpirun -np N")) << r.out;
}

TEST(Probe, DryRunForAModelListsItsShapes) {
  CommandResult r = Loom({"probe", "--dry-run", "--for-model", Shipped("models/llama3-8b.json"),
                          "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--seq", "4096",
                          "--micro-batches", "1", "--measure", "gemm"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  // Llama-3-8B's QKV at tp 1: 4096 tokens x (4096 + 2 * 1024) x 4096.
  EXPECT_TRUE(Has(r.out, "gemm 4096x6144x4096 bf16 [cublasLt]")) << r.out;
  EXPECT_TRUE(Has(r.out, "attention         0 points")) << r.out;
}

// The dry run's estimated total, from its --json (whose schema run_loom.h checks).
double EstimatedSeconds(std::vector<std::string> args) {
  args.insert(args.begin(), {"probe", "--dry-run", "--json", "--cluster",
                             Shipped("hardware/clusters/dgx-h100.json")});
  CommandResult r = Loom(args);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j["estimate"].is_object()) {
    ADD_FAILURE() << r.out;
    return 0;
  }
  return j["estimate"]["total_s"].get<double>();
}

TEST(Probe, DryRunWithAClusterEstimatesTheDurationPerKindAndInAll) {
  CommandResult r =
      Loom({"probe", "--dry-run", "--cluster", Shipped("hardware/clusters/dgx-h100.json"),
            "--measure", "gemm,attention", "--dtypes", "bf16"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Has(r.out, "\ngemm         ~")) << r.out;
  EXPECT_TRUE(Has(r.out, "\nattention    ~")) << r.out;
  EXPECT_FALSE(Has(r.out, "\nmemory       ~")) << r.out;  // no points, no line
  EXPECT_TRUE(Has(r.out, "estimated duration: ~")) << r.out;
  EXPECT_TRUE(
      Has(r.out,
          "h100-sxm5-80gb.json's calibrated model and the set-up time per point measured on one "
          "H100, 2026-11-27)"))
      << r.out;
  CommandResult bare = Loom({"probe", "--dry-run", "--measure", "gemm"});
  ASSERT_EQ(bare.code, kExitOk) << bare.err;
  EXPECT_TRUE(Has(bare.out, "estimated duration: give --cluster FILE")) << bare.out;
  CommandResult json = Loom({"probe", "--dry-run", "--json", "--measure", "gemm"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_TRUE(nlohmann::json::parse(json.out)["estimate"].is_null()) << json.out;
}

TEST(Probe, DryRunEstimateGrowsWithRepeatsAndDtypes) {
  const double base = EstimatedSeconds({"--measure", "gemm,attention", "--dtypes", "bf16"});
  EXPECT_GT(base, 0);
  EXPECT_GT(
      EstimatedSeconds({"--measure", "gemm,attention", "--dtypes", "bf16", "--repeats", "100"}),
      1.5 * base);
  EXPECT_GT(EstimatedSeconds({"--measure", "gemm,attention", "--dtypes", "bf16,fp8"}), base);
  EXPECT_GT(EstimatedSeconds({"--measure", "gemm,attention", "--dtypes", "bf16", "--warmup", "20"}),
            base);
}

TEST(Probe, WithoutAGpuSaysSoAndExitsNonZero) {
  CommandResult r = Loom({"probe", "-o", ::testing::TempDir() + "probe_no_gpu.json"});
  EXPECT_EQ(r.code, kExitNoHardware) << r.out << r.err;
#ifdef LOOM_HAVE_CUDA
  EXPECT_TRUE(Has(r.err, "loom: error: no CUDA GPU is visible")) << r.err;
#else
  EXPECT_TRUE(Has(r.err, "loom: error: this loom was built without CUDA, so it cannot probe GPUs"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "-DLOOM_WITH_CUDA=ON")) << r.err;
#endif
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Probe, BadSweepOptionsNameTheFlagAndTheFix) {
  CommandResult kind = Loom({"probe", "--dry-run", "--measure", "gemm,nvlink"});
  EXPECT_EQ(kind.code, kExitBadInput);
  EXPECT_TRUE(Has(
      kind.err,
      "--measure nvlink: unknown; use one or more of gemm, attention, memory, host, collectives"))
      << kind.err;
  CommandResult bytes = Loom({"probe", "--dry-run", "-e", "8T"});
  EXPECT_EQ(bytes.code, kExitBadInput);
  EXPECT_TRUE(Has(bytes.err, "--max-bytes 8T: expected a size in bytes such as 8, 64K, 1M or 8G"))
      << bytes.err;
  CommandResult model = Loom(
      {"probe", "--dry-run", "--for-model", Shipped("models/llama3-8b.json"), "--seq", "4096"});
  EXPECT_EQ(model.code, kExitBadInput);
  EXPECT_TRUE(Has(model.err, "llama3-8b.json needs --cluster")) << model.err;
}

TEST(Probe, HelpTeachesMpiLaunchResumeAndFit) {
  CommandResult r = Loom({"probe", "--help"});
  ASSERT_EQ(r.code, kExitOk);
  EXPECT_TRUE(Has(r.out, "mpirun -np 16")) << r.out;
  EXPECT_TRUE(Has(r.out, "--resume")) << r.out;
  EXPECT_TRUE(Has(r.out, "loom fit h100.json --gpu")) << r.out;
}

}  // namespace
}  // namespace loom
