#include "reference/steptime_intervals.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace loom {

std::array<std::string, 4> RegimeKeys(const CorpusCase& c) {
  const Strategy& s = c.step.strategy;
  std::string parallelism;
  auto add = [&parallelism](const std::string& part) {
    parallelism += (parallelism.empty() ? "" : "+") + part;
  };
  if (s.tp > 1) add("tp");
  if (s.pp > 1) add("pp");
  if (s.zero_stage > 0) add("zero" + std::to_string(s.zero_stage));
  if (parallelism.empty()) add(s.dp > 1 ? "dp" : "one GPU");
  const std::string gpu = c.step.cluster.gpu.name;
  const std::string framework = c.step.framework ? c.step.framework->name : "none";
  return {gpu + " / " + framework + " / " + parallelism, gpu + " / " + framework, gpu, "all"};
}

double Residual::LogRatio() const { return std::log(measured / predicted); }

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

std::vector<Residual> CorpusResiduals(const Corpus& corpus,
                                      const std::vector<FidelityTable>& tables) {
  std::vector<Residual> out;
  for (const FidelityTable& table : tables) {
    size_t row = 0;
    for (const CorpusCase& c : corpus.cases) {
      if ("steptime/" + c.source != table.source_file) continue;
      if (row >= table.rows.size()) break;
      const FidelityRow& r = table.rows[row++];
      if (!r.ok() || r.predicted <= 0 || r.measured <= 0) continue;
      out.push_back({c.source, RegimeKeys(c), r.predicted, r.measured});
    }
  }
  return out;
}

std::vector<SourceCoverage> LeaveOneSourceOutCoverage(const std::vector<Residual>& residuals) {
  std::vector<std::string> sources;
  for (const Residual& r : residuals) {
    if (std::find(sources.begin(), sources.end(), r.source) == sources.end())
      sources.push_back(r.source);
  }
  std::vector<SourceCoverage> out;
  for (const std::string& held_out : sources) {
    // The calibration: every other source's rows, each source weighing 1 in total, by regime.
    std::map<std::string, int64_t> rows_of_source;
    for (const Residual& r : residuals) {
      if (r.source != held_out) ++rows_of_source[r.source];
    }
    struct Group {
      std::vector<std::pair<double, double>> values;
      std::map<std::string, int64_t> sources;
      int64_t rows = 0;
    };
    std::array<std::map<std::string, Group>, 4> groups;
    for (const Residual& r : residuals) {
      if (r.source == held_out) continue;
      const double weight = 1.0 / static_cast<double>(rows_of_source[r.source]);
      for (size_t level = 0; level < 4; ++level) {
        Group& g = groups[level][r.regime[level]];
        g.values.push_back({r.LogRatio(), weight});
        ++g.sources[r.source];
        ++g.rows;
      }
    }
    SourceCoverage coverage{held_out};
    std::vector<double> widths;
    for (const Residual& r : residuals) {
      if (r.source != held_out) continue;
      const Group* group = nullptr;
      size_t used = 0;
      for (size_t level = 0; level < 4 && group == nullptr; ++level) {
        auto it = groups[level].find(r.regime[level]);
        if (it == groups[level].end()) continue;
        const bool enough = it->second.sources.size() >= 2 && it->second.rows >= kMinRegimeRows;
        if (enough || (level == 3 && it->second.rows > 0)) {
          group = &it->second;
          used = level;
        }
      }
      ++coverage.rows;
      if (group == nullptr) {
        ++coverage.uncalibrated;
        continue;
      }
      ++coverage.by_level[used];
      const double lo = r.predicted * std::exp(WeightedQuantile(group->values, kIntervalLow));
      const double hi = r.predicted * std::exp(WeightedQuantile(group->values, kIntervalHigh));
      if (r.measured >= lo && r.measured <= hi) ++coverage.covered;
      widths.push_back((hi - lo) / r.predicted);
    }
    if (!widths.empty()) {
      std::sort(widths.begin(), widths.end());
      coverage.median_width = widths[widths.size() / 2];
    }
    out.push_back(coverage);
  }
  return out;
}

}  // namespace loom
