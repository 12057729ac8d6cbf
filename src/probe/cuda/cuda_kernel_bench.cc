#include "probe/cuda/cuda_kernel_bench.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_facts.h"
#include "device/cuda/device_kernels.h"
#include "probe/cuda/event_timer.h"
#include "probe/cuda/gemm_bench.h"
#include "probe/cuda/nccl_bench.h"
#include "probe/cuda/sdpa_bench.h"

namespace loom::cuda {
namespace {

constexpr int64_t kRmsNormCols = 8192;
constexpr int64_t kRmsNormRowBytes = kRmsNormCols * 2;  // bf16
// Launches per timed repeat of the launch overhead; see TimeLaunch.
constexpr int64_t kLaunchesPerRepeat = 100;
constexpr int64_t kAlignmentBytes = 256;

struct StreamDestroyer {
  void operator()(std::remove_pointer_t<cudaStream_t>* stream) const { cudaStreamDestroy(stream); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroyer>;

struct HostFreeDeleter {
  void operator()(void* pointer) const { cudaFreeHost(pointer); }
};
using PinnedBuffer = std::unique_ptr<void, HostFreeDeleter>;

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of |attribute| of |device|, or nothing when CUDA cannot say.
std::optional<int64_t> Attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return value;
}

std::string DriverVersion() {
  std::string version = DriverVersionFromProc(ReadFile("/proc/driver/nvidia/version"));
  if (!version.empty()) return version;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) return "unknown";
  return "CUDA driver API " + CudaVersionString(driver);
}

Status CheckPositive(int64_t bytes, const std::string& what) {
  if (bytes > 0) return Status::Ok();
  return Status::InvalidArgument(what + ": bytes (" + std::to_string(bytes) + ") must be positive");
}

// |tensors| device tensors of |tensor_bytes| each, in as many rotated copies as RotationCount
// asks for (or as fit); Tensor(run, i) is tensor i of the copy run |run| uses.
class RotatedTensors {
 public:
  static Result<RotatedTensors> Allocate(int64_t tensor_bytes, int64_t tensors, int64_t l2_bytes,
                                         bool rotate) {
    const int64_t stride = (tensor_bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
    LOOM_ASSIGN_OR_RETURN(
        std::vector<DeviceBuffer> copies,
        AllocateCopies(stride * tensors, RotationCount(tensor_bytes * tensors, l2_bytes, rotate)));
    return RotatedTensors(std::move(copies), stride);
  }

  void* Tensor(int64_t run, int64_t index) const {
    char* copy = static_cast<char*>(copies_[static_cast<size_t>(run) % copies_.size()].get());
    return copy + index * stride_;
  }

  // Fills tensors 0 .. |inputs| - 1 of every copy with random bf16 values of |elements| each.
  Status FillInputs(int64_t inputs, int64_t elements, cudaStream_t stream) const {
    uint64_t seed = 1;
    for (size_t c = 0; c < copies_.size(); ++c) {
      for (int64_t i = 0; i < inputs; ++i) {
        LOOM_CUDA(
            FillRandom(Tensor(static_cast<int64_t>(c), i), elements, Dtype::kBf16, seed++, stream));
      }
    }
    return Status::Ok();
  }

 private:
  RotatedTensors(std::vector<DeviceBuffer> copies, int64_t stride)
      : copies_(std::move(copies)), stride_(stride) {}

  std::vector<DeviceBuffer> copies_;
  int64_t stride_;
};

class CudaKernelBench : public KernelBench {
 public:
  CudaKernelBench(int device, Stream stream, std::unique_ptr<GemmBench> gemm,
                  Result<std::unique_ptr<SdpaBench>> sdpa, int64_t l2_bytes)
      : device_(device), stream_(std::move(stream)), gemm_(std::move(gemm)), l2_bytes_(l2_bytes) {
    if (sdpa.ok()) {
      sdpa_ = std::move(sdpa).value();
    } else {
      sdpa_error_ = sdpa.status();
    }
  }

  DeviceFacts Facts() override;

  Result<std::vector<double>> TimeGemm(const GemmShape& shape,
                                       const BenchSettings& settings) override {
    LOOM_CUDA(cudaSetDevice(device_));
    return gemm_->Time(shape, settings);
  }

  Result<std::vector<double>> TimeAttention(const AttentionShape& shape,
                                            const BenchSettings& settings) override {
    if (!sdpa_) return sdpa_error_;
    LOOM_CUDA(cudaSetDevice(device_));
    return sdpa_->Time(shape, settings);
  }

  Result<std::vector<double>> TimeMemory(MemoryKernel kernel, int64_t bytes,
                                         const BenchSettings& settings) override;
  Result<std::vector<double>> TimeHost(HostMeasure measure, int64_t bytes,
                                       const BenchSettings& settings) override;

 private:
  Result<std::vector<double>> TimeCopy(int64_t bytes, const BenchSettings& settings);
  Result<std::vector<double>> TimeRmsNorm(int64_t bytes, const BenchSettings& settings);
  Result<std::vector<double>> TimeSwiGlu(int64_t bytes, const BenchSettings& settings);
  Result<std::vector<double>> TimeLaunch(const BenchSettings& settings);
  Result<std::vector<double>> TimePinnedCopy(HostMeasure direction, int64_t bytes,
                                             const BenchSettings& settings);
  // Fills the inputs of |tensors|; on failure waits for the fills already enqueued, so that the
  // caller may free the buffers.
  Status Fill(const RotatedTensors& tensors, int64_t inputs, int64_t elements);

  int device_;
  Stream stream_;  // destroyed after the benches below, which run on it
  std::unique_ptr<GemmBench> gemm_;
  std::unique_ptr<SdpaBench> sdpa_;
  Status sdpa_error_;  // why sdpa_ is null
  int64_t l2_bytes_;
};

DeviceFacts CudaKernelBench::Facts() {
  DeviceFacts facts;
  ProfileDevice& device = facts.device;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device_) == cudaSuccess) {
    device.name = properties.name;
    device.sm_count = properties.multiProcessorCount;
    device.memory_bytes = static_cast<int64_t>(properties.totalGlobalMem);
    device.compute_capability =
        std::to_string(properties.major) + "." + std::to_string(properties.minor);
  } else {
    cudaGetLastError();
    device.name = "CUDA device " + std::to_string(device_);
  }
  device.l2_bytes = Attribute(cudaDevAttrL2CacheSize, device_);
  // Both are peak clocks in kHz (driver_types.h); CUDA 13 dropped them from cudaDeviceProp.
  if (std::optional<int64_t> sm_khz = Attribute(cudaDevAttrClockRate, device_))
    device.sm_clock_mhz = *sm_khz / 1000;
  if (std::optional<int64_t> memory_khz = Attribute(cudaDevAttrMemoryClockRate, device_)) {
    device.memory_clock_mhz = *memory_khz / 1000;
  }
  facts.driver_version = DriverVersion();
  int runtime = 0;
  facts.cuda_version =
      cudaRuntimeGetVersion(&runtime) == cudaSuccess ? CudaVersionString(runtime) : "unknown";
  facts.library_versions = {
      {"cublaslt", CublasLtVersionString(cublasLtGetVersion())},
      {"cudnn", CudnnVersionString()},
      {"nccl", NcclVersionString()},
  };
  return facts;
}

Result<std::vector<double>> CudaKernelBench::TimeMemory(MemoryKernel kernel, int64_t bytes,
                                                        const BenchSettings& settings) {
  LOOM_CUDA(cudaSetDevice(device_));
  switch (kernel) {
    case MemoryKernel::kCopy:
      return TimeCopy(bytes, settings);
    case MemoryKernel::kRmsNorm:
      return TimeRmsNorm(bytes, settings);
    case MemoryKernel::kSwiGlu:
      return TimeSwiGlu(bytes, settings);
  }
  return Status::InvalidArgument("unknown memory kernel");
}

Result<std::vector<double>> CudaKernelBench::TimeHost(HostMeasure measure, int64_t bytes,
                                                      const BenchSettings& settings) {
  LOOM_CUDA(cudaSetDevice(device_));
  switch (measure) {
    case HostMeasure::kLaunch:
      return TimeLaunch(settings);
    case HostMeasure::kHostToDevice:
    case HostMeasure::kDeviceToHost:
      return TimePinnedCopy(measure, bytes, settings);
  }
  return Status::InvalidArgument("unknown host measure");
}

Status CudaKernelBench::Fill(const RotatedTensors& tensors, int64_t inputs, int64_t elements) {
  Status filled = tensors.FillInputs(inputs, elements, stream_.get());
  if (!filled.ok()) cudaStreamSynchronize(stream_.get());
  return filled;
}

// Tensor 0 is the source, 1 the destination.
Result<std::vector<double>> CudaKernelBench::TimeCopy(int64_t bytes,
                                                      const BenchSettings& settings) {
  LOOM_RETURN_IF_ERROR(CheckPositive(bytes, "memory kernel copy"));
  LOOM_ASSIGN_OR_RETURN(RotatedTensors tensors,
                        RotatedTensors::Allocate(bytes, 2, l2_bytes_, settings.rotate_inputs));
  cudaStream_t stream = stream_.get();
  auto launch = [&](int64_t run) -> Status {
    LOOM_CUDA(cudaMemcpyAsync(tensors.Tensor(run, 1), tensors.Tensor(run, 0),
                              static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream));
    return Status::Ok();
  };
  return TimeOnStream(stream, launch, settings);
}

// Rows of 8192 bf16 values: tensor 0 is x, 1 is y; one weight vector for every copy.
Result<std::vector<double>> CudaKernelBench::TimeRmsNorm(int64_t bytes,
                                                         const BenchSettings& settings) {
  if (bytes < kRmsNormRowBytes) {
    return Status::InvalidArgument("memory kernel rmsnorm: bytes (" + std::to_string(bytes) +
                                   ") must be at least 16 KiB, one row of 8192 bf16 values");
  }
  const int64_t rows = (bytes + kRmsNormRowBytes / 2) / kRmsNormRowBytes;  // nearest whole row
  LOOM_ASSIGN_OR_RETURN(
      RotatedTensors tensors,
      RotatedTensors::Allocate(rows * kRmsNormRowBytes, 2, l2_bytes_, settings.rotate_inputs));
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer weight, AllocateDevice(kRmsNormRowBytes));
  cudaStream_t stream = stream_.get();
  LOOM_CUDA(FillRandom(weight.get(), kRmsNormCols, Dtype::kBf16, 0, stream));
  LOOM_RETURN_IF_ERROR(Fill(tensors, 1, rows * kRmsNormCols));
  const void* gain = weight.get();
  auto launch = [&](int64_t run) -> Status {
    LOOM_CUDA(RmsNormBf16(tensors.Tensor(run, 0), gain, tensors.Tensor(run, 1), rows, kRmsNormCols,
                          stream));
    return Status::Ok();
  };
  return TimeOnStream(stream, launch, settings);
}

// Tensors 0 and 1 are gate and up, each of |bytes|; 2 is the product.
Result<std::vector<double>> CudaKernelBench::TimeSwiGlu(int64_t bytes,
                                                        const BenchSettings& settings) {
  const int64_t elements = bytes / 2;
  if (elements <= 0) {
    return Status::InvalidArgument("memory kernel swiglu: bytes (" + std::to_string(bytes) +
                                   ") must hold at least one bf16 value");
  }
  LOOM_ASSIGN_OR_RETURN(RotatedTensors tensors, RotatedTensors::Allocate(elements * 2, 3, l2_bytes_,
                                                                         settings.rotate_inputs));
  LOOM_RETURN_IF_ERROR(Fill(tensors, 2, elements));
  cudaStream_t stream = stream_.get();
  auto launch = [&](int64_t run) -> Status {
    LOOM_CUDA(SwiGluBf16(tensors.Tensor(run, 0), tensors.Tensor(run, 1), tensors.Tensor(run, 2),
                         elements, stream));
    return Status::Ok();
  };
  return TimeOnStream(stream, launch, settings);
}

// One empty kernel takes 2-4 us to launch, and CUDA events resolve about 0.5 us, too coarse to
// time it alone; so each repeat times kLaunchesPerRepeat launches back to back and reports their
// mean, the rate at which the host can issue kernels to a busy stream.
Result<std::vector<double>> CudaKernelBench::TimeLaunch(const BenchSettings& settings) {
  cudaStream_t stream = stream_.get();
  auto launch = [&](int64_t) -> Status {
    for (int64_t i = 0; i < kLaunchesPerRepeat; ++i) LOOM_CUDA(EmptyKernel(stream));
    return Status::Ok();
  };
  Result<std::vector<double>> batches_us = TimeOnStream(stream, launch, settings);
  if (!batches_us.ok()) return batches_us;
  std::vector<double> per_launch_us = std::move(batches_us).value();
  for (double& time_us : per_launch_us) time_us /= static_cast<double>(kLaunchesPerRepeat);
  return per_launch_us;
}

Result<std::vector<double>> CudaKernelBench::TimePinnedCopy(HostMeasure direction, int64_t bytes,
                                                            const BenchSettings& settings) {
  const bool to_device = direction == HostMeasure::kHostToDevice;
  LOOM_RETURN_IF_ERROR(CheckPositive(bytes, to_device ? "h2d" : "d2h"));
  void* host = nullptr;
  LOOM_CUDA(cudaMallocHost(&host, static_cast<size_t>(bytes)));
  PinnedBuffer pinned(host);
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer device, AllocateDevice(bytes));
  void* destination = to_device ? device.get() : host;
  const void* source = to_device ? static_cast<const void*>(host) : device.get();
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  cudaStream_t stream = stream_.get();
  auto launch = [&](int64_t) -> Status {
    LOOM_CUDA(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes), kind, stream));
    return Status::Ok();
  };
  return TimeOnStream(stream, launch, settings);
}

}  // namespace

Result<std::unique_ptr<KernelBench>> MakeCudaKernelBench(int device) {
  LOOM_CUDA(cudaSetDevice(device));
  cudaStream_t raw_stream = nullptr;
  LOOM_CUDA(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
  Stream stream(raw_stream);
  int l2_bytes = 0;
  LOOM_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<GemmBench> gemm, GemmBench::Create(raw_stream));
  // Without cuDNN attention the other kernels can still be measured: TimeAttention returns why.
  Result<std::unique_ptr<SdpaBench>> sdpa = SdpaBench::Create(raw_stream);
  return std::unique_ptr<KernelBench>(
      new CudaKernelBench(device, std::move(stream), std::move(gemm), std::move(sdpa), l2_bytes));
}

}  // namespace loom::cuda
