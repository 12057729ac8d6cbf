#ifndef LOOM_WORKLOAD_BLOCKS_H_
#define LOOM_WORKLOAD_BLOCKS_H_

// Internal to src/workload: the two blocks of a transformer layer. Each returns its own forward,
// B and W lists in execution order; BuildTransformerLayerOps puts them together.

#include <cstdint>
#include <vector>

#include "op/op.h"
#include "workload/layer_dims.h"

namespace loom {

// Pre-norm self-attention with its residual. With selective recompute its recompute list is the
// attention core, and the forward keeps only the core's inputs Q, K and V of it.
LayerOps AttentionBlockOps(const LayerDims& d);

// Pre-norm multi-head latent attention (DeepSeek-V2 Section 2.1) with its residual, as
// Megatron-core's MLASelfAttention runs it: replicated down projections on the rank's own tokens,
// column-parallel up projections, the fused core with query/key heads of qk_nope + qk_rope and
// value heads of v_head_dim, row-parallel output projection. Recompute as AttentionBlockOps.
// REQUIRES: d.mla.
LayerOps LatentAttentionBlockOps(const LayerDims& d);

// Pre-norm dense MLP with its residual; no recompute list of its own.
LayerOps DenseMlpOps(const LayerDims& d);

// Pre-norm mixture of experts with its residual: router, token dispatch, the local experts, token
// combine, and the shared experts if any. REQUIRES: d.moe.
LayerOps MoeMlpOps(const LayerDims& d);

// The projections of a tensor-parallel MLP of |ffn| columns per rank, with their tp collectives:
// the ops between the norm and the residual. |keeps_input| is false when another op already keeps
// the same input tensor (the router, for shared experts).
void AppendMlpForward(const LayerDims& d, int64_t ffn, bool keeps_input, std::vector<Op>* forward);
void AppendMlpBackward(const LayerDims& d, int64_t ffn, std::vector<Op>* backward_input);
void AppendMlpWeightGrads(const LayerDims& d, int64_t ffn, std::vector<Op>* backward_weight);

}  // namespace loom

#endif  // LOOM_WORKLOAD_BLOCKS_H_
