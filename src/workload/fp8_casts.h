#ifndef LOOM_WORKLOAD_FP8_CASTS_H_
#define LOOM_WORKLOAD_FP8_CASTS_H_

#include "workload/layer_ops.h"

namespace loom {

// Transformer Engine's casts around the fp8 GEMMs of a block's linear layers (transformer_engine/
// pytorch/module/linear.py, _Linear at NVIDIA/TransformerEngine v0.10 and since): in forward the
// bf16 input is cast to fp8 together with its transpose, which the weight-gradient GEMM reads
// (fp8_cast_transpose_fused: reads 2 bytes, writes 1 + 1 per element), before the GEMM; in backward
// the output gradient likewise (fp8_cast_transpose_bgrad_fused), before the input-gradient GEMM.
// The weight is cast with its transpose too (2 bytes read, 2 written per weight) before each
// forward GEMM when |weight_cast_every_microbatch| (a caller that passes no is_first_microbatch,
// as llm-foundry's te.Linear layers); Megatron-LM passes it, so TE casts a weight once a step and
// reuses it for the step's other micro-batches, which loom leaves out. Every GEMM of |ops| in fp8
// but the unfused attention core's gets its casts, as a kernel before it (ModuleKernels); the
// recompute list is left alone (the caller builds it from the forward afterwards).
void AppendFp8Casts(bool weight_cast_every_microbatch, LayerOps* ops);

}  // namespace loom

#endif  // LOOM_WORKLOAD_FP8_CASTS_H_
