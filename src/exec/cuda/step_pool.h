#ifndef LOOM_EXEC_CUDA_STEP_POOL_H_
#define LOOM_EXEC_CUDA_STEP_POOL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/status.h"
#include "program/task_graph.h"

namespace loom::cuda {

// The memory a step's tasks allocate and free (DeviceTask::alloc_at_start, free_at_end), from one
// stream-ordered CUDA pool for all of the plan's pools, so that its high-water mark is the step's
// peak of that memory.
//
// The plan frees bytes of a pool, not allocations, so each free is matched to the pool's live
// blocks here: a block of exactly that size (the oldest such); otherwise the oldest blocks in
// turn, the last of them, when it is larger than what is left to free, freed whole and its
// remainder allocated anew, on the same stream.
class StepPool {
 public:
  // |graph| names the pools in messages; it must outlive the pool.
  explicit StepPool(const TaskGraph& graph) : graph_(graph) {}

  // Makes the CUDA pool on |device|. Its release threshold is "never" (UINT64_MAX): memory freed in
  // one step serves the next without going back to the driver.
  Status Create(int device);

  // cudaMallocFromPoolAsync of |bytes| on |stream| for plan pool |pool|; nothing for |bytes| <= 0.
  // ResourceExhausted naming the pool when the GPU is out of memory.
  Status Allocate(PoolId pool, int64_t bytes, cudaStream_t stream);
  // cudaFreeAsync on |stream| of |bytes| of plan pool |pool|, matched to its live blocks as above.
  // Internal when the pool has fewer bytes live than that.
  Status Free(PoolId pool, int64_t bytes, cudaStream_t stream);
  // Frees every block still live, on the stream that allocated it. Internal, naming the pools that
  // had any and their bytes, when there were some: the plan's allocations and frees do not balance.
  Status FreeLeftovers();

  // Waits for the device (the frees enqueued after a step's last events included), then resets
  // the high-water mark (cudaMemPoolAttrUsedMemHigh) to zero.
  Status ResetPeak();
  // The bytes of the most memory in use at once since the last ResetPeak.
  Result<int64_t> Peak() const;

 private:
  struct Block {
    void* data = nullptr;
    int64_t bytes = 0;
    cudaStream_t stream = nullptr;  // the stream that allocated it
  };
  struct PoolDestroyer {
    // With blocks still allocated it returns at once; CUDA frees them with the pool.
    void operator()(std::remove_pointer_t<cudaMemPool_t>* pool) const { cudaMemPoolDestroy(pool); }
  };

  // Allocates like Allocate, as the oldest block of |pool| when |oldest|.
  Status AllocateBlock(PoolId pool, int64_t bytes, cudaStream_t stream, bool oldest);
  std::string Name(PoolId pool) const;

  const TaskGraph& graph_;
  std::unique_ptr<std::remove_pointer_t<cudaMemPool_t>, PoolDestroyer> pool_;
  std::map<PoolId, std::deque<Block>> live_;  // oldest first
};

}  // namespace loom::cuda

#endif  // LOOM_EXEC_CUDA_STEP_POOL_H_
