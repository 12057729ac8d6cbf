#ifndef LOOM_DEVICE_CUDA_SDPA_GRAPH_H_
#define LOOM_DEVICE_CUDA_SDPA_GRAPH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <cudnn.h>

#include "core/status.h"
#include "op/op.h"

namespace loom::cuda {

// The cuDNN backend graphs of fused scaled-dot-product attention, forward and backward, planned by
// cuDNN's heuristics; sdpa_graph.cc says which graph and why. Q, K, V, O and their gradients are
// BSHD tensors of the shape's dtype; the softmax statistics and the backward's scratch are fp32.

// Owns one cuDNN backend descriptor (cudnnBackendDescriptor_t), destroyed with the object.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  explicit BackendDescriptor(cudnnBackendDescriptor_t descriptor) : descriptor_(descriptor) {}
  BackendDescriptor(BackendDescriptor&& other) noexcept
      : descriptor_(std::exchange(other.descriptor_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    std::swap(descriptor_, other.descriptor_);
    return *this;
  }
  // A destructor cannot report cudnnBackendDestroyDescriptor's status; it fails only on a bad
  // handle.
  ~BackendDescriptor() {
    if (descriptor_ != nullptr) cudnnBackendDestroyDescriptor(descriptor_);
  }

  cudnnBackendDescriptor_t get() const { return descriptor_; }

 private:
  cudnnBackendDescriptor_t descriptor_ = nullptr;
};

// A new, unfinalized backend descriptor of |type|, or cuDNN's error.
Result<BackendDescriptor> MakeDescriptor(cudnnBackendDescriptorType_t type);

// Sets attribute |name| of |descriptor| to |count| values of |type| at |values|; a failure names
// the attribute by its number in cudnn_graph_v9.h.
Status SetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void* values);

// The graphs' tensors in memory, by the unique id the variant pack maps to an address.
enum SdpaUid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kSoftmaxSum,  // backward scratch: rowsum(dO * O)
  kDQAccum,     // backward scratch: dQ in fp32
  kScale,       // the scalars, passed by value from host memory
  kNegativeInfinity,
  kOne,
  kSdpaUidEnd,
};
constexpr size_t kSdpaUidCount = kSdpaUidEnd;

// Bytes of device memory by uid.
using SdpaTensorBytes = std::array<int64_t, kSdpaUidCount>;

// The bytes of every tensor of |shape| in device memory, by uid: Q, K, V, O and their gradients in
// the shape's dtype, the statistics, softmax sum and dQ accumulator in fp32; 0 for the scalars,
// which live in host memory.
SdpaTensorBytes SdpaTensorBytesOf(const AttentionShape& shape);

// OK when the graphs can express |shape|. Unimplemented for a dtype other than bf16 and fp16;
// InvalidArgument, naming the shape, when a size is not positive or heads is not a multiple of
// kv_heads.
Status CheckSdpaShape(const AttentionShape& shape);

// A finalized execution plan and everything it was made from, kept alive with it as
// cudnn-frontend's plans keep their graph. Run it with cudnnBackendExecute on the handle it was
// planned on, with a variant pack that gives an address for each of |uids| and a workspace of
// |workspace_bytes|.
struct ExecutionPlan {
  std::vector<BackendDescriptor>
      graph;                  // tensors, operations, the graph, heuristics, engine configs
  BackendDescriptor plan;     // declared after |graph|: destroyed first
  std::vector<int64_t> uids;  // the tensors the variant pack must give addresses for
  int64_t workspace_bytes = 0;
};

// Plans the forward of |shape| on |handle|: O = softmax(scale * Q K^T [causal mask]) V, which also
// writes the softmax's log-sum-exp per query row to kStats for the backward. Reads kQ, kK, kV and
// the scalars kScale (and, when causal, kNegativeInfinity); writes kO and kStats. The plan is the
// first engine config of cuDNN's heuristics (mode A) that cuDNN can build. Unimplemented, before
// any graph is built, where cudnn-frontend would refuse the shape on this cuDNN version
// (CheckCudnnSdpaSupport). A failure of cuDNN's keeps its code and reason, preceded by the pass and
// shape: Unimplemented when cuDNN has no engine for the graph, Unavailable (with the library path
// to fix) when cuDNN could not load a library it needs (CudnnStatusToStatus).
// REQUIRES: CheckSdpaShape(shape).ok().
Result<ExecutionPlan> PlanSdpaForward(cudnnHandle_t handle, const AttentionShape& shape);

// Plans the backward of |shape| on |handle|, as PlanSdpaForward: dQ, dK and dV from Q, K, V, O,
// dO and the forward's stats. Reads kQ, kK, kV, kO, kDO, kStats and the scalars kScale, kOne (and,
// when causal, kNegativeInfinity); writes kDQ, kDK, kDV and the scratch kSoftmaxSum and kDQAccum.
// REQUIRES: CheckSdpaShape(shape).ok().
Result<ExecutionPlan> PlanSdpaBackward(cudnnHandle_t handle, const AttentionShape& shape);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_SDPA_GRAPH_H_
