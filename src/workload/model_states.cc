#include "workload/model_states.h"

#include <limits>
#include <string>

#include "core/checked.h"

namespace loom {

MemoryShape OptimizerStepTraffic(int64_t params, Dtype dtype, Optimizer optimizer,
                                 bool grad_reduce_in_bf16) {
  const StateBytesPerParam per_param = BytesPerParameter(dtype, optimizer, grad_reduce_in_bf16);
  const bool full_precision = per_param.weight == 4;  // fp32 and tf32 keep no master copy
  const bool fp16 = dtype == Dtype::kFp16;
  const int64_t gradient = per_param.gradient;
  int64_t read = 4, written = 0;  // the gradient norm
  if (!full_precision && gradient == 2) {
    read += 2;  // the 2-byte model gradient copied to the fp32 main gradient
    written += 4;
  }
  if (fp16) {
    read += 4;  // unscale and check for inf/NaN
    written += 4;
  }
  switch (optimizer) {
    case Optimizer::kAdam:
      read += 16;
      written += 12;
      break;
    case Optimizer::kSgd:
      read += 12;
      written += 8;
      break;
    case Optimizer::kAdafactor:
      read += 12;
      written += 4;
      break;
  }
  if (!full_precision) {
    read += 4;
    written += 2;
  }
  written += gradient;  // zeroing the gradient buffer
  const CheckedInt r = CheckedInt(params) * read, w = CheckedInt(params) * written;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return MemoryShape{r.overflowed() ? kMax : r.value(), w.overflowed() ? kMax : w.value()};
}

Result<ModelStateBytes> ModelStates(int64_t params, Dtype dtype, Optimizer optimizer,
                                    bool grad_reduce_in_bf16) {
  StateBytesPerParam per_param = BytesPerParameter(dtype, optimizer, grad_reduce_in_bf16);
  CheckedInt weights = CheckedInt(params) * per_param.weight;
  CheckedInt gradients = CheckedInt(params) * per_param.gradient;
  CheckedInt optimizer_bytes = CheckedInt(params) * per_param.optimizer;
  CheckedInt total = weights + gradients + optimizer_bytes;
  if (total.overflowed()) {
    return Status::InvalidArgument(
        "model states of " + std::to_string(params) +
        " parameters overflow 64-bit byte counts; check the model's sizes");
  }
  return ModelStateBytes{weights.value(), gradients.value(), optimizer_bytes.value()};
}

int64_t MinGpusForModelStates(const ModelStateBytes& states, int64_t gpu_memory_bytes) {
  return CeilDiv(states.Total(), gpu_memory_bytes);
}

namespace {

// Bytes of one state of |p| under ZeRO: a 1/|ranks| shard of each group when |sharded|.
CheckedInt StateBytes(const RankParameters& p, int64_t dense_ranks, int64_t expert_ranks,
                      bool sharded, int64_t bytes_per_param) {
  const int64_t dense = sharded ? CeilDiv(p.dense, dense_ranks) : p.dense;
  const int64_t expert = sharded ? CeilDiv(p.expert, expert_ranks) : p.expert;
  return (CheckedInt(dense) + expert) * bytes_per_param;
}

}  // namespace

Result<RankModelStates> ModelStatesPerRank(const ModelSpec& model, const Strategy& strategy,
                                           int64_t stage) {
  LOOM_ASSIGN_OR_RETURN(RankParameters params, ParametersPerRank(model, strategy, stage));
  if (strategy.zero_stage < 0 || strategy.zero_stage > 3) {
    return Status::InvalidArgument(
        "--zero " + std::to_string(strategy.zero_stage) +
        ": ZeRO has stages 0 to 3 (Rajbhandari et al. 2020); use 0, 1, 2 or 3");
  }
  const int64_t dense_ranks = strategy.dp * strategy.cp;
  const int64_t expert_grid = strategy.ep * strategy.ExpertTp();
  if (strategy.dp < 1 || strategy.cp < 1 || expert_grid < 1 ||
      (strategy.tp * dense_ranks) % expert_grid != 0) {
    return Status::InvalidArgument(
        "--tp " + std::to_string(strategy.tp) + " * --dp " + std::to_string(strategy.dp) +
        " * --cp " + std::to_string(strategy.cp) + " must be a positive multiple of --ep " +
        std::to_string(strategy.ep) + " * --etp " + std::to_string(strategy.ExpertTp()) +
        " (the expert grid is carved out of those ranks); change --ep or --etp");
  }
  const int64_t expert_ranks = strategy.ExpertDp();
  const StateBytesPerParam per = BytesPerParameter(strategy);
  const int64_t zero = strategy.zero_stage;
  CheckedInt weights = StateBytes(params, dense_ranks, expert_ranks, zero >= 3, per.weight);
  CheckedInt gradients = StateBytes(params, dense_ranks, expert_ranks, zero >= 2, per.gradient);
  CheckedInt optimizer = StateBytes(params, dense_ranks, expert_ranks, zero >= 1, per.optimizer);
  if ((weights + gradients + optimizer).overflowed()) {
    return Status::InvalidArgument("model-state bytes of pipeline stage " + std::to_string(stage) +
                                   " overflow 64-bit byte counts; check the model's sizes");
  }
  RankModelStates states;
  states.parameters = params;
  states.gpu = {weights.value(), gradients.value(), optimizer.value()};
  if (strategy.offload != Offload::kNone) {
    states.host.optimizer = states.gpu.optimizer;
    states.gpu.optimizer = 0;
  }
  if (strategy.offload == Offload::kOptimizerAndParams) {
    states.host.weights = states.gpu.weights;
    states.gpu.weights = 0;
  }
  return states;
}

}  // namespace loom
