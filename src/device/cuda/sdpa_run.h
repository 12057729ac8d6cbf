#ifndef LOOM_DEVICE_CUDA_SDPA_RUN_H_
#define LOOM_DEVICE_CUDA_SDPA_RUN_H_

#include <array>
#include <limits>
#include <memory>
#include <type_traits>

#include <cudnn.h>

#include "core/status.h"
#include "device/cuda/sdpa_graph.h"
#include "op/op.h"

namespace loom::cuda {

// Running a planned SDPA graph (sdpa_graph.h) on given device addresses: the SDPA bench times it,
// the CUDA executor's op runner enqueues it.

// A cuDNN handle, destroyed with the object (cudnnDestroy's status is not checked there: a
// destructor cannot return it).
struct CudnnHandleDestroyer {
  void operator()(std::remove_pointer_t<cudnnHandle_t>* handle) const { cudnnDestroy(handle); }
};
using CudnnHandle = std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, CudnnHandleDestroyer>;

// The values the graphs take by value (kScale, kNegativeInfinity, kOne). cuDNN reads them from
// this host memory at each cudnnBackendExecute, so they live as long as the variant packs that
// point at them.
struct SdpaScalars {
  float scale = 1.0f;
  float negative_infinity = -std::numeric_limits<float>::infinity();
  float one = 1.0f;
};

// The scalars of |shape|: the softmax scale 1 / sqrt(d_qk) (Vaswani et al. 2017, eq. 1).
SdpaScalars SdpaScalarsOf(const AttentionShape& shape);

// Device addresses by uid; the entries of the scalars are not used (they come from SdpaScalars).
using SdpaAddresses = std::array<void*, kSdpaUidCount>;

// A finalized variant pack that runs |plan| on |addresses|, the scalars read from |scalars| and a
// workspace of at least plan.workspace_bytes at |workspace| (null when that is 0). Internal when a
// tensor the plan uses has no address.
// REQUIRES: |scalars| and the memory at the addresses outlive the pack.
Result<BackendDescriptor> MakeSdpaVariantPack(const ExecutionPlan& plan,
                                              const SdpaAddresses& addresses, void* workspace,
                                              SdpaScalars& scalars);

// Enqueues |plan| with |pack| on the stream of |handle| (cudnnSetStream).
// REQUIRES: |plan| was planned on |handle| and |pack| made for |plan|.
Status ExecuteSdpa(cudnnHandle_t handle, const ExecutionPlan& plan, const BackendDescriptor& pack);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_SDPA_RUN_H_
