#include "device/cuda/sdpa_run.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device/cuda/cuda_check.h"

namespace loom::cuda {

SdpaScalars SdpaScalarsOf(const AttentionShape& shape) {
  SdpaScalars scalars;
  scalars.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim_qk));
  return scalars;
}

Result<BackendDescriptor> MakeSdpaVariantPack(const ExecutionPlan& plan,
                                              const SdpaAddresses& addresses, void* workspace,
                                              SdpaScalars& scalars) {
  SdpaAddresses all = addresses;
  all[kScale] = &scalars.scale;
  all[kNegativeInfinity] = &scalars.negative_infinity;
  all[kOne] = &scalars.one;
  // The pointers in the order of plan.uids, as the variant pack pairs them.
  std::vector<void*> pointers;
  for (int64_t uid : plan.uids) {
    if (uid < 0 || uid >= static_cast<int64_t>(kSdpaUidCount) ||
        all[static_cast<size_t>(uid)] == nullptr) {
      return Status::Internal("SDPA variant pack: no device address for the tensor of uid " +
                              std::to_string(uid));
    }
    pointers.push_back(all[static_cast<size_t>(uid)]);
  }
  const int64_t count = static_cast<int64_t>(pointers.size());
  LOOM_ASSIGN_OR_RETURN(BackendDescriptor pack,
                        MakeDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  LOOM_RETURN_IF_ERROR(SetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                    CUDNN_TYPE_INT64, count, plan.uids.data()));
  LOOM_RETURN_IF_ERROR(SetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                    CUDNN_TYPE_VOID_PTR, count, pointers.data()));
  LOOM_RETURN_IF_ERROR(SetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                    CUDNN_TYPE_VOID_PTR, 1, &workspace));
  LOOM_CUDNN(cudnnBackendFinalize(pack.get()));
  return pack;
}

Status ExecuteSdpa(cudnnHandle_t handle, const ExecutionPlan& plan, const BackendDescriptor& pack) {
  LOOM_CUDNN(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
  return Status::Ok();
}

}  // namespace loom::cuda
