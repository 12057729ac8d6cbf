// The HTML report's builders: escaping of hostile names, the same bytes for the same input, and the
// data each view carries (tests/report/report_browser_test.cc renders the pages in Chromium).

#include "report/html_report.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/plan_view.h"
#include "report/step_views.h"
#include "report/validate_view.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

// The JSON of the page's data block.
nlohmann::json PageData(const std::string& html) {
  const std::string open = "<script id=\"loom-data\" type=\"application/json\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// GPT-3 125M on two stages of one DGX H100: a small step with a pipeline.
SimulationResult TwoStageStep() {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/gpt3-125m.json"));
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"));
  EXPECT_TRUE(model.ok() && cluster.ok());
  Strategy s;
  s.pp = 2;
  s.micro_batch = 2;
  s.global_batch = 8;
  s.seq_len = 2048;
  Result<SimulationResult> result = SimulateTrainingStep(*model, *cluster, s);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return std::move(result).value();
}

TEST(HtmlReport, EscapesTheFiveHtmlCharacters) {
  EXPECT_EQ(EscapeHtml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(HtmlReport, ScriptSafeJsonHasNoAngleBracketsAndReadsBack) {
  const nlohmann::ordered_json hostile = {{"name", "</script><script>alert(1)</script><!-- & -->"}};
  const std::string text = ScriptSafeJson(hostile);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  EXPECT_EQ(nlohmann::ordered_json::parse(text), hostile);
}

TEST(HtmlReport, HostileNamesCannotCloseTheScriptOrTheTitle) {
  ReportView view{
      "gantt", "</h1><b>view", "gantt", {{"names", {"</script><script>alert(1)</script>"}}}};
  const std::string html = HtmlReport("</title><script>x()</script>", "<i>sub</i>", {view});
  // The data block's and the renderer's closing tags, and none from the names.
  EXPECT_EQ(Count(html, "</script>"), 2u);
  EXPECT_NE(html.find("<title>&lt;/title&gt;&lt;script&gt;x()&lt;/script&gt;</title>"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;/h1&gt;&lt;b&gt;view"), std::string::npos);
  EXPECT_EQ(PageData(html)["views"][0]["data"]["names"][0], "</script><script>alert(1)</script>");
  EXPECT_EQ(PageData(html)["title"], "</title><script>x()</script>");
}

TEST(HtmlReport, NeedsNoNetwork) {
  const std::string html = HtmlReport("t", "s", {});
  // The one URL is SVG's namespace name, an identifier that is never fetched.
  EXPECT_EQ(Count(html, "http://"), Count(html, "\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(html.find("document.body.dataset.rendered = \"1\""), std::string::npos);
}

TEST(SimulationReport, SameResultSameBytes) {
  const SimulationResult a = TwoStageStep(), b = TwoStageStep();
  EXPECT_EQ(SimulationReport("t", "s", a), SimulationReport("t", "s", b));
}

TEST(SimulationReport, CarriesEveryTaskEveryStageAndTheBreakdown) {
  const SimulationResult r = TwoStageStep();
  const nlohmann::json page = PageData(SimulationReport("t", "s", r));
  ASSERT_EQ(page["views"].size(), 3u);
  EXPECT_EQ(page["views"][0]["id"], "gantt");
  EXPECT_EQ(page["views"][1]["id"], "memory");
  EXPECT_EQ(page["views"][2]["id"], "breakdown");
  const nlohmann::json& gantt = page["views"][0]["data"];
  const int32_t tasks = r.step.graph.num_tasks();
  EXPECT_EQ(gantt["tasks"]["stream"].size(), static_cast<size_t>(tasks));
  EXPECT_EQ(gantt["streams"].size(), static_cast<size_t>(r.step.graph.num_streams()));
  ASSERT_EQ(gantt["timelines"].size(), 1u);
  EXPECT_EQ(gantt["timelines"][0]["end_ns"][tasks - 1], r.timeline.end[tasks - 1].nanos());
  EXPECT_EQ(gantt["timelines"][0]["makespan_ns"], r.timeline.makespan.nanos());
  // Labels name the micro-batch: the first forward on stage 0 is micro-batch 0's.
  const nlohmann::json& names = gantt["names"];
  EXPECT_EQ(names[gantt["tasks"]["label"][0].get<int>()], "F mb0 c0");
  const nlohmann::json& memory = page["views"][1]["data"];
  ASSERT_EQ(memory["stages"].size(), 2u);
  for (int stage = 0; stage < 2; ++stage) {
    const nlohmann::json& m = memory["stages"][stage];
    EXPECT_EQ(m["peak_bytes"], r.memory_by_stage[stage].peak_bytes);
    int64_t items = 0;
    for (const nlohmann::json& item : m["items"]) items += item["bytes"].get<int64_t>();
    EXPECT_EQ(items, m["peak_bytes"].get<int64_t>());
    EXPECT_EQ(m["time_ns"].size(), r.memory.ranks[stage].timeline.size());
  }
  EXPECT_EQ(memory["limit_bytes"], r.memory_limit_bytes);
  const nlohmann::json& breakdown = page["views"][2]["data"];
  EXPECT_DOUBLE_EQ(breakdown["step_time_s"].get<double>(), r.step_time_s);
  EXPECT_DOUBLE_EQ(breakdown["breakdown"]["bubble_s"].get<double>(), r.breakdown.bubble_s);
  EXPECT_EQ(breakdown["stages"].size(), 2u);
}

TEST(PlansView, GpusAreTheWorldSizeAndCountsAreThePlannersOwn) {
  PlanReport report;
  report.enumerated = 40;
  report.rejected_by_rules = 30;
  report.simulated = 7;
  report.rejections.push_back({"--tp", 30, "--tp 8: ..."});
  RankedPlan plan;
  plan.strategy.tp = 2;
  plan.strategy.pp = 4;
  plan.strategy.dp = 3;
  plan.strategy.cp = 2;
  plan.step_time_s = 1.5;
  report.ranked = {plan, plan};
  const nlohmann::ordered_json data = PlansView(report, Objective::kTime).data;
  ASSERT_EQ(data["plans"].size(), 2u);
  EXPECT_EQ(data["plans"][0]["gpus"], 48);
  EXPECT_EQ(data["plans"][1]["rank"], 2);
  EXPECT_EQ(data["counts"]["rejected_by_rules"], 30);
  EXPECT_EQ(data["counts"]["simulated"], 7);
  EXPECT_EQ(data["rejections"][0]["rule"], "--tp");
  EXPECT_EQ(data["objective"], "time");
}

TEST(ValidationReport, ShowsBothTimelinesAndTheComparison) {
  const SimulationResult r = TwoStageStep();
  StepTimeline measured = r.timeline;
  for (SimTime& t : measured.end) t = t + SimTime::FromMicros(1);
  StepComparison comparison;
  comparison.steps = 3;
  comparison.step_time_s = CompareValues(1.0, 1.25);
  comparison.classes.push_back({"compute", 10, CompareValues(2.0, 2.5)});
  const nlohmann::json page =
      PageData(ValidationReport("t", "s", r.step, r.timeline, measured, comparison));
  ASSERT_EQ(page["views"].size(), 2u);
  const nlohmann::json& validate = page["views"][0]["data"];
  EXPECT_DOUBLE_EQ(validate["step_time"]["error_fraction"].get<double>(), 0.25);
  EXPECT_EQ(validate["classes"][0]["name"], "compute");
  const nlohmann::json& timelines = page["views"][1]["data"]["timelines"];
  ASSERT_EQ(timelines.size(), 2u);
  EXPECT_EQ(timelines[0]["title"], "predicted");
  EXPECT_EQ(timelines[1]["end_ns"][0].get<int64_t>(), r.timeline.end[0].nanos() + 1000);
}

}  // namespace
}  // namespace loom
