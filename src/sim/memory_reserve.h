#ifndef LOOM_SIM_MEMORY_RESERVE_H_
#define LOOM_SIM_MEMORY_RESERVE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/pass_costs.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/strategy.h"

namespace loom {

// The memory of a GPU that its training process holds outside the tensors loom tracks, part by
// part, and the headroom kept free for the caching allocator's fragmentation: what a peak is held
// to is the GPU's memory less both (MemoryReserve::LimitBytes).
struct ReservePart {
  std::string name;   // "CUDA context", "cuBLAS workspaces", "NCCL buffers"
  int64_t bytes = 0;  // per GPU
  std::string basis;  // how it was sized, with its source
};

struct MemoryReserve {
  int64_t gpu_bytes = 0;  // the memory of the GPU it is of (GpuSpec::memory_bytes)
  std::vector<ReservePart> parts;
  int64_t parts_bytes = 0;  // their sum
  // The headroom: |headroom| of the GPU's memory, kept free for what the caching allocator holds
  // but cannot hand out (fragmentation), from --memory-headroom or the framework file's
  // "memory" object, else loom's default (kDefaultAllocatorHeadroom); and why.
  double headroom = 0;
  int64_t headroom_bytes = 0;
  std::string headroom_basis;

  // What a stage's peak may reach: the GPU's memory less the parts and the headroom.
  int64_t LimitBytes() const { return gpu_bytes - parts_bytes - headroom_bytes; }
  // The parts and the headroom together: what a peak never has.
  int64_t ReservedBytes() const { return parts_bytes + headroom_bytes; }
};

// The share of a GPU's memory PyTorch's caching allocator leaves unusable by fragmentation, when
// neither --memory-headroom nor the framework file says otherwise: GMLake (Guo et al., ASPLOS
// 2024) measured on eight LLMs trained on A100 80GB with PyTorch's caching allocator that stitching
// its free blocks saves 15 % of the memory on average (9.2 GB; up to 33 %, 25 GB); STAlloc (Huang
// et al., arXiv 2507.16274) reports up to 43 % with virtual pipelines and recomputation.
inline constexpr double kDefaultAllocatorHeadroom = 0.15;

// NCCL's per-connection buffers of one collective channel (NVIDIA/nccl 5067397c, src/init.cc):
// LL 512 KiB (DEFAULT_LL_BUFFSIZE), LL128 4,915,200 B (DEFAULT_LL128_BUFFSIZE) and Simple 4 MiB
// (DEFAULT_BUFFSIZE), allocated with cuMem in 2 MiB granules (the 10,485,760-byte buffers
// NCCL_DEBUG_SUBSYS=ALLOC prints on 8x H100, NVIDIA/nccl issue 1685).
int64_t NcclRingChannelBytes();

// The reserve of one GPU of |gpu| (a rank of |strategy| on |cluster|, whose groups sit as
// |placements| says) under |framework| (nullptr: none), with |headroom| the share of the GPU's
// memory kept free (nullopt: the framework's, else kDefaultAllocatorHeadroom).
// REQUIRES: headroom, when given, is in [0, 1).
MemoryReserve ReserveOf(const GpuSpec& gpu, const ClusterSpec& cluster, const Strategy& strategy,
                        const Placements& placements, const FrameworkProfile* framework,
                        std::optional<double> headroom);

// InvalidArgument, naming the GPU file and its memory_bytes, when the reserve leaves |gpu| no
// memory for the step (a limit of zero or less: a GPU file's memory in the wrong unit).
Status CheckRoomBesideReserve(const GpuSpec& gpu, const MemoryReserve& reserve);

// The headroom as a share in words: "15 %", "7.5 %".
std::string HeadroomText(const MemoryReserve& reserve);

}  // namespace loom

#endif  // LOOM_SIM_MEMORY_RESERVE_H_
