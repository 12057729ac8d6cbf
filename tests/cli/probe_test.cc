#include <string>

#include <gtest/gtest.h>

#include "cli/run_loom.h"

namespace loom {
namespace {

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Probe, DryRunListsTheSweepWithoutAGpu) {
  CommandResult r = Loom({"probe", "--dry-run", "--dtypes", "bf16,fp8"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Has(r.out, "gemm            212 points  gemm 512x512x512 bf16 [cublasLt]")) << r.out;
  EXPECT_TRUE(Has(r.out, "attention       192 points")) << r.out;
  EXPECT_TRUE(Has(r.out, "collectives: none on one rank; launch with mpirun -np N")) << r.out;
}

TEST(Probe, DryRunForAModelListsItsShapes) {
  CommandResult r = Loom({"probe", "--dry-run", "--for-model", Shipped("models/llama3-8b.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--seq", "4096", "--micro-batches", "1",
                          "--measure", "gemm"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  // Llama-3-8B's QKV at tp 1: 4096 tokens x (4096 + 2 * 1024) x 4096.
  EXPECT_TRUE(Has(r.out, "gemm 4096x6144x4096 bf16 [cublasLt]")) << r.out;
  EXPECT_TRUE(Has(r.out, "attention         0 points")) << r.out;
}

TEST(Probe, WithoutAGpuSaysSoAndExitsNonZero) {
  CommandResult r = Loom({"probe", "-o", ::testing::TempDir() + "probe_no_gpu.json"});
  EXPECT_EQ(r.code, kExitNoHardware) << r.out << r.err;
#ifdef LOOM_HAVE_CUDA
  EXPECT_TRUE(Has(r.err, "loom: error: no CUDA GPU is visible")) << r.err;
#else
  EXPECT_TRUE(Has(r.err, "loom: error: this loom was built without CUDA, so it cannot probe GPUs")) << r.err;
  EXPECT_TRUE(Has(r.err, "-DLOOM_WITH_CUDA=ON")) << r.err;
#endif
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Probe, BadSweepOptionsNameTheFlagAndTheFix) {
  CommandResult kind = Loom({"probe", "--dry-run", "--measure", "gemm,nvlink"});
  EXPECT_EQ(kind.code, kExitBadInput);
  EXPECT_TRUE(Has(kind.err, "--measure nvlink: unknown; use one or more of gemm, attention, memory, host, collectives"))
      << kind.err;
  CommandResult bytes = Loom({"probe", "--dry-run", "-e", "8T"});
  EXPECT_EQ(bytes.code, kExitBadInput);
  EXPECT_TRUE(Has(bytes.err, "--max-bytes 8T: expected a size in bytes such as 8, 64K, 1M or 8G")) << bytes.err;
  CommandResult model = Loom({"probe", "--dry-run", "--for-model", Shipped("models/llama3-8b.json"), "--seq", "4096"});
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
