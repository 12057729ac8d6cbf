#include "sim/trace_merge.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loom {
namespace {

// Two processes, a flow between them, one async event with a string id.
const char kPredicted[] =
    R"({"traceEvents":[
{"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}},
{"name":"process_sort_index","ph":"M","pid":0,"args":{"sort_index":0}},
{"name":"F","ph":"X","pid":0,"tid":0,"ts":0.000,"dur":3.000},
{"name":"F","ph":"X","pid":1,"tid":1,"ts":4.000,"dur":3.000},
{"name":"pp-send","ph":"s","id":0,"pid":0,"tid":0,"ts":0.000},
{"name":"pp-send","ph":"f","id":0,"pid":1,"tid":1,"ts":4.000,"bp":"e"},
{"name":"load","ph":"b","id":"0x1","pid":0,"ts":1.5}
],"displayTimeUnit":"ms","otherData":{"model":"m.json"}})";

// A bare array of events (the other form Chrome reads), one unnamed process.
const char kMeasured[] =
    R"([{"name":"F","ph":"X","pid":0,"tid":0,"ts":0.25,"dur":3.5},
{"name":"pp-send","ph":"s","id":0,"pid":0,"tid":0,"ts":0.25},
{"name":"pp-send","ph":"f","id":0,"pid":0,"tid":0,"ts":0.25,"bp":"e"}])";

Result<std::string> Merge(const std::string& a, const std::string& b) {
  const std::vector<TraceToMerge> inputs = {{"predicted.json", a, "predicted"},
                                            {"measured.json", b, "measured"}};
  return MergeChromeTraces(inputs);
}

TEST(MergeChromeTraces, ShiftsPidsAndIdsOfTheSecondTraceAndLabelsItsProcesses) {
  const Result<std::string> merged = Merge(kPredicted, kMeasured);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(*merged,
            R"json({"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"args":{"name":"predicted pid 1"}},
{"name":"process_name","ph":"M","pid":0,"args":{"name":"predicted rank 0"}},
{"name":"process_sort_index","ph":"M","pid":0,"args":{"sort_index":0}},
{"name":"F","ph":"X","pid":0,"tid":0,"ts":0.0,"dur":3.0},
{"name":"F","ph":"X","pid":1,"tid":1,"ts":4.0,"dur":3.0},
{"name":"pp-send","ph":"s","id":0,"pid":0,"tid":0,"ts":0.0},
{"name":"pp-send","ph":"f","id":0,"pid":1,"tid":1,"ts":4.0,"bp":"e"},
{"name":"load","ph":"b","id":"0:0x1","pid":0,"ts":1.5},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"measured pid 0"}},
{"name":"F","ph":"X","pid":2,"tid":0,"ts":0.25,"dur":3.5},
{"name":"pp-send","ph":"s","id":1,"pid":2,"tid":0,"ts":0.25},
{"name":"pp-send","ph":"f","id":1,"pid":2,"tid":0,"ts":0.25,"bp":"e"}
],
"displayTimeUnit":"ms",
"otherData":{"merged":[{"file":"predicted.json","label":"predicted","otherData":{"model":"m.json"}},)json"
            R"json({"file":"measured.json","label":"measured","otherData":null}]}}
)json");
  EXPECT_TRUE(nlohmann::json::accept(*merged));
}

TEST(MergeChromeTraces, ATraceMergedWithItselfKeepsEveryProcessAndFlowDistinct) {
  const Result<std::string> merged = Merge(kPredicted, kPredicted);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  const nlohmann::json trace = nlohmann::json::parse(*merged);
  std::map<int64_t, std::string> names;
  std::map<int64_t, int> flow_ends;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("name") == "process_name") {
      EXPECT_TRUE(names.emplace(e.at("pid"), e.at("args").at("name")).second);
    }
    if (e.at("ph") == "s" || e.at("ph") == "f") ++flow_ends[e.at("id").get<int64_t>()];
  }
  const std::map<int64_t, std::string> expected = {{0, "predicted rank 0"},
                                                   {1, "predicted pid 1"},
                                                   {2, "measured rank 0"},
                                                   {3, "measured pid 1"}};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(flow_ends, (std::map<int64_t, int>{{0, 2}, {1, 2}}));
  EXPECT_EQ(*merged, *Merge(kPredicted, kPredicted));  // the same bytes each time
}

TEST(MergeChromeTraces, ErrorsNameTheFileAndTheEvent) {
  Result<std::string> merged = Merge(kPredicted, R"({"events":[]})");
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("measured.json: no traceEvents array"),
            std::string::npos)
      << merged.status().message();
  merged = Merge(R"([{"ph":"X","pid":-2}])", kMeasured);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find(
                "predicted.json: traceEvents[0].pid is -2, not an integer from 0 to 2^48"),
            std::string::npos)
      << merged.status().message();
  merged = Merge(kPredicted, R"([{"ph":"s","id":18446744073709551615,"pid":0}])");
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(
      merged.status().message().find("measured.json: traceEvents[0].id is 18446744073709551615"),
      std::string::npos)
      << merged.status().message();
  merged = Merge(kPredicted, "[1]");
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("measured.json: traceEvents[0] is not an object"),
            std::string::npos);
  // Keys of unexpected types are kept as they are, not misread.
  merged = Merge(R"([{"ph":1,"name":["process_name"],"pid":0,"args":{"name":2}}])", kMeasured);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_NE(merged->find(R"({"ph":1,"name":["process_name"],"pid":0,"args":{"name":2}})"),
            std::string::npos)
      << *merged;
  merged = Merge("{", kMeasured);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("predicted.json"), std::string::npos);
}

}  // namespace
}  // namespace loom
