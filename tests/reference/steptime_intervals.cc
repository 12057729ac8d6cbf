#include "reference/steptime_intervals.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "reference/steptime_tables.h"

namespace loom {
namespace {

std::vector<RegimeResidual> ForFit(const std::vector<Residual>& residuals,
                                   const std::string& without) {
  std::vector<RegimeResidual> out;
  for (const Residual& r : residuals) {
    if (r.source != without) out.push_back({r.source, r.regime, r.LogRatio()});
  }
  return out;
}

}  // namespace

std::array<std::string, 4> RegimeKeys(const CorpusCase& c) {
  return StepRegimeKeys(c.step.cluster.gpu.name, RegimeFramework(c.step.framework),
                        c.step.strategy);
}

double Residual::LogRatio() const { return std::log(measured / predicted); }

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
      out.push_back({c.source, c.job, RegimeKeys(c), r.predicted, r.measured});
    }
  }
  return out;
}

StepIntervalTable FitCorpusIntervals(const std::vector<Residual>& residuals) {
  return FitStepIntervals(ForFit(residuals, ""));
}

std::vector<SourceCoverage> LeaveOneSourceOutCoverage(const std::vector<Residual>& residuals) {
  std::vector<std::string> sources;
  for (const Residual& r : residuals) {
    if (std::find(sources.begin(), sources.end(), r.source) == sources.end())
      sources.push_back(r.source);
  }
  std::vector<SourceCoverage> out;
  for (const std::string& held_out : sources) {
    const StepIntervalTable table = FitStepIntervals(ForFit(residuals, held_out));
    SourceCoverage coverage;
    coverage.source = held_out;
    std::vector<double> widths;
    FidelityTable predicted, at_median, at_p90;  // the held-out rows, ranked three ways
    std::vector<std::string> jobs;
    for (const Residual& r : residuals) {
      if (r.source != held_out) continue;
      const StepIntervalRegime* regime = RegimeFor(table, r.regime);
      const double median = regime == nullptr ? 1.0 : std::exp(regime->LogQuantile(0.5));
      const double p90 = regime == nullptr ? 1.0 : regime->RiskFactor(0.9);
      predicted.rows.push_back({r.job, r.predicted, r.measured, ""});
      at_median.rows.push_back({r.job, r.predicted * median, r.measured, ""});
      at_p90.rows.push_back({r.job, r.predicted * p90, r.measured, ""});
      jobs.push_back(r.job);
      ++coverage.rows;
      const std::optional<StepInterval> interval = IntervalFor(table, r.regime, r.predicted);
      if (!interval) {
        ++coverage.uncalibrated;
        continue;
      }
      ++coverage.by_level[static_cast<size_t>(interval->level)];
      if (r.measured >= interval->low_s && r.measured <= interval->high_s) ++coverage.covered;
      widths.push_back((interval->high_s - interval->low_s) / r.predicted);
    }
    if (!widths.empty()) {
      std::sort(widths.begin(), widths.end());
      coverage.median_width = widths[widths.size() / 2];
    }
    coverage.as_predicted = OrderingOf(predicted, jobs);
    coverage.at_median = OrderingOf(at_median, jobs);
    coverage.at_p90 = OrderingOf(at_p90, jobs);
    out.push_back(coverage);
  }
  return out;
}

}  // namespace loom
