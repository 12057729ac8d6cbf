#ifndef LOOM_WORKLOAD_MODEL_STATES_H_
#define LOOM_WORKLOAD_MODEL_STATES_H_

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "op/op.h"
#include "spec/model.h"
#include "spec/state_bytes.h"
#include "spec/strategy.h"

namespace loom {

// HBM traffic of one optimizer step over |params| parameters, pass by pass as Megatron-LM's
// mixed-precision optimizer runs it (megatron/core/optimizer/optimizer.py,
// Float16OptimizerWithFloat16Params.step; FP32Optimizer for fp32), per parameter:
// - 2-byte gradient buffers (fp16, or bf16 with |grad_reduce_in_bf16|): copy the model gradient
//   to the fp32 main gradient (r2 w4; main_grad.float()). fp16 then unscales it and checks it for
//   inf/NaN in place (r4 w4; the dynamic loss scaler, which bf16 does not use). bf16 by default
//   accumulates its gradients in fp32 from the start, so the main gradient is that buffer and
//   neither pass runs.
// - the gradient norm for clipping (--clip-grad 1.0 by default): r4.
// - the update (apex/Transformer Engine FusedAdam): reads weight, gradient and both moments
//   (r16), writes weight and moments (w12); SGD with momentum r12 w8; Adafactor r12 w4 (weight
//   and gradient, the gradient again for its row and column sums; factored moments negligible).
// - mixed precision: copy the fp32 master weight to the 2-byte model weight (r4 w2).
// - zeroing the gradient buffer for the next step: w2 (2-byte buffer) or w4 (fp32 buffer).
// fp8 keeps bf16 weights and bf16's gradient buffer, so it costs what bf16 costs. The result
// saturates at INT64_MAX bytes rather than overflow. |grad_reduce_in_bf16| false is
// Megatron-LM's default.
MemoryShape OptimizerStepTraffic(int64_t params, Dtype dtype, Optimizer optimizer,
                                 bool grad_reduce_in_bf16 = false);

// Model-state bytes of |params| parameters, unsharded.
struct ModelStateBytes {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;

  int64_t Total() const { return weights + gradients + optimizer; }
};

// BytesPerParameter(dtype, optimizer, grad_reduce_in_bf16) times |params|; false is Megatron-LM's
// default (fp32 gradient buffers for bf16). An error if a byte count overflows 64 bits.
Result<ModelStateBytes> ModelStates(int64_t params, Dtype dtype, Optimizer optimizer,
                                    bool grad_reduce_in_bf16 = false);

// The fewest GPUs of |gpu_memory_bytes| whose memory can hold |states| when every state is
// sharded across them (ZeRO-3, or TP x PP). A lower bound: activations, communication buffers and
// the CUDA context need more. REQUIRES: gpu_memory_bytes > 0.
int64_t MinGpusForModelStates(const ModelStateBytes& states, int64_t gpu_memory_bytes);

// The parameters one rank holds before ZeRO sharding: those of its pipeline stage split over tp.
struct RankParameters {
  // Parameters sharded over the data-parallel ranks: attention, norms, dense MLPs, router,
  // shared experts, embedding and head.
  int64_t dense = 0;
  // Parameters of this rank's routed experts (num_experts / ep of each MoE layer, each split over
  // etp), sharded over the expert-data-parallel ranks (Strategy::ExpertDp).
  int64_t expert = 0;

  int64_t Total() const { return dense + expert; }
};

// Parameters of a rank of pipeline stage |stage| (0-based), as Megatron-LM places them:
// - The layers of LayersPerVirtualStage per model chunk; with vpp chunks per stage, stage p holds
//   chunks p, p + pp, ... (Narayanan et al. 2021, Section 2.2.2).
// - The first stage holds the input embedding, the last the final norm and output head; with tied
//   embeddings and pp > 1 both hold a copy (Megatron keeps them equal by an all-reduce of their
//   gradients); with pp = 1 the one table serves both.
// - Column- and row-parallel weights and the biases of column-parallel layers are split over tp;
//   norms, row-parallel biases, learned positions and the MoE router are replicated
//   (Shoeybi et al. 2019, Section 3). The vocabulary is padded as PaddedVocabSize.
// - Routed experts are split over ep, each expert's MLP over Strategy::ExpertTp (Megatron's
//   --expert-tensor-parallel-size, tp by default); shared experts over tp.
// Errors: InvalidArgument for a stage outside [0, pp), layers that do not split over pp * vpp,
// sizes that do not split over tp (or the expert size over etp) or experts over ep. Multi-head
// latent attention keeps its down projections and their norms whole on every tp rank.
Result<RankParameters> ParametersPerRank(const ModelSpec& model, const Strategy& strategy,
                                         int64_t stage);

// Parameters of transformer layer |layer| (0-based) on one rank, split as ParametersPerRank splits
// them: the attention, the two norms and the MLP or, in an MoE layer, the router, the shared
// experts and the rank's num_experts / ep routed experts. The sizes are not checked to split over
// tp, etp and ep (LayerSplitViolations, spec/strategy.h, states that rule). Errors: InvalidArgument
// for a layer outside [0, num_hidden_layers), a degree below 1, or a count that overflows.
Result<int64_t> LayerParametersPerRank(const ModelSpec& model, const Strategy& strategy,
                                       int64_t layer);

// Model-state bytes of one rank, on its GPU and on its host.
struct RankModelStates {
  RankParameters parameters;
  ModelStateBytes gpu;
  ModelStateBytes host;
};

// ParametersPerRank with BytesPerParameter(strategy), sharded by ZeRO
// (Rajbhandari et al. 2020, Section 5): stage 1 shards the optimizer states, stage 2 also the
// gradients, stage 3 also the weights, each over the ranks that hold the same parameters: dp * cp
// for dense parameters (Megatron's distributed optimizer shards over data and context parallel
// ranks), Strategy::ExpertDp() = tp * dp * cp / (ep * etp) for routed experts. A shard is
// rounded up to whole parameters. With optimizer offload the (sharded) optimizer states live on the
// host (ZeRO-Offload, Ren et al. 2021, Section 4.1); with optimizer+params offload the weight shard
// lives there too, fetched to the GPU layer by layer when ZeRO-3 gathers it (ZeRO-Infinity,
// Rajbhandari et al. 2021). Errors: those of ParametersPerRank; InvalidArgument if tp * dp * cp
// does not split over ep * etp or a byte count overflows.
Result<RankModelStates> ModelStatesPerRank(const ModelSpec& model, const Strategy& strategy,
                                           int64_t stage);

}  // namespace loom

#endif  // LOOM_WORKLOAD_MODEL_STATES_H_
