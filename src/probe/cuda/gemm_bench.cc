#include "probe/cuda/gemm_bench.h"

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>
#include <utility>

#include "cost/profile.h"
#include "probe/cuda/cuda_check.h"
#include "probe/cuda/device_kernels.h"
#include "probe/cuda/event_timer.h"

namespace loom::cuda {
namespace {

// The workspace cuBLAS recommends for Hopper (cuBLAS documentation, cublasSetWorkspace: 32 MiB on
// Hopper, 4 MiB before), as Transformer Engine's get_cublas_workspace_size_bytes gives its GEMMs;
// it is more than older GPUs need, so one size serves every GPU.
constexpr int64_t kWorkspaceBytes = 32ll << 20;
// cudaMalloc's alignment and the alignment cuBLASLt's heuristic assumes of every matrix.
constexpr int64_t kAlignmentBytes = 256;

struct LtDeleter {
  void operator()(std::remove_pointer_t<cublasLtMatmulDesc_t>* desc) const { cublasLtMatmulDescDestroy(desc); }
  void operator()(std::remove_pointer_t<cublasLtMatrixLayout_t>* layout) const { cublasLtMatrixLayoutDestroy(layout); }
  void operator()(std::remove_pointer_t<cublasLtMatmulPreference_t>* preference) const {
    cublasLtMatmulPreferenceDestroy(preference);
  }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, LtDeleter>;
using MatrixLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LtDeleter>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, LtDeleter>;

// The cuBLASLt types of a GEMM of |dtype|; the scale type (alpha, beta) is fp32 throughout.
struct GemmTypes {
  cudaDataType_t input;   // A and B
  cudaDataType_t output;  // C and D
  cublasComputeType_t compute;
  Dtype input_dtype;      // what FillRandom writes into A and B
  int64_t input_bytes;    // per element
  int64_t output_bytes;
};

GemmTypes TypesOf(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, Dtype::kBf16, 2, 2};
    case Dtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, Dtype::kFp16, 2, 2};
    case Dtype::kFp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, Dtype::kFp8, 1, 2};
    case Dtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, Dtype::kTf32, 4, 4};
    case Dtype::kFp32:
      break;
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, Dtype::kFp32, 4, 4};
}

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

Status CheckShape(const GemmShape& shape, int compute_capability) {
  const std::string what = DescribeShape(shape);
  for (int64_t dim : {shape.m, shape.n, shape.k, shape.batch}) {
    if (dim <= 0 || dim > INT_MAX) {
      return Status::InvalidArgument(what + ": m, n, k and batch must be positive and below 2^31 (cuBLASLt's limit)");
    }
  }
  // Guards the byte counts below against overflow: no GPU holds a matrix of 2^40 elements.
  const double batch = static_cast<double>(shape.batch);
  const double m = static_cast<double>(shape.m), n = static_cast<double>(shape.n), k = static_cast<double>(shape.k);
  if (batch * std::max({m * k, k * n, m * n}) > 0x1p40) {
    return Status::ResourceExhausted(what + ": a matrix of more than 2^40 elements does not fit in GPU memory");
  }
  if (shape.dtype != Dtype::kFp8) return Status::Ok();
  if (compute_capability < 89) {
    return Status::Unimplemented(what + ": fp8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, Hopper); "
                                 "this one is " + std::to_string(compute_capability / 10) + "." +
                                 std::to_string(compute_capability % 10));
  }
  if (shape.m % 16 != 0 || shape.n % 16 != 0 || shape.k % 16 != 0) {
    return Status::Unimplemented(what + ": cuBLASLt's fp8 GEMMs need m, n and k to be multiples of 16");
  }
  return Status::Ok();
}

// A column-major |rows| x |cols| matrix with leading dimension |ld|, repeated |batch| times
// |rows| * |cols| elements apart.
Result<MatrixLayout> MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch) {
  cublasLtMatrixLayout_t raw = nullptr;
  LOOM_CUBLAS(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  MatrixLayout layout(raw);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = rows * cols;
    LOOM_CUBLAS(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    LOOM_CUBLAS(
        cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

// The operation: fp32 alpha and beta; for fp8, cuBLASLt's A transposed and the per-tensor scales
// of A and B both read from |unit_scale| (a device float of 1.0). Fast fp8 accumulation
// (CUBLASLT_MATMUL_DESC_FAST_ACCUM) stays off, its default: Transformer Engine turns it on for the
// forward GEMM only and accumulates dgrad and wgrad in full precision (_2X_ACC_DGRAD,
// _2X_ACC_WGRAD), so two of a layer's three fp8 GEMMs run as measured here.
Result<MatmulDesc> MakeDesc(const GemmTypes& types, bool fp8, const float* unit_scale) {
  cublasLtMatmulDesc_t raw = nullptr;
  LOOM_CUBLAS(cublasLtMatmulDescCreate(&raw, types.compute, CUDA_R_32F));
  MatmulDesc desc(raw);
  const int32_t trans_a = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t trans_b = CUBLAS_OP_N;
  LOOM_CUBLAS(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  LOOM_CUBLAS(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (fp8) {
    LOOM_CUBLAS(
        cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &unit_scale, sizeof unit_scale));
    LOOM_CUBLAS(
        cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &unit_scale, sizeof unit_scale));
  }
  return desc;
}

// Everything cublasLtMatmul needs of a shape besides its buffers. a, b and d are cuBLASLt's
// matrices: a holds loom's B, b loom's A, d loom's C (see gemm_bench.h); d also serves as C, which
// is not read since beta is 0.
struct GemmPlan {
  MatmulDesc desc;
  MatrixLayout a, b, d;
  cublasLtMatmulAlgo_t algo;
};

Result<GemmPlan> MakePlan(cublasLtHandle_t handle, const GemmShape& shape, const GemmTypes& types,
                          const float* unit_scale) {
  const bool fp8 = shape.dtype == Dtype::kFp8;
  Result<MatmulDesc> desc = MakeDesc(types, fp8, unit_scale);
  if (!desc.ok()) return desc.status();
  // loom's B: [k, n] row-major is column-major n x k (ld n); for fp8, [n, k] row-major is
  // column-major k x n (ld k), which cuBLASLt transposes.
  Result<MatrixLayout> a = fp8 ? MakeLayout(types.input, shape.k, shape.n, shape.k, shape.batch)
                               : MakeLayout(types.input, shape.n, shape.k, shape.n, shape.batch);
  if (!a.ok()) return a.status();
  Result<MatrixLayout> b = MakeLayout(types.input, shape.k, shape.m, shape.k, shape.batch);  // loom's A[m, k]
  if (!b.ok()) return b.status();
  Result<MatrixLayout> d = MakeLayout(types.output, shape.n, shape.m, shape.n, shape.batch);  // loom's C[m, n]
  if (!d.ok()) return d.status();

  cublasLtMatmulPreference_t raw_preference = nullptr;
  LOOM_CUBLAS(cublasLtMatmulPreferenceCreate(&raw_preference));
  Preference preference(raw_preference);
  const uint64_t workspace_bytes = kWorkspaceBytes;
  LOOM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(raw_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic = {};
  int returned = 0;
  LOOM_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, desc->get(), a->get(), b->get(), d->get(), d->get(),
                                             raw_preference, 1, &heuristic, &returned));
  if (returned == 0) {
    return Status::Unimplemented(DescribeShape(shape) + ": cuBLASLt's heuristic found no algorithm for it");
  }
  return GemmPlan{std::move(desc).value(), std::move(a).value(), std::move(b).value(), std::move(d).value(),
                  heuristic.algo};
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
  layout.b_offset_bytes = RoundUp(layout.a_elements * types.input_bytes, kAlignmentBytes);
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

// A device float of 1.0, the per-tensor scale of A and B of fp8 GEMMs. The source is static, so
// it outlives the asynchronous copy.
Result<DeviceBuffer> UnitScale(cudaStream_t stream) {
  static constexpr float kOne = 1.0f;
  Result<DeviceBuffer> scale = AllocateDevice(sizeof kOne);
  if (!scale.ok()) return scale;
  LOOM_CUDA(cudaMemcpyAsync(scale->get(), &kOne, sizeof kOne, cudaMemcpyHostToDevice, stream));
  return scale;
}

}  // namespace

Result<std::unique_ptr<GemmBench>> GemmBench::Create(cudaStream_t stream) {
  int device = 0, major = 0, minor = 0, l2_bytes = 0;
  LOOM_CUDA(cudaGetDevice(&device));
  LOOM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  LOOM_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  LOOM_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  Result<DeviceBuffer> workspace = AllocateDevice(kWorkspaceBytes);
  if (!workspace.ok()) return workspace.status();
  cublasLtHandle_t handle = nullptr;
  LOOM_CUBLAS(cublasLtCreate(&handle));
  return std::unique_ptr<GemmBench>(
      new GemmBench(stream, handle, std::move(workspace).value(), major * 10 + minor, l2_bytes));
}

GemmBench::GemmBench(cudaStream_t stream, cublasLtHandle_t handle, DeviceBuffer workspace, int compute_capability,
                     int64_t l2_bytes)
    : stream_(stream),
      handle_(handle),
      workspace_(std::move(workspace)),
      compute_capability_(compute_capability),
      l2_bytes_(l2_bytes) {}

GemmBench::~GemmBench() { cublasLtDestroy(handle_); }

Result<std::vector<double>> GemmBench::Time(const GemmShape& shape, const BenchSettings& settings) {
  LOOM_RETURN_IF_ERROR(CheckShape(shape, compute_capability_));
  const GemmTypes types = TypesOf(shape.dtype);
  DeviceBuffer unit_scale;
  if (shape.dtype == Dtype::kFp8) {
    Result<DeviceBuffer> one = UnitScale(stream_);
    if (!one.ok()) return one.status();
    unit_scale = std::move(one).value();
  }
  Result<GemmPlan> plan = MakePlan(handle_, shape, types, static_cast<const float*>(unit_scale.get()));
  if (!plan.ok()) return plan.status();

  const CopyLayout layout = CopyLayoutOf(shape, types);
  Result<DeviceBuffer> d = AllocateDevice(shape.batch * shape.m * shape.n * types.output_bytes);
  if (!d.ok()) return d.status();
  Result<std::vector<DeviceBuffer>> copies =
      AllocateCopies(layout.bytes, RotationCount(layout.bytes, l2_bytes_, settings.rotate_inputs));
  if (!copies.ok()) return copies.status();
  if (Status filled = FillCopies(*copies, layout, types.input_dtype, stream_); !filled.ok()) {
    cudaStreamSynchronize(stream_);  // the fills already enqueued finish before their buffers are freed
    return filled;
  }

  const GemmPlan& p = *plan;
  void* output = d->get();
  const float alpha = 1.0f, beta = 0.0f;
  auto launch = [&](int64_t run) -> Status {
    const char* copy = static_cast<const char*>((*copies)[run % copies->size()].get());
    LOOM_CUBLAS(cublasLtMatmul(handle_, p.desc.get(), &alpha, copy + layout.b_offset_bytes, p.a.get(), copy,
                               p.b.get(), &beta, output, p.d.get(), output, p.d.get(), &p.algo, workspace_.get(),
                               kWorkspaceBytes, stream_));
    return Status::Ok();
  };
  return TimeOnStream(stream_, launch, settings);
}

}  // namespace loom::cuda
