#include "probe/cuda/sdpa_bench.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cudnn.h>

#include "core/dtype.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/device_buffer.h"
#include "device/cuda/device_kernels.h"
#include "device/cuda/sdpa_graph.h"
#include "device/cuda/sdpa_run.h"
#include "device/cuda/sdpa_support.h"
#include "probe/cuda/event_timer.h"

namespace loom::cuda {
namespace {

using Buffers =
    std::array<DeviceBuffer, kSdpaUidCount>;  // by uid; the tensors of the other pass stay empty

// What one timed pass reads and writes.
struct PassTensors {
  std::span<const SdpaUid> rotated;  // inputs, one copy per rotation set
  std::span<const SdpaUid> shared;   // outputs and scratch, one copy for every run
  std::span<const SdpaUid>
      random;  // the rotated inputs filled with random numbers; the rest come from the forward
};
constexpr SdpaUid kForwardRotated[] = {kQ, kK, kV};
constexpr SdpaUid kForwardShared[] = {kO, kStats};
constexpr SdpaUid kBackwardRotated[] = {kQ, kK, kV, kO, kStats, kDO};
constexpr SdpaUid kBackwardShared[] = {kDQ, kDK, kDV, kSoftmaxSum, kDQAccum};
constexpr SdpaUid kBackwardRandom[] = {kQ, kK, kV, kDO};
constexpr PassTensors kForwardPass = {kForwardRotated, kForwardShared, kForwardRotated};
constexpr PassTensors kBackwardPass = {kBackwardRotated, kBackwardShared, kBackwardRandom};

// The device memory of one timed pass.
struct PassMemory {
  std::vector<Buffers> sets;
  Buffers shared;
  DeviceBuffer workspace;
};

// The shared tensors and the workspace, then |count| rotation sets, fewer (at least one) when the
// GPU runs out of memory: a shape that fits once is still timed, with less rotation.
Result<PassMemory> AllocatePass(const PassTensors& pass, const SdpaTensorBytes& bytes,
                                int64_t workspace_bytes, int64_t count) {
  PassMemory memory;
  for (SdpaUid uid : pass.shared) {
    LOOM_ASSIGN_OR_RETURN(DeviceBuffer buffer, AllocateDevice(bytes[uid]));
    memory.shared[uid] = std::move(buffer);
  }
  LOOM_ASSIGN_OR_RETURN(memory.workspace, AllocateDevice(workspace_bytes));
  for (int64_t set = 0; set < count; ++set) {
    Buffers buffers;
    for (SdpaUid uid : pass.rotated) {
      Result<DeviceBuffer> buffer = AllocateDevice(bytes[uid]);
      if (!buffer.ok() && set > 0 && buffer.status().code() == Status::Code::kResourceExhausted)
        return memory;
      if (!buffer.ok()) return buffer.status();
      buffers[uid] = std::move(buffer).value();
    }
    memory.sets.push_back(std::move(buffers));
  }
  return memory;
}

// The variant pack of |plan| for rotation set |set|: the set's own copy of a rotated input, else
// the shared tensor; the by-value scalars point at |scalars|.
Result<BackendDescriptor> MakeVariantPack(const ExecutionPlan& plan, const PassMemory& memory,
                                          size_t set, SdpaScalars& scalars) {
  SdpaAddresses addresses{};
  for (size_t uid = 0; uid < kSdpaUidCount; ++uid) {
    void* own = memory.sets[set][uid].get();
    addresses[uid] = own != nullptr ? own : memory.shared[uid].get();
  }
  return MakeSdpaVariantPack(plan, addresses, memory.workspace.get(), scalars);
}

Result<std::vector<BackendDescriptor>> MakeVariantPacks(const ExecutionPlan& plan,
                                                        const PassMemory& memory,
                                                        SdpaScalars& scalars) {
  std::vector<BackendDescriptor> packs;
  for (size_t set = 0; set < memory.sets.size(); ++set) {
    LOOM_ASSIGN_OR_RETURN(BackendDescriptor pack, MakeVariantPack(plan, memory, set, scalars));
    packs.push_back(std::move(pack));
  }
  return packs;
}

class CudnnSdpaBench final : public SdpaBench {
 public:
  CudnnSdpaBench(CudnnHandle handle, cudaStream_t stream)
      : handle_(std::move(handle)), stream_(stream) {}

  Result<std::vector<double>> Time(const AttentionShape& shape,
                                   const BenchSettings& settings) override;

 private:
  // The pass's memory with enough rotation sets to exceed the L2 (settings.rotate_inputs), its
  // random inputs filled.
  Result<PassMemory> Prepare(const AttentionShape& shape, const BenchSettings& settings,
                             const PassTensors& pass, int64_t workspace_bytes);
  Result<std::vector<double>> Run(const ExecutionPlan& plan,
                                  const std::vector<BackendDescriptor>& packs,
                                  const BenchSettings& settings);
  Result<std::vector<double>> TimeForward(const AttentionShape& shape,
                                          const BenchSettings& settings);
  Result<std::vector<double>> TimeBackward(const AttentionShape& shape,
                                           const BenchSettings& settings);

  CudnnHandle handle_;
  cudaStream_t stream_;
  SdpaScalars scalars_;
};

Result<std::vector<double>> CudnnSdpaBench::Time(const AttentionShape& shape,
                                                 const BenchSettings& settings) {
  LOOM_RETURN_IF_ERROR(CheckSdpaShape(shape));
  scalars_ = SdpaScalarsOf(shape);
  return shape.backward ? TimeBackward(shape, settings) : TimeForward(shape, settings);
}

Result<PassMemory> CudnnSdpaBench::Prepare(const AttentionShape& shape,
                                           const BenchSettings& settings, const PassTensors& pass,
                                           int64_t workspace_bytes) {
  const SdpaTensorBytes bytes = SdpaTensorBytesOf(shape);
  int64_t bytes_per_set = 0;
  for (SdpaUid uid : pass.rotated) bytes_per_set += bytes[uid];
  int device = 0, l2_bytes = 0;
  LOOM_CUDA(cudaGetDevice(&device));
  LOOM_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const int64_t count = RotationCount(bytes_per_set, l2_bytes, settings.rotate_inputs);
  LOOM_ASSIGN_OR_RETURN(PassMemory memory, AllocatePass(pass, bytes, workspace_bytes, count));
  for (size_t set = 0; set < memory.sets.size(); ++set) {
    for (SdpaUid uid : pass.random) {
      const uint64_t seed = set * kSdpaUidCount + static_cast<uint64_t>(uid);
      LOOM_CUDA(FillRandom(memory.sets[set][uid].get(), bytes[uid] / BytesPerElement(shape.dtype),
                           shape.dtype, seed, stream_));
    }
  }
  return memory;
}

// Times |plan|, run i on rotation set i % packs.size().
Result<std::vector<double>> CudnnSdpaBench::Run(const ExecutionPlan& plan,
                                                const std::vector<BackendDescriptor>& packs,
                                                const BenchSettings& settings) {
  const auto launch = [&](int64_t i) -> Status {
    return ExecuteSdpa(handle_.get(), plan, packs[static_cast<size_t>(i) % packs.size()]);
  };
  return TimeOnStream(stream_, launch, settings);
}

Result<std::vector<double>> CudnnSdpaBench::TimeForward(const AttentionShape& shape,
                                                        const BenchSettings& settings) {
  LOOM_ASSIGN_OR_RETURN(ExecutionPlan plan, PlanSdpaForward(handle_.get(), shape));
  LOOM_ASSIGN_OR_RETURN(PassMemory memory,
                        Prepare(shape, settings, kForwardPass, plan.workspace_bytes));
  LOOM_ASSIGN_OR_RETURN(std::vector<BackendDescriptor> packs,
                        MakeVariantPacks(plan, memory, scalars_));
  return Run(plan, packs, settings);
}

// Each rotation set's O and stats come from an untimed forward of its Q, K and V, so that the
// backward recomputes the probabilities the forward had (random stats would make them overflow).
Result<std::vector<double>> CudnnSdpaBench::TimeBackward(const AttentionShape& shape,
                                                         const BenchSettings& settings) {
  LOOM_ASSIGN_OR_RETURN(ExecutionPlan forward, PlanSdpaForward(handle_.get(), shape));
  LOOM_ASSIGN_OR_RETURN(ExecutionPlan backward, PlanSdpaBackward(handle_.get(), shape));
  const int64_t workspace_bytes = std::max(forward.workspace_bytes, backward.workspace_bytes);
  LOOM_ASSIGN_OR_RETURN(PassMemory memory,
                        Prepare(shape, settings, kBackwardPass, workspace_bytes));
  LOOM_ASSIGN_OR_RETURN(std::vector<BackendDescriptor> forward_packs,
                        MakeVariantPacks(forward, memory, scalars_));
  for (const BackendDescriptor& pack : forward_packs) {
    LOOM_RETURN_IF_ERROR(ExecuteSdpa(handle_.get(), forward, pack));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<BackendDescriptor> packs,
                        MakeVariantPacks(backward, memory, scalars_));
  return Run(backward, packs, settings);
}

}  // namespace

Result<std::unique_ptr<SdpaBench>> SdpaBench::Create(cudaStream_t stream) {
  cudnnHandle_t raw = nullptr;
  LOOM_CUDNN(cudnnCreate(&raw));
  CudnnHandle handle(raw);
  LOOM_CUDNN(cudnnSetStream(handle.get(), stream));
  std::unique_ptr<SdpaBench> bench = std::make_unique<CudnnSdpaBench>(std::move(handle), stream);
  return bench;
}

std::string CudnnVersionString() {
  return CudnnVersionName(static_cast<int64_t>(cudnnGetVersion()));
}

}  // namespace loom::cuda
