#include "probe/cuda/gemm_bench.h"

#include <utility>

#include "device/cuda/cuda_check.h"
#include "device/cuda/device_kernels.h"
#include "device/cuda/gemm_plan.h"
#include "probe/cuda/event_timer.h"

namespace loom::cuda {
namespace {

// cudaMalloc's alignment and the alignment cuBLASLt's heuristic assumes of every matrix.
constexpr int64_t kGemmAlignmentBytes = 256;

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Where loom's A and B lie in each rotated copy: A first, B after it on a 256-byte boundary.
struct CopyLayout {
  int64_t a_elements;
  int64_t b_elements;
  int64_t b_offset_bytes;
  int64_t bytes;
};

CopyLayout CopyLayoutOf(const GemmShape& shape, const GemmTypes& types) {
  CopyLayout layout;
  layout.a_elements = shape.batch * shape.m * shape.k;
  layout.b_elements = shape.batch * shape.k * shape.n;
  layout.b_offset_bytes = RoundUp(layout.a_elements * types.input_bytes, kGemmAlignmentBytes);
  layout.bytes = layout.b_offset_bytes + layout.b_elements * types.input_bytes;
  return layout;
}

// Fills every copy with random data, each matrix from its own seed.
Status FillCopies(const std::vector<DeviceBuffer>& copies, const CopyLayout& layout, Dtype dtype,
                  cudaStream_t stream) {
  uint64_t seed = 1;
  for (const DeviceBuffer& copy : copies) {
    char* base = static_cast<char*>(copy.get());
    LOOM_CUDA(FillRandom(base, layout.a_elements, dtype, seed++, stream));
    LOOM_CUDA(FillRandom(base + layout.b_offset_bytes, layout.b_elements, dtype, seed++, stream));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<GemmBench>> GemmBench::Create(cudaStream_t stream) {
  int device = 0, major = 0, minor = 0, l2_bytes = 0;
  LOOM_CUDA(cudaGetDevice(&device));
  LOOM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  LOOM_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  LOOM_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer workspace, AllocateDevice(kGemmWorkspaceBytes));
  cublasLtHandle_t handle = nullptr;
  LOOM_CUBLAS(cublasLtCreate(&handle));
  return std::unique_ptr<GemmBench>(
      new GemmBench(stream, handle, std::move(workspace), major * 10 + minor, l2_bytes));
}

GemmBench::GemmBench(cudaStream_t stream, cublasLtHandle_t handle, DeviceBuffer workspace,
                     int compute_capability, int64_t l2_bytes)
    : stream_(stream),
      handle_(handle),
      workspace_(std::move(workspace)),
      compute_capability_(compute_capability),
      l2_bytes_(l2_bytes) {}

GemmBench::~GemmBench() { cublasLtDestroy(handle_); }

Result<std::vector<double>> GemmBench::Time(const GemmShape& shape, const BenchSettings& settings) {
  LOOM_RETURN_IF_ERROR(CheckGemmShape(shape, compute_capability_));
  const GemmTypes types = GemmTypesOf(shape.dtype);
  DeviceBuffer unit_scale;
  if (shape.dtype == Dtype::kFp8) {
    LOOM_ASSIGN_OR_RETURN(unit_scale, MakeUnitScale(stream_));
  }
  LOOM_ASSIGN_OR_RETURN(GemmPlan plan, PlanGemm(handle_, shape, compute_capability_,
                                                static_cast<const float*>(unit_scale.get()),
                                                Fp32Accumulation::kHonour));

  const CopyLayout layout = CopyLayoutOf(shape, types);
  const int64_t output_bytes =
      shape.batch * shape.m * shape.n * GemmOutputBytes(shape, Fp32Accumulation::kHonour);
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer d, AllocateDevice(output_bytes));
  // An accumulating GEMM reads C: start it at zero, so that no run reads uninitialised memory.
  // C is one buffer for every run, as main_grad is one buffer for every micro-batch.
  if (plan.beta != 0.0f)
    LOOM_CUDA(cudaMemsetAsync(d.get(), 0, static_cast<size_t>(output_bytes), stream_));
  LOOM_ASSIGN_OR_RETURN(
      std::vector<DeviceBuffer> copies,
      AllocateCopies(layout.bytes, RotationCount(layout.bytes, l2_bytes_, settings.rotate_inputs)));
  if (Status filled = FillCopies(copies, layout, types.input_dtype, stream_); !filled.ok()) {
    cudaStreamSynchronize(
        stream_);  // the fills already enqueued finish before their buffers are freed
    return filled;
  }

  GemmPlan& p = plan;  // RunGemm drops the algorithms cublasLtMatmul refuses, on the first run
  void* output = d.get();
  auto launch = [&](int64_t run) -> Status {
    const char* copy = static_cast<const char*>(copies[run % copies.size()].get());
    return RunGemm(p, handle_, copy, copy + layout.b_offset_bytes, output, workspace_.get(),
                   kGemmWorkspaceBytes, stream_);
  };
  return TimeOnStream(stream_, launch, settings);
}

}  // namespace loom::cuda
