// `loom plan` run in-process: its table, its JSON, its errors and its launch settings. Every search
// is Llama 3 8B on two DGX H100 nodes (about 45,000 strategies), most narrowed with --fix, so that
// each test runs in well under a second in a Release build.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/run_loom.h"
#include "plan/search_space.h"
#include "program/plan_file.h"

namespace loom {
namespace {

// `loom plan` of Llama 3 8B on 16 H100s, global batch 32 x 4096 tokens, then |extra|.
CommandResult PlanSmall(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"plan",
                                   "--model",
                                   Shipped("models/llama3-8b.json"),
                                   "--cluster",
                                   Shipped("hardware/clusters/dgx-h100.json"),
                                   "--gpus",
                                   "16",
                                   "--global-batch",
                                   "32",
                                   "--seq",
                                   "4096",
                                   "--threads",
                                   "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return Loom(args);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The whitespace-separated fields of each row of the ranked table (the lines after its "rank"
// header, up to the first blank line).
std::vector<std::vector<std::string>> TableRows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  bool in_table = false;
  for (const std::string& line : Lines(out)) {
    if (!in_table) {
      in_table = line.rfind("rank", 0) == 0;
      continue;
    }
    if (line.empty()) break;
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string f; fields >> f;) row.push_back(f);
    rows.push_back(row);
  }
  return rows;
}

// The ranked table's column names line.
std::string TableHeader(const std::string& out) {
  for (const std::string& line : Lines(out)) {
    if (line.rfind("rank", 0) == 0) return line;
  }
  return "";
}

int64_t Digits(std::string grouped) {
  grouped.erase(std::remove(grouped.begin(), grouped.end(), ','), grouped.end());
  return std::stoll(grouped);
}

// The whole numbers of |line|, in order: its space-separated words that are digits and thousands
// commas once parentheses are stripped ("12,345", "(0" -> 0; "0.25" is not one).
std::vector<int64_t> WholeNumbers(const std::string& line) {
  std::vector<int64_t> out;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    word.erase(
        std::remove_if(word.begin(), word.end(), [](char c) { return c == '(' || c == ')'; }),
        word.end());
    const bool number = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
                        std::all_of(word.begin(), word.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c)) || c == ',';
                        });
    if (number) out.push_back(Digits(word));
  }
  return out;
}

std::string Trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// rule -> count, from the "rejected, by rule" section: "  RULE (22 wide) COUNT (10 wide)  EXAMPLE".
std::vector<std::pair<std::string, int64_t>> RejectedByRule(const std::string& out) {
  std::vector<std::pair<std::string, int64_t>> rules;
  bool in_section = false;
  for (const std::string& line : Lines(out)) {
    if (!in_section) {
      in_section = line == "rejected, by rule (one example each):";
      continue;
    }
    if (line.rfind("  ", 0) != 0 || line.size() < 36) break;
    const std::string count = Trimmed(line.substr(24, 10));
    if (count.empty() || !std::isdigit(static_cast<unsigned char>(count[0]))) break;
    rules.emplace_back(Trimmed(line.substr(2, 22)), Digits(count));
  }
  return rules;
}

TEST(Plan, TableNamesTheQuestionCountsTheSearchAndRanksTopRows) {
  CommandResult r = PlanSmall({"--top", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("loom plan: llama3-8b on 16 x NVIDIA H100 80GB HBM3 (SXM5) in DGX H100 "
                           "SuperPOD, ",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find("global batch 32 x 4096 tokens"), std::string::npos) << lines[0];

  // The summary's counts add up to what was enumerated.
  ASSERT_EQ(lines[1].rfind("searched ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(" break a rule, "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" cannot fit (memory bound), "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" cannot beat the top 3 (time bound, not simulated), "),
            std::string::npos)
      << lines[1];
  // enumerated, rules, memory bound, skipped, the 3 of "top 3", simulated, did not fit.
  const std::vector<int64_t> n = WholeNumbers(lines[1]);
  ASSERT_EQ(n.size(), 7u) << lines[1];
  EXPECT_EQ(n[4], 3);
  const int64_t enumerated = n[0], rules = n[1], memory = n[2], skipped = n[3], simulated = n[5],
                did_not_fit = n[6];
  EXPECT_GT(enumerated, 10000);
  EXPECT_EQ(rules + memory + skipped + simulated, enumerated);
  EXPECT_GE(simulated, 3);

  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i][0], std::to_string(i + 1));
  EXPECT_EQ(TableHeader(r.out).find("GPU-h/Btok"), std::string::npos);

  // Every strategy turned away is counted under one rule.
  const std::vector<std::pair<std::string, int64_t>> rejected = RejectedByRule(r.out);
  ASSERT_FALSE(rejected.empty()) << r.out;
  int64_t total = 0;
  for (const auto& [rule, count] : rejected) total += count;
  EXPECT_EQ(total, rules + memory + did_not_fit);
  ASSERT_GT(memory, 0) << r.out;
  const auto memory_rule = std::find_if(rejected.begin(), rejected.end(),
                                        [](const auto& rule) { return rule.first == "memory"; });
  ASSERT_NE(memory_rule, rejected.end()) << r.out;
  // Those that fit only inside the fragmentation headroom are counted under a rule of their own.
  const auto headroom_rule = std::find_if(rejected.begin(), rejected.end(), [](const auto& rule) {
    return rule.first == "memory headroom";
  });
  const int64_t inside = headroom_rule == rejected.end() ? 0 : headroom_rule->second;
  EXPECT_EQ(memory_rule->second + inside, memory + did_not_fit);
  for (size_t i = 1; i < rejected.size(); ++i)
    EXPECT_GE(rejected[i - 1].second, rejected[i].second);
}

// Each plan says where its measured step time would fall (an 80 % interval of loom's errors on
// measured steps of its regime) and whether that interval sets it apart from the best plan's.
TEST(Plan, PlansCarryAnIntervalAndWhetherTheBestOneIsDistinguishable) {
  CommandResult r = PlanSmall({"--json", "--top", "6"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json plans = nlohmann::json::parse(r.out)["plans"];
  ASSERT_GE(plans.size(), 2u);
  const nlohmann::json& best = plans[0]["step_time_interval_s"];
  ASSERT_TRUE(best.is_array()) << plans[0];
  EXPECT_TRUE(plans[0]["distinguishable_from_best"].is_null());
  for (const nlohmann::json& plan : plans) {
    const nlohmann::json& interval = plan["step_time_interval_s"];
    ASSERT_TRUE(interval.is_array()) << plan;
    EXPECT_LT(interval[0].get<double>(), plan["step_time_s"].get<double>());
    EXPECT_GT(interval[1].get<double>(), plan["step_time_s"].get<double>());
    // H100 under Megatron-LM: measured by one source of the corpus only, so the envelope.
    EXPECT_NE(plan["interval_basis"].get<std::string>().find("no source of the corpus measured"),
              std::string::npos)
        << plan["interval_basis"];
    if (plan["rank"] == 1) continue;
    const double overlap =
        std::max(0.0, std::min(best[1].get<double>(), interval[1].get<double>()) -
                          std::max(best[0].get<double>(), interval[0].get<double>()));
    const bool distinct = overlap <= 0.5 * (best[1].get<double>() - best[0].get<double>());
    EXPECT_EQ(plan["distinguishable_from_best"], distinct) << plan;
  }
  // The table shows them too.
  CommandResult text = PlanSmall({"--top", "3"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("80% interval"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("within"), std::string::npos) << text.out;
}

// --risk 0.9 ranks by the 90th percentile of each plan's step time, loom's prediction as the
// median: the JSON says so for the request and every plan, the table adds the column, and a
// quantile the corpus cannot give or an objective that does not rank by time is refused.
TEST(Plan, RiskRanksByTheQuantileOfTheStepTimeAndSaysSo) {
  CommandResult r = PlanSmall({"--json", "--top", "4", "--risk", "0.9"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["request"]["risk"].get<double>(), 0.9);
  const nlohmann::json& plans = j["plans"];
  ASSERT_GE(plans.size(), 2u);
  double previous = 0;
  for (const nlohmann::json& plan : plans) {
    const double step = plan["step_time_s"].get<double>();
    const double risk = plan["risk_step_time_s"].get<double>();
    // H100 under Megatron-LM takes the envelope, whose p90 lies above its median.
    EXPECT_GT(risk, step * 1.2) << plan;
    EXPECT_LT(risk, plan["step_time_interval_s"][1].get<double>()) << plan;
    EXPECT_DOUBLE_EQ(plan["score"].get<double>(), risk) << plan;
    EXPECT_GE(risk, previous) << plan;
    previous = risk;
  }
  CommandResult median = PlanSmall({"--json", "--top", "1"});
  ASSERT_EQ(median.code, kExitOk) << median.err;
  const nlohmann::json best = nlohmann::json::parse(median.out)["plans"][0];
  EXPECT_DOUBLE_EQ(best["risk_step_time_s"].get<double>(), best["step_time_s"].get<double>());

  CommandResult text = PlanSmall({"--top", "2", "--risk", "0.9"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(TableHeader(text.out).find("p90 s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("objective time at the p90 step time"), std::string::npos) << text.out;
  CommandResult plain = PlanSmall({"--top", "2"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  EXPECT_EQ(TableHeader(plain.out).find("p50 s"), std::string::npos) << plain.out;

  CommandResult low = PlanSmall({"--risk", "0.01"});
  EXPECT_EQ(low.code, kExitBadInput) << low.out;
  EXPECT_NE(low.err.find("--risk is 0.01: it must lie within 0.05 and 0.95"), std::string::npos)
      << low.err;
  CommandResult memory = PlanSmall({"--risk", "0.9", "--objective", "memory-headroom"});
  EXPECT_EQ(memory.code, kExitBadInput) << memory.out;
  EXPECT_NE(memory.err.find("--risk 0.90: ranks by a quantile of the step time"), std::string::npos)
      << memory.err;
}

TEST(Plan, JsonPlansAreSortedAndTheirFixReparses) {
  CommandResult r = PlanSmall({"--fix", "pp=1", "--json", "--top", "5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "loom.plan/1");
  for (const char* key : {"request", "search", "plans"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["request"]["gpus"], 16);
  EXPECT_EQ(j["request"]["global_batch"], 32);
  const nlohmann::json& search = j["search"];
  EXPECT_EQ(search["rejected_by_rules"].get<int64_t>() +
                search["rejected_by_memory_bound"].get<int64_t>() +
                search["skipped_by_bound"].get<int64_t>() + search["simulated"].get<int64_t>(),
            search["enumerated"].get<int64_t>());
  const nlohmann::json& plans = j["plans"];
  ASSERT_EQ(plans.size(), 5u);
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(plans[i]["rank"], i + 1);
    EXPECT_EQ(plans[i]["strategy"]["pp"], 1);
    if (i > 0) {
      EXPECT_LE(plans[i - 1]["step_time_s"].get<double>(), plans[i]["step_time_s"].get<double>());
    }
    const std::string fix = plans[i]["fix"];
    Result<Constraints> parsed = ParseConstraints(fix, "--fix");
    ASSERT_TRUE(parsed.ok()) << fix << ": " << parsed.status().message();
    EXPECT_EQ(parsed->tp, plans[i]["strategy"]["tp"].get<int64_t>());
    EXPECT_EQ(parsed->dp, plans[i]["strategy"]["dp"].get<int64_t>());
    EXPECT_EQ(parsed->micro_batch, plans[i]["strategy"]["micro_batch"].get<int64_t>());
  }
}

TEST(Plan, ExplainOfTheBestPlanSaysRankOne) {
  CommandResult plan = PlanSmall({"--fix", "pp=1", "--json", "--top", "1"});
  ASSERT_EQ(plan.code, kExitOk) << plan.err;
  const std::string best = nlohmann::json::parse(plan.out)["plans"][0]["fix"];

  CommandResult human = PlanSmall({"--fix", "pp=1", "--explain", best});
  ASSERT_EQ(human.code, kExitOk) << human.err;
  EXPECT_NE(human.out.find("strategy: " + best + "\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("rank 1: 0 plans of the search space do better (it is the best plan)"),
            std::string::npos)
      << human.out;
  EXPECT_EQ(human.out.find("DOES NOT FIT"), std::string::npos) << human.out;

  CommandResult json = PlanSmall({"--fix", "pp=1", "--explain", best, "--json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["schema"], "loom.explain/1");
  EXPECT_EQ(j["fits"], true);
  EXPECT_EQ(j["better_plans"], 0);
  EXPECT_EQ(j["strategy"]["rank"], 1);
  EXPECT_EQ(j["strategy"]["fix"], best);
}

// --report draws a search's ranked plans; --explain ranks none, so the pair is refused (naming
// both flags) rather than the report silently dropped, and no file is written.
TEST(Plan, ExplainWithReportIsRefusedNamingBothFlags) {
  const std::string report =
      (std::filesystem::temp_directory_path() / "loom_plan_explain_report.html").string();
  std::filesystem::remove(report);
  CommandResult r = PlanSmall({"--fix", "pp=1", "--explain", "tp=1,pp=1", "--report", report});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_NE(r.err.find("--report " + report), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("drop --explain, or drop --report"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(report));
}

// Issue 22: the explain of Meta's 405B layout with selective recompute (7 layers on the first and
// last stage for the embedding and the loss) says what holds the memory and what to cut.
TEST(Plan, ExplainOf405bThatDoesNotFitShowsWhatToCut) {
  const std::vector<std::string> args = {"plan",
                                         "--model",
                                         Shipped("models/llama3-405b.json"),
                                         "--cluster",
                                         Shipped("hardware/clusters/dgx-h100.json"),
                                         "--gpus",
                                         "16384",
                                         "--global-batch",
                                         "2048",
                                         "--seq",
                                         "8192",
                                         "--fix",
                                         "tp=8,pp=16,vpp=8",
                                         "--explain",
                                         "tp=8,pp=16,vpp=8,micro_batch=1,schedule=interleaved,"
                                         "recompute=selective,sp=true,zero_stage=1,"
                                         "first_stage_layers=7,last_stage_layers=7"};
  CommandResult human = Loom(args);
  ASSERT_EQ(human.code, kExitOk) << human.err;
  EXPECT_NE(human.out.find("DOES NOT FIT"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("memory at each stage's peak"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(" allocates\noutside every peak, "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("to fit, change"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("\n  recompute=full "), std::string::npos) << human.out;

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  CommandResult json = Loom(json_args);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["fits"], false);
  const nlohmann::json& memory = j["memory"];
  ASSERT_EQ(memory["stages"].size(), 16u);
  for (const nlohmann::json& b : memory["stages"]) {
    int64_t sum = 0;
    for (const auto& [item, bytes] : b["items"].items()) sum += bytes.get<int64_t>();
    EXPECT_EQ(sum, b["peak_bytes"].get<int64_t>()) << b["stage"];
  }
  EXPECT_EQ(memory["stages"][memory["peak_stage"].get<int>()]["peak_bytes"],
            j["strategy"]["peak_memory_bytes"]);
  ASSERT_FALSE(memory["fit_suggestions"].empty());
  for (const nlohmann::json& f : memory["fit_suggestions"]) {
    EXPECT_LE(f["peak_memory_bytes"].get<int64_t>(), f["memory_limit_bytes"].get<int64_t>())
        << f["changes"];
    // Each reads back through --explain.
    CommandResult again = Loom({"plan", "--model", Shipped("models/llama3-405b.json"), "--cluster",
                                Shipped("hardware/clusters/dgx-h100.json"), "--gpus", "16384",
                                "--global-batch", "2048", "--seq", "8192", "--fix",
                                "tp=8,pp=16,vpp=8", "--explain", f["fix"], "--json"});
    ASSERT_EQ(again.code, kExitOk) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["fits"], true) << f["fix"];
  }
}

// plan --json: every ranked plan carries its peak stage's breakdown, which sums to its peak.
TEST(Plan, JsonPlansCarryTheirPeakStagesMemoryBreakdown) {
  CommandResult r = PlanSmall({"--json", "--top", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["plans"].empty());
  for (const nlohmann::json& p : j["plans"]) {
    const nlohmann::json& b = p["memory_breakdown"];
    int64_t sum = 0;
    for (const auto& [item, bytes] : b["items"].items()) sum += bytes.get<int64_t>();
    EXPECT_EQ(sum, p["peak_memory_bytes"].get<int64_t>()) << p["fix"];
    EXPECT_EQ(b["peak_bytes"], p["peak_memory_bytes"]) << p["fix"];
    EXPECT_FALSE(b["peak_task"].is_null()) << p["fix"];
  }
}

TEST(Plan, ExplainOfAStrategyThatDoesNotFitNamesTheBestPlan) {
  // Llama 3 8B unsharded with Adam: 16 bytes per parameter alone is 120 GiB.
  CommandResult r = PlanSmall(
      {"--fix", "pp=1", "--explain", "tp=1,pp=1,micro_batch=1,recompute=none,zero_stage=0"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("GiB usable: DOES NOT FIT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dominated by memory"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rank 1:"), std::string::npos) << r.out;
  const size_t best = r.out.find("\nbest plan: tp=");
  ASSERT_NE(best, std::string::npos) << r.out;
  const size_t comma = r.out.find(',', best);
  ASSERT_NE(comma, std::string::npos);
  EXPECT_EQ(r.out.compare(comma, 9, ",pp=1,dp="), 0) << r.out.substr(best, 60);
}

TEST(Plan, TpThatDoesNotDivideTheHeadsIsBadInput) {
  CommandResult r =
      Loom({"plan", "--model", Shipped("models/llama3-70b.json"), "--cluster",
            Shipped("hardware/clusters/dgx-h100.json"), "--gpus", "24", "--global-batch", "48",
            "--seq", "4096", "--threads", "2", "--fix", "tp=3"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--tp 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("num_attention_heads (64)"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Plan, UnknownFixKeyListsTheKeys) {
  CommandResult r = PlanSmall({"--fix", "tpp=2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("unknown key 'tpp'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("keys are tp, pp, dp, cp,"), std::string::npos) << r.err;
}

TEST(Plan, GpusThatAreNotWholeNodesSuggestTheNearestCounts) {
  CommandResult r = Loom({"plan", "--model", Shipped("models/llama3-8b.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--gpus", "12",
                          "--global-batch", "32", "--seq", "4096"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--gpus 12"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use 8 or 16"), std::string::npos) << r.err;
}

TEST(Plan, EmitMegatronPrintsTheBestPlansTpAndCountsWhatItCannotRun) {
  // With pp = 2 the space holds ZB-H1, ZB-V and DualPipeV, which mainline Megatron-LM cannot run.
  CommandResult r = PlanSmall({"--fix", "pp=2", "--top", "3", "--emit", "megatron"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  const std::string tp = rows[0][1];
  EXPECT_NE(r.out.find("launch settings of plan 1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tensor-model-parallel-size " + tp + " \\\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--pipeline-model-parallel-size 2 \\\n"), std::string::npos) << r.out;
  for (const std::vector<std::string>& row : rows) {
    EXPECT_TRUE(row[8] == "1f1b" || row[8] == "interleaved") << row[8];
  }
  int64_t unexpressible = 0;
  for (const auto& [rule, count] : RejectedByRule(r.out)) {
    if (rule == "--emit megatron") unexpressible = count;
  }
  EXPECT_GT(unexpressible, 0) << r.out;
  EXPECT_NE(r.out.find("--schedule zb-h1: mainline Megatron-LM has no zero-bubble schedule"),
            std::string::npos)
      << r.out;
}

TEST(Plan, EmitDeepSpeedJsonHasTheGlobalBatch) {
  CommandResult r = PlanSmall({"--fix", "pp=1", "--top", "2", "--emit", "deepspeed", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& emit = j["emit"];
  EXPECT_EQ(emit["format"], "deepspeed");
  EXPECT_EQ(emit["rank"], 1);
  const nlohmann::json& config = emit["config"];
  EXPECT_EQ(config["train_batch_size"], 32);
  const nlohmann::json& best = j["plans"][0]["strategy"];
  EXPECT_EQ(config["train_micro_batch_size_per_gpu"], best["micro_batch"]);
  EXPECT_EQ(config["train_micro_batch_size_per_gpu"].get<int64_t>() *
                config["gradient_accumulation_steps"].get<int64_t>() * best["dp"].get<int64_t>(),
            32);
  EXPECT_FALSE(emit["notes"].empty());
  // --grad-accumulation auto: every ranked plan accumulates as DeepSpeed does at its ZeRO stage.
  for (const nlohmann::json& plan : j["plans"]) {
    const std::string expected =
        plan["strategy"]["zero_stage"].get<int64_t>() >= 1 ? "add" : "autograd";
    EXPECT_EQ(plan["strategy"]["grad_accumulation"], expected) << plan.dump();
  }
  EXPECT_TRUE(config.contains("data_types")) << config.dump();
}

// What a launch runs is what the ranking simulated: Megatron-DeepSpeed's --use-flash-attn-v2 is
// FlashAttention-2 (cuDNN's has no flag there), loom validate's executors run cuDNN's; a family
// the launch cannot run is refused.
TEST(Plan, EmittedLaunchesSimulateTheAttentionTheyRun) {
  const auto best = [](const CommandResult& r) {
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out)["plans"][0]["step_time_s"].get<double>();
  };
  const std::vector<std::string> fix = {"--fix", "pp=1,tp=2,cp=1,dp=8,micro_batch=1,zero_stage=1",
                                        "--top", "1", "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = fix;
    args.insert(args.end(), extra.begin(), extra.end());
    return PlanSmall(args);
  };
  // On H100 megatron-core runs cuDNN's (faster at this shape); DeepSpeed's launch runs
  // FlashAttention-2, with or without --attention flash2.
  EXPECT_LT(best(with({})), best(with({"--attention", "flash2"})));
  EXPECT_EQ(best(with({"--emit", "deepspeed"})),
            best(with({"--emit", "deepspeed", "--attention", "flash2"})));
  CommandResult cudnn = with({"--emit", "deepspeed", "--attention", "cudnn"});
  EXPECT_NE(cudnn.code, kExitOk);
  EXPECT_NE(cudnn.err.find("Megatron-DeepSpeed has no flag for cuDNN"), std::string::npos)
      << cudnn.err;
  CommandResult flash = PlanSmall({"--fix", "pp=1,tp=2,cp=1,dp=8,micro_batch=1,zero_stage=1",
                                   "--emit", "plan", "--attention", "flash2"});
  EXPECT_NE(flash.code, kExitOk);
  EXPECT_NE(flash.err.find("run cuDNN's fused attention"), std::string::npos) << flash.err;
  // No launch loom emits runs the Triton port of FlashAttention.
  for (const std::string emit : {"megatron", "deepspeed", "plan"}) {
    CommandResult triton = PlanSmall({"--fix", "pp=1,tp=2,cp=1,dp=8,micro_batch=1,zero_stage=1",
                                      "--emit", emit, "--attention", "triton"});
    EXPECT_NE(triton.code, kExitOk) << emit;
    EXPECT_NE(triton.err.find("--attention triton with --emit " + emit), std::string::npos)
        << triton.err;
  }
}

// --emit deepspeed models the stack its config is written for unless --framework names another;
// --emit megatron keeps megatron-core.
TEST(Plan, EmitDeepSpeedModelsTheStackItsConfigIsWrittenFor) {
  const std::vector<std::string> fix = {"--fix", "pp=1,tp=2,cp=1,dp=8,micro_batch=1,zero_stage=3",
                                        "--top", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = fix;
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = PlanSmall(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.out;
  };
  EXPECT_NE(with({"--emit", "deepspeed"}).find("host megatron-deepspeed-2024"), std::string::npos);
  EXPECT_NE(
      with({"--emit", "deepspeed", "--framework", "megatron-core"}).find("host megatron-core"),
      std::string::npos);
  EXPECT_NE(with({"--emit", "megatron"}).find("host megatron-core"), std::string::npos);
}

TEST(Plan, FusedGradientAccumulationCannotBeEmittedForDeepSpeed) {
  CommandResult r = PlanSmall(
      {"--fix", "pp=1", "--top", "2", "--emit", "deepspeed", "--grad-accumulation", "fused"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_NE((r.out + r.err).find("--grad-accumulation fused with --zero"), std::string::npos)
      << r.out << r.err;
}

TEST(Plan, PickBeyondTopSaysToRaiseTop) {
  CommandResult r = PlanSmall({"--fix", "pp=1", "--emit", "megatron", "--pick", "3", "--top", "2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--pick 3: only 2 plans are ranked; raise --top"), std::string::npos)
      << r.err;
}

// One unit of cost in the table, the JSON and the help: GPU-hours per 10^9 tokens.
TEST(Plan, CostObjectiveRanksByGpuHoursPerBillionTokensAtTheGpusAskedFor) {
  CommandResult r = PlanSmall({"--fix", "pp=1,tp=2", "--objective", "cost", "--top", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("objective cost"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cost in GPU-hours per 10^9 tokens (GPU-h/Btok)"), std::string::npos)
      << r.out;
  const std::string header = TableHeader(r.out);
  ASSERT_NE(header.find("GPUs  GPU-h/Btok"), std::string::npos) << r.out;
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][rows[i].size() - 2], "16") << "no --min-gpus: the 16 GPUs asked for";
    if (i > 0) {
      EXPECT_LE(std::stod(rows[i - 1].back()), std::stod(rows[i].back()));
    }
  }
  CommandResult j =
      PlanSmall({"--fix", "pp=1,tp=2", "--objective", "cost", "--top", "3", "--json"});
  ASSERT_EQ(j.code, kExitOk) << j.err;
  const nlohmann::json json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["request"]["score_unit"], "gpu_hours_per_billion_tokens");
  EXPECT_EQ(json["request"]["gpu_counts"], nlohmann::json::array({16}));
  for (const nlohmann::json& plan : json["plans"]) {
    EXPECT_DOUBLE_EQ(plan["score"].get<double>(),
                     plan["gpu_hours_per_billion_tokens"].get<double>());
    EXPECT_NEAR(plan["gpu_hours_per_billion_tokens"].get<double>(),
                plan["step_time_s"].get<double>() * 16 / 3600 / (32.0 * 4096) * 1e9, 1e-9);
  }
  EXPECT_NE(Loom({"plan", "--help"}).out.find("GPU-hours per 10^9 tokens"), std::string::npos);
}

TEST(Plan, MinGpusLetsTheCostObjectiveWeighSmallerJobs) {
  CommandResult r = PlanSmall(
      {"--fix", "pp=1,tp=1", "--objective", "cost", "--top", "3", "--min-gpus", "4", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["request"]["gpu_counts"], nlohmann::json::array({16, 8, 4}));
  bool smaller = false;
  for (const nlohmann::json& plan : json["plans"]) {
    EXPECT_GE(plan["gpus"].get<int64_t>(), 4);
    smaller = smaller || plan["gpus"].get<int64_t>() < 16;
  }
  EXPECT_TRUE(smaller) << r.out;
  CommandResult text =
      PlanSmall({"--fix", "pp=1,tp=1", "--objective", "cost", "--top", "1", "--min-gpus", "4"});
  EXPECT_NE(text.out.find("GPU counts searched 16, 8, 4"), std::string::npos) << text.out;
}

TEST(Plan, PriceAndTokensGiveTimeToTrainAndDollars) {
  CommandResult r =
      PlanSmall({"--fix", "pp=1,tp=2", "--top", "2", "--price", "2.5", "--tokens", "1e12"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("$2.50 per GPU-hour (--price)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.00 T tokens to train"), std::string::npos) << r.out;
  const std::string header = TableHeader(r.out);
  for (const char* column : {"GPU-h/Btok", "$/Btok", "train days", "train $"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << "\n" << r.out;
  }
  CommandResult j = PlanSmall(
      {"--fix", "pp=1,tp=2", "--top", "2", "--price", "2.5", "--tokens", "1e12", "--json"});
  ASSERT_EQ(j.code, kExitOk) << j.err;
  const nlohmann::json json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["request"]["price_per_gpu_hour_usd"], 2.5);
  EXPECT_EQ(json["request"]["price_source"], "--price");
  EXPECT_EQ(json["request"]["tokens"], 1e12);
  const nlohmann::json& plan = json["plans"][0];
  const int64_t steps = (1'000'000'000'000 + 32 * 4096 - 1) / (32 * 4096);
  EXPECT_EQ(plan["steps_to_train"], steps);
  EXPECT_DOUBLE_EQ(plan["time_to_train_s"].get<double>(),
                   static_cast<double>(steps) * plan["step_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(plan["gpu_hours_to_train"].get<double>(),
                   plan["time_to_train_s"].get<double>() * 16 / 3600);
  EXPECT_DOUBLE_EQ(plan["usd_to_train"].get<double>(),
                   plan["gpu_hours_to_train"].get<double>() * 2.5);
  EXPECT_DOUBLE_EQ(plan["usd_per_billion_tokens"].get<double>(),
                   plan["gpu_hours_per_billion_tokens"].get<double>() * 2.5);
  // The table's last column is the dollars to train, rounded.
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(Digits(rows[0].back()), std::llround(plan["usd_to_train"].get<double>()));
}

// Cost columns as wide as their values: at $10,000 an hour over 10^18 tokens the last three ran
// together (issue 45, section 3). Each row keeps as many blank-separated fields as the header.
TEST(Plan, CostColumnsStayApartAtAnyScale) {
  CommandResult r =
      PlanSmall({"--fix", "pp=1,tp=2", "--top", "2", "--price", "10000", "--tokens", "1e18"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_FALSE(rows.empty());
  for (const std::vector<std::string>& row : rows) {
    ASSERT_GE(row.size(), 4u);
    const size_t n = row.size();
    // train $ is grouped digits alone; train days, $/Btok and GPU-h/Btok each one decimal number.
    EXPECT_EQ(row[n - 1].find_first_not_of("0123456789,"), std::string::npos)
        << "columns ran together: " << row[n - 1] << "\n"
        << r.out;
    for (size_t k = n - 4; k < n - 1; ++k) {
      EXPECT_EQ(row[k].find_first_not_of("0123456789."), std::string::npos) << row[k];
      EXPECT_EQ(std::count(row[k].begin(), row[k].end(), '.'), 1) << row[k] << "\n" << r.out;
    }
  }
}

TEST(Plan, WithoutPriceOrTokensTheCostKeysAreNull) {
  CommandResult r = PlanSmall({"--fix", "pp=1,tp=2", "--top", "1", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_TRUE(json["request"]["price_per_gpu_hour_usd"].is_null());
  EXPECT_TRUE(json["request"]["tokens"].is_null());
  EXPECT_TRUE(json["plans"][0]["usd_per_billion_tokens"].is_null());
  EXPECT_TRUE(json["plans"][0]["time_to_train_s"].is_null());
  EXPECT_GT(json["plans"][0]["gpu_hours_per_billion_tokens"].get<double>(), 0);
  EXPECT_EQ(json["plans"][0]["variants"], nlohmann::json::array());
}

TEST(Plan, TheClusterFilesPriceIsUsedAndNamed) {
  nlohmann::json cluster =
      nlohmann::json::parse(std::ifstream(Shipped("hardware/clusters/dgx-h100.json")));
  cluster["gpu"] = Shipped("hardware/gpus/h100-sxm5-80gb.json");
  cluster["price_per_gpu_hour_usd"] = 3.0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("loom_plan_test_priced_" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(path) << cluster.dump();
  CommandResult r = Loom({"plan",
                          "--model",
                          Shipped("models/llama3-8b.json"),
                          "--cluster",
                          path,
                          "--gpus",
                          "16",
                          "--global-batch",
                          "32",
                          "--seq",
                          "4096",
                          "--threads",
                          "2",
                          "--fix",
                          "pp=1,tp=2",
                          "--top",
                          "1",
                          "--framework",
                          "none",
                          "--json"});
  std::filesystem::remove(path);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["request"]["price_per_gpu_hour_usd"], 3.0);
  EXPECT_EQ(json["request"]["price_source"], path);
  EXPECT_DOUBLE_EQ(json["plans"][0]["usd_per_billion_tokens"].get<double>(),
                   json["plans"][0]["gpu_hours_per_billion_tokens"].get<double>() * 3);
}

TEST(Plan, ProgressFlagWritesProgressToANonTerminalStderr) {
  CommandResult quiet = PlanSmall({"--fix", "pp=1", "--top", "3"});
  ASSERT_EQ(quiet.code, kExitOk) << quiet.err;
  EXPECT_EQ(quiet.err.find("bounding"), std::string::npos) << quiet.err;
  CommandResult r = PlanSmall({"--fix", "pp=1", "--top", "3", "--progress"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "a log gets whole lines";
  const std::vector<std::string> lines = Lines(r.err);
  const auto starting = [&](const std::string& prefix) {
    return std::find_if(lines.rbegin(), lines.rend(),
                        [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
  };
  ASSERT_NE(starting("bounding "), lines.rend()) << r.err;
  const auto simulating = starting("simulating ");
  ASSERT_NE(simulating, lines.rend()) << r.err;
  // The last line: every candidate done, most bounded out, and the best plan, the table's first.
  EXPECT_NE(simulating->find(" bounded out), "), std::string::npos) << *simulating;
  EXPECT_NE(simulating->find(", done in "), std::string::npos) << *simulating;
  const std::vector<int64_t> n = WholeNumbers(*simulating);
  ASSERT_GE(n.size(), 3u) << *simulating;
  EXPECT_EQ(n[0], n[1]) << *simulating;
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_FALSE(rows.empty());
  // The step time: the ninth column from the right (then the interval, vs best, tokens/s, ...).
  EXPECT_NE(simulating->find("best " + rows[0][rows[0].size() - 9] + " s/step"), std::string::npos)
      << *simulating << "\n"
      << r.out;
}

TEST(Plan, MaxStepTimeRejectsSlowerPlansAndCountsThem) {
  CommandResult all = PlanSmall({"--fix", "pp=1,tp=2", "--top", "4", "--json"});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  const nlohmann::json plans = nlohmann::json::parse(all.out)["plans"];
  const double limit = plans[1]["step_time_s"].get<double>() * 1.0001;
  std::ostringstream text;
  text << limit;
  CommandResult r =
      PlanSmall({"--fix", "pp=1,tp=2", "--top", "4", "--max-step-time", text.str(), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["request"]["max_step_time_s"], std::stod(text.str()));
  for (const nlohmann::json& plan : json["plans"])
    EXPECT_LE(plan["step_time_s"].get<double>(), limit);
  EXPECT_GT(json["search"]["rejected_by_step_time_bound"].get<int64_t>(), 0);
  bool named = false;
  for (const nlohmann::json& rule : json["search"]["rejections"])
    named = named || rule["rule"] == "--max-step-time";
  EXPECT_TRUE(named) << json["search"].dump();
  CommandResult table =
      PlanSmall({"--fix", "pp=1,tp=2", "--top", "4", "--max-step-time", text.str()});
  EXPECT_NE(table.out.find(" over --max-step-time (step time bound), "), std::string::npos)
      << table.out;
}

TEST(Plan, DistinctListsEachRowsVariantsInTextAndJson) {
  // tp 2: its best plans have ZeRO-2 twins within 1 % (ZeRO-1's step, less memory).
  CommandResult r = PlanSmall({"--fix", "tp=2", "--top", "4", "--distinct", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["request"]["distinct"], true);
  ASSERT_EQ(json["plans"].size(), 4u);
  size_t variants = 0;
  for (const nlohmann::json& plan : json["plans"]) {
    for (const nlohmann::json& v : plan["variants"]) {
      ++variants;
      EXPECT_LT(std::abs(v["step_time_s"].get<double>() / plan["step_time_s"].get<double>() - 1),
                0.01);
      Result<Constraints> fix = ParseConstraints(v["fix"].get<std::string>(), "--fix");
      EXPECT_TRUE(fix.ok()) << v.dump();
      EXPECT_FALSE(v["setting"].get<std::string>().empty());
    }
  }
  ASSERT_GT(variants, 0u) << r.out;
  CommandResult text = PlanSmall({"--fix", "tp=2", "--top", "4", "--distinct"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  size_t variant_lines = 0;
  for (const std::string& line : Lines(text.out))
    variant_lines += line.rfind("      ~ ", 0) == 0 ? 1 : 0;
  EXPECT_EQ(variant_lines, variants) << text.out;
}

TEST(Plan, GpuRangesOutsideGpusAreRefusedNamingTheFlag) {
  CommandResult low = PlanSmall({"--min-gpus", "32"});
  EXPECT_EQ(low.code, kExitBadInput);
  EXPECT_NE(low.err.find("--min-gpus 32: more than --gpus 16"), std::string::npos) << low.err;
  CommandResult high = PlanSmall({"--max-gpus", "8"});
  EXPECT_EQ(high.code, kExitBadInput);
  EXPECT_NE(high.err.find("--max-gpus 8: fewer than --gpus 16"), std::string::npos) << high.err;
  CommandResult price = PlanSmall({"--price", "-2"});
  EXPECT_EQ(price.code, kExitUsage);
  EXPECT_NE(price.err.find("--price"), std::string::npos) << price.err;
}

// --memory-headroom is a share of the GPU: outside [0, 0.9] it is refused naming the flag; a plan
// of a peak inside the default headroom is refused naming the rule and the flag that admits it.
TEST(Plan, TheMemoryHeadroomFlagTakesAShareAndSaysWhatItWouldAdmit) {
  for (const char* bad : {"1.5", "-0.1", "nan"}) {
    CommandResult r = PlanSmall({"--memory-headroom", bad});
    EXPECT_EQ(r.code, kExitUsage) << bad;
    EXPECT_NE(r.err.find("--memory-headroom"), std::string::npos) << r.err;
  }
  const std::vector<std::string> tight = {
      "plan",
      "--model",
      Shipped("models/llama3-8b.json"),
      "--cluster",
      Shipped("hardware/clusters/dgx-h100.json"),
      "--gpus",
      "8",
      "--global-batch",
      "64",
      "--seq",
      "8192",
      "--fix",
      "tp=1,pp=1,cp=1,micro_batch=1,zero_stage=2,recompute=selective,offload=none"};
  CommandResult refused = Loom(tight);
  EXPECT_EQ(refused.code, kExitBadInput) << refused.err;
  EXPECT_NE(refused.out.find("memory headroom"), std::string::npos) << refused.out;
  EXPECT_NE(refused.err.find("come within the fragmentation headroom (rule memory headroom): "
                             "a lower --memory-headroom may admit them"),
            std::string::npos)
      << refused.err;
  std::vector<std::string> lower = tight;
  lower.insert(lower.end(), {"--memory-headroom", "0.1"});
  CommandResult admitted = Loom(lower);
  EXPECT_EQ(admitted.code, kExitOk) << admitted.err;
}

TEST(Plan, MemoryHeadroomRanksByAscendingPeakMemory) {
  CommandResult r =
      PlanSmall({"--fix", "pp=1,tp=2", "--objective", "memory-headroom", "--top", "5", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["request"]["objective"], "memory-headroom");
  const nlohmann::json& plans = j["plans"];
  ASSERT_EQ(plans.size(), 5u);
  for (size_t i = 1; i < plans.size(); ++i) {
    EXPECT_LE(plans[i - 1]["peak_memory_bytes"].get<int64_t>(),
              plans[i]["peak_memory_bytes"].get<int64_t>());
  }
  // The time objective's winner uses more memory than the headroom objective's.
  CommandResult fastest = PlanSmall({"--fix", "pp=1,tp=2", "--top", "1", "--json"});
  ASSERT_EQ(fastest.code, kExitOk) << fastest.err;
  EXPECT_LT(plans[0]["peak_memory_bytes"].get<int64_t>(),
            nlohmann::json::parse(fastest.out)["plans"][0]["peak_memory_bytes"].get<int64_t>());
}

// A path under the temporary folder for one test's plan file.
std::string TempPlanPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("loom_plan_test_" + name + "_" + std::to_string(::getpid()) + ".json"))
      .string();
}

TEST(Plan, EmitPlanWritesAPlanFileOfThePickedStrategyAndSaysHowToValidateIt) {
  const std::string path = TempPlanPath("emit");
  std::filesystem::remove(path);
  CommandResult r = PlanSmall(
      {"--fix", "pp=2,tp=4,cp=1", "--top", "2", "--emit", "plan", "--out", path, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& best = j["plans"][0]["strategy"];
  // One process per GPU; the file holds one replica's stages, tp folded.
  const int64_t ranks = best["pp"].get<int64_t>() * best["dp"].get<int64_t>() * 4;
  const nlohmann::json& emit = j["emit"];
  EXPECT_EQ(emit["format"], "plan");
  EXPECT_EQ(emit["plan_file"], path);
  EXPECT_EQ(emit["ranks"], ranks);
  EXPECT_EQ(emit["rank_programs"], 2);
  EXPECT_EQ(emit["validate"],
            "mpirun -np " + std::to_string(ranks) + " loom validate " + path + " --backend host");
  Result<PlanFile> plan = ReadPlanFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->step.graph.num_ranks(), 2);
  EXPECT_EQ(plan->step.stages, 2);
  EXPECT_EQ(plan->step.replicas, 1);
  EXPECT_EQ(plan->gpus.tp, 4);
  EXPECT_EQ(plan->gpus.dp, best["dp"]);
  EXPECT_EQ(emit["tasks"], plan->step.graph.num_tasks());
  EXPECT_EQ(plan->source["strategy"]["tp"], 4);
  EXPECT_EQ(plan->source["strategy"]["dp"].get<int64_t>(), best["dp"].get<int64_t>());
  EXPECT_EQ(plan->source["gpus"], 16);
  EXPECT_EQ(plan->source["simulation"]["full"], false);
  // The file predicts what the planner ranked.
  EXPECT_NEAR(plan->prediction.step_time_s, j["plans"][0]["step_time_s"].get<double>(), 1e-9);
  // Its ops run cuDNN's fused attention, as loom validate's executors do, and are timed so.
  int attention = 0;
  for (const LayerOps& block : plan->workload.chunks.blocks) {
    for (const Op& op : block.forward) {
      if (const AttentionShape* a = std::get_if<AttentionShape>(&op.shape)) {
        EXPECT_EQ(a->family, AttentionFamily::kCudnn);
        ++attention;
      }
    }
  }
  EXPECT_GT(attention, 0);
}

// A plan file is run by loom's executors, which issue from C++: no framework's host thread, and
// asking for one with it is refused rather than ignored.
TEST(Plan, EmitPlanModelsNoFrameworkAndRefusesOne) {
  const std::string path = TempPlanPath("framework");
  CommandResult plain = PlanSmall(
      {"--fix", "pp=2,tp=4,cp=1", "--top", "1", "--emit", "plan", "--out", path, "--json"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["request"]["framework"], "none");
  Result<PlanFile> plan = ReadPlanFile(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->step.host_stream.empty());
  CommandResult refused = PlanSmall({"--fix", "pp=2,tp=4,cp=1", "--top", "1", "--emit", "plan",
                                     "--out", path, "--framework", "megatron-core"});
  std::filesystem::remove(path);
  EXPECT_NE(refused.code, kExitOk);
  EXPECT_NE(refused.err.find("leave --framework out"), std::string::npos) << refused.err;
  // Without --emit plan the planner ranks with megatron-core's host thread.
  CommandResult ranked = PlanSmall({"--fix", "pp=2,tp=4,cp=1", "--top", "1", "--json"});
  ASSERT_EQ(ranked.code, kExitOk) << ranked.err;
  EXPECT_EQ(nlohmann::json::parse(ranked.out)["request"]["framework"], "megatron-core");
}

TEST(Plan, EmitPlanPrintsWhereItWroteAndTheMpirunCommand) {
  const std::string path = TempPlanPath("text");
  CommandResult r =
      PlanSmall({"--fix", "pp=4,tp=2,cp=1", "--top", "1", "--emit", "plan", "--out", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  Result<PlanFile> plan = ReadPlanFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->step.graph.num_ranks(), 4);
  const int32_t ranks = 4 * 2 * plan->gpus.dp;  // pp x tp x dp GPUs
  EXPECT_NE(r.out.find("plan file of plan 1:\nwrote " + path +
                       ": 4 rank programs (4 stages x 1 "
                       "replicas, tp 2 cp 1 folded), " +
                       std::to_string(plan->step.graph.num_tasks()) + " tasks, for " +
                       std::to_string(ranks) + " GPUs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mpirun -np " + std::to_string(ranks) + " loom validate " + path +
                       " --backend host"),
            std::string::npos)
      << r.out;
}

// issue 23: without --out the plan file is stdout (the table goes to stderr), so that
// `loom plan ... --emit plan > plan.json` gives a plan file and nothing lands in the working
// folder; with --json, which needs stdout, --out is required.
TEST(Plan, EmitPlanWithoutOutPrintsThePlanFileAndTheTableToStderr) {
  CommandResult r = PlanSmall({"--fix", "pp=4,tp=2,cp=1", "--top", "1", "--emit", "plan"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  Result<PlanFile> plan = ParsePlanFile(nlohmann::json::parse(r.out), "stdout");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // One process per GPU: pp 4 x tp 2 x dp.
  const std::string ranks = std::to_string(4 * 2 * plan->gpus.dp);
  EXPECT_NE(r.err.find("wrote the plan file to stdout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -np " + ranks + " loom validate plan.json --backend host"),
            std::string::npos)
      << r.err;
  CommandResult json =
      PlanSmall({"--fix", "pp=4,tp=2,cp=1", "--top", "1", "--emit", "plan", "--json"});
  EXPECT_EQ(json.code, kExitBadInput);
  EXPECT_NE(json.err.find("add --out FILE"), std::string::npos) << json.err;
}

TEST(Plan, EmitPlanIntoAMissingFolderNamesThePath) {
  CommandResult r = PlanSmall({"--fix", "pp=2,tp=8", "--top", "1", "--emit", "plan", "--out",
                               "/nonexistent-loom-folder/plan.json"});
  EXPECT_NE(r.code, kExitOk);
  EXPECT_NE(r.err.find("/nonexistent-loom-folder/plan.json: cannot write"), std::string::npos)
      << r.err;
}

TEST(Plan, HelpNamesTheOptionsAndAnExample) {
  CommandResult r = Loom({"plan", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* text : {"--fix", "--explain", "--emit", "--objective", "--out",
                           "Examples:", "loom plan --model", "--emit plan --out plan.json"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
}

// --out and --pick mean something only with --emit: refused rather than silently ignored.
TEST(Plan, OutAndPickWithoutTheirEmitAreRefused) {
  const std::vector<std::string> base = {"plan",
                                         "--model",
                                         Shipped("models/gpt3-125m.json"),
                                         "--cluster",
                                         Shipped("hardware/clusters/dgx-h100.json"),
                                         "--gpus",
                                         "8",
                                         "--global-batch",
                                         "16",
                                         "--seq",
                                         "1024"};
  std::vector<std::string> out = base;
  out.insert(out.end(), {"--emit", "megatron", "--out", "x.json"});
  CommandResult r = Loom(out);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--out x.json: only --emit plan writes a file"), std::string::npos) << r.err;
  std::vector<std::string> pick = base;
  pick.insert(pick.end(), {"--pick", "2"});
  CommandResult p = Loom(pick);
  EXPECT_EQ(p.code, kExitBadInput);
  EXPECT_NE(p.err.find("--pick 2: picks the plan that --emit emits"), std::string::npos) << p.err;
  std::vector<std::string> threads = base;
  threads.insert(threads.end(), {"--threads", "-1"});
  CommandResult t = Loom(threads);
  EXPECT_EQ(t.code, kExitUsage);
  EXPECT_NE(t.err.find("--threads: got '-1'; it must be a number from 0 to 4096"),
            std::string::npos)
      << t.err;
}

// On the mixed H100 + A100 cluster the header names both GPUs, the plan's schedule column shows
// the balanced layers of each stage, and more GPUs than the node groups hold are refused.
TEST(Plan, MixedClusterShowsBothGpusAndEachStagesLayers) {
  const std::vector<std::string> mixed = {"plan",
                                          "--model",
                                          Shipped("models/llama3-8b.json"),
                                          "--cluster",
                                          Shipped("hardware/clusters/mixed-h100-a100.json"),
                                          "--global-batch",
                                          "64",
                                          "--seq",
                                          "4096",
                                          "--threads",
                                          "2",
                                          "--top",
                                          "1"};
  std::vector<std::string> args = mixed;
  args.insert(args.end(), {"--gpus", "64", "--fix", "tp=8,pp=2,schedule=1f1b,micro_batch=1"});
  CommandResult r = Loom(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(Lines(r.out)[0].find(" on 64 x NVIDIA H100 80GB HBM3 (SXM5) + NVIDIA A100-SXM4-80GB "),
            std::string::npos)
      << r.out;
  const std::vector<std::vector<std::string>> rows = TableRows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  // rank tp pp dp cp ep vpp mbs schedule LAYERS: the H100 stage holds more of the 32 layers.
  ASSERT_GE(rows[0].size(), 10u);
  const std::string layers = rows[0][9];
  const size_t slash = layers.find('/');
  ASSERT_NE(slash, std::string::npos) << r.out;
  const int64_t first = std::stoll(layers.substr(0, slash));
  const int64_t second = std::stoll(layers.substr(slash + 1));
  EXPECT_EQ(first + second, 32);
  EXPECT_GT(first, second);

  args = mixed;
  args.insert(args.end(), {"--gpus", "128"});
  r = Loom(args);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--gpus 128: more GPUs than the 64 of " +
                       Shipped("hardware/clusters/mixed-h100-a100.json") +
                       "'s node_groups; use 64 or fewer"),
            std::string::npos)
      << r.err;
}

// loom plan --csv (issue 45, section 3): a row for every strategy the search enumerated, whose
// verdicts add up to the search's own counts, with the figures of each simulated plan; the best
// row's step time is the table's first plan's.
TEST(Plan, CsvHoldsEveryStrategyTheSearchSawWithItsVerdict) {
  const std::string path = ::testing::TempDir() + "loom-plan.csv";
  std::filesystem::remove(path);
  CommandResult r = PlanSmall({"--json", "--top", "3", "--csv", path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("loom: wrote " + path + ": "), std::string::npos) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  const nlohmann::json& search = plan["search"];
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  std::vector<std::string> header;
  std::stringstream fields(line);
  for (std::string f; std::getline(fields, f, ',');) header.push_back(f);
  const auto column = [&](const std::string& name) {
    return std::find(header.begin(), header.end(), name) - header.begin();
  };
  const size_t verdict = column("verdict"), step = column("step_time_s");
  ASSERT_LT(verdict, header.size());
  int64_t rows = 0;
  std::map<std::string, int64_t> verdicts;
  double best_step = 1e300;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::stringstream cells(line);
    for (std::string f; std::getline(cells, f, ',');) row.push_back(f);
    if (line.back() == ',') row.push_back("");
    ASSERT_EQ(row.size(), header.size()) << line;
    EXPECT_EQ(row[0], std::to_string(rows));
    ++verdicts[row[verdict]];
    if (row[verdict] == "simulated") best_step = std::min(best_step, std::stod(row[step]));
    ++rows;
  }
  EXPECT_EQ(rows, search["enumerated"].get<int64_t>());
  EXPECT_EQ(verdicts["rule"], search["rejected_by_rules"].get<int64_t>());
  EXPECT_EQ(verdicts["memory bound"], search["rejected_by_memory_bound"].get<int64_t>());
  EXPECT_EQ(verdicts["bounded out"], search["skipped_by_bound"].get<int64_t>());
  EXPECT_EQ(verdicts["simulated"] + verdicts["rejected after simulation"],
            search["simulated"].get<int64_t>());
  ASSERT_GT(verdicts["simulated"], 0);
  EXPECT_NEAR(best_step, plan["plans"][0]["step_time_s"].get<double>(), 1e-5 * best_step);
  // --explain judges one plan: no search to list.
  CommandResult explain = PlanSmall({"--csv", path, "--explain", "tp=1"});
  EXPECT_NE(explain.err.find("drop --explain, or drop --csv"), std::string::npos) << explain.err;
}

// A request the launch settings cannot express is refused with what blocks it (issue 45, section
// 4): Megatron-LM offloads no parameters, whatever ZeRO stage the other rules would want.
TEST(Plan, ARefusedEmitRequestNamesTheRuleThatBlocksIt) {
  CommandResult r = PlanSmall({"--emit", "megatron", "--fix", "offload=optimizer+params"});
  EXPECT_NE(r.code, 0);
  const size_t headline = r.err.find(
      "that pass loom's rules are refused by --emit megatron: "
      "--offload optimizer+params: Megatron-LM offloads optimizer "
      "states");
  EXPECT_NE(headline, std::string::npos) << r.err;
  EXPECT_LT(headline, r.err.find("use --zero 3")) << r.err;
}

}  // namespace
}  // namespace loom
