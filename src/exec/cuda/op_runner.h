#ifndef LOOM_EXEC_CUDA_OP_RUNNER_H_
#define LOOM_EXEC_CUDA_OP_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "core/dtype.h"
#include "core/status.h"
#include "device/cuda/device_buffer.h"
#include "device/cuda/gemm_plan.h"
#include "device/cuda/sdpa_graph.h"
#include "device/cuda/sdpa_run.h"
#include "exec/operand_ring.h"
#include "op/op.h"

namespace loom::cuda {

// Runs the compute ops of loom's op stream (workload/ops.h) as real kernels on the current GPU:
// a GEMM through cuBLASLt (gemm_plan.h), an attention through cuDNN's fused SDPA graph
// (sdpa_graph.h, forward or backward per shape.backward), a memory-bound op as loom's streaming
// kernel (StreamBytes), reading and writing the op's bytes. Everything that costs time apart from
// the kernels (planning, allocation, the random fill, loading the kernels) happens before the
// first Enqueue, in Create and WarmUp, so that Enqueue adds only the launches (and, for an
// attention, the cuDNN variant pack that binds its operands' addresses).
//
// The ops' operands are carved from one arena and their kernels share one workspace: the
// executor runs one op at a time on its compute stream, so no two ops' kernels use either at
// once. Each Enqueue puts the op's operands (exec/op_operands.h) where exec/operand_ring.h's ring
// places them, so that consecutive ops read different bytes and none finds its operands in the
// L2 cache, as `loom probe` times them (BenchSettings::rotate_inputs). What the ops compute is
// meaningless (the inputs are random, and one op's output overwrites another's input); what they
// cost is the op's.
//
// REQUIRES: the ops of one runner run one at a time, in the order of their Enqueue calls (all on
// one stream, or on streams ordered by events), since they share the arena and the workspace and
// the ring's guarantee holds in that order.
class OpRunner {
 public:
  // Plans every distinct op of |ops| on the current device (the cuBLASLt algorithms of each GEMM
  // shape, the cuDNN execution plan of each attention shape and direction), allocates the arena
  // (OperandRing's arena_bytes for the device's L2 size, cudaDevAttrL2CacheSize) and a workspace
  // that serves every plan, fills the arena with random values (FillRandom, ArenaFillDtype) on
  // |setup_stream| so that no GEMM runs on zeros, and waits for the fill. Collectives are skipped.
  // Errors name the op and its shape: InvalidArgument or Unimplemented for a shape the libraries
  // cannot run, ResourceExhausted when the memory does not fit, Internal for another library error.
  static Result<std::unique_ptr<OpRunner>> Create(std::span<const Op> ops,
                                                  cudaStream_t setup_stream);
  // Frees the runner's memory; cudaFree waits for the kernels still using it.
  ~OpRunner() = default;
  OpRunner(const OpRunner&) = delete;
  OpRunner& operator=(const OpRunner&) = delete;

  // Runs one op of every shape given to Create on |stream| and waits for them, so that every
  // kernel the ops launch (each GEMM's cuBLASLt algorithm, each attention's cuDNN engine, loom's
  // StreamBytes) is loaded on the device before any NCCL operation. Under CUDA's lazy loading
  // (CUDA_MODULE_LOADING=LAZY, the default on Linux since CUDA 12.2) a kernel is loaded at its
  // first launch, and the load may synchronize the context, waiting for the kernels running: the
  // CUDA Programming Guide (section 4.7, Lazy Loading, "Potential Hazards") names a kernel that
  // spins until another starts as a deadlock and loading every kernel beforehand as the way out.
  // An NCCL kernel spins until its peers arrive. NCCL loads its own kernels when a communicator is
  // created (ncclInitKernelsForDevice, NCCL's src/enqueue.cc). The ops run at the ring's
  // placements, as any run does. Errors as Enqueue's, naming the warm-up.
  Status WarmUp(cudaStream_t stream);

  // Enqueues |op|'s kernels on |stream| over the operands the ring places next, with no planning
  // and no allocation. Unimplemented for a collective (the executor runs those on its
  // communicators); NotFound when no op of |op|'s shape was given to Create. Errors name the op
  // and its shape.
  Status Enqueue(const Op& op, cudaStream_t stream);

  // The device memory the runner allocated: the arena (the ring and the large ops' region), the
  // workspace and fp8's scale. The cuBLASLt and cuDNN handles hold a little more, which the
  // libraries do not report.
  int64_t device_bytes() const;

 private:
  // A planned attention pass. Its variant packs, made at each Enqueue for the operands' place
  // then, point at |scalars|, whose address must not change (the entries live in a std::map,
  // whose nodes stay).
  struct Attention {
    AttentionShape shape;
    ExecutionPlan plan;
    SdpaScalars scalars;
  };
  using GemmKey = std::tuple<int64_t, int64_t, int64_t, int64_t, Dtype, bool>;  // + accumulate_fp32
  using AttentionKey =
      std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, Dtype>;
  using MemoryKey = std::tuple<int64_t, int64_t>;
  static GemmKey KeyOf(const GemmShape& shape);
  static AttentionKey KeyOf(const AttentionShape& shape);
  static MemoryKey KeyOf(const MemoryShape& shape);

  OpRunner() = default;
  // Create's steps, in order; a failure leaves work enqueued on |setup_stream|, which Create
  // waits for before the runner frees its memory.
  Status Setup(std::span<const Op> ops, cudaStream_t setup_stream);
  // Plans |op| unless an op of its shape is planned already.
  Status Plan(const Op& op, cudaStream_t setup_stream);
  Status PlanGemmOp(const GemmShape& shape, cudaStream_t setup_stream);
  Status PlanAttentionOp(const AttentionShape& shape);
  // Sizes the ring for the device's L2, allocates the arena and the workspace, and enqueues the
  // arena's random fill.
  Status Allocate(std::span<const Op> ops, cudaStream_t setup_stream);
  // Each enqueues |op|, of shape |shape|, over the operands the ring places next (Place), once
  // its shape is found planned.
  Status EnqueueGemm(const Op& op, const GemmShape& shape, cudaStream_t stream);
  Status EnqueueAttention(const Op& op, const AttentionShape& shape, cudaStream_t stream);
  Status EnqueueMemory(const Op& op, const MemoryShape& shape, cudaStream_t stream);
  // The start of |op|'s operands for this run (OperandRing::Place), in the arena.
  char* Place(const Op& op);

  int compute_capability_ = 0;
  CublasLtHandle cublas_;                // made with the first GEMM
  CudnnHandle cudnn_;                    // made with the first attention
  cudaStream_t cudnn_stream_ = nullptr;  // the stream |cudnn_| launches on
  DeviceBuffer unit_scale_;              // fp8 GEMMs' scale of 1.0, made with the first one
  std::map<GemmKey, GemmPlan> gemms_;
  std::map<AttentionKey, Attention> attentions_;
  std::set<MemoryKey> memory_ops_;
  std::vector<Op> warm_up_ops_;      // the first op of each planned shape, in Create's order
  std::optional<OperandRing> ring_;  // made in Allocate
  DeviceBuffer arena_;
  int64_t arena_bytes_ = 0;
  DeviceBuffer workspace_;
  int64_t workspace_bytes_ = 0;
};

}  // namespace loom::cuda

#endif  // LOOM_EXEC_CUDA_OP_RUNNER_H_
