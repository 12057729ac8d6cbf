#include "cost/calibration_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace loom {

double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(value)))));
  return std::round(value * scale) / scale;
}

nlohmann::ordered_json AttentionTilesJson(const ComputeCalibration& calibration) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, tiles] : {std::pair{"forward", &calibration.attention_forward_tiles},
                                    std::pair{"backward", &calibration.attention_backward_tiles}}) {
    if (!*tiles) continue;
    const AttentionTileParams& t = **tiles;
    out[name] = {{"matmul_efficiency", RoundSignificant(t.matmul_efficiency, 4)},
                 {"score_ps", RoundSignificant(t.score_ps, 4)},
                 {"masked_score_ps", RoundSignificant(t.masked_score_ps, 4)},
                 {"element_ps", RoundSignificant(t.element_ps, 4)},
                 {"wave_us", RoundSignificant(t.wave_us, 4)},
                 {"latency_us", RoundSignificant(t.latency_us, 4)}};
  }
  return out;
}

nlohmann::ordered_json WithCalibration(const nlohmann::ordered_json& file,
                                       const nlohmann::ordered_json& values,
                                       const std::string& source,
                                       const std::vector<std::string>& removed) {
  nlohmann::ordered_json calibration = nlohmann::ordered_json::object();
  auto existing = file.find("calibration");
  const bool had = existing != file.end();
  if (had && existing->is_object()) calibration = *existing;
  for (const std::string& key : removed) calibration.erase(key);
  std::string kept;
  for (const auto& [key, value] : calibration.items()) {
    if (key != "source" && !values.contains(key)) kept += (kept.empty() ? "" : ", ") + key;
  }
  std::string new_source = source;
  auto old_source = calibration.find("source");
  if (!kept.empty() && old_source != calibration.end() && old_source->is_string() &&
      !old_source->get<std::string>().empty()) {
    new_source +=
        " Kept from the earlier calibration (" + kept + "): " + old_source->get<std::string>();
  }
  for (const auto& [key, value] : values.items()) calibration[key] = value;
  calibration.erase("source");
  calibration["source"] = new_source;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : file.items()) {
    if (key == "sources" && !had) out["calibration"] = calibration;
    out[key] = key == "calibration" ? calibration : value;
  }
  if (!out.contains("calibration")) out["calibration"] = calibration;
  return out;
}

void AddFittedOn(const std::string& path, std::vector<std::string>* fitted_on) {
  const std::string name = std::filesystem::path(path).filename().string();
  if (std::find(fitted_on->begin(), fitted_on->end(), name) == fitted_on->end())
    fitted_on->push_back(name);
}

}  // namespace loom
