// The memory a GPU keeps outside the step's tensors: the CUDA context, cuBLAS workspaces, NCCL's
// buffers per communicator and the fragmentation headroom (issue 45, section 2).
#include "sim/memory_reserve.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/simulator.h"
#include "sim_test_support.h"
#include "spec/strategy.h"

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

const ReservePart& Part(const MemoryReserve& r, const std::string& name) {
  for (const ReservePart& p : r.parts) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no part " << name;
  return r.parts.front();
}

Strategy Grid(int64_t tp, int64_t dp, int64_t ep = 1) {
  Strategy s;
  s.tp = tp;
  s.dp = dp;
  s.ep = ep;
  s.micro_batch = 1;
  s.global_batch = dp * 4;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return s;
}

MemoryReserve ReserveFor(const ClusterSpec& cluster, const Strategy& s,
                         const FrameworkProfile* framework = nullptr,
                         std::optional<double> headroom = std::nullopt) {
  return ReserveOf(cluster.gpu, cluster, s, PlaceStrategy(s, cluster), framework, headroom);
}

// LL 512 KiB + LL128 4,915,200 B + Simple 4 MiB = 9,633,792 B, in 2 MiB cuMem granules: 10 MiB,
// the buffer size NCCL's ALLOC log prints on H100.
TEST(MemoryReserve, ARingChannelHoldsTenMebibytes) { EXPECT_EQ(NcclRingChannelBytes(), 10 * kMiB); }

// On a DGX H100 (24 ring channels in a node, 16 across nodes, 16 NVLS channels): tp 8 in the node
// has ring and NVLS buffers (8 heads of 16 x 2 x 1 MiB), dp across 2 nodes only rings.
TEST(MemoryReserve, NcclBuffersFollowEachCommunicatorsChannelsAndPlacement) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 2);
  const MemoryReserve r = ReserveFor(in.cluster, Grid(8, 2));
  const ReservePart& nccl = Part(r, "NCCL buffers");
  EXPECT_EQ(nccl.bytes, 24 * 10 * kMiB + 16 * 2 * kMiB * 8 + 16 * 10 * kMiB) << nccl.basis;
  EXPECT_NE(nccl.basis.find("tp 24 ch"), std::string::npos) << nccl.basis;
  EXPECT_NE(nccl.basis.find("dp 16 ch"), std::string::npos) << nccl.basis;
  // One GPU: no communicator, no buffers.
  EXPECT_EQ(Part(ReserveFor(in.cluster, Grid(1, 1)), "NCCL buffers").bytes, 0);
}

// The A100 board has no NVLink SHARP (no NVLS) and a compute capability under 9 (4 MiB cuBLAS
// workspace); an MoE step adds the grouped GEMM's four streams' workspaces.
TEST(MemoryReserve, TheGpuAndTheModelSetTheWorkspacesAndNvls) {
  const Inputs h100 = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  const Inputs a100 = Load("models/llama3-8b.json", "hardware/clusters/dgx-a100.json", 1);
  EXPECT_EQ(Part(ReserveFor(h100.cluster, Grid(8, 1)), "cuBLAS workspaces").bytes,
            32 * kMiB + 1024);
  EXPECT_EQ(Part(ReserveFor(a100.cluster, Grid(8, 1)), "cuBLAS workspaces").bytes, 4 * kMiB);
  EXPECT_EQ(Part(ReserveFor(a100.cluster, Grid(8, 1)), "NCCL buffers").bytes, 24 * 10 * kMiB);
  EXPECT_EQ(Part(ReserveFor(h100.cluster, Grid(1, 8, 8)), "cuBLAS workspaces").bytes,
            5 * (32 * kMiB + 1024));
}

// A cluster file without the channel counts: nothing is counted for NCCL, and the basis names the
// missing key rather than staying silent.
TEST(MemoryReserve, AClusterWithoutChannelsSaysWhichKeyItLacks) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  in.cluster.intra_node.nccl_channels.reset();
  const MemoryReserve r = ReserveFor(in.cluster, Grid(8, 1));
  const ReservePart& nccl = Part(r, "NCCL buffers");
  EXPECT_EQ(nccl.bytes, 0);
  EXPECT_NE(nccl.basis.find("intra_node.nccl_channels"), std::string::npos) << nccl.basis;
}

// --memory-headroom over the framework file's share over loom's default; the headroom is that
// share of the GPU's memory, and the limit the GPU less the parts and the headroom.
TEST(MemoryReserve, TheHeadroomComesFromTheFlagThenTheFrameworkThenTheDefault) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  const Strategy s = Grid(8, 1);
  FrameworkProfile framework;
  framework.file = "f.json";
  const MemoryReserve fallback = ReserveFor(in.cluster, s, &framework);
  EXPECT_DOUBLE_EQ(fallback.headroom, kDefaultAllocatorHeadroom);
  framework.allocator_headroom = 0.05;
  const MemoryReserve own = ReserveFor(in.cluster, s, &framework);
  EXPECT_DOUBLE_EQ(own.headroom, 0.05);
  EXPECT_NE(own.headroom_basis.find("f.json memory.allocator_headroom"), std::string::npos);
  const MemoryReserve flag = ReserveFor(in.cluster, s, &framework, 0.0);
  EXPECT_EQ(flag.headroom_bytes, 0);
  EXPECT_EQ(flag.headroom_basis, "--memory-headroom");
  const int64_t gpu = in.cluster.gpu.memory_bytes;
  EXPECT_EQ(own.headroom_bytes, std::llround(0.05 * static_cast<double>(gpu)));
  EXPECT_EQ(own.LimitBytes(), gpu - own.parts_bytes - own.headroom_bytes);
  EXPECT_EQ(own.parts_bytes, flag.parts_bytes);
}

// A peak over the limit but within the headroom fits only inside it; with the headroom lowered it
// fits, and one over the GPU less the parts fits in neither.
TEST(MemoryReserve, APeakInsideTheHeadroomIsMarkedAndALowerHeadroomAdmitsIt) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s = Grid(1, 8);
  s.global_batch = 64;
  s.seq_len = 8192;
  s.zero_stage = 2;
  s.recompute = Recompute::kSelective;
  Result<SimulationResult> tight = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  EXPECT_FALSE(tight->fits_in_memory);
  EXPECT_TRUE(tight->inside_headroom);
  EXPECT_GT(tight->peak_memory_bytes, tight->memory_limit_bytes);
  SimulationOptions lower;
  lower.memory_headroom = 0.1;
  Result<SimulationResult> roomy = SimulateTrainingStep(in.model, in.cluster, s, lower);
  ASSERT_TRUE(roomy.ok());
  EXPECT_TRUE(roomy->fits_in_memory);
  EXPECT_FALSE(roomy->inside_headroom);
  EXPECT_EQ(roomy->peak_memory_bytes, tight->peak_memory_bytes);
  s.zero_stage = 0;
  Result<SimulationResult> over = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(over.ok());
  EXPECT_FALSE(over->fits_in_memory);
  EXPECT_FALSE(over->inside_headroom);
}

}  // namespace
}  // namespace loom
