#include "exec/cuda/step_pool.h"

#include <algorithm>
#include <utility>

#include "device/cuda/cuda_check.h"

namespace loom::cuda {

Status StepPool::Create(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  LOOM_CUDA(cudaMemPoolCreate(&pool, &props));
  pool_.reset(pool);
  uint64_t keep_all = UINT64_MAX;  // cuuint64_t, as the attribute requires
  LOOM_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  return Status::Ok();
}

Status StepPool::Allocate(PoolId pool, int64_t bytes, cudaStream_t stream) {
  return AllocateBlock(pool, bytes, stream, /*oldest=*/false);
}

Status StepPool::AllocateBlock(PoolId pool, int64_t bytes, cudaStream_t stream, bool oldest) {
  if (bytes <= 0) return Status::Ok();
  void* data = nullptr;
  const Status made =
      CheckCuda(cudaMallocFromPoolAsync(&data, static_cast<size_t>(bytes), pool_.get(), stream),
                "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  if (!made.ok())
    return made.WithContext("allocating " + std::to_string(bytes) + " B of pool " + Name(pool));
  std::deque<Block>& live = live_[pool];
  if (oldest) {
    live.push_front({data, bytes, stream});
  } else {
    live.push_back({data, bytes, stream});
  }
  return Status::Ok();
}

Status StepPool::Free(PoolId pool, int64_t bytes, cudaStream_t stream) {
  if (bytes <= 0) return Status::Ok();
  std::deque<Block>& live = live_[pool];
  auto exact =
      std::find_if(live.begin(), live.end(), [&](const Block& b) { return b.bytes == bytes; });
  if (exact != live.end()) {
    LOOM_CUDA(cudaFreeAsync(exact->data, stream));
    live.erase(exact);
    return Status::Ok();
  }
  for (int64_t left = bytes; left > 0;) {
    if (live.empty()) {
      return Status::Internal(
          "pool " + Name(pool) + ": a task frees " + std::to_string(left) +
          " B more than is allocated: the plan's allocations and frees do not balance");
    }
    const Block block = live.front();
    live.pop_front();
    LOOM_CUDA(cudaFreeAsync(block.data, stream));
    if (block.bytes > left)
      LOOM_RETURN_IF_ERROR(AllocateBlock(pool, block.bytes - left, stream, /*oldest=*/true));
    left -= block.bytes;
  }
  return Status::Ok();
}

Status StepPool::FreeLeftovers() {
  std::string unbalanced;
  for (auto& [pool, live] : live_) {
    if (live.empty()) continue;
    int64_t bytes = 0;
    for (const Block& block : live) {
      LOOM_CUDA(cudaFreeAsync(block.data, block.stream));
      bytes += block.bytes;
    }
    live.clear();
    unbalanced +=
        (unbalanced.empty() ? "" : ", ") + Name(pool) + " (" + std::to_string(bytes) + " B)";
  }
  if (unbalanced.empty()) return Status::Ok();
  return Status::Internal("memory still allocated at the end of the step in pools " + unbalanced +
                          ": the plan's allocations and frees do not balance");
}

Status StepPool::ResetPeak() {
  LOOM_CUDA(cudaDeviceSynchronize());
  uint64_t zero = 0;  // the high-water mark can only be reset to zero
  LOOM_CUDA(cudaMemPoolSetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &zero));
  return Status::Ok();
}

Result<int64_t> StepPool::Peak() const {
  uint64_t high = 0;
  LOOM_CUDA(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &high));
  return static_cast<int64_t>(high);
}

std::string StepPool::Name(PoolId pool) const {
  if (pool < 0 || pool >= graph_.num_pools())
    return std::to_string(pool) + " (no such pool in the plan)";
  return "'" + std::string(graph_.Name(graph_.pool_name(pool))) + "'";
}

}  // namespace loom::cuda
