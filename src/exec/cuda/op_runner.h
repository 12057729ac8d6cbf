#ifndef LOOM_EXEC_CUDA_OP_RUNNER_H_
#define LOOM_EXEC_CUDA_OP_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <tuple>

#include <cuda_runtime.h>

#include "core/dtype.h"
#include "core/status.h"
#include "probe/cuda/device_buffer.h"
#include "probe/cuda/gemm_plan.h"
#include "probe/cuda/sdpa_graph.h"
#include "probe/cuda/sdpa_run.h"
#include "workload/ops.h"

namespace loom::cuda {

// Runs the compute ops of loom's op stream (workload/ops.h) as real kernels on the current GPU:
// a GEMM through cuBLASLt (gemm_plan.h), an attention through cuDNN's fused SDPA graph
// (sdpa_graph.h, forward or backward per shape.backward), a memory-bound op as loom's streaming
// kernel (StreamBytes), reading and writing the op's bytes. Everything that costs time apart from
// the kernels (planning, allocation, the random fill) happens once, in Create, so that Enqueue
// adds only the launches.
//
// The ops' operands are carved from one arena (exec/op_operands.h) and their kernels share one
// workspace: the executor runs one op at a time on its compute stream, so no two ops' kernels
// use either at once. What the ops compute is meaningless (the inputs are random, and one op's
// output overwrites another's input); what they cost is the op's.
//
// REQUIRES: the ops of one runner run one at a time (all Enqueue calls on one stream, or on
// streams ordered by events), since they share the arena and the workspace.
class OpRunner {
 public:
  // Plans every distinct op of |ops| on the current device (the cuBLASLt algorithm of each GEMM
  // shape, the cuDNN execution plan of each attention shape and direction), allocates the arena
  // (ArenaBytes(ops)) and a workspace that serves every plan, fills the arena with random values
  // (FillRandom, ArenaFillDtype) on |setup_stream| so that no GEMM runs on zeros, and waits for
  // the fill. Collectives are skipped. Errors name the op and its shape: InvalidArgument or
  // Unimplemented for a shape the libraries cannot run, ResourceExhausted when the memory does
  // not fit, Internal for another library error.
  static Result<std::unique_ptr<OpRunner>> Create(std::span<const Op> ops, cudaStream_t setup_stream);
  // Frees the runner's memory; cudaFree waits for the kernels still using it.
  ~OpRunner() = default;
  OpRunner(const OpRunner&) = delete;
  OpRunner& operator=(const OpRunner&) = delete;

  // Enqueues |op|'s kernels on |stream|, with no planning and no allocation. Unimplemented for a
  // collective (the executor runs those on its communicators); NotFound when no op of |op|'s
  // shape was given to Create. Errors name the op and its shape.
  Status Enqueue(const Op& op, cudaStream_t stream);

  // The device memory the runner allocated: the arena, the workspace and fp8's scale. The cuBLASLt
  // and cuDNN handles hold a little more, which the libraries do not report.
  int64_t device_bytes() const;

 private:
  // A planned attention pass: its variant pack binds the arena's addresses, the workspace and
  // |scalars|, whose address must not change (the entries live in a std::map, whose nodes stay).
  struct Attention {
    AttentionShape shape;
    ExecutionPlan plan;
    SdpaScalars scalars;
    BackendDescriptor pack;
  };
  using GemmKey = std::tuple<int64_t, int64_t, int64_t, int64_t, Dtype>;
  using AttentionKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, Dtype>;
  using MemoryKey = std::tuple<int64_t, int64_t>;
  static GemmKey KeyOf(const GemmShape& shape);
  static AttentionKey KeyOf(const AttentionShape& shape);
  static MemoryKey KeyOf(const MemoryShape& shape);

  OpRunner() = default;
  // Create's steps, in order; a failure leaves work enqueued on |setup_stream|, which Create
  // waits for before the runner frees its memory.
  Status Setup(std::span<const Op> ops, cudaStream_t setup_stream);
  // Plans |op| unless an op of its shape is planned already. Attention packs are made later, in
  // MakeAttentionPacks, once the arena and the workspace exist.
  Status Plan(const Op& op, cudaStream_t setup_stream);
  Status PlanGemmOp(const GemmShape& shape, cudaStream_t setup_stream);
  Status PlanAttentionOp(const AttentionShape& shape);
  // Allocates the arena and the workspace, and enqueues the arena's random fill.
  Status Allocate(std::span<const Op> ops, cudaStream_t setup_stream);
  Status MakeAttentionPacks();
  Status EnqueueGemm(const GemmShape& shape, cudaStream_t stream);
  Status EnqueueAttention(const AttentionShape& shape, cudaStream_t stream);
  Status EnqueueMemory(const MemoryShape& shape, cudaStream_t stream);

  int compute_capability_ = 0;
  CublasLtHandle cublas_;  // made with the first GEMM
  CudnnHandle cudnn_;      // made with the first attention
  cudaStream_t cudnn_stream_ = nullptr;  // the stream |cudnn_| launches on
  DeviceBuffer unit_scale_;              // fp8 GEMMs' scale of 1.0, made with the first one
  std::map<GemmKey, GemmPlan> gemms_;
  std::map<AttentionKey, Attention> attentions_;
  std::set<MemoryKey> memory_ops_;
  DeviceBuffer arena_;
  int64_t arena_bytes_ = 0;
  DeviceBuffer workspace_;
  int64_t workspace_bytes_ = 0;
};

}  // namespace loom::cuda

#endif  // LOOM_EXEC_CUDA_OP_RUNNER_H_
