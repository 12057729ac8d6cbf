#include "cli/plan_csv.h"

#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "spec/scenario.h"

namespace loom {
namespace {

// A field as RFC 4180 writes it: quoted, with quotes doubled, when it holds a comma, a quote or a
// line break.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string CsvNumber(std::optional<double> value, const char* format) {
  if (!value) return "";
  char text[48];
  std::snprintf(text, sizeof text, format, *value);
  return text;
}

std::string CsvValueText(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

PlanCsv::PlanCsv() {
  text_ = "index";
  const nlohmann::ordered_json keys = StrategyJson(Strategy{});
  for (const auto& [key, value] : keys.items()) text_ += "," + key;
  text_ +=
      ",pipeline_layout,verdict,rule,score_bound,step_time_s,score,tokens_per_s,mfu,"
      "peak_memory_gib\n";
}

void PlanCsv::Add(const Strategy& strategy, const StrategyVerdict& v) {
  std::string row = std::to_string(rows_);
  nlohmann::ordered_json json = StrategyJson(strategy);
  const std::string layout =
      json.contains("pipeline_layout") ? CsvValueText(json["pipeline_layout"]) : "";
  json.erase("pipeline_layout");
  for (const auto& [key, value] : json.items()) row += "," + CsvField(CsvValueText(value));
  row += "," + CsvField(layout);
  row += "," + CsvField(std::string(kVerdictKindNames.Name(v.kind))) + "," + CsvField(v.rule);
  row += "," + CsvNumber(v.score_bound, "%.6g");
  row += "," + CsvNumber(v.step_time_s, "%.6g");
  row += "," + CsvNumber(v.score, "%.6g");
  row += "," + CsvNumber(v.tokens_per_s, "%.6g");
  row += "," + CsvNumber(v.mfu, "%.4f");
  row += ",";
  if (v.step_time_s) {
    row += CsvNumber(
        static_cast<double>(v.peak_memory_bytes) / static_cast<double>(int64_t{1} << 30), "%.3f");
  }
  row += "\n";
  text_ += row;
  ++rows_;
}

}  // namespace loom
