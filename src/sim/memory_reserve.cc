#include "sim/memory_reserve.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The CUDA context of a PyTorch process: "around 400MB if CUDA >= 11.7 is used and lazy module
// loading enabled (default in PyTorch)" (ptrblck, pytorch/pytorch issue 109888, 2023-09); before
// lazy loading every kernel image was loaded with its library, over 1000 MB (pytorch/pytorch issue
// 107667).
constexpr int64_t kCudaContextBytes = 400'000'000;

// Transformer Engine's cuBLAS workspace (NVIDIA/TransformerEngine d0067d0d,
// transformer_engine/pytorch/cpp_extensions/gemm.py, get_cublas_workspace_size_bytes): 32 MiB and
// 1 KiB from compute capability 9 on, 4 MiB before, the sizes cuBLAS recommends for
// cublasSetWorkspace. One for its GEMMs, and one per compute stream of its grouped GEMM
// (transformer_engine/common/util/multi_stream.cpp: 4 streams), which MoE layers run.
int64_t CublasWorkspaceBytes(const GpuSpec& gpu) {
  return gpu.compute_capability.value_or(0) >= 9.0 ? 32 * kMiB + 1024 : 4 * kMiB;
}
constexpr int64_t kGroupedGemmStreams = 4;

// NVLS (NVIDIA/nccl 5067397c, src/transport/nvls.cc, ncclNvlsBufferSetup): nvls channels x 2 x
// (NCCL_NVLS_CHUNKSIZE 128 KiB x NCCL_STEPS 8) per head, one head per rank of the communicator in
// the NVLink domain, every GPU backing the whole of it.
constexpr int64_t kNvlsStepBytes = 128 * 1024 * 8;

int64_t RoundUp(int64_t bytes, int64_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

std::string MiB(int64_t bytes) {
  std::ostringstream s;
  s << std::llround(static_cast<double>(bytes) / static_cast<double>(kMiB)) << " MiB";
  return s.str();
}

struct Communicator {
  const char* name;
  GroupPlacement group;
  bool collective = true;  // all-reduce, reduce-scatter, all-gather (NVLS applies)
};

ReservePart NcclPart(const ClusterSpec& cluster, const Strategy& strategy,
                     const Placements& placements) {
  std::vector<Communicator> comms = {{"tp", placements.tp}, {"cp", placements.cp}};
  comms.push_back({"dp", placements.dp});
  if (strategy.ep > 1) {
    comms.push_back({"ep", placements.ep, false});
    comms.push_back({"etp", placements.etp});
    comms.push_back({"expert-dp", placements.expert_dp});
  }
  ReservePart part{"NCCL buffers", 0, ""};
  std::ostringstream basis;
  std::vector<std::string> missing;
  bool any = false;
  for (const Communicator& c : comms) {
    if (c.group.ranks < 2) continue;
    const bool spans = c.group.Nodes() > 1;
    const std::optional<int64_t> channels =
        spans ? cluster.inter_node.nccl_channels : cluster.intra_node.nccl_channels;
    if (!channels) {
      missing.push_back(std::string(c.name) + (spans ? " (inter_node" : " (intra_node") +
                        ".nccl_channels)");
      continue;
    }
    int64_t bytes = *channels * NcclRingChannelBytes();
    std::ostringstream one;
    one << c.name << " " << *channels << " ch x " << MiB(NcclRingChannelBytes());
    const std::optional<int64_t>& nvls = cluster.intra_node.nvls_channels;
    if (c.collective && cluster.intra_node.nvlink_sharp && nvls && c.group.ranks_per_node >= 2) {
      const int64_t nvls_bytes = *nvls * 2 * kNvlsStepBytes * c.group.ranks_per_node;
      bytes += nvls_bytes;
      one << " + NVLS " << *nvls << " ch x 2 x 1 MiB x " << c.group.ranks_per_node;
    }
    part.bytes += bytes;
    basis << (any ? "; " : "") << one.str();
    any = true;
  }
  if (!any && missing.empty()) {
    part.basis = "no communicator of two ranks or more";
    return part;
  }
  std::string text = basis.str();
  if (any) {
    text +=
        " (NVIDIA/nccl 5067397c init.cc and nvls.cc: one ring connection per channel; "
        "point-to-point buffers of pipeline sends and all-to-all not counted)";
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    text += std::string(any ? "; " : "") + "not counted, the cluster file (" + ClusterRef(cluster) +
            ") lacks the channels of " + list;
  }
  part.basis = text;
  return part;
}

std::vector<ReservePart> FixedParts(const GpuSpec& gpu, const Strategy& strategy) {
  std::vector<ReservePart> parts;
  parts.push_back({"CUDA context", kCudaContextBytes,
                   "PyTorch with CUDA's lazy module loading, about 400 MB (pytorch/pytorch issue "
                   "109888)"});
  const int64_t workspaces = 1 + (strategy.ep > 1 ? kGroupedGemmStreams : 0);
  std::ostringstream basis;
  basis << workspaces << " x " << MiB(CublasWorkspaceBytes(gpu))
        << (workspaces > 1 ? " (Transformer Engine's GEMM and its 4 grouped-GEMM streams"
                           : " (Transformer Engine's GEMM workspace")
        << ", "
        << (gpu.compute_capability.value_or(0) >= 9.0 ? "compute capability 9+"
                                                      : "before compute capability 9")
        << ", transformer_engine/pytorch/cpp_extensions/gemm.py)";
  parts.push_back({"cuBLAS workspaces", workspaces * CublasWorkspaceBytes(gpu), basis.str()});
  return parts;
}

void SetHeadroom(const GpuSpec& gpu, const FrameworkProfile* framework,
                 std::optional<double> headroom, MemoryReserve& r) {
  if (headroom) {
    r.headroom = *headroom;
    r.headroom_basis = "--memory-headroom";
  } else if (framework != nullptr && framework->allocator_headroom) {
    r.headroom = *framework->allocator_headroom;
    r.headroom_basis = framework->file + " memory.allocator_headroom";
  } else {
    r.headroom = kDefaultAllocatorHeadroom;
    r.headroom_basis =
        "loom's default: GMLake, ASPLOS 2024, measured PyTorch's caching allocator losing 15 % of "
        "the memory to fragmentation on average, eight LLMs on A100 80GB";
  }
  r.headroom_bytes =
      static_cast<int64_t>(std::llround(r.headroom * static_cast<double>(gpu.memory_bytes)));
}

}  // namespace

Status CheckRoomBesideReserve(const GpuSpec& gpu, const MemoryReserve& reserve) {
  if (reserve.LimitBytes() > 0) return Status::Ok();
  const auto gib = [](int64_t bytes) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(2)
      << static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30) << " GiB";
    return s.str();
  };
  return Status::InvalidArgument(
      (gpu.file.empty() ? std::string("the GPU") : gpu.file) + ": memory_bytes " +
      std::to_string(gpu.memory_bytes) + " (" + gib(gpu.memory_bytes) +
      ") leaves nothing for the step beside what every GPU keeps outside it: " +
      gib(reserve.parts_bytes) + " for the CUDA context, cuBLAS workspaces and NCCL buffers, and " +
      gib(reserve.headroom_bytes) + " of fragmentation headroom (" + HeadroomText(reserve) +
      "); give the GPU's memory in bytes (81559 MiB for an H100 80GB is 85520809984), or a "
      "lower --memory-headroom");
}

std::string HeadroomText(const MemoryReserve& reserve) {
  std::ostringstream s;
  s << std::setprecision(3) << reserve.headroom * 100 << " %";
  return s.str();
}

int64_t NcclRingChannelBytes() {
  const int64_t ll = 512 * 1024;
  const int64_t ll128 = 120 * 640 * 8 * 8;  // elements per thread x threads x NCCL_STEPS x 8 B
  const int64_t simple = 4 * kMiB;
  return RoundUp(ll + ll128 + simple, 2 * kMiB);
}

MemoryReserve ReserveOf(const GpuSpec& gpu, const ClusterSpec& cluster, const Strategy& strategy,
                        const Placements& placements, const FrameworkProfile* framework,
                        std::optional<double> headroom) {
  MemoryReserve r;
  r.gpu_bytes = gpu.memory_bytes;
  r.parts = FixedParts(gpu, strategy);
  r.parts.push_back(NcclPart(cluster, strategy, placements));
  for (const ReservePart& p : r.parts) r.parts_bytes += p.bytes;
  SetHeadroom(gpu, framework, headroom, r);
  return r;
}

}  // namespace loom
