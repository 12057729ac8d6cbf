// How Megatron-DeepSpeed's pipeline splits the transformer layers over its stages (issue 45,
// section 4): DeepSpeed's PipelineModule with partition_method "type:transformer" weighs each
// layer spec of GPTModelPipe 1 if it is a transformer layer and 0 otherwise, and cuts the list with
// partition_balanced, a dynamic program over the linear partition problem.

#ifndef LOOM_PLAN_DEEPSPEED_PARTITION_H_
#define LOOM_PLAN_DEEPSPEED_PARTITION_H_

#include <cstdint>
#include <vector>

#include "spec/model.h"

namespace loom {

// The cut points partition_balanced (deepspeed/runtime/utils.py, deepspeedai/DeepSpeed 38327e07f)
// gives |weights| in |parts| parts: parts + 1 indices from 0 to weights.size(), part p holding
// [cut[p], cut[p + 1]). Ties go as DeepSpeed's do (the last split point of equal cost). With no
// more items than parts, partition_uniform's. REQUIRES: parts >= 1.
std::vector<int64_t> PartitionBalanced(const std::vector<int64_t>& weights, int64_t parts);

// The transformer layers of each of |pp| stages under Megatron-DeepSpeed's pipeline engine: the
// specs of GPTModelPipe (megatron/model/gpt_model.py, microsoft/Megatron-DeepSpeed f4157bea) are
// the input cast, the embedding, the layers, the MoE loss (a mixture of experts), the final norm,
// the output head and the cast back, and only the layers weigh. 80 layers over 6 stages: 14, 14,
// 13, 13, 13, 13. REQUIRES: pp >= 1.
std::vector<int64_t> MegatronDeepSpeedStageLayers(const ModelSpec& model, int64_t pp);

}  // namespace loom

#endif  // LOOM_PLAN_DEEPSPEED_PARTITION_H_
