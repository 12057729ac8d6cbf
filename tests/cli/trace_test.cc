#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/run_loom.h"

namespace loom {
namespace {

std::string Temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

// A Llama 3 8B step on one DGX H100 node, tp 2, pp 4, under |schedule|, traced to |path|.
void SimulateTrace(const std::string& schedule, const std::string& path) {
  std::vector<std::string> args = {"simulate",
                                   "--model",
                                   Shipped("models/llama3-8b.json"),
                                   "--cluster",
                                   Shipped("hardware/clusters/dgx-h100.json"),
                                   "--nodes",
                                   "1",
                                   "--tp",
                                   "2",
                                   "--pp",
                                   "4",
                                   "--global-batch",
                                   "8",
                                   "--seq",
                                   "2048",
                                   "--schedule",
                                   schedule,
                                   "--trace",
                                   path};
  if (schedule == "interleaved") args.insert(args.end(), {"--vpp", "2"});
  const CommandResult r = Loom(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
}

TEST(TraceMerge, TwoSimulatedSchedulesBecomeLabelledProcessesWithTheirFlowsApart) {
  const std::string a = Temp("loom_trace_1f1b.json"), b = Temp("loom_trace_interleaved.json");
  SimulateTrace("1f1b", a);
  SimulateTrace("interleaved", b);
  const std::string out = Temp("loom_trace_merged.json");
  const CommandResult r = Loom({"trace", "merge", a, b, "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "wrote " + out + ": 2 traces merged\n");
  const nlohmann::json merged = nlohmann::json::parse(std::ifstream(out));
  std::map<int, std::string> processes;
  std::map<int64_t, int> flow_ends;
  for (const nlohmann::json& e : merged["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "s" || e["ph"] == "f") ++flow_ends[e["id"].get<int64_t>()];
  }
  ASSERT_EQ(processes.size(), 8u);  // four stages of each run
  EXPECT_EQ(processes[0], "loom_trace_1f1b rank 0 (pp 0, dp 0, cp 0, tp 0)");
  EXPECT_EQ(processes[7], "loom_trace_interleaved rank 6 (pp 3, dp 0, cp 0, tp 0)");
  for (const auto& [id, ends] : flow_ends) EXPECT_EQ(ends, 2) << "flow " << id;
  EXPECT_EQ(merged["otherData"]["merged"][1]["otherData"]["strategy"]["vpp"], 2);
  EXPECT_EQ(merged["displayTimeUnit"], "ms");
}

TEST(TraceMerge, LabelsMustMatchTheFiles) {
  const std::string a = Temp("loom_trace_labels.json");
  SimulateTrace("1f1b", a);
  const CommandResult r =
      Loom({"trace", "merge", a, a, "--label", "predicted", "--out", Temp("loom_trace_x.json")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("1 --label for 2 trace files; give one --label per file"), std::string::npos)
      << r.err;
}

TEST(TraceMerge, AFileThatIsNoTraceIsNamed) {
  const std::string bad = Temp("loom_trace_not_a_trace.json");
  std::ofstream(bad) << R"({"schema":"loom.simulate/1"})";
  const CommandResult r = Loom({"trace", "merge", bad, bad, "--out", Temp("loom_trace_y.json")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find(bad + ": no traceEvents array"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom
