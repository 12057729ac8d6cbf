#include "workload/model_states.h"

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
  const int64_t total = states.Total();
  return total / gpu_memory_bytes + (total % gpu_memory_bytes != 0 ? 1 : 0);
}

}  // namespace loom
