#ifndef LOOM_PROBE_BENCH_H_
#define LOOM_PROBE_BENCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "cost/profile.h"
#include "device/cold_l2.h"
#include "op/op.h"

namespace loom {

// The interfaces `loom probe` measures through. The GPU (KernelBench) and NCCL (CollectiveBench)
// are behind them, as the processes are behind device/launcher.h's Launcher, so that the sweep,
// the statistics, the incremental profile and the timeouts run and are tested on a CPU
// (tests/probe/ has fakes); the CUDA implementations live in src/probe/cuda/ and are built only
// with CUDA.

// How many copies of a working set of |bytes_per_copy| to rotate over so that together they
// exceed kColdL2Multiple times |l2_bytes| (at least 1, at most 64); 1 when rotation is off. The
// CUDA benches allocate this many; the dry run's estimate (probe_estimate.h) fills as many.
int64_t RotationCount(int64_t bytes_per_copy, int64_t l2_bytes, bool rotate);

// How many back-to-back operations one timed collective batch runs, so that a batch is long enough
// for CUDA events (about 0.5 us apart at best) to resolve: 20 up to 1 MiB, 5 up to 256 MiB, 1
// above, where one operation already takes milliseconds.
int64_t OperationsPerBatch(int64_t size_bytes);

// How one point is timed.
struct BenchSettings {
  int64_t warmup = 5;    // untimed runs first: clocks ramp up, caches and plans are built
  int64_t repeats = 20;  // timed runs, one time each
  // Inputs are rotated over enough buffers that together exceed the L2 cache, so that a timed
  // run does not read what the previous one left in L2 (an inference-style hot-cache number
  // would be too fast for training, where each weight is read once per micro-batch).
  bool rotate_inputs = true;
};

// The memory-bound kernels loom probe times. Each moves a tensor of |bytes| (the sample's
// bytes_read / bytes_written follow from it: MemoryKernelTraffic).
enum class MemoryKernel {
  kCopy,     // cudaMemcpyAsync device to device: bytes read, bytes written
  kRmsNorm,  // loom's own bf16 RMSNorm over rows of 8192: bytes read, bytes written
  kSwiGlu,   // loom's own bf16 SwiGLU, silu(gate) * up: 2x bytes read, bytes written
};
inline constexpr EnumNames<MemoryKernel, 3> kMemoryKernelNames({{
    {MemoryKernel::kCopy, "copy"},
    {MemoryKernel::kRmsNorm, kProbeRowReductionLabel},
    {MemoryKernel::kSwiGlu, "swiglu"},
}});

// The HBM traffic of |kernel| over a tensor of |bytes|.
MemoryShape MemoryKernelTraffic(MemoryKernel kernel, int64_t bytes);

// What the GPU and its software are.
struct DeviceFacts {
  ProfileDevice device;
  std::string
      driver_version;  // the kernel module's, "580.159.04"; from cudaDriverGetVersion if unreadable
  std::string cuda_version;                                           // the runtime's, "13.0"
  std::vector<std::pair<std::string, std::string>> library_versions;  // cublaslt, cudnn, nccl
};

// One GPU. Every Time* call returns one time per timed repeat, in microseconds, of one run of the
// kernel (not of the batch it may time together), or an error for this point only:
// ResourceExhausted (out of memory), Unimplemented (this GPU or library cannot run the dtype or
// shape), Internal (any other CUDA, cuBLASLt or cuDNN error, with file:line and the library's
// message). After an error the bench is usable for the next point.
class KernelBench {
 public:
  virtual ~KernelBench() = default;

  virtual DeviceFacts Facts() = 0;
  // C = A * B through cuBLASLt, random inputs; fp8 is e4m3 with per-tensor scales.
  virtual Result<std::vector<double>> TimeGemm(const GemmShape& shape,
                                               const BenchSettings& settings) = 0;
  // One fused attention kernel (cuDNN's scaled-dot-product attention), forward or backward as
  // |shape|.backward says.
  virtual Result<std::vector<double>> TimeAttention(const AttentionShape& shape,
                                                    const BenchSettings& settings) = 0;
  virtual Result<std::vector<double>> TimeMemory(MemoryKernel kernel, int64_t bytes,
                                                 const BenchSettings& settings) = 0;
  // kLaunch: an empty kernel (|bytes| is 0); the copies: pinned host memory of |bytes|.
  virtual Result<std::vector<double>> TimeHost(HostMeasure measure, int64_t bytes,
                                               const BenchSettings& settings) = 0;
};

// One operation of a collective sweep.
struct CollectivePoint {
  ProfiledCollective collective = ProfiledCollective::kAllReduce;
  ProbeGroup group = ProbeGroup::kWorld;
  int64_t size_bytes = 0;  // nccl-tests' size column
};

// The times of one collective point on this rank: one per repeat, each the mean over a batch of
// back-to-back operations (as nccl-tests times them), out of place and in place.
struct CollectiveTimes {
  std::vector<double> out_of_place_us;
  std::vector<double> in_place_us;
};

// The NCCL communicators of one probe run: every group of ProbeGroup this rank belongs to.
// Every rank calls Time with the same points in the same order.
class CollectiveBench {
 public:
  virtual ~CollectiveBench() = default;

  // Times |point| on this rank's communicator of |point|.group. Each operation must finish within
  // |timeout_s|; one that does not is aborted (ncclCommAbort) and DeadlineExceeded is returned,
  // naming the operation, size and group; that group's communicator is gone and every later call
  // on it returns Unavailable. ResourceExhausted when the buffers do not fit.
  virtual Result<CollectiveTimes> Time(const CollectivePoint& point, const BenchSettings& settings,
                                       double timeout_s) = 0;
};

}  // namespace loom

#endif  // LOOM_PROBE_BENCH_H_
