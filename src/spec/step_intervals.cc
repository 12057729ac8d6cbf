#include "spec/step_intervals.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "spec/step_intervals_data.h"

namespace loom {
namespace {

constexpr const char* kStepIntervalsSchema = "loom.step-intervals/1";

std::string IntervalPercent(double log_ratio) {
  std::ostringstream out;
  out.setf(std::ios::showpos);
  out.precision(0);
  out << std::fixed << 100 * (std::exp(log_ratio) - 1) << " %";
  return out.str();
}

std::string JoinedSources(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          const Strategy& s) {
  std::string parallelism;
  auto add = [&parallelism](const std::string& part) {
    parallelism += (parallelism.empty() ? "" : "+") + part;
  };
  if (s.tp > 1) add("tp");
  if (s.pp > 1) add("pp");
  if (s.cp > 1) add("cp");
  if (s.ep > 1) add("ep");
  // ZeRO-1 (the distributed optimizer) shards only the optimizer states, its step's time; 2 and 3
  // change the backward's and forward's communication.
  if (s.zero_stage >= 2) add("zero" + std::to_string(s.zero_stage));
  if (parallelism.empty()) add(s.dp > 1 ? "dp" : "one GPU");
  return {gpu + " / " + framework + " / " + parallelism, gpu + " / " + framework, gpu, "outside"};
}

std::string RegimeFramework(const std::optional<FrameworkProfile>& framework) {
  return framework ? framework->name : "none";
}

double WeightedQuantile(std::vector<std::pair<double, double>> values_and_weights, double q) {
  std::sort(values_and_weights.begin(), values_and_weights.end());
  double total = 0;
  for (const auto& [value, weight] : values_and_weights) total += weight;
  double cumulative = 0;
  for (const auto& [value, weight] : values_and_weights) {
    cumulative += weight;
    if (cumulative >= q * total) return value;
  }
  return values_and_weights.back().first;
}

StepIntervalTable FitStepIntervals(const std::vector<RegimeResidual>& residuals) {
  StepIntervalTable table;
  std::map<std::string, int64_t> rows_of_source;
  for (const RegimeResidual& r : residuals) ++rows_of_source[r.source];
  for (const auto& [source, rows] : rows_of_source) table.fitted_on.push_back(source);
  struct Group {
    std::vector<std::pair<double, double>> values;
    std::set<std::string> sources;
  };
  for (int level = 0; level < 3; ++level) {
    std::map<std::string, Group> groups;
    for (const RegimeResidual& r : residuals) {
      Group& g = groups[r.keys[static_cast<size_t>(level)]];
      g.values.push_back({r.log_ratio, 1.0 / static_cast<double>(rows_of_source[r.source])});
      g.sources.insert(r.source);
    }
    for (const auto& [key, g] : groups) {
      if (g.sources.size() < 2 || static_cast<int64_t>(g.values.size()) < kStepIntervalMinRows)
        continue;
      table.regimes.push_back({level, key, WeightedQuantile(g.values, kStepIntervalLow),
                               WeightedQuantile(g.values, kStepIntervalHigh),
                               static_cast<int64_t>(g.values.size()),
                               std::vector<std::string>(g.sources.begin(), g.sources.end())});
    }
  }
  if (!residuals.empty()) {
    // The envelope: every source's own q10 and q90, the widest of them.
    StepIntervalRegime outside{3, "outside", 0, 0, static_cast<int64_t>(residuals.size()), {}};
    bool first = true;
    for (const auto& [source, rows] : rows_of_source) {
      std::vector<std::pair<double, double>> values;
      for (const RegimeResidual& r : residuals) {
        if (r.source == source) values.push_back({r.log_ratio, 1.0});
      }
      const double low = WeightedQuantile(values, kStepIntervalLow);
      const double high = WeightedQuantile(values, kStepIntervalHigh);
      outside.log_low = first ? low : std::min(outside.log_low, low);
      outside.log_high = first ? high : std::max(outside.log_high, high);
      first = false;
      outside.sources.push_back(source);
    }
    table.regimes.push_back(outside);
  }
  return table;
}

std::optional<StepInterval> IntervalFor(const StepIntervalTable& table,
                                        const std::array<std::string, 4>& keys,
                                        double predicted_s) {
  for (int level = 0; level < 4; ++level) {
    for (const StepIntervalRegime& g : table.regimes) {
      if (g.level != level || g.key != keys[static_cast<size_t>(level)]) continue;
      StepInterval out;
      out.low_s = predicted_s * std::exp(g.log_low);
      out.high_s = predicted_s * std::exp(g.log_high);
      out.level = level;
      if (level == 3) {
        out.basis = "no source of the corpus measured " + keys[2] +
                    " with two or more sources: the widest of every source's own 80 % errors (" +
                    IntervalPercent(g.log_low) + " to " + IntervalPercent(g.log_high) + "; " +
                    JoinedSources(g.sources) + ")";
      } else {
        out.basis = std::string("regime ") + g.key + " (" + kStepRegimeLevels[level] +
                    "): " + std::to_string(g.rows) + " measured steps of " +
                    JoinedSources(g.sources) + ", measured " + IntervalPercent(g.log_low) + " to " +
                    IntervalPercent(g.log_high) + " of loom's prediction";
        if (level > 0) out.basis += "; no finer regime (" + keys[0] + ") had two sources";
      }
      return out;
    }
  }
  return std::nullopt;
}

Result<StepIntervalTable> ParseStepIntervals(const nlohmann::json& json, const std::string& file) {
  auto bad = [&file](const std::string& where, const std::string& problem) {
    return Status::InvalidArgument(file + ": " + where + " " + problem +
                                   "; regenerate it with tools/fidelity --write-intervals " + file);
  };
  if (!json.is_object()) return bad("the file", "is not a JSON object");
  if (json.value("schema", "") != kStepIntervalsSchema)
    return bad("schema", std::string("is not \"") + kStepIntervalsSchema + "\"");
  StepIntervalTable table;
  table.file = file;
  if (!json.contains("fitted_on") || !json["fitted_on"].is_array())
    return bad("fitted_on", "is missing or not a list of file names");
  for (const nlohmann::json& f : json["fitted_on"]) {
    if (!f.is_string()) return bad("fitted_on", "holds a value that is not a file name");
    table.fitted_on.push_back(f.get<std::string>());
  }
  if (!json.contains("regimes") || !json["regimes"].is_array())
    return bad("regimes", "is missing or not a list");
  for (size_t i = 0; i < json["regimes"].size(); ++i) {
    const nlohmann::json& g = json["regimes"][i];
    const std::string where = "regimes[" + std::to_string(i) + "]";
    if (!g.is_object()) return bad(where, "is not an object");
    const std::string level = g.value("level", "");
    const auto it = std::find(kStepRegimeLevels.begin(), kStepRegimeLevels.end(), level);
    if (it == kStepRegimeLevels.end())
      return bad(where + ".level", "is \"" + level + "\", not a regime level");
    StepIntervalRegime r;
    r.level = static_cast<int>(it - kStepRegimeLevels.begin());
    if (!g.contains("key") || !g["key"].is_string()) return bad(where + ".key", "is missing");
    r.key = g["key"].get<std::string>();
    for (const char* k : {"log_low", "log_high"}) {
      if (!g.contains(k) || !g[k].is_number() || !std::isfinite(g[k].get<double>()))
        return bad(where + "." + k, "is missing or not a finite number");
    }
    r.log_low = g["log_low"].get<double>();
    r.log_high = g["log_high"].get<double>();
    if (r.log_low > r.log_high) return bad(where, "has log_low above log_high");
    if (!g.contains("rows") || !g["rows"].is_number_integer() || g["rows"].get<int64_t>() < 1)
      return bad(where + ".rows", "is missing or not a positive integer");
    r.rows = g["rows"].get<int64_t>();
    if (!g.contains("sources") || !g["sources"].is_array() || g["sources"].empty())
      return bad(where + ".sources", "is missing or empty");
    for (const nlohmann::json& s : g["sources"]) {
      if (!s.is_string()) return bad(where + ".sources", "holds a value that is not a file name");
      r.sources.push_back(s.get<std::string>());
    }
    table.regimes.push_back(std::move(r));
  }
  return table;
}

nlohmann::ordered_json StepIntervalsJson(const StepIntervalTable& table) {
  nlohmann::ordered_json j;
  j["schema"] = kStepIntervalsSchema;
  j["source"] =
      "tools/fidelity --write-intervals: q10 and q90 of log(measured / predicted) over the rows of "
      "each regime of the corpus of measured training steps (tests/reference/steptime/), each "
      "source weighing the same; src/spec/step_intervals.h says how a prediction finds its regime";
  j["fitted_on"] = table.fitted_on;
  nlohmann::ordered_json regimes = nlohmann::ordered_json::array();
  for (const StepIntervalRegime& r : table.regimes) {
    regimes.push_back({{"level", kStepRegimeLevels[static_cast<size_t>(r.level)]},
                       {"key", r.key},
                       {"log_low", r.log_low},
                       {"log_high", r.log_high},
                       {"rows", r.rows},
                       {"sources", r.sources}});
  }
  j["regimes"] = regimes;
  return j;
}

const StepIntervalTable& ShippedStepIntervals() {
  static const StepIntervalTable* table = [] {
    const nlohmann::json json =
        nlohmann::json::parse(ShippedStepIntervalsText(), nullptr, /*allow_exceptions=*/false);
    Result<StepIntervalTable> t = ParseStepIntervals(json, "hardware/intervals/step-time.json");
    return new StepIntervalTable(t.ok() ? *t : StepIntervalTable{});
  }();
  return *table;
}

std::optional<StepInterval> ShippedStepInterval(const ClusterSpec& cluster,
                                                const std::optional<FrameworkProfile>& framework,
                                                const Strategy& strategy, double predicted_s) {
  return IntervalFor(ShippedStepIntervals(),
                     StepRegimeKeys(cluster.gpu.name, RegimeFramework(framework), strategy),
                     predicted_s);
}

}  // namespace loom
