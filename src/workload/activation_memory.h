#ifndef LOOM_WORKLOAD_ACTIVATION_MEMORY_H_
#define LOOM_WORKLOAD_ACTIVATION_MEMORY_H_

#include <cstdint>

#include "core/status.h"
#include "op/op.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// Activation bytes of one layer (or of the embedding or output stage) for one micro-batch, summed
// from the tensors its ops keep for backward (Op::saved_bytes), not from a closed formula.
// For Megatron's unfused attention with dropout and fp16 they equal Korthikanti et al. 2022,
// Table 2 (tests/workload/activation_memory_test.cc checks every row); the fused kernel drops the
// 5as/h term and keeps 4 bytes of log-sum-exp per query row and head instead.
struct ActivationBytes {
  // Kept from the layer's forward until its backward.
  int64_t kept = 0;
  // Allocated by the recompute replay just before the layer's backward and freed by it: the
  // softmax probabilities with selective recompute, the whole layer's with full.
  int64_t recompute = 0;
};

ActivationBytes SumActivationBytes(const LayerOps& ops);

// The activation bytes of layer |options.layer| under |strategy.recompute|.
Result<ActivationBytes> LayerActivationBytes(const ModelSpec& model, const Strategy& strategy,
                                             const LayerOpsOptions& options = {});

// Bytes kept per micro-batch by the |num_layers| layers starting at |first_layer|, of which the
// first |full_recompute_layers| are fully recomputed and the rest follow |strategy.recompute|
// (Megatron-LM's --recompute-method block --recompute-num-layers). |options.layer| is ignored.
// Errors: those of BuildTransformerLayerOps, and InvalidArgument for a layer range outside the
// model or full_recompute_layers outside [0, num_layers].
Result<int64_t> KeptActivationBytes(const ModelSpec& model, const Strategy& strategy,
                                    int64_t first_layer, int64_t num_layers,
                                    int64_t full_recompute_layers,
                                    const LayerOpsOptions& options = {});

}  // namespace loom

#endif  // LOOM_WORKLOAD_ACTIVATION_MEMORY_H_
