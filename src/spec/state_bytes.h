#ifndef LOOM_SPEC_STATE_BYTES_H_
#define LOOM_SPEC_STATE_BYTES_H_

#include <cstdint>

#include "core/dtype.h"
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

// Per-parameter bytes of training in |dtype| with |optimizer|, as Megatron-LM keeps them:
// - bf16 + Adam: 2-byte weights, 4-byte gradients, 12 bytes of fp32 master weight, momentum and
//   variance: 18 bytes. Megatron-LM accumulates and reduces bf16 gradients in an fp32 buffer (it
//   forces accumulate_allreduce_grads_in_fp32 for --bf16); docs/source/api-guide/dist_optimizer.md
//   tabulates "bf16 param, fp32 grads" as 18 bytes, 6 + 12/d with the distributed optimizer.
//   |grad_reduce_in_bf16| (--grad-reduce-in-bf16) keeps 2-byte gradients instead: 16 bytes.
// - fp16 + Adam: 2 + 2 + K with K = 12 (Rajbhandari et al. 2020, "ZeRO", Section 3.1): fp16
//   gradients are accumulated and reduced in fp16. (Megatron-LM's table counts 20 for fp16: its
//   fp16 optimizer also holds an fp32 copy of the gradients while it steps, a transient buffer that
//   ZeRO's accounting and this one leave out.)
// - fp8: Transformer Engine keeps bf16 weights and casts them to fp8 per GEMM (Micikevicius et al.
//   2022, "FP8 Formats for Deep Learning", Section 4), and Megatron-LM runs fp8 on top of --bf16,
//   so the states, gradients included, are those of bf16.
// - fp32/tf32: 4-byte weights and gradients, no separate master copy: 16 bytes with Adam, as
//   Megatron-LM's table has it.
// - SGD with momentum: master weights and one momentum buffer (K = 8).
// - Adafactor with beta1 = 0 (no first moment): master weights only (K = 4). Its factored second
//   moment keeps r + c fp32 values for an r x c matrix (Shazeer & Stern 2018, Section 3), which is
//   1/r + 1/c of a value per parameter: 0.04% of the parameters of Llama 3 8B
//   (model_states_test.cc proves it under 0.1% for the shipped models it names), so it is not
//   counted.
// |grad_reduce_in_bf16| matters only to bf16 and fp8.
StateBytesPerParam BytesPerParameter(Dtype dtype, Optimizer optimizer, bool grad_reduce_in_bf16);

// BytesPerParameter of |strategy|'s dtype, optimizer and grad_reduce_in_bf16.
StateBytesPerParam BytesPerParameter(const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_SPEC_STATE_BYTES_H_
