#ifndef LOOM_DEVICE_CUDA_SDPA_SUPPORT_H_
#define LOOM_DEVICE_CUDA_SDPA_SUPPORT_H_

#include <cstdint>
#include <string>

#include "core/status.h"
#include "op/op.h"

namespace loom::cuda {

// Which attention shapes loom's SDPA graphs (sdpa_graph.h) may be planned for on a given cuDNN
// version: the checks cudnn-frontend makes before it builds the same graphs, for the features those
// graphs use (bf16/fp16, no mask or a top-left causal mask; no padding, bias, dropout or paging).
// cuDNN accepts some of these graphs on versions where they run wrongly (cudnn-frontend: "not
// supported ... due to known bugs"), so loom refuses them here rather than leaving it to cuDNN.
// Pure functions of their arguments: tested on a CPU.

enum class SdpaPass { kForward, kBackward };

// cuDNN's version number as cudnnGetVersion() returns it (major * 10000 + minor * 100 + patch,
// cudnn_version.h) in words: 91500 -> "9.15.0".
std::string CudnnVersionName(int64_t cudnn_version);

// OK when cudnn-frontend would build |pass| of |shape| on cuDNN |cudnn_version| as loom's graph
// builds it; otherwise Unimplemented, naming the shape, the cuDNN version, the reason and the fix.
// The limits that depend on the GPU's architecture (the largest head dim) are cuDNN's to refuse.
// REQUIRES: CheckSdpaShape(shape).ok().
Status CheckCudnnSdpaSupport(const AttentionShape& shape, SdpaPass pass, int64_t cudnn_version);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_SDPA_SUPPORT_H_
