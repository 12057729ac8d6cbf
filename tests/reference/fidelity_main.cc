// loom_fidelity: loom's predictions against the published measurements of tests/reference/
// (issues 4 and 18, "Fidelity report"), one table per source with the signed error of every case,
// twice: with the shipped calibrations (in-sample) and with every calibration fitted on the table's
// source file refitted without it (leave-one-source-out, "LOSO"); per table the mean absolute
// error, the largest and the mean signed error (bias) of both. It reports; it does not judge: the
// exit status is 0 whenever the tables were produced, whatever their errors (targets are checked
// elsewhere).
//
// Usage: loom_fidelity [--json | --csv] [--report FILE]

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/fidelity_tables.h"
#include "reference/steptime_intervals.h"
#include "report/html_report.h"

namespace loom {
namespace {

constexpr const char* kUsage =
    "usage: loom_fidelity [--json | --csv] [--report FILE]\n"
    "  Compares loom's predictions with the published measurements in tests/reference/.\n"
    "  Per table: in-sample errors (shipped calibrations) and leave-one-source-out errors (every\n"
    "  calibration fitted on the table's file refitted without it); MAPE, max and bias (mean "
    "signed),\n"
    "  and the same for each part of a source measured in parts (llm-foundry's README tables,\n"
    "  Narayanan Table 2's schemes; the CSV's part column).\n"
    "  --json  print one JSON object (schema loom.fidelity/3; errors as fractions) instead of "
    "tables\n"
    "  --csv   print one CSV row per case instead (table, case, predicted, measured, errors, and\n"
    "          for simulated steps what ran: GPUs, strategy, model shape, ...), to plot residuals\n"
    "  --report FILE  also write an HTML page with one residual plot per table\n"
    "  --write-intervals FILE  also write the step-time intervals fitted on the whole corpus\n"
    "          (hardware/intervals/step-time.json is the file loom compiles in)\n";

// Messages of several violations come one per line; a table row holds them on one.
std::string OneLine(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ';');
  return message;
}

void PrintTable(const FidelityTable& table, int number, std::ostream& out) {
  size_t width = 4;
  for (const FidelityRow& r : table.rows) width = std::max(width, r.name.size());
  width += 2;
  out << number << ". " << table.title << "\n";
  out << std::left << std::setw(static_cast<int>(width)) << "case" << std::right << std::setw(12)
      << "predicted" << std::setw(12) << "measured" << std::setw(10) << "error %";
  if (table.refitted) out << std::setw(12) << "LOSO pred" << std::setw(10) << "LOSO %";
  if (table.site_refitted) out << std::setw(12) << "site LOSO %";
  out << "\n";
  out << std::fixed << std::setprecision(2);
  for (const FidelityRow& r : table.rows) {
    out << std::left << std::setw(static_cast<int>(width)) << r.name << std::right;
    if (!r.ok()) {
      out << "FAILED: " << OneLine(r.error) << "\n";
      continue;
    }
    out << std::setw(12) << r.predicted << std::setw(12) << r.measured << std::setw(10)
        << std::showpos << r.ErrorPct() << std::noshowpos;
    if (table.refitted) {
      out << std::setw(12) << r.loso_predicted << std::setw(10) << std::showpos << r.LosoErrorPct()
          << std::noshowpos;
    }
    if (table.site_refitted)
      out << std::setw(12) << std::showpos << r.SiteLosoErrorPct() << std::noshowpos;
    out << "\n";
  }
  const int64_t cases = static_cast<int64_t>(table.rows.size());
  const ErrorSummary in = table.InSample();
  out << "in-sample: MAPE " << in.mape_pct << "%, median |error| " << in.median_abs_pct
      << "%, max |error| " << in.max_abs_pct << "%, bias " << std::showpos << in.bias_pct
      << std::noshowpos << "% over " << cases - table.Failed() << " of " << cases << " cases";
  if (table.Failed() > 0) out << " (" << table.Failed() << " FAILED)";
  out << "\n";
  if (table.refitted) {
    const ErrorSummary loso = table.LeaveOneSourceOut();
    out << "leave-one-source-out (calibrations refitted without " << table.source_file << "): MAPE "
        << loso.mape_pct << "%, median |error| " << loso.median_abs_pct << "%, max |error| "
        << loso.max_abs_pct << "%, bias " << std::showpos << loso.bias_pct << std::noshowpos
        << "%\n";
  } else {
    out << "leave-one-source-out: the same; no calibration is fitted on " << table.source_file
        << "\n";
  }
  for (const FidelityTable::Part& part : table.ByPart()) {
    out << "  part " << part.name << ": MAPE " << part.in_sample.mape_pct << "%, max |error| "
        << part.in_sample.max_abs_pct << "%, bias " << std::showpos << part.in_sample.bias_pct
        << std::noshowpos << "% over " << part.rows << " cases";
    if (table.refitted) {
      out << "; leave-one-source-out MAPE " << part.loso.mape_pct << "%, bias " << std::showpos
          << part.loso.bias_pct << std::noshowpos << "%";
    }
    out << "\n";
  }
  if (table.site_refitted) {
    const ErrorSummary site = table.LeaveOneSiteOut();
    out << "leave-one-site-out within the table (each site's rows from a fit without them): MAPE "
        << site.mape_pct << "%, max |error| " << site.max_abs_pct << "%, bias " << std::showpos
        << site.bias_pct << std::noshowpos << "%\n";
  }
  if (table.has_ordering && table.ordering.jobs == 0) {
    out << "ordering: no job of this table has two predicted rows\n";
  } else if (table.has_ordering) {
    const Ordering& o = table.ordering;
    out << "ordering: " << o.pairs_in_order << " of " << o.pairs << " pairs of " << o.jobs
        << " jobs measured several ways in measured order (" << 100 * o.InOrderShare()
        << "%); top-1 regret mean " << 100 * o.mean_regret << "%, max " << 100 * o.max_regret
        << "%";
    if (!o.worst_job.empty()) out << " (" << o.worst_job << ")";
    out << "\n";
  }
  out << "\n";
}

// A percent of the tables as the fraction every loom JSON writes (docs/schemas/README.md); null
// stays null.
nlohmann::ordered_json Fraction(double percent) { return percent / 100; }

nlohmann::ordered_json OrderingJson(const Ordering& o) {
  return {{"jobs", o.jobs},
          {"pairs", o.pairs},
          {"pairs_in_order", o.pairs_in_order},
          {"in_order_fraction", o.InOrderShare()},
          {"mean_top1_regret", o.mean_regret},
          {"max_top1_regret", o.max_regret},
          {"worst_job", o.worst_job}};
}

nlohmann::ordered_json TableJson(const FidelityTable& table) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const FidelityRow& r : table.rows) {
    nlohmann::ordered_json row;
    row["case"] = r.name;
    row["predicted"] = r.ok() ? nlohmann::ordered_json(r.predicted) : nlohmann::ordered_json();
    row["measured"] = r.measured;
    row["error_fraction"] = r.ok() ? Fraction(r.ErrorPct()) : nlohmann::ordered_json();
    row["loso_predicted"] =
        r.ok() ? nlohmann::ordered_json(r.loso_predicted) : nlohmann::ordered_json();
    row["loso_error_fraction"] = r.ok() ? Fraction(r.LosoErrorPct()) : nlohmann::ordered_json();
    if (table.site_refitted) {
      row["site"] = r.site;
      row["site_loso_predicted"] =
          r.ok() ? nlohmann::ordered_json(r.site_loso_predicted) : nlohmann::ordered_json();
      row["site_loso_error_fraction"] =
          r.ok() ? Fraction(r.SiteLosoErrorPct()) : nlohmann::ordered_json();
    }
    if (!r.ok()) row["error"] = r.error;
    rows.push_back(row);
  }
  nlohmann::ordered_json j;
  j["name"] = table.name;
  j["title"] = table.title;
  j["unit"] = table.unit;
  j["rows"] = rows;
  j["source_file"] = table.source_file;
  j["refitted"] = table.refitted;
  const ErrorSummary in = table.InSample();
  const ErrorSummary loso = table.LeaveOneSourceOut();
  j["mape"] = Fraction(in.mape_pct);
  j["max_abs_error"] = Fraction(in.max_abs_pct);
  j["bias"] = Fraction(in.bias_pct);
  j["loso_mape"] = Fraction(loso.mape_pct);
  j["loso_max_abs_error"] = Fraction(loso.max_abs_pct);
  j["loso_bias"] = Fraction(loso.bias_pct);
  j["site_refitted"] = table.site_refitted;
  if (table.site_refitted) {
    const ErrorSummary site = table.LeaveOneSiteOut();
    j["site_loso_mape"] = Fraction(site.mape_pct);
    j["site_loso_max_abs_error"] = Fraction(site.max_abs_pct);
    j["site_loso_bias"] = Fraction(site.bias_pct);
  }
  j["median_abs_error"] = Fraction(in.median_abs_pct);
  j["loso_median_abs_error"] = Fraction(loso.median_abs_pct);
  if (table.has_ordering) j["ordering"] = OrderingJson(table.ordering);
  j["failed"] = table.Failed();
  const std::vector<FidelityTable::Part> parts = table.ByPart();
  if (!parts.empty()) {
    nlohmann::ordered_json by_part = nlohmann::ordered_json::array();
    for (const FidelityTable::Part& p : parts) {
      by_part.push_back({{"part", p.name},
                         {"rows", p.rows},
                         {"mape", Fraction(p.in_sample.mape_pct)},
                         {"max_abs_error", Fraction(p.in_sample.max_abs_pct)},
                         {"bias", Fraction(p.in_sample.bias_pct)},
                         {"loso_mape", Fraction(p.loso.mape_pct)},
                         {"loso_bias", Fraction(p.loso.bias_pct)}});
    }
    j["parts"] = by_part;
  }
  return j;
}

// |text| as one CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string Number(double value) {
  std::ostringstream out;
  out << std::setprecision(9) << value;
  return out.str();
}

// Every row of every table, one CSV line each; the feature columns are the union of the rows'
// feature names, in the order they first appear, empty where a row has none.
void PrintCsv(const std::vector<FidelityTable>& tables, std::ostream& out) {
  std::vector<std::string> features;
  std::set<std::string> known;
  for (const FidelityTable& t : tables) {
    for (const FidelityRow& r : t.rows) {
      for (const auto& [name, value] : r.features) {
        if (known.insert(name).second) features.push_back(name);
      }
    }
  }
  out << "table,case,predicted,measured,error_fraction,loso_predicted,loso_error_fraction,error";
  for (const std::string& f : features) out << "," << f;
  out << "\n";
  for (const FidelityTable& t : tables) {
    for (const FidelityRow& r : t.rows) {
      out << CsvField(t.name) << "," << CsvField(r.name) << ",";
      if (r.ok()) {
        out << Number(r.predicted) << "," << Number(r.measured) << "," << Number(r.ErrorPct() / 100)
            << "," << Number(r.loso_predicted) << "," << Number(r.LosoErrorPct() / 100) << ",";
      } else {
        out << "," << Number(r.measured) << ",,,," << CsvField(OneLine(r.error));
      }
      for (const std::string& f : features) {
        out << ",";
        for (const auto& [name, value] : r.features) {
          if (name == f) out << CsvField(value);
        }
      }
      out << "\n";
    }
  }
}

// The HTML page: per table, its predicted rows as (measured, signed error) points.
std::string ReportPage(const std::vector<FidelityTable>& tables) {
  std::vector<ReportView> views;
  for (const FidelityTable& t : tables) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const FidelityRow& r : t.rows) {
      if (!r.ok()) continue;
      points.push_back({{"case", r.name},
                        {"measured", r.measured},
                        {"predicted", r.predicted},
                        {"error_fraction", r.ErrorPct() / 100},
                        {"loso_error_fraction", r.LosoErrorPct() / 100}});
    }
    const ErrorSummary in = t.InSample();
    const ErrorSummary loso = t.LeaveOneSourceOut();
    nlohmann::ordered_json data = {{"unit", t.unit},
                                   {"source_file", t.source_file},
                                   {"points", points},
                                   {"failed", t.Failed()},
                                   {"mape", in.mape_pct / 100},
                                   {"bias", in.bias_pct / 100},
                                   {"loso_mape", loso.mape_pct / 100},
                                   {"loso_bias", loso.bias_pct / 100},
                                   {"refitted", t.refitted}};
    views.push_back({t.name, t.title, "residuals", data});
  }
  return HtmlReport("loom fidelity: predicted against measured",
                    "Each point is one published case: its measured value (log scale) and loom's "
                    "signed error, in-sample and leave-one-source-out",
                    views);
}

// The residuals of the corpus tables among |tables| (CorpusResiduals reads only those).
Result<std::vector<Residual>> Residuals(const std::vector<FidelityTable>& tables) {
  Result<Corpus> corpus = LoadStepTimeCorpus(SourceTreePaths(LOOM_SOURCE_DIR));
  if (!corpus.ok()) return corpus.status();
  return CorpusResiduals(*corpus, tables);
}

void PrintCoverage(const std::vector<SourceCoverage>& coverage, std::ostream& out) {
  out << "Step-time intervals (" << 100 * (kStepIntervalHigh - kStepIntervalLow)
      << " %), leave-one-source-out: each corpus source's rows get the interval of their regime\n"
      << "from the other sources' log residuals (steptime_intervals.h); coverage is the share of "
         "its\n"
      << "measured times inside, the target 75-85 %\n";
  size_t width = 6;
  for (const SourceCoverage& c : coverage) width = std::max(width, c.source.size());
  width += 2;
  out << std::left << std::setw(static_cast<int>(width)) << "source" << std::right << std::setw(7)
      << "rows" << std::setw(11) << "coverage" << std::setw(14) << "median width"
      << "  regime used (gpu+framework+parallelism / gpu+framework / gpu / outside)\n";
  for (const SourceCoverage& c : coverage) {
    out << std::left << std::setw(static_cast<int>(width)) << c.source << std::right << std::setw(7)
        << c.rows << std::setw(10) << 100 * c.Coverage() << "%" << std::setw(13)
        << 100 * c.median_width << "%  " << c.by_level[0] << " / " << c.by_level[1] << " / "
        << c.by_level[2] << " / " << c.by_level[3];
    if (c.uncalibrated > 0) out << " (" << c.uncalibrated << " without any)";
    out << "\n";
  }
  out << "\nRanked at a quantile, leave-one-source-out: pairs of one job's alternatives in the "
         "measured order\nand the mean top-1 regret, as loom predicts (loom plan), with each "
         "prediction moved to the median\nof its regime fitted without its source, and at that "
         "regime's p90 about loom's prediction\n(loom plan --risk 0.9)\n";
  out << std::left << std::setw(static_cast<int>(width)) << "source" << std::right << std::setw(7)
      << "pairs" << std::setw(18) << "as predicted" << std::setw(18) << "to the median"
      << std::setw(18) << "at p90"
      << "\n";
  auto cell = [](const Ordering& o) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << 100 * o.InOrderShare() << "% / "
         << 100 * o.mean_regret << "%";
    return text.str();
  };
  for (const SourceCoverage& c : coverage) {
    if (c.as_predicted.pairs == 0) continue;
    out << std::left << std::setw(static_cast<int>(width)) << c.source << std::right << std::setw(7)
        << c.as_predicted.pairs << std::setw(18) << cell(c.as_predicted) << std::setw(18)
        << cell(c.at_median) << std::setw(18) << cell(c.at_p90) << "\n";
  }
  out << "\n";
}

nlohmann::ordered_json CoverageJson(const std::vector<SourceCoverage>& coverage) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const SourceCoverage& c : coverage) {
    nlohmann::ordered_json levels;
    for (size_t i = 0; i < 4; ++i) levels[kStepRegimeLevels[i]] = c.by_level[i];
    out.push_back({{"source", c.source},
                   {"rows", c.rows},
                   {"covered", c.covered},
                   {"coverage", c.Coverage()},
                   {"median_width_fraction", c.median_width},
                   {"rows_by_regime", levels},
                   {"uncalibrated", c.uncalibrated},
                   {"ordering_as_predicted", OrderingJson(c.as_predicted)},
                   {"ordering_at_median", OrderingJson(c.at_median)},
                   {"ordering_at_p90", OrderingJson(c.at_p90)}});
  }
  return out;
}

int Run(int argc, char** argv) {
  bool json = false;
  bool csv = false;
  std::string report_file;
  std::string intervals_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--csv") == 0) {
      csv = true;
    } else if (std::strcmp(argv[i], "--report") == 0) {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::cerr << "loom_fidelity: --report needs a file name (--report fidelity.html)\n"
                  << kUsage;
        return 2;
      }
      report_file = argv[++i];
    } else if (std::strcmp(argv[i], "--write-intervals") == 0) {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        std::cerr << "loom_fidelity: --write-intervals needs a file name "
                     "(--write-intervals hardware/intervals/step-time.json)\n"
                  << kUsage;
        return 2;
      }
      intervals_file = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "loom_fidelity: unknown argument " << argv[i] << "\n" << kUsage;
      return 2;
    }
  }
  if (json && csv) {
    std::cerr << "loom_fidelity: --json and --csv are two formats of one output; pick one\n"
              << kUsage;
    return 2;
  }
  Result<std::vector<FidelityTable>> tables = BuildFidelityReport(SourceTreePaths(LOOM_SOURCE_DIR));
  if (!tables.ok()) {
    std::cerr << "loom_fidelity: " << tables.status().message() << "\n";
    return 1;
  }
  if (!report_file.empty()) {
    std::ofstream page(report_file, std::ios::binary);
    page << ReportPage(*tables);
    page.close();
    if (!page) {
      std::cerr << "loom_fidelity: cannot write --report " << report_file
                << " (check that its folder exists and is writable)\n";
      return 1;
    }
  }
  Result<std::vector<Residual>> residuals = Residuals(*tables);
  if (!residuals.ok()) {
    std::cerr << "loom_fidelity: " << residuals.status().message() << "\n";
    return 1;
  }
  if (!intervals_file.empty()) {
    std::ofstream file(intervals_file, std::ios::binary);
    file << StepIntervalsJson(FitCorpusIntervals(*residuals)).dump(2) << "\n";
    file.close();
    if (!file) {
      std::cerr << "loom_fidelity: cannot write --write-intervals " << intervals_file
                << " (check that its folder exists and is writable)\n";
      return 1;
    }
  }
  if (csv) {
    PrintCsv(*tables, std::cout);
    return 0;
  }
  const std::vector<SourceCoverage> coverage = LeaveOneSourceOutCoverage(*residuals);
  if (json) {
    nlohmann::ordered_json report;
    report["schema"] = "loom.fidelity/3";
    report["loom_version"] = LOOM_VERSION;
    nlohmann::ordered_json arguments = {{"json", true}};
    if (!report_file.empty()) arguments["report"] = report_file;
    if (!intervals_file.empty()) arguments["write_intervals"] = intervals_file;
    report["request"] = {{"command", "fidelity"},
                         {"arguments", arguments},
                         {"input_files", nlohmann::ordered_json::array()}};
    report["tables"] = nlohmann::ordered_json::array();
    for (const FidelityTable& t : *tables) report["tables"].push_back(TableJson(t));
    report["interval_coverage"] = CoverageJson(coverage);
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  int number = 0;
  for (const FidelityTable& t : *tables) PrintTable(t, ++number, std::cout);
  PrintCoverage(coverage, std::cout);
  return 0;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) { return loom::Run(argc, argv); }
