#ifndef LOOM_WORKLOAD_GRAD_ACCUMULATION_H_
#define LOOM_WORKLOAD_GRAD_ACCUMULATION_H_

#include <cstdint>

#include "op/op.h"
#include "spec/strategy.h"

namespace loom {

// Bytes of the buffer one parameter's gradient is accumulated in over a step's micro-batches:
// Megatron-LM's main_grad (BytesPerParameter(strategy).gradient: fp32 for bf16 and fp8 unless
// grad_reduce_in_bf16, 2 bytes for fp16) with fused or add, the parameter's own dtype
// (BytesPerParameter(strategy).weight) with autograd.
int64_t GradAccumulatorBytes(const Strategy& strategy);

// Adds to |ops|, the ops of one block (a transformer layer, the embedding or the output stage)
// for one micro-batch, the accumulation of its weight gradients into the step's gradients, as
// |strategy.grad_accumulation| does it (spec/strategy.h, GradAccumulation). |params| are the
// parameters the block holds on this rank (LayerParametersPerRank for a layer).
// - fused with an fp32 accumulator: every GEMM of |ops->backward_weight| but the MoE router's
//   accumulates into it (GemmShape::accumulate_fp32); with a 2-byte accumulator the GEMM writes
//   into it with beta = 1 instead, a cost this model does not separate from the GEMM's. The
//   parameters no GEMM covers (|params| less the GEMMs' m * n * batch: biases, norm weights,
//   embedding tables, the router) are added by one op named kGradAccumulate.
// - add: that op adds every parameter.
// - autograd: every parameter, but only from the second micro-batch on; the op carries the
//   average over the step's micro-batches, (m - 1) / m of the adds, and is absent with one
//   micro-batch.
// An add reads the accumulator and the new gradient (written in the parameter's dtype) and writes
// the accumulator, once per micro-batch: traffic proportional to the parameters per GPU, whatever
// the tokens of a micro-batch. The op is the last of the W list, after the gradients it adds.
// REQUIRES: ValidateStrategy(strategy, ...) passed (micro-batches >= 1).
void AppendGradAccumulation(const Strategy& strategy, int64_t params, LayerOps* ops);

}  // namespace loom

#endif  // LOOM_WORKLOAD_GRAD_ACCUMULATION_H_
