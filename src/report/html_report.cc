#include "report/html_report.h"

#include <nlohmann/json.hpp>

#include "report/report_script.h"

namespace loom {
namespace {

// The page's style: one column of views, charts at the page's width, the system's sans-serif.
constexpr std::string_view kStyle = R"css(
body { font: 14px/1.4 "DejaVu Sans", sans-serif; margin: 0; color: #1d232b; background: #fafbfc; }
header { padding: 10px 20px 6px; background: #20303f; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
header p { margin: 2px 0 6px; color: #c4d0dc; }
nav a { color: #9fd0ff; margin-right: 14px; text-decoration: none; }
section { padding: 8px 20px 16px; }
section h2 { font-size: 16px; margin: 6px 0; }
section.hidden { display: none; }
.note { color: #56606b; font-size: 12px; margin: 2px 0 6px; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
th, td { border-bottom: 1px solid #dde3e9; padding: 2px 8px; text-align: right; }
th:first-child, td:first-child, tr.plan-row td:nth-child(2) { text-align: left; }
canvas { display: block; background: #fff; border: 1px solid #dde3e9; }
svg { background: #fff; border: 1px solid #dde3e9; display: block; margin: 4px 0; }
svg text { font: 11px "DejaVu Sans", sans-serif; fill: #333; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
#tooltip { position: fixed; pointer-events: none; background: #20303f; color: #fff; font-size: 12px;
           padding: 4px 6px; border-radius: 3px; display: none; white-space: pre; }
#errors { color: #b00020; padding: 0 20px; white-space: pre-wrap; }
)css";

void AppendEscaped(std::string& out, char c) {
  switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
  }
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) AppendEscaped(out, c);
  return out;
}

std::string ScriptSafeJson(const nlohmann::ordered_json& json) {
  const std::string text =
      json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  // Outside strings JSON has none of these characters, so escaping them everywhere only touches
  // string contents, where \u escapes mean the same characters.
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HtmlReport(std::string_view title, std::string_view subtitle,
                       const std::vector<ReportView>& views) {
  nlohmann::ordered_json page = {
      {"title", title}, {"subtitle", subtitle}, {"views", nlohmann::ordered_json::array()}};
  std::string nav;
  for (const ReportView& view : views) {
    page["views"].push_back(
        {{"id", view.id}, {"title", view.title}, {"kind", view.kind}, {"data", view.data}});
    nav += "<a href=\"#" + EscapeHtml(view.id) + "\">" + EscapeHtml(view.title) + "</a>";
  }
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  html += "<title>" + EscapeHtml(title) + "</title>\n<style>" + std::string(kStyle) +
          "</style>\n</head>\n";
  html += "<body data-rendered=\"0\">\n<header><h1>" + EscapeHtml(title) + "</h1><p>" +
          EscapeHtml(subtitle) + "</p><nav>" + nav + "</nav></header>\n";
  html +=
      "<div id=\"errors\" data-errors=\"0\"></div>\n<div id=\"views\"></div>\n<div "
      "id=\"tooltip\"></div>\n";
  html +=
      "<script id=\"loom-data\" type=\"application/json\">" + ScriptSafeJson(page) + "</script>\n";
  html += "<script>\n" + std::string(ReportScript()) + "\n</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace loom
