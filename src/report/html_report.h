#ifndef LOOM_REPORT_HTML_REPORT_H_
#define LOOM_REPORT_HTML_REPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>  // full header: ReportView holds its data as a value

namespace loom {

// One view of a report: a section of the page that the embedded renderer (report.js) draws from
// |data| according to |kind| ("gantt", "memory", "breakdown", "plans", "validate", "residuals").
// |id| names the section (id "view-<id>"), and report.html#<id> shows that view alone.
struct ReportView {
  std::string id;
  std::string title;
  std::string kind;
  nlohmann::ordered_json data;
};

// A self-contained HTML page (no network: its CSS and JavaScript are inline, its charts are
// canvas and SVG drawn by that script) holding |views| as JSON in a
// <script type="application/json"> block. The page records what it drew: once rendered,
// <body data-rendered="1">, each view's <section data-drawn="N"> counts the marks drawn (task
// bars, points, bars, lines), and #errors[data-errors] counts script errors (shown in the page).
// The same input always gives the same bytes (no clock, no random ids).
std::string HtmlReport(std::string_view title, std::string_view subtitle,
                       const std::vector<ReportView>& views);

// |text| with &, <, >, " and ' written as HTML character references, for text and attribute values.
std::string EscapeHtml(std::string_view text);

// |json| as JSON text that is safe inside a <script> element: <, > and & are written as \u003c,
// \u003e and \u0026 (so no "</script>" or "<!--" appears), and invalid UTF-8 as U+FFFD.
// JSON.parse reads it back to the same value.
std::string ScriptSafeJson(const nlohmann::ordered_json& json);

}  // namespace loom

#endif  // LOOM_REPORT_HTML_REPORT_H_
