// Fuzzes the Hugging Face config.json reader (LoadModelSpec, spec/model.h), then what `loom
// describe` computes from a model and the ops of its first layer for one GPU.

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("models", "fuzz.json", data, size);
  loom::Result<loom::ModelSpec> model = loom::LoadModelSpec(path);
  if (!model.ok()) return loom::fuzz::Rejected(model.status());
  loom::Result<loom::ParameterCount> params = loom::CountParameters(*model);
  if (!params.ok()) return loom::fuzz::Rejected(params.status());
  loom::ModelFlopsPerToken(*model, model->max_position_embeddings);
  for (loom::Dtype dtype : {loom::Dtype::kBf16, loom::Dtype::kFp8, loom::Dtype::kFp32}) {
    (void)loom::ModelStates(params->total, dtype, loom::Optimizer::kAdam);
  }
  static const loom::Result<loom::ClusterSpec> cluster =
      loom::LoadClusterSpec(loom::fuzz::Shipped("hardware/clusters/dgx-h100.json"), 1);
  const loom::Strategy one_gpu;
  if (cluster.ok() && loom::ValidateStrategy(one_gpu, *model, *cluster).ok()) {
    (void)loom::BuildTransformerLayerOps(*model, one_gpu);
  }
  return 0;
}
