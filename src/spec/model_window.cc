// The sliding window of a model config.json (model_reader.h, ReadSlidingWindow), and the spans
// attention meets with it (model.h).

#include <algorithm>
#include <string>
#include <vector>

#include "spec/model_reader.h"

namespace loom {

int64_t ModelSpec::AttentionSpan(int64_t layer, int64_t seq_len) const {
  const bool windowed = sliding_window > 0 && layer >= 0 &&
                        layer < static_cast<int64_t>(windowed_layers.size()) &&
                        windowed_layers[layer];
  return windowed ? std::min(sliding_window, seq_len) : seq_len;
}

int64_t ModelSpec::NumWindowedLayers() const {
  if (sliding_window <= 0) return 0;
  return std::count(windowed_layers.begin(), windowed_layers.end(), true);
}

namespace model_reader {
namespace {

// Which of |layers| layers the family of |model_type| windows, from its config class's own rule.
std::vector<bool> FamilyWindowedLayers(JsonReader& r, const std::string& model_type,
                                       int64_t layers) {
  std::vector<bool> windowed(layers, true);
  if (model_type == "gemma2") {
    for (int64_t i = 0; i < layers; ++i) windowed[i] = i % 2 == 0;
  } else if (model_type == "gemma3" || model_type == "gemma3_text") {
    const int64_t pattern = r.OptionalInt("sliding_window_pattern", kLayerRange).value_or(6);
    for (int64_t i = 0; i < layers; ++i) windowed[i] = (i + 1) % pattern != 0;
  } else if (r.Has("max_window_layers")) {  // Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE
    const int64_t first = r.OptionalInt("max_window_layers", {0, kLayerRange.max}).value_or(0);
    for (int64_t i = 0; i < layers; ++i) windowed[i] = i >= first;
  }
  return windowed;
}

}  // namespace

void ReadSlidingWindow(JsonReader& r, ModelSpec* m) {
  r.Allow("sliding_window_size");  // Gemma 2's older copy of sliding_window
  r.Allow("sliding_window_pattern");
  r.Allow("max_window_layers");
  const std::optional<bool> use = r.OptionalBool("use_sliding_window");
  const std::optional<int64_t> window = r.OptionalInt("sliding_window", kPositionRange);
  std::vector<std::string> types = r.OptionalStringList("layer_types");
  if (!window || !use.value_or(true)) {
    r.OptionalInt("sliding_window_pattern", kLayerRange);
    r.OptionalInt("max_window_layers", {0, kLayerRange.max});
    return;
  }
  const int64_t layers = m->num_layers;
  std::vector<bool> windowed;
  if (!types.empty()) {
    if (static_cast<int64_t>(types.size()) != layers) {
      r.AddError("layer_types", "lists " + std::to_string(types.size()) +
                                    " kinds of attention for num_hidden_layers " +
                                    std::to_string(layers) + "; give one per layer");
      return;
    }
    for (const std::string& type : types) {
      if (type != "sliding_attention" && type != "full_attention") {
        r.AddError("layer_types", Quote(type) +
                                      " is a kind of attention loom does not model; it models "
                                      "\"sliding_attention\" and \"full_attention\"");
        return;
      }
      windowed.push_back(type == "sliding_attention");
    }
    r.OptionalInt("sliding_window_pattern", kLayerRange);
    r.OptionalInt("max_window_layers", {0, kLayerRange.max});
  } else {
    windowed = FamilyWindowedLayers(r, m->model_type, layers);
  }
  m->sliding_window = *window;
  m->windowed_layers = std::move(windowed);
}

}  // namespace model_reader
}  // namespace loom
