// The loom binary's --report pages of simulate, plan and validate, rendered by headless Chromium:
// each loads without a script error, says it rendered, and draws as many marks in each view as
// its data asks for (counted from the page's own JSON).

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/html_report.h"

namespace {

const char* const kChromium = "/usr/bin/chromium";

std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

std::string Quoted(const std::string& text) { return "'" + text + "'"; }

// Runs |command| under sh; returns its stdout, and its exit status in |status|.
std::string RunCommand(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int raw = pclose(pipe);
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

class ReportInBrowser : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kChromium, X_OK), 0)
        << kChromium
        << " is missing: the HTML report tests render in headless Chromium. Run tools/test, which "
        << "installs it (tools/lib/bootstrap.sh: apt-get install chromium fonts-dejavu-core)";
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_report_browser_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs the loom binary with |arguments| (already quoted) and expects it to succeed.
  void Loom(const std::string& arguments) {
    int status = -1;
    const std::string out =
        RunCommand(std::string(LOOM_BINARY) + " " + arguments + " 2>&1", status);
    ASSERT_EQ(status, 0) << arguments << "\n" << out;
  }

  // The DOM of |html| after Chromium has loaded it and run its script.
  std::string RenderedDom(const std::string& html) {
    int status = -1;
    const std::string dom = RunCommand(
        "timeout 60 " + std::string(kChromium) +
            " --headless --no-sandbox --disable-gpu --user-data-dir=" + Quoted(Path("profile")) +
            " --dump-dom " + Quoted("file://" + html) + " 2>/dev/null",
        status);
    EXPECT_EQ(status, 0) << "chromium failed on " << html;
    return dom;
  }

  std::filesystem::path dir_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The page's data block, as loom wrote it.
nlohmann::json PageData(const std::string& html) {
  const std::string open = "<script id=\"loom-data\" type=\"application/json\">";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return nullptr;
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

// data-drawn of the section |id| in the rendered DOM; -1 when it is not there.
// Read by plain search: std::regex trips g++ 12's false maybe-uninitialized under the sanitizers.
int64_t Drawn(const std::string& dom, const std::string& id) {
  const size_t start = dom.find("<section id=\"view-" + id + "\"");
  if (start == std::string::npos) return -1;
  const std::string tag = dom.substr(start, dom.find('>', start) - start);
  const std::string key = "data-drawn=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos || at + key.size() >= tag.size()) return -1;
  const size_t digits = tag.find_first_not_of("0123456789", at + key.size());
  if (digits == at + key.size() || digits == std::string::npos || tag[digits] != '"') return -1;
  return std::stoll(tag.substr(at + key.size(), digits - at - key.size()));
}

// What each view must draw, from its data (report.js's rules).
int64_t Expected(const nlohmann::json& view) {
  const nlohmann::json& d = view["data"];
  const std::string kind = view["kind"];
  int64_t marks = 0;
  if (kind == "gantt") {
    for (const nlohmann::json& t : d["timelines"]) {
      for (size_t i = 0; i < t["start_ns"].size(); ++i)
        marks += t["end_ns"][i] > t["start_ns"][i] ? 1 : 0;
    }
  } else if (kind == "memory") {
    for (const nlohmann::json& s : d["stages"]) {
      marks += 2;  // the line and its peak
      for (const nlohmann::json& item : s["items"]) marks += item["bytes"] > 0 ? 1 : 0;
    }
  } else if (kind == "breakdown") {
    marks = static_cast<int64_t>(d["breakdown"].size() + d["critical_path"].size() +
                                 2 * d["stages"].size());
  } else if (kind == "plans") {
    marks =
        static_cast<int64_t>(d["plans"].size() + d["counts"].size() - 1 + d["rejections"].size());
  } else if (kind == "residuals") {
    marks = static_cast<int64_t>(d["points"].size());
  } else if (kind == "validate") {
    marks = static_cast<int64_t>(2 * (1 + d["classes"].size() + d["work_classes"].size()));
  }
  return marks;
}

// Renders |html| and checks it loaded without errors and drew each of |views| in full.
void ExpectRendered(const std::string& dom, const std::string& html,
                    const std::vector<std::string>& views) {
  EXPECT_NE(dom.find("<body data-rendered=\"1\">"), std::string::npos)
      << html << ": the script did not finish";
  EXPECT_NE(dom.find("<div id=\"errors\" data-errors=\"0\"></div>"), std::string::npos)
      << html << ": script errors:\n"
      << dom.substr(dom.find("id=\"errors\""), 2000);
  const nlohmann::json page = PageData(ReadFile(html));
  ASSERT_TRUE(page.is_object()) << html << " has no data block";
  ASSERT_EQ(page["views"].size(), views.size()) << html;
  for (size_t i = 0; i < views.size(); ++i) {
    const nlohmann::json& view = page["views"][i];
    EXPECT_EQ(view["id"], views[i]);
    const int64_t expected = Expected(view);
    EXPECT_GT(expected, 0) << html << "#" << views[i] << " has nothing to draw";
    EXPECT_EQ(Drawn(dom, views[i]), expected) << html << "#" << views[i];
  }
}

// loom_fidelity --report: one residual plot per table, a point per predicted case, the corpus of
// measured steps among them. A fixture of its own, labelled reference with the fidelity report
// (tests/CMakeLists.txt), since it predicts every published case.
class FidelityInBrowser : public ReportInBrowser {};

TEST_F(FidelityInBrowser, ReportDrawsAResidualPointPerPredictedCase) {
  const std::string html = Path("fidelity.html");
  int status = -1;
  const std::string out =
      RunCommand(std::string(LOOM_FIDELITY) + " --report " + Quoted(html) + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
  const nlohmann::json page = PageData(ReadFile(html));
  ASSERT_TRUE(page.is_object()) << html << " has no data block";
  std::vector<std::string> views;
  for (const nlohmann::json& view : page["views"]) views.push_back(view["id"]);
  for (const char* corpus :
       {"steptime_vtrain_ground_truth_single", "steptime_narayanan2021_table2_ptdp_vs_zero3",
        "steptime_mosaicml_llmfoundry_mpt_throughput"}) {
    EXPECT_NE(std::find(views.begin(), views.end(), corpus), views.end()) << corpus;
  }
  ExpectRendered(RenderedDom(html), html, views);
}

TEST_F(ReportInBrowser, SimulateReportDrawsGanttMemoryAndBreakdown) {
  const std::string html = Path("simulate.html");
  Loom("simulate --model " + Quoted(Shipped("models/gpt3-125m.json")) + " --cluster " +
       Quoted(Shipped("hardware/clusters/dgx-h100.json")) +
       " --pp 2 --dp 2 --micro-batch 2 --global-batch 16 --seq 2048 --report " + Quoted(html));
  ExpectRendered(RenderedDom(html), html, {"gantt", "memory", "breakdown"});
}

TEST_F(ReportInBrowser, PlanReportDrawsThePlansAndRejections) {
  const std::string html = Path("plan.html");
  Loom("plan --model " + Quoted(Shipped("models/gpt3-125m.json")) + " --cluster " +
       Quoted(Shipped("hardware/clusters/dgx-h100.json")) +
       " --gpus 8 --global-batch 16 --seq 2048 --top 8 --report " + Quoted(html));
  const std::string dom = RenderedDom(html);
  ExpectRendered(dom, html, {"plans"});
  size_t rows = 0;
  for (size_t at = dom.find("class=\"plan-row\""); at != std::string::npos;
       at = dom.find("class=\"plan-row\"", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 8u);
}

TEST_F(ReportInBrowser, ValidateReportDrawsPredictedAndMeasured) {
  const std::string plan = Path("one.json"), html = Path("validate.html");
  Loom("plan --model " + Quoted(Shipped("models/gpt3-125m.json")) + " --cluster " +
       Quoted(Shipped("hardware/clusters/dgx-h100.json")) +
       " --gpus 1 --global-batch 16 --seq 2048 --fix tp=1,pp=1,micro_batch=4 --emit plan --out " +
       Quoted(plan));
  Loom("validate " + Quoted(plan) +
       " --backend host --speedup 1000 --steps 2 --warmup 0 --report " + Quoted(html));
  ExpectRendered(RenderedDom(html), html, {"validate", "gantt"});
}

// Names that would be markup if the page pasted them into HTML stay text: the page still renders,
// runs no injected script and shows the names as written.
TEST_F(ReportInBrowser, HostileNamesRenderAsText) {
  const std::string hostile = "</script><img src=x onerror=\"document.title='owned'\">";
  loom::ReportView plans{"plans", hostile, "plans", {}};
  plans.data = {{"objective", "time"},
                {"plans", nlohmann::ordered_json::array()},
                {"counts", {{"enumerated", 3}, {"rejected_by_rules", 3}}},
                {"rejections", {{{"rule", hostile}, {"count", 3}, {"example", hostile}}}},
                {"interrupted", false}};
  const std::string html = Path("hostile.html");
  std::ofstream(html) << loom::HtmlReport(hostile, hostile, {plans});
  const std::string dom = RenderedDom(html);
  ExpectRendered(dom, html, {"plans"});
  EXPECT_EQ(dom.find("<img"), std::string::npos) << dom.substr(0, 3000);
  EXPECT_EQ(dom.find("<title>owned</title>"), std::string::npos);
  EXPECT_NE(dom.find("&lt;/script&gt;&lt;img src=x"), std::string::npos);
}

// --objective cost (issue 45, section 3): the plot and the table show the objective's score, which
// ranked the plans, not the step time, and each plan's GPUs; the best plan is the cheapest.
TEST_F(ReportInBrowser, PlanReportOfTheCostObjectivePlotsTheCost) {
  const std::string html = Path("plan-cost.html");
  Loom("plan --model " + Quoted(Shipped("models/gpt3-125m.json")) + " --cluster " +
       Quoted(Shipped("hardware/clusters/dgx-h100.json")) +
       " --gpus 16 --min-gpus 2 --global-batch 32 --seq 2048 --top 6 --objective cost --report " +
       Quoted(html));
  const std::string dom = RenderedDom(html);
  ExpectRendered(dom, html, {"plans"});
  EXPECT_NE(dom.find("x: GPU-hours per billion tokens (the objective, cost"), std::string::npos);
  EXPECT_NE(dom.find("<th>GPU-hours per billion tokens</th>"), std::string::npos);
  const nlohmann::json page = PageData(ReadFile(html));
  const nlohmann::json& plans = page["views"][0]["data"]["plans"];
  ASSERT_GE(plans.size(), 2u);
  for (const nlohmann::json& p : plans) {
    EXPECT_LE(plans[0]["score"].get<double>(), p["score"].get<double>());
  }
  EXPECT_NE(dom.find("GPU-h/B tok"), std::string::npos);
  EXPECT_NE(dom.find("<th>GPUs</th>"), std::string::npos);
}

// The Gantt at production scale (issue 45, section 3): every row that runs a task is drawn and
// labelled with the trace's rank names, however many there are; no row is empty.
void ExpectEveryGanttRowLabelled(const std::string& dom, const std::string& html) {
  const nlohmann::json page = PageData(ReadFile(html));
  ASSERT_TRUE(page.is_object());
  const nlohmann::json& gantt = page["views"][0]["data"];
  std::set<int64_t> used;
  const nlohmann::json& tasks = gantt["tasks"];
  for (const nlohmann::json& t : gantt["timelines"]) {
    for (size_t i = 0; i < t["start_ns"].size(); ++i) {
      if (t["end_ns"][i] > t["start_ns"][i]) used.insert(tasks["stream"][i].get<int64_t>());
    }
  }
  ASSERT_FALSE(used.empty());
  EXPECT_NE(dom.find("data-labels=\"" + std::to_string(used.size()) + "\""), std::string::npos)
      << html << ": " << used.size() << " rows to label";
  ASSERT_TRUE(gantt.contains("rank_names")) << html;
  EXPECT_NE(gantt["rank_names"][1].get<std::string>().find("(pp 1, dp 0"), std::string::npos)
      << gantt["rank_names"][1];
  EXPECT_EQ(tasks["chunk"].size(), tasks["stream"].size());
}

TEST_F(ReportInBrowser, GanttOfSixteenStagesLabelsEveryRow) {
  const std::string html = Path("gantt16.html");
  Loom("simulate " + Quoted(Shipped("scenarios/llama3-405b-16384gpu.json")) + " --report " +
       Quoted(html));
  const std::string dom = RenderedDom(html);
  ExpectRendered(dom, html, {"gantt", "memory", "breakdown"});
  ExpectEveryGanttRowLabelled(dom, html);
}

TEST_F(ReportInBrowser, GanttOfOneHundredTwentyEightStagesLabelsEveryRow) {
  const std::string html = Path("gantt128.html");
  Loom("simulate --model " + Quoted(Shipped("models/megatron-1t.json")) + " --cluster " +
       Quoted(Shipped("hardware/clusters/dgx-h100.json")) +
       " --nodes 128 --tp 8 --pp 128 --global-batch 128 --seq 2048 --recompute full --report " +
       Quoted(html));
  const std::string dom = RenderedDom(html);
  ExpectRendered(dom, html, {"gantt", "memory", "breakdown"});
  ExpectEveryGanttRowLabelled(dom, html);
}

}  // namespace
