#ifndef LOOM_PROBE_CUDA_SDPA_BENCH_H_
#define LOOM_PROBE_CUDA_SDPA_BENCH_H_

#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/status.h"
#include "op/op.h"
#include "probe/bench.h"

namespace loom::cuda {

// Fused scaled-dot-product attention through cuDNN 9's graph (backend) API: the SDPA forward
// operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR) and its backward, planned by cuDNN's
// heuristics, executed on one stream. Q, K, V, O and their gradients are BSHD bf16 or fp16
// tensors filled with random data; the forward also writes the fp32 softmax statistics the
// backward reads, as FlashAttention does.
class SdpaBench {
 public:
  // Creates the cuDNN handle on |stream| of the current device.
  static Result<std::unique_ptr<SdpaBench>> Create(cudaStream_t stream);
  virtual ~SdpaBench() = default;

  // Times |shape| (forward, or backward when shape.backward). Unimplemented when cuDNN has no
  // engine for it (a dtype other than bf16/fp16, a head dim it does not support) or this cuDNN
  // version has a known bug for it (CheckCudnnSdpaSupport), naming why; Unavailable when cuDNN
  // cannot load a library it needs, naming the library path to fix; ResourceExhausted when its
  // tensors or workspace do not fit.
  virtual Result<std::vector<double>> Time(const AttentionShape& shape,
                                           const BenchSettings& settings) = 0;
};

// cudnnGetVersion as "9.19.0".
std::string CudnnVersionString();

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_SDPA_BENCH_H_
