#ifndef LOOM_WORKLOAD_MODEL_STATES_H_
#define LOOM_WORKLOAD_MODEL_STATES_H_

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "spec/strategy.h"

namespace loom {

// Bytes held per parameter for the model states of mixed-precision training: the weights the
// kernels read, their gradients, and the optimizer's states (fp32 master weights included).
struct StateBytesPerParam {
  int64_t weight = 0;
  int64_t gradient = 0;
  int64_t optimizer = 0;

  int64_t Total() const { return weight + gradient + optimizer; }
};

// Per-parameter bytes for training in |dtype| with |optimizer|:
// - bf16/fp16 + Adam: 2 + 2 + 12 (fp32 master, momentum, variance) — Rajbhandari et al. 2020,
//   "ZeRO", Section 3.1 (K = 12).
// - fp8: Transformer Engine keeps bf16 weights and casts to fp8 per GEMM, so the states are those
//   of bf16 (Micikevicius et al. 2022, "FP8 Formats for Deep Learning", Section 4).
// - fp32/tf32: 4-byte weights and gradients, no separate master copy.
// - Adafactor: master weights only; its factored second moment keeps rows + columns per matrix
//   and no first moment with beta1 = 0 (Shazeer & Stern 2018, Section 3), under 0.1% of a
//   parameter for matrices wider than 1024, so it is not counted.
// - SGD with momentum: master weights and one momentum buffer.
StateBytesPerParam BytesPerParameter(Dtype dtype, Optimizer optimizer);

// Model-state bytes of |params| parameters, unsharded.
struct ModelStateBytes {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;

  int64_t Total() const { return weights + gradients + optimizer; }
};

// An error if a byte count overflows 64 bits.
Result<ModelStateBytes> ModelStates(int64_t params, Dtype dtype, Optimizer optimizer);

// The fewest GPUs of |gpu_memory_bytes| whose memory can hold |states| when every state is
// sharded across them (ZeRO-3, or TP x PP). A lower bound: activations, communication buffers and
// the CUDA context need more. REQUIRES: gpu_memory_bytes > 0.
int64_t MinGpusForModelStates(const ModelStateBytes& states, int64_t gpu_memory_bytes);

}  // namespace loom

#endif  // LOOM_WORKLOAD_MODEL_STATES_H_
