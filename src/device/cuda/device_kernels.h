#ifndef LOOM_DEVICE_CUDA_DEVICE_KERNELS_H_
#define LOOM_DEVICE_CUDA_DEVICE_KERNELS_H_

#include <cstdint>

#include <cuda_runtime.h>

#include "core/dtype.h"

namespace loom::cuda {

// loom's own kernels (device_kernels.cu), launched on |stream|; each returns the launch's error.

// Fills |elements| values of |dtype| at |data| with uniform random numbers in [-1, 1) from a
// counter-based hash of (|seed|, index): never zeros (a GEMM on zeros runs faster than on data,
// as the H200 notes of this workplace measured: 894 against 788 TFLOP/s). fp8 is e4m3.
cudaError_t FillRandom(void* data, int64_t elements, Dtype dtype, uint64_t seed,
                       cudaStream_t stream);

// y = x / sqrt(mean(x^2) + 1e-5) * weight over |rows| rows of |cols| bf16 values (weight: cols
// values). One block per row.
cudaError_t RmsNormBf16(const void* x, const void* weight, void* y, int64_t rows, int64_t cols,
                        cudaStream_t stream);

// out = silu(gate) * up over |elements| bf16 values.
cudaError_t SwiGluBf16(const void* gate, const void* up, void* out, int64_t elements,
                       cudaStream_t stream);

// Reads |bytes_read| bytes at |src| and writes |bytes_written| bytes at |dst|, each byte once, in
// coalesced 16-byte accesses (the tails byte by byte): the HBM traffic of a memory-bound op of
// loom's op stream. What it writes depends on what it read (each thread XORs its reads into its
// writes, and into a sink when it reads more than it writes), so the compiler keeps every read.
// Either count may be 0. cudaErrorInvalidValue for a negative count or a pointer that is not
// 16-byte aligned (cudaMalloc's are 256-byte aligned).
// The two ranges may start at one address (an op in place, as the op runner runs them); they must
// not overlap otherwise.
cudaError_t StreamBytes(const void* src, int64_t bytes_read, void* dst, int64_t bytes_written,
                        cudaStream_t stream);

// A kernel of one block of one thread that does nothing: its time is the launch overhead.
cudaError_t EmptyKernel(cudaStream_t stream);

// A kernel of one block of one thread that returns once the GPU's global timer (%globaltimer, in
// nanoseconds) has advanced |nanoseconds| past its start: a stand-in that takes a given time on
// its stream and holds one SM's slot, for communication a lone GPU cannot run. Nothing for
// |nanoseconds| <= 0.
cudaError_t SpinFor(int64_t nanoseconds, cudaStream_t stream);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_DEVICE_KERNELS_H_
