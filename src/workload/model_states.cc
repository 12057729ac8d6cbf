#include "workload/model_states.h"

#include <limits>
#include <string>

#include "core/checked.h"

namespace loom {

StateBytesPerParam BytesPerParameter(Dtype dtype, Optimizer optimizer) {
  const bool full_precision = dtype == Dtype::kFp32 || dtype == Dtype::kTf32;
  StateBytesPerParam bytes;
  bytes.weight = full_precision ? 4 : 2;
  bytes.gradient = full_precision ? 4 : 2;
  // fp32 training updates the weights in place; mixed precision keeps a 4-byte master copy.
  const int64_t master = full_precision ? 0 : 4;
  switch (optimizer) {
    case Optimizer::kAdam:
      bytes.optimizer = master + 4 + 4;
      break;
    case Optimizer::kAdafactor:
      bytes.optimizer = master;
      break;
    case Optimizer::kSgd:
      bytes.optimizer = master + 4;
      break;
  }
  return bytes;
}

MemoryShape OptimizerStepTraffic(int64_t params, Dtype dtype, Optimizer optimizer) {
  const bool full_precision = dtype == Dtype::kFp32 || dtype == Dtype::kTf32;
  const bool fp16 = dtype == Dtype::kFp16;
  int64_t read = 4, written = 0;  // the gradient norm
  if (fp16) {
    read += 2 + 4;
    written += 4 + 4;
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
  written += fp16 ? 2 : 4;
  const CheckedInt r = CheckedInt(params) * read, w = CheckedInt(params) * written;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return MemoryShape{r.overflowed() ? kMax : r.value(), w.overflowed() ? kMax : w.value()};
}

Result<ModelStateBytes> ModelStates(int64_t params, Dtype dtype, Optimizer optimizer) {
  StateBytesPerParam per_param = BytesPerParameter(dtype, optimizer);
  CheckedInt weights = CheckedInt(params) * per_param.weight;
  CheckedInt gradients = CheckedInt(params) * per_param.gradient;
  CheckedInt optimizer_bytes = CheckedInt(params) * per_param.optimizer;
  CheckedInt total = weights + gradients + optimizer_bytes;
  if (total.overflowed()) {
    return Status::InvalidArgument("model states of " + std::to_string(params) +
                                   " parameters overflow 64-bit byte counts; check the model's sizes");
  }
  return ModelStateBytes{weights.value(), gradients.value(), optimizer_bytes.value()};
}

int64_t MinGpusForModelStates(const ModelStateBytes& states, int64_t gpu_memory_bytes) {
  return CeilDiv(states.Total(), gpu_memory_bytes);
}

namespace {

// Bytes of one state of |p| under ZeRO: a 1/|ranks| shard of each group when |sharded|.
CheckedInt StateBytes(const RankParameters& p, int64_t dense_ranks, int64_t expert_ranks, bool sharded,
                      int64_t bytes_per_param) {
  const int64_t dense = sharded ? CeilDiv(p.dense, dense_ranks) : p.dense;
  const int64_t expert = sharded ? CeilDiv(p.expert, expert_ranks) : p.expert;
  return (CheckedInt(dense) + expert) * bytes_per_param;
}

}  // namespace

Result<RankModelStates> ModelStatesPerRank(const ModelSpec& model, const Strategy& strategy, int64_t stage) {
  Result<RankParameters> params = ParametersPerRank(model, strategy, stage);
  if (!params.ok()) return params.status();
  if (strategy.zero_stage < 0 || strategy.zero_stage > 3) {
    return Status::InvalidArgument("--zero " + std::to_string(strategy.zero_stage) +
                                   ": ZeRO has stages 0 to 3 (Rajbhandari et al. 2020); use 0, 1, 2 or 3");
  }
  const int64_t dense_ranks = strategy.dp * strategy.cp;
  if (strategy.dp < 1 || strategy.cp < 1 || dense_ranks % strategy.ep != 0) {
    return Status::InvalidArgument("--dp " + std::to_string(strategy.dp) + " * --cp " +
                                   std::to_string(strategy.cp) + " must be a positive multiple of --ep " +
                                   std::to_string(strategy.ep) +
                                   " (expert parallelism is carved out of the data-parallel ranks)");
  }
  const int64_t expert_ranks = dense_ranks / strategy.ep;
  const StateBytesPerParam per = BytesPerParameter(strategy.dtype, strategy.optimizer);
  const int64_t zero = strategy.zero_stage;
  CheckedInt weights = StateBytes(*params, dense_ranks, expert_ranks, zero >= 3, per.weight);
  CheckedInt gradients = StateBytes(*params, dense_ranks, expert_ranks, zero >= 2, per.gradient);
  CheckedInt optimizer = StateBytes(*params, dense_ranks, expert_ranks, zero >= 1, per.optimizer);
  if ((weights + gradients + optimizer).overflowed()) {
    return Status::InvalidArgument("model-state bytes of pipeline stage " + std::to_string(stage) +
                                   " overflow 64-bit byte counts; check the model's sizes");
  }
  RankModelStates states;
  states.parameters = *params;
  states.gpu = {weights.value(), gradients.value(), optimizer.value()};
  if (strategy.offload == Offload::kOptimizer) {
    states.host.optimizer = states.gpu.optimizer;
    states.gpu.optimizer = 0;
  }
  return states;
}

}  // namespace loom
