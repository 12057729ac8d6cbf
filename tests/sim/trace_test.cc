#include "sim/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loom {
namespace {

SimTime Us(double micros) { return SimTime::FromMicros(micros); }

// Rank 0 computes F (10 us, 64 bytes of activations) and sends it over a link (2.5 us); rank 1
// runs F after the send.
TaskGraph TwoRankGraph() {
  TaskGraph graph;
  const StreamId compute0 = graph.AddStream(0, "compute");
  const StreamId comm0 = graph.AddStream(0, "comm");
  const StreamId compute1 = graph.AddStream(1, "compute");
  const NameId compute = graph.Intern("compute");
  const TaskId f0 = graph.AddTask({.stream = compute0,
                                   .duration = Us(10),
                                   .name = graph.Intern("F mb0"),
                                   .category = compute,
                                   .alloc_at_start_bytes = 64});
  const TaskId send = graph.AddTask({.stream = comm0,
                                     .link = graph.AddLink("0->1"),
                                     .duration = Us(2.5),
                                     .name = graph.Intern("send \"mb0\"\n"),
                                     .category = graph.Intern("p2p")});
  const TaskId f1 = graph.AddTask(
      {.stream = compute1, .duration = Us(10), .name = graph.Intern("F mb0"), .category = compute});
  graph.AddDependency(f0, send);
  graph.AddDependency(send, f1);
  return graph;
}

std::string TraceOf(const TaskGraph& graph) {
  const Result<StepTimeline> timeline = Simulate(graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().ToString();
  const Result<MemoryReport> memory = TrackMemory(graph, *timeline, {});
  EXPECT_TRUE(memory.ok()) << memory.status().ToString();
  return ChromeTraceJson(graph, *timeline, &*memory);
}

std::vector<nlohmann::json> EventsWithPhase(const nlohmann::json& trace, const std::string& ph) {
  std::vector<nlohmann::json> events;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) events.push_back(e);
  }
  return events;
}

TEST(ChromeTrace, ParsesAsJsonWithOneCompleteEventPerTask) {
  const nlohmann::json trace = nlohmann::json::parse(TraceOf(TwoRankGraph()));
  const std::vector<nlohmann::json> slices = EventsWithPhase(trace, "X");
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1].dump(),
            R"({"args":{"link":"0->1","task":1},"cat":"p2p","dur":2.5,"name":"send \"mb0\"\n",)"
            R"("ph":"X","pid":0,"tid":1,"ts":10.0})");
  EXPECT_EQ(slices[2].at("pid"), 1);
  EXPECT_EQ(slices[2].at("tid"), 2);
  EXPECT_EQ(slices[2].at("ts"), 12.5);
  EXPECT_EQ(slices[2].at("dur"), 10.0);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ns");
}

TEST(ChromeTrace, NamesRanksAndStreams) {
  const nlohmann::json trace = nlohmann::json::parse(TraceOf(TwoRankGraph()));
  std::vector<std::string> names;
  for (const nlohmann::json& e : EventsWithPhase(trace, "M")) {
    if (e.at("name") == "process_name" || e.at("name") == "thread_name") {
      names.push_back(e.at("name").get<std::string>() + " " + e.at("pid").dump() + "/" +
                      e.value("tid", nlohmann::json(-1)).dump() + " " +
                      e.at("args").at("name").get<std::string>());
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"process_name 0/-1 rank 0", "process_name 1/-1 rank 1",
                                             "thread_name 0/0 compute", "thread_name 0/1 comm",
                                             "thread_name 1/2 compute"}));
}

TEST(ChromeTrace, MemoryBecomesCounterEventsPerRank) {
  const nlohmann::json trace = nlohmann::json::parse(TraceOf(TwoRankGraph()));
  const std::vector<nlohmann::json> counters = EventsWithPhase(trace, "C");
  ASSERT_EQ(counters.size(), 2u);  // rank 0: 64 bytes from 0 on; rank 1: 0 bytes
  EXPECT_EQ(counters[0].dump(),
            R"({"args":{"bytes":64},"name":"memory","ph":"C","pid":0,"ts":0.0})");
  EXPECT_EQ(counters[1].at("pid"), 1);
  EXPECT_EQ(counters[1].at("args").at("bytes"), 0);
}

TEST(ChromeTrace, PrintsTimesWithThreeDecimalsInAFixedKeyOrder) {
  const std::string text = TraceOf(TwoRankGraph());
  EXPECT_NE(text.find(R"({"name":"F mb0","cat":"compute","ph":"X","pid":1,"tid":2,"ts":12.500,)"
                      R"("dur":10.000,"args":{"task":2}},)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("name":"send \"mb0\"\n")"), std::string::npos);
  EXPECT_EQ(text.substr(0, 16), R"({"traceEvents":[)");
}

TEST(ChromeTrace, EscapesControlCharactersInNames) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "tab\there");
  graph.AddTask({.stream = s, .name = graph.Intern(std::string("bell\x07 back\\slash"))});
  const Result<StepTimeline> timeline = Simulate(graph);
  ASSERT_TRUE(timeline.ok());
  const std::string text = ChromeTraceJson(graph, *timeline);
  EXPECT_NE(text.find(R"("name":"bell\u0007 back\\slash")"), std::string::npos) << text;
  const nlohmann::json trace = nlohmann::json::parse(text);
  EXPECT_EQ(EventsWithPhase(trace, "X").at(0).at("name"), "bell\x07 back\\slash");
  EXPECT_NE(text.find(R"("args":{"name":"tab\there"})"), std::string::npos) << text;
}

TEST(ChromeTrace, SameInputGivesIdenticalBytes) {
  const std::string first = TraceOf(TwoRankGraph());
  const std::string second = TraceOf(TwoRankGraph());
  EXPECT_EQ(first, second);
  EXPECT_GT(first.size(), 500u);
}

TEST(ChromeTrace, TransferOnSharedChannelsShowsThemAndItsTimeAlone) {
  TaskGraph graph;
  const ChannelId tx = graph.AddChannel("rank 0 nic tx");
  const ChannelId rx = graph.AddChannel("rank 1 nic rx");
  const RouteId send = graph.AddRoute(std::vector<ChannelId>{tx, rx});
  const RouteId reduce = graph.AddRoute(std::vector<ChannelId>{tx});
  graph.AddTask({.stream = graph.AddStream(0, "pp"), .duration = Us(2), .route = send});
  graph.AddTask({.stream = graph.AddStream(0, "dp"), .duration = Us(6), .route = reduce});
  const Result<StepTimeline> timeline = Simulate(graph);
  ASSERT_TRUE(timeline.ok());
  const std::vector<nlohmann::json> slices =
      EventsWithPhase(nlohmann::json::parse(ChromeTraceJson(graph, *timeline)), "X");
  ASSERT_EQ(slices.size(), 2u);
  // Both share the tx channel: the send takes 4 us instead of 2.
  EXPECT_EQ(slices[0].at("dur"), 4.0);
  EXPECT_EQ(slices[0].at("args").dump(),
            R"({"alone_us":2.0,"channels":["rank 0 nic tx","rank 1 nic rx"],"task":0})");
  EXPECT_EQ(slices[1].at("dur"), 8.0);
  EXPECT_EQ(slices[1].at("args").at("alone_us"), 6.0);
}

TEST(ChromeTrace, WithoutMemoryHasNoCounters) {
  const TaskGraph graph = TwoRankGraph();
  const Result<StepTimeline> timeline = Simulate(graph);
  ASSERT_TRUE(timeline.ok());
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson(graph, *timeline));
  EXPECT_TRUE(EventsWithPhase(trace, "C").empty());
  EXPECT_EQ(EventsWithPhase(trace, "X").size(), 3u);
}

}  // namespace
}  // namespace loom
