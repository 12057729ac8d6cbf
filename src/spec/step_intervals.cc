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

constexpr const char* kStepIntervalsSchema = "loom.step-intervals/2";

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

// The levels of a regime's log_quantiles, as the file lists them.
nlohmann::json QuantileLevelsJson() {
  nlohmann::json levels = nlohmann::json::array();
  for (int i = 0; i < kStepQuantileCount; ++i) levels.push_back(StepQuantileLevel(i));
  return levels;
}

}  // namespace

int StepParallelismRegime(const Strategy& s) {
  // ZeRO-1 (the distributed optimizer) shards only the optimizer states, its step's time; 2 and 3
  // change the backward's and forward's communication.
  const int bits = (s.tp > 1 ? 1 : 0) | (s.pp > 1 ? 2 : 0) | (s.cp > 1 ? 4 : 0) |
                   (s.ep > 1 ? 8 : 0) | (s.zero_stage == 2 ? 16 : 0) | (s.zero_stage >= 3 ? 32 : 0);
  if (bits != 0) return bits;
  return s.dp > 1 ? 0 : kStepParallelismRegimes - 1;
}

std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          int parallelism) {
  std::string name;
  constexpr std::array<const char*, 6> kParts = {"tp", "pp", "cp", "ep", "zero2", "zero3"};
  for (size_t bit = 0; bit < kParts.size(); ++bit) {
    if (parallelism != kStepParallelismRegimes - 1 && (parallelism >> bit) & 1)
      name += (name.empty() ? "" : "+") + std::string(kParts[bit]);
  }
  if (name.empty()) name = parallelism == 0 ? "dp" : "one GPU";
  return {gpu + " / " + framework + " / " + name, gpu + " / " + framework, gpu, "outside"};
}

std::array<std::string, 4> StepRegimeKeys(const std::string& gpu, const std::string& framework,
                                          const Strategy& s) {
  return StepRegimeKeys(gpu, framework, StepParallelismRegime(s));
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

double StepIntervalRegime::LogQuantile(double q) const {
  const double x = std::clamp(q / kStepQuantileSpacing - 1, 0.0, kStepQuantileCount - 1.0);
  const int i = std::min(static_cast<int>(x), kStepQuantileCount - 2);
  const double t = x - i;
  return (1 - t) * log_quantiles[static_cast<size_t>(i)] +
         t * log_quantiles[static_cast<size_t>(i + 1)];
}

double StepIntervalRegime::RiskFactor(double q) const {
  return std::exp(LogQuantile(q) - LogQuantile(0.5));
}

StepIntervalTable FitStepIntervals(const std::vector<RegimeResidual>& residuals) {
  StepIntervalTable table;
  std::map<std::string, int64_t> rows_of_source;
  for (const RegimeResidual& r : residuals) ++rows_of_source[r.source];
  for (const auto& [source, rows] : rows_of_source) table.fitted_on.push_back(source);
  auto weight = [&rows_of_source](const RegimeResidual& r) {
    return 1.0 / static_cast<double>(rows_of_source[r.source]);
  };
  auto quantiles = [](const std::vector<std::pair<double, double>>& values) {
    std::array<double, kStepQuantileCount> q = {};
    for (int i = 0; i < kStepQuantileCount; ++i)
      q[static_cast<size_t>(i)] = WeightedQuantile(values, StepQuantileLevel(i));
    return q;
  };
  struct Group {
    std::vector<std::pair<double, double>> values;
    std::set<std::string> sources;
  };
  for (int level = 0; level < 3; ++level) {
    std::map<std::string, Group> groups;
    for (const RegimeResidual& r : residuals) {
      Group& g = groups[r.keys[static_cast<size_t>(level)]];
      g.values.push_back({r.log_ratio, weight(r)});
      g.sources.insert(r.source);
    }
    for (const auto& [key, g] : groups) {
      if (g.sources.size() < 2 || static_cast<int64_t>(g.values.size()) < kStepIntervalMinRows)
        continue;
      table.regimes.push_back({level, key, quantiles(g.values),
                               static_cast<int64_t>(g.values.size()),
                               std::vector<std::string>(g.sources.begin(), g.sources.end())});
    }
  }
  if (!residuals.empty()) {
    // The envelope: below the median the lowest of every source's own quantile, above it the
    // highest; at it, every row's, each source weighing the same.
    StepIntervalRegime outside{3, "outside", {}, static_cast<int64_t>(residuals.size()), {}};
    bool first = true;
    for (const auto& [source, rows] : rows_of_source) {
      std::vector<std::pair<double, double>> values;
      for (const RegimeResidual& r : residuals) {
        if (r.source == source) values.push_back({r.log_ratio, 1.0});
      }
      const std::array<double, kStepQuantileCount> own = quantiles(values);
      for (size_t i = 0; i < own.size(); ++i) {
        double& q = outside.log_quantiles[i];
        const bool below = StepQuantileLevel(static_cast<int>(i)) < 0.5;
        q = first ? own[i] : below ? std::min(q, own[i]) : std::max(q, own[i]);
      }
      first = false;
      outside.sources.push_back(source);
    }
    std::vector<std::pair<double, double>> every;
    for (const RegimeResidual& r : residuals) every.push_back({r.log_ratio, weight(r)});
    constexpr size_t kMedian = kStepQuantileCount / 2;
    static_assert(StepQuantileLevel(static_cast<int>(kMedian)) > 0.4999 &&
                  StepQuantileLevel(static_cast<int>(kMedian)) < 0.5001);
    outside.log_quantiles[kMedian] = WeightedQuantile(every, 0.5);
    table.regimes.push_back(outside);
  }
  return table;
}

const StepIntervalRegime* RegimeFor(const StepIntervalTable& table,
                                    const std::array<std::string, 4>& keys) {
  for (int level = 0; level < 4; ++level) {
    for (const StepIntervalRegime& g : table.regimes) {
      if (g.level == level && g.key == keys[static_cast<size_t>(level)]) return &g;
    }
  }
  return nullptr;
}

std::optional<StepInterval> IntervalFor(const StepIntervalTable& table,
                                        const std::array<std::string, 4>& keys,
                                        double predicted_s) {
  const StepIntervalRegime* g = RegimeFor(table, keys);
  if (g == nullptr) return std::nullopt;
  StepInterval out;
  out.low_s = predicted_s * std::exp(g->LogLow());
  out.high_s = predicted_s * std::exp(g->LogHigh());
  out.level = g->level;
  const std::string measured =
      IntervalPercent(g->LogLow()) + " to " + IntervalPercent(g->LogHigh());
  if (g->level == 3) {
    out.basis = "no source of the corpus measured " + keys[2] +
                " with two or more sources: the widest of every source's own 80 % errors (" +
                measured + "; " + JoinedSources(g->sources) + ")";
  } else {
    out.basis = std::string("regime ") + g->key + " (" + kStepRegimeLevels[g->level] +
                "): " + std::to_string(g->rows) + " measured steps of " +
                JoinedSources(g->sources) + ", measured " + measured + " of loom's prediction";
    if (g->level > 0) out.basis += "; no finer regime (" + keys[0] + ") had two sources";
  }
  return out;
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
  if (json.value("quantile_levels", nlohmann::json()) != QuantileLevelsJson())
    return bad("quantile_levels", "is not the levels loom reads (0.05, 0.1, ..., 0.95)");
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
    const std::string at = where + ".log_quantiles";
    if (!g.contains("log_quantiles") || !g["log_quantiles"].is_array() ||
        g["log_quantiles"].size() != static_cast<size_t>(kStepQuantileCount))
      return bad(at, "is missing or not a list of " + std::to_string(kStepQuantileCount) +
                         " numbers (the quantile_levels)");
    for (size_t k = 0; k < r.log_quantiles.size(); ++k) {
      const nlohmann::json& v = g["log_quantiles"][k];
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        return bad(at + "[" + std::to_string(k) + "]", "is not a finite number");
      r.log_quantiles[k] = v.get<double>();
      if (k > 0 && r.log_quantiles[k] < r.log_quantiles[k - 1])
        return bad(at + "[" + std::to_string(k) + "]", "is below the quantile before it");
    }
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
      "tools/fidelity --write-intervals: the quantile_levels of log(measured / predicted) over the "
      "rows of each regime of the corpus of measured training steps (tests/reference/steptime/), "
      "each source weighing the same; src/spec/step_intervals.h says how a prediction finds its "
      "regime";
  j["quantile_levels"] = QuantileLevelsJson();
  j["fitted_on"] = table.fitted_on;
  nlohmann::ordered_json regimes = nlohmann::ordered_json::array();
  for (const StepIntervalRegime& r : table.regimes) {
    regimes.push_back({{"level", kStepRegimeLevels[static_cast<size_t>(r.level)]},
                       {"key", r.key},
                       {"log_quantiles", r.log_quantiles},
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

double ShippedRiskFactor(const ClusterSpec& cluster,
                         const std::optional<FrameworkProfile>& framework, int parallelism,
                         double q) {
  const StepIntervalRegime* g =
      RegimeFor(ShippedStepIntervals(),
                StepRegimeKeys(cluster.gpu.name, RegimeFramework(framework), parallelism));
  return g == nullptr ? 1.0 : g->RiskFactor(q);
}

Status CheckStepQuantile(double q, const std::string& flag) {
  if (std::isfinite(q) && q >= kStepQuantileLowest - 1e-12 && q <= kStepQuantileHighest + 1e-12)
    return Status::Ok();
  std::ostringstream out;
  out << flag << " is " << q << ": it must lie within " << kStepQuantileLowest << " and "
      << kStepQuantileHighest
      << " (the quantiles of the step time the corpus of measured steps gives; a regime of "
      << kStepIntervalMinRows << " rows says nothing beyond them), e.g. " << flag
      << " 0.9 to rank by the 90th percentile";
  return Status::InvalidArgument(out.str());
}

}  // namespace loom
