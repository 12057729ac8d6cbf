#include "exec/cuda/op_runner.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "device/cuda/cuda_check.h"
#include "device/cuda/device_kernels.h"
#include "exec/op_operands.h"
#include "op/op_json.h"

namespace loom::cuda {
namespace {

// exec/op_operands.h's AttentionTensor t is the tensor of uid t + 1 in sdpa_graph.h.
constexpr SdpaUid UidOf(AttentionTensor tensor) {
  return static_cast<SdpaUid>(static_cast<int64_t>(tensor) + 1);
}
static_assert(UidOf(AttentionTensor::kQ) == kQ && UidOf(AttentionTensor::kK) == kK &&
                  UidOf(AttentionTensor::kV) == kV && UidOf(AttentionTensor::kO) == kO &&
                  UidOf(AttentionTensor::kStats) == kStats && UidOf(AttentionTensor::kDO) == kDO &&
                  UidOf(AttentionTensor::kDQ) == kDQ && UidOf(AttentionTensor::kDK) == kDK &&
                  UidOf(AttentionTensor::kDV) == kDV &&
                  UidOf(AttentionTensor::kSoftmaxSum) == kSoftmaxSum &&
                  UidOf(AttentionTensor::kDQAccum) == kDQAccum &&
                  size_t{kDQAccum} == kAttentionTensorCount,
              "AttentionTensor must list sdpa_graph.h's tensors in the order of their uids");

// "qkv_proj (gemm 4096x4096x8192 bf16)": the op and its shape, for messages.
std::string Describe(const Op& op) {
  std::string shape;
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) {
    shape = DescribeShape(*gemm);
  } else if (const auto* attention = std::get_if<AttentionShape>(&op.shape)) {
    shape = DescribeShape(*attention);
  } else if (const auto* memory = std::get_if<MemoryShape>(&op.shape)) {
    shape = DescribeShape(*memory);
  } else {
    const CollectiveShape& collective = std::get<CollectiveShape>(op.shape);
    shape = std::string(kCollectiveKindNames.Name(collective.kind)) + " over " +
            std::string(kCommGroupNames.Name(collective.group)) + ", " +
            std::to_string(collective.bytes) + " B";
  }
  return std::string(OpNameString(op.name)) + " (" + shape + ")";
}

Status NotPlanned() {
  return Status::NotFound(
      "no op of this shape was given to OpRunner::Create; pass it every op it will run");
}

}  // namespace

OpRunner::GemmKey OpRunner::KeyOf(const GemmShape& s) {
  return {s.m, s.n, s.k, s.batch, s.dtype, s.accumulate_fp32};
}

OpRunner::AttentionKey OpRunner::KeyOf(const AttentionShape& s) {
  return {s.batch,       s.heads,      s.kv_heads, s.seq_q,    s.seq_kv,
          s.head_dim_qk, s.head_dim_v, s.causal,   s.backward, s.dtype};
}

OpRunner::MemoryKey OpRunner::KeyOf(const MemoryShape& s) {
  return {s.bytes_read, s.bytes_written};
}

Result<std::unique_ptr<OpRunner>> OpRunner::Create(std::span<const Op> ops,
                                                   cudaStream_t setup_stream) {
  std::unique_ptr<OpRunner> runner(new OpRunner());
  if (Status status = runner->Setup(ops, setup_stream); !status.ok()) {
    // The copies and fills already enqueued finish before the runner frees their memory; the
    // synchronization's own error, if any, says less than |status|.
    cudaStreamSynchronize(setup_stream);
    return status;
  }
  return runner;
}

Status OpRunner::Setup(std::span<const Op> ops, cudaStream_t setup_stream) {
  LOOM_ASSIGN_OR_RETURN(compute_capability_, CurrentComputeCapability());
  for (const Op& op : ops) {
    const size_t shapes = gemms_.size() + attentions_.size() + memory_ops_.size();
    if (Status planned = Plan(op, setup_stream); !planned.ok())
      return planned.WithContext(Describe(op));
    if (gemms_.size() + attentions_.size() + memory_ops_.size() > shapes)
      warm_up_ops_.push_back(op);
  }
  LOOM_RETURN_IF_ERROR(Allocate(ops, setup_stream));
  LOOM_CUDA(cudaStreamSynchronize(setup_stream));
  return Status::Ok();
}

Status OpRunner::Plan(const Op& op, cudaStream_t setup_stream) {
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) return PlanGemmOp(*gemm, setup_stream);
  if (const auto* attention = std::get_if<AttentionShape>(&op.shape)) {
    if (attention->window > 0) {
      return Status::Unimplemented(
          "sliding-window attention: the cuDNN graph loom's executor builds has no window, so it "
          "would time full causal attention; validate a plan of a model without a sliding window");
    }
    return PlanAttentionOp(*attention);
  }
  if (const auto* memory = std::get_if<MemoryShape>(&op.shape)) {
    if (memory->bytes_read < 0 || memory->bytes_written < 0) {
      return Status::InvalidArgument(
          "a memory-bound op cannot read or write a negative number of bytes");
    }
    memory_ops_.insert(KeyOf(*memory));
  }
  return Status::Ok();  // a collective: the executor's
}

Status OpRunner::PlanGemmOp(const GemmShape& shape, cudaStream_t setup_stream) {
  const GemmKey key = KeyOf(shape);
  if (gemms_.contains(key)) return Status::Ok();
  // The arena's layout (op_operands.cc) must give each matrix the bytes cuBLASLt reads or writes.
  const GemmTypes types = GemmTypesOf(shape.dtype);
  if (types.input_bytes != GemmInputBytesPerElement(shape.dtype) ||
      GemmOutputBytes(shape, Fp32Accumulation::kHonour) != GemmOutputBytesPerElement(shape)) {
    return Status::Internal(
        "exec/op_operands.cc and device/cuda/gemm_plan.cc disagree on the bytes per element");
  }
  if (cublas_ == nullptr) {
    cublasLtHandle_t handle = nullptr;
    LOOM_CUBLAS(cublasLtCreate(&handle));
    cublas_.reset(handle);
  }
  if (shape.dtype == Dtype::kFp8 && unit_scale_ == nullptr) {
    LOOM_ASSIGN_OR_RETURN(unit_scale_, MakeUnitScale(setup_stream));
  }
  LOOM_ASSIGN_OR_RETURN(GemmPlan plan, PlanGemm(cublas_.get(), shape, compute_capability_,
                                                static_cast<const float*>(unit_scale_.get()),
                                                Fp32Accumulation::kHonour));
  gemms_.emplace(key, std::move(plan));
  return Status::Ok();
}

Status OpRunner::PlanAttentionOp(const AttentionShape& shape) {
  const AttentionKey key = KeyOf(shape);
  if (attentions_.contains(key)) return Status::Ok();
  LOOM_RETURN_IF_ERROR(CheckSdpaShape(shape));
  if (cudnn_ == nullptr) {
    cudnnHandle_t handle = nullptr;
    LOOM_CUDNN(cudnnCreate(&handle));
    cudnn_.reset(handle);
  }
  LOOM_ASSIGN_OR_RETURN(ExecutionPlan plan, shape.backward ? PlanSdpaBackward(cudnn_.get(), shape)
                                                           : PlanSdpaForward(cudnn_.get(), shape));
  // The arena's layout (op_operands.cc) must give each tensor of the graph the bytes cuDNN
  // addresses (SdpaTensorBytesOf).
  const SdpaTensorBytes graph_bytes = SdpaTensorBytesOf(shape);
  const AttentionOperands operands = AttentionOperandsOf(shape);
  for (int64_t uid : plan.uids) {
    if (uid < kQ || uid > kDQAccum) continue;  // the scalars, in host memory
    if (operands.tensor_bytes[static_cast<size_t>(uid - 1)] !=
        graph_bytes[static_cast<size_t>(uid)]) {
      return Status::Internal(
          "exec/op_operands.cc and device/cuda/sdpa_graph.cc disagree on the bytes of the "
          "tensor of uid " +
          std::to_string(uid) + ": " +
          std::to_string(operands.tensor_bytes[static_cast<size_t>(uid - 1)]) + " against " +
          std::to_string(graph_bytes[static_cast<size_t>(uid)]));
    }
  }
  attentions_.emplace(key, Attention{shape, std::move(plan), SdpaScalarsOf(shape)});
  return Status::Ok();
}

Status OpRunner::Allocate(std::span<const Op> ops, cudaStream_t setup_stream) {
  int device = 0, l2_bytes = 0;
  LOOM_CUDA(cudaGetDevice(&device));
  LOOM_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  ring_.emplace(ops, l2_bytes);
  arena_bytes_ = ring_->arena_bytes();
  // One workspace for every kernel, as big as the largest need: GEMMs get the size they were
  // planned for (kGemmWorkspaceBytes, as in the GEMM bench), attentions their plan's.
  workspace_bytes_ = gemms_.empty() ? 0 : kGemmWorkspaceBytes;
  for (const auto& [key, attention] : attentions_) {
    workspace_bytes_ = std::max(workspace_bytes_, attention.plan.workspace_bytes);
  }
  Result<DeviceBuffer> arena = AllocateDevice(arena_bytes_);
  if (!arena.ok()) {
    return arena.status().WithContext("the operand arena of " + std::to_string(arena_bytes_) +
                                      " bytes");
  }
  arena_ = std::move(arena).value();
  Result<DeviceBuffer> workspace = AllocateDevice(workspace_bytes_);
  if (!workspace.ok()) {
    return workspace.status().WithContext("the workspace of " + std::to_string(workspace_bytes_) +
                                          " bytes");
  }
  workspace_ = std::move(workspace).value();
  // The arena's size is a multiple of 256 bytes, so of every element size.
  const Dtype fill = ArenaFillDtype(ops);
  LOOM_CUDA(FillRandom(arena_.get(), arena_bytes_ / BytesPerElement(fill), fill, /*seed=*/1,
                       setup_stream));
  return Status::Ok();
}

Status OpRunner::WarmUp(cudaStream_t stream) {
  for (const Op& op : warm_up_ops_) {
    if (Status ran = Enqueue(op, stream); !ran.ok())
      return ran.WithContext("warming up the op runner");
  }
  LOOM_CUDA(cudaStreamSynchronize(stream));
  return Status::Ok();
}

Status OpRunner::Enqueue(const Op& op, cudaStream_t stream) {
  if (std::holds_alternative<CollectiveShape>(op.shape)) {
    return Status::Unimplemented(Describe(op) +
                                 ": a collective runs on the executor's communicators, "
                                 "not on the op runner");
  }
  Status status;
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) {
    status = EnqueueGemm(op, *gemm, stream);
  } else if (const auto* attention = std::get_if<AttentionShape>(&op.shape)) {
    status = EnqueueAttention(op, *attention, stream);
  } else {
    status = EnqueueMemory(op, std::get<MemoryShape>(op.shape), stream);
  }
  return status.WithContext(Describe(op));
}

char* OpRunner::Place(const Op& op) { return static_cast<char*>(arena_.get()) + ring_->Place(op); }

Status OpRunner::EnqueueGemm(const Op& op, const GemmShape& shape, cudaStream_t stream) {
  const auto plan = gemms_.find(KeyOf(shape));
  if (plan == gemms_.end()) return NotPlanned();
  char* base = Place(op);
  const GemmOperands operands = GemmOperandsOf(shape);
  return RunGemm(plan->second, cublas_.get(), base + operands.a_offset, base + operands.b_offset,
                 base + operands.c_offset, workspace_.get(), kGemmWorkspaceBytes, stream);
}

// The variant pack is made for each run, since the ring moves the operands: a host descriptor of
// three attributes, as cudnn-frontend makes one at every Graph::execute (detail::execute,
// include/cudnn_frontend/plans.h). cuDNN reads it at cudnnBackendExecute only.
Status OpRunner::EnqueueAttention(const Op& op, const AttentionShape& shape, cudaStream_t stream) {
  const auto attention = attentions_.find(KeyOf(shape));
  if (attention == attentions_.end()) return NotPlanned();
  char* base = Place(op);
  if (stream != cudnn_stream_) {
    LOOM_CUDNN(cudnnSetStream(cudnn_.get(), stream));
    cudnn_stream_ = stream;
  }
  const AttentionOperands operands = AttentionOperandsOf(shape);
  SdpaAddresses addresses{};
  for (size_t i = 0; i < kAttentionTensorCount; ++i) {
    if (operands.tensor_bytes[i] > 0)
      addresses[UidOf(static_cast<AttentionTensor>(i))] = base + operands.offsets[i];
  }
  LOOM_ASSIGN_OR_RETURN(BackendDescriptor pack,
                        MakeSdpaVariantPack(attention->second.plan, addresses, workspace_.get(),
                                            attention->second.scalars));
  return ExecuteSdpa(cudnn_.get(), attention->second.plan, pack);
}

Status OpRunner::EnqueueMemory(const Op& op, const MemoryShape& shape, cudaStream_t stream) {
  if (!memory_ops_.contains(KeyOf(shape))) return NotPlanned();
  char* base = Place(op);
  const MemoryOperands operands = MemoryOperandsOf(shape);
  LOOM_CUDA(StreamBytes(base + operands.src_offset, shape.bytes_read, base + operands.dst_offset,
                        shape.bytes_written, stream));
  return Status::Ok();
}

int64_t OpRunner::device_bytes() const {
  return arena_bytes_ + workspace_bytes_ +
         (unit_scale_ != nullptr ? static_cast<int64_t>(sizeof(float)) : 0);
}

}  // namespace loom::cuda
