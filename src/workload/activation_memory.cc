#include "workload/activation_memory.h"

#include <string>

#include "core/checked.h"

namespace loom {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status CheckRange(const ModelSpec& model, int64_t first_layer, int64_t num_layers,
                  int64_t full_recompute_layers) {
  if (first_layer < 0 || num_layers < 0 || first_layer + num_layers > model.num_layers) {
    return Status::InvalidArgument(
        "layers " + Str(first_layer) + " to " + Str(first_layer + num_layers - 1) +
        " are not all in the model, which has " + Str(model.num_layers) +
        " (num_hidden_layers); use a range inside 0 to " + Str(model.num_layers - 1));
  }
  if (full_recompute_layers < 0 || full_recompute_layers > num_layers) {
    return Status::InvalidArgument("--recompute-num-layers " + Str(full_recompute_layers) +
                                   ": must be between 0 and the " + Str(num_layers) +
                                   " layers of the range");
  }
  return Status::Ok();
}

// Layers of one kind (dense, or MoE) keep the same bytes, so each kind is built once per setting.
bool IsMoeLayer(const ModelSpec& model, int64_t layer) {
  return model.moe.has_value() && layer >= model.moe->first_dense_layers;
}

}  // namespace

ActivationBytes SumActivationBytes(const LayerOps& ops) {
  return {TotalSavedBytes(ops.forward), TotalSavedBytes(ops.recompute)};
}

Result<ActivationBytes> LayerActivationBytes(const ModelSpec& model, const Strategy& strategy,
                                             const LayerOpsOptions& options) {
  LOOM_ASSIGN_OR_RETURN(LayerOps ops, BuildTransformerLayerOps(model, strategy, options));
  return SumActivationBytes(ops);
}

Result<int64_t> KeptActivationBytes(const ModelSpec& model, const Strategy& strategy,
                                    int64_t first_layer, int64_t num_layers,
                                    int64_t full_recompute_layers, const LayerOpsOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckRange(model, first_layer, num_layers, full_recompute_layers));
  Strategy full = strategy;
  full.recompute = Recompute::kFull;
  // Kept bytes per [kind][fully recomputed], built on first use.
  int64_t cache[2][2] = {{-1, -1}, {-1, -1}};
  CheckedInt total = 0;
  for (int64_t i = 0; i < num_layers; ++i) {
    const int64_t layer = first_layer + i;
    const bool moe = IsMoeLayer(model, layer);
    const bool recomputed = i < full_recompute_layers;
    int64_t& kept = cache[moe][recomputed];
    if (kept < 0) {
      LayerOpsOptions layer_options = options;
      layer_options.layer = layer;
      LOOM_ASSIGN_OR_RETURN(
          ActivationBytes bytes,
          LayerActivationBytes(model, recomputed ? full : strategy, layer_options));
      kept = bytes.kept;
    }
    total += kept;
  }
  if (total.overflowed())
    return Status::InvalidArgument("activation bytes of the layers overflow 64 bits");
  return total.value();
}

}  // namespace loom
