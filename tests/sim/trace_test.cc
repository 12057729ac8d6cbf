#include "sim/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"
#include "sim/sim_test_support.h"
#include "sim/simulator.h"
#include "sim/step_builder.h"
#include "sim/task_label.h"
#include "spec/strategy.h"

namespace loom {
namespace {

SimTime TraceMicros(double micros) { return SimTime::FromMicros(micros); }

// Rank 0 computes F (10 us, 64 bytes of activations) and sends it over a link (2.5 us); rank 1
// runs F after the send.
TaskGraph TwoRankGraph() {
  TaskGraph graph;
  const StreamId compute0 = graph.AddStream(0, "compute");
  const StreamId comm0 = graph.AddStream(0, "comm");
  const StreamId compute1 = graph.AddStream(1, "compute");
  const NameId compute = graph.Intern("compute");
  const TaskId f0 = graph.AddTask({.stream = compute0,
                                   .duration = TraceMicros(10),
                                   .name = graph.Intern("F mb0"),
                                   .category = compute,
                                   .alloc_at_start_bytes = 64});
  const TaskId send = graph.AddTask({.stream = comm0,
                                     .link = graph.AddLink("0->1"),
                                     .duration = TraceMicros(2.5),
                                     .name = graph.Intern("send \"mb0\"\n"),
                                     .category = graph.Intern("p2p")});
  const TaskId f1 = graph.AddTask({.stream = compute1,
                                   .duration = TraceMicros(10),
                                   .name = graph.Intern("F mb0"),
                                   .category = compute});
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
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
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
  graph.AddTask({.stream = graph.AddStream(0, "pp"), .duration = TraceMicros(2), .route = send});
  graph.AddTask({.stream = graph.AddStream(0, "dp"), .duration = TraceMicros(6), .route = reduce});
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

// Each dependency across streams is an arrow from its source's start to its destination's start.
// In a measured step whose ranks' clocks disagree, a destination can start before its source:
// that dependency gets no arrow, so none runs backwards.
TEST(ChromeTrace, DependenciesAcrossStreamsAreArrowsThatNeverRunBackwards) {
  const TaskGraph graph = TwoRankGraph();
  const Result<StepTimeline> simulated = Simulate(graph);
  ASSERT_TRUE(simulated.ok());
  const std::vector<nlohmann::json> starts =
      EventsWithPhase(nlohmann::json::parse(ChromeTraceJson(graph, *simulated)), "s");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(
      starts[1].dump(),
      R"({"cat":"dependency","id":1,"name":"dependency","ph":"s","pid":0,"tid":1,"ts":10.0})");
  StepTimeline skewed = *simulated;
  skewed.start[2] = TraceMicros(9);  // rank 1's F "starts" before the send it waits for
  skewed.end[2] = TraceMicros(19);
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson(graph, skewed));
  ASSERT_EQ(EventsWithPhase(trace, "s").size(), 1u);
  EXPECT_EQ(
      EventsWithPhase(trace, "f").at(0).dump(),
      R"({"bp":"e","cat":"dependency","id":0,"name":"dependency","ph":"f","pid":0,"tid":1,"ts":10.0})");
}

TEST(ChromeTrace, WithoutMemoryHasNoCounters) {
  const TaskGraph graph = TwoRankGraph();
  const Result<StepTimeline> timeline = Simulate(graph);
  ASSERT_TRUE(timeline.ok());
  const nlohmann::json trace = nlohmann::json::parse(ChromeTraceJson(graph, *timeline));
  EXPECT_TRUE(EventsWithPhase(trace, "C").empty());
  EXPECT_EQ(EventsWithPhase(trace, "X").size(), 3u);
}

// A step PrepareTrainingStep made and simulated, with its trace context.
struct TracedStep {
  PreparedStep prepared;
  SimulationResult result;
};

TracedStep MustTrace(const Strategy& s, bool full, int64_t nodes) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", nodes);
  SimulationOptions options;
  options.full = full;
  Result<PreparedStep> prepared = PrepareTrainingStep(in.model, in.cluster, s, options);
  EXPECT_TRUE(prepared.ok()) << prepared.status().message();
  if (!prepared.ok()) return {};
  Result<SimulationResult> r = SimulatePreparedStep(in.model, in.cluster, *prepared);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return {*std::move(prepared), *std::move(r)};
}

Strategy TracedPipeline(ScheduleKind schedule) {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.schedule = schedule;
  s.vpp = schedule == ScheduleKind::kInterleaved ? 2 : 1;
  s.global_batch = 8;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return s;
}

std::string TraceOf(const TracedStep& traced, std::span<const TraceRun> runs) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Result<TraceContext> prepared = StepTraceContext(traced.prepared, in.model);
  EXPECT_TRUE(prepared.ok()) << prepared.status().message();
  if (!prepared.ok()) return "";
  TraceContext context = *std::move(prepared);
  context.model = "llama3-8b";
  context.cluster = "dgx-h100";
  context.strategy_json = R"({"tp":2})";
  context.loom_version = "9.9.9";
  return ChromeTraceJson(traced.result.step, runs, context);
}

std::string TraceOf(const TracedStep& traced) {
  const TraceRun run{&traced.result.timeline, &traced.result.memory, "", 0};
  return TraceOf(traced, {&run, 1});
}

// Every flow start has exactly one finish with its id, not before it; each end lies inside a
// slice of its process and thread. Returns the number of flows of each category.
std::map<std::string, int> ExpectFlowsPairUp(const nlohmann::json& trace) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>>
      slices;  // (pid, tid)
  for (const nlohmann::json& x : EventsWithPhase(trace, "X")) {
    slices[{x.at("pid"), x.at("tid")}].emplace_back(
        x.at("ts"), x.at("ts").get<double>() + x.at("dur").get<double>());
  }
  const auto bound = [&](const nlohmann::json& e) {
    for (const auto& [start, end] : slices[{e.at("pid"), e.at("tid")}]) {
      if (start <= e.at("ts").get<double>() && e.at("ts").get<double>() <= end) return true;
    }
    return false;
  };
  std::map<int64_t, nlohmann::json> starts;
  std::map<std::string, int> by_category;
  for (const nlohmann::json& s : EventsWithPhase(trace, "s")) {
    EXPECT_TRUE(starts.emplace(s.at("id").get<int64_t>(), s).second)
        << "two starts with id " << s.at("id");
    EXPECT_TRUE(bound(s)) << s.dump();
    ++by_category[s.at("cat").get<std::string>()];
  }
  std::set<int64_t> finished;
  for (const nlohmann::json& f : EventsWithPhase(trace, "f")) {
    const int64_t id = f.at("id");
    EXPECT_TRUE(finished.insert(id).second) << "two finishes with id " << id;
    if (!starts.contains(id)) {
      ADD_FAILURE() << "a finish without a start: " << f.dump();
      continue;
    }
    EXPECT_EQ(f.at("bp"), "e");
    EXPECT_EQ(f.at("cat"), starts.at(id).at("cat"));
    EXPECT_GE(f.at("ts").get<double>(), starts.at(id).at("ts").get<double>()) << f.dump();
    EXPECT_TRUE(bound(f)) << f.dump();
  }
  EXPECT_EQ(finished.size(), starts.size());
  return by_category;
}

TEST(ChromeTrace, FlowsPairUpOnSimulatedPipelines) {
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kInterleaved}) {
    SCOPED_TRACE(std::string(kScheduleNames.Name(kind)));
    const TracedStep traced = MustTrace(TracedPipeline(kind), false, 1);
    const nlohmann::json trace = nlohmann::json::parse(TraceOf(traced));
    const std::map<std::string, int> flows = ExpectFlowsPairUp(trace);
    // One send per micro-batch, direction and boundary between virtual stages.
    const int32_t boundaries = traced.prepared.schedule.VirtualStages() - 1;
    EXPECT_EQ(flows.at("pp-send"), 8 * 2 * boundaries);
    EXPECT_GT(flows.at("dependency"), 0);
  }
}

TEST(ChromeTrace, SlicesCarryMicroBatchChunkLayersBytesAndPeers) {
  const TracedStep traced = MustTrace(TracedPipeline(ScheduleKind::kInterleaved), false, 1);
  const nlohmann::json trace = nlohmann::json::parse(TraceOf(traced));
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  EXPECT_EQ(trace.at("otherData").at("model"), "llama3-8b");
  EXPECT_EQ(trace.at("otherData").at("cluster"), "dgx-h100");
  EXPECT_EQ(trace.at("otherData").at("strategy").at("tp"), 2);
  EXPECT_EQ(trace.at("otherData").at("loom_version"), "9.9.9");
  // Llama 3 8B's 32 layers in 8 virtual stages of 4: virtual stage 5 (stage 1, chunk 1) holds
  // 20-23.
  const std::vector<int64_t> layers = LayersPerVirtualStage(traced.prepared.strategy, 32);
  ASSERT_EQ(layers, std::vector<int64_t>(8, 4));
  int sends = 0, forwards = 0, reductions = 0, tp = 0;
  for (const nlohmann::json& x : EventsWithPhase(trace, "X")) {
    const nlohmann::json& args = x.at("args");
    if (x.at("name") == "F mb3 c1" && x.at("cat") == "compute" && x.at("pid") == 1) {
      ++forwards;
      EXPECT_EQ(args.at("micro_batch"), 3);
      EXPECT_EQ(args.at("chunk"), 1);
      EXPECT_EQ(args.at("virtual_stage"), 5);
      EXPECT_EQ(args.at("layers"), "20-23");
    }
    if (x.at("name") == "F mb3 c1" && x.at("cat") == "tp" && x.at("pid") == 1) {
      ++tp;
      // Without sequence parallelism each of the 4 layers all-reduces b*s*h bf16 activations twice
      // in forward (Shoeybi et al. 2019, Section 3): 8 * 4096 * 4096 * 2 bytes.
      EXPECT_EQ(args.at("pass_collective_bytes").dump(), R"({"tp":268435456})");
      EXPECT_EQ(args.at("group"), "tp x cp");
    }
    if (x.at("cat") == "pp") {
      ++sends;
      EXPECT_EQ(args.at("bytes"), traced.prepared.payloads.p2p_bytes);
      EXPECT_TRUE(args.contains("micro_batch")) << x.dump();
      const int64_t peer_stage =
          (x.at("pid").get<int64_t>() + (x.at("name").get<std::string>()[5] == 'F' ? 1 : 3)) % 4;
      EXPECT_EQ(args.at("peer"), "rank " + std::to_string(2 * peer_stage) + " (pp " +
                                     std::to_string(peer_stage) + ", dp 0, cp 0, tp 0)")
          << x.dump();
    }
    if (x.at("cat") == "dp" && x.at("name").get<std::string>().starts_with("grad reduce")) {
      ++reductions;
      EXPECT_EQ(args.at("bytes"),
                traced.prepared.payloads.bucket_bytes.at(args.at("virtual_stage").get<size_t>()));
      EXPECT_EQ(args.at("collective"), "reduce_scatter");
      EXPECT_FALSE(args.contains("micro_batch"));
    }
  }
  EXPECT_EQ(forwards, 1);
  EXPECT_EQ(tp, 1);
  EXPECT_EQ(sends, 112);
  EXPECT_GT(reductions, 0);
}

bool EndsWithText(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Megatron-LM's order tp-cp-ep-dp-pp for tp 2, cp 2, dp 2, pp 2 (16 GPUs): the pipeline group of
// rank 0 is [0, 8] and its data-parallel group [0, 4] (megatron/core/parallel_state.py,
// RankGenerator), so the four simulated ranks are 0, 8 (stage 1) and 4, 12 (replica 1).
TEST(ChromeTrace, NamesRanksByMegatronGlobalRanks) {
  Strategy s = TracedPipeline(ScheduleKind::k1F1B);
  s.cp = 2;
  s.dp = 2;
  s.pp = 2;
  const TracedStep traced = MustTrace(s, true, 2);
  ASSERT_EQ(traced.result.step.replicas, 2);
  const nlohmann::json trace = nlohmann::json::parse(TraceOf(traced));
  std::vector<std::string> names;
  for (const nlohmann::json& e : EventsWithPhase(trace, "M")) {
    if (e.at("name") == "process_name") names.push_back(e.at("args").at("name"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "rank 0 (pp 0, dp 0, cp 0, tp 0)", "rank 8 (pp 1, dp 0, cp 0, tp 0)",
                       "rank 4 (pp 0, dp 1, cp 0, tp 0)", "rank 12 (pp 1, dp 1, cp 0, tp 0)"}));
  EXPECT_NE(
      trace.at("otherData").at("processes").get<std::string>().find("tp x cp group of 4 GPUs"),
      std::string::npos);
  ExpectFlowsPairUp(trace);
  // One GPU is one GPU (issue 45, section 3).
  s.tp = 1;
  s.cp = 1;
  const nlohmann::json single = nlohmann::json::parse(TraceOf(MustTrace(s, true, 2)));
  EXPECT_TRUE(EndsWithText(single.at("otherData").at("processes").get<std::string>(),
                           "tp x cp group of 1 GPU"))
      << single.at("otherData").at("processes");
}

// Two stages, one micro-batch of 1F1B: F 3 us, BW 5 us, sends 1 us (64 bytes), one gradient
// bucket of 2 us (128 bytes) per stage, an optimizer step of 1 us. Every event of its trace,
// byte for byte: slice names and args, flows (two pipeline sends, the dependencies across
// streams), process names of tp 2, dp 2, and otherData.
TEST(ChromeTrace, SmallStepTraceIsExactlyThisText) {
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 2, 1, 1);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  ChunkCost cost;
  cost.forward.time = TraceMicros(3);
  cost.backward_input.time = TraceMicros(5);
  cost.layers = 2;
  StepGraphConfig config;
  config.pipeline.p2p_time = TraceMicros(1);
  config.dp.buckets = {1, 1};
  config.dp.bucket_time = {TraceMicros(2), TraceMicros(2)};
  config.dp.optimizer_time = {TraceMicros(1), TraceMicros(1)};
  config.dp.param_gather_time = {SimTime(), SimTime()};
  StepGraph step = BuildStepGraph(*schedule, {cost, cost}, config);
  const Result<StepTimeline> timeline = Simulate(step.graph);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  StepPayloads payloads;
  payloads.p2p_bytes = 64;
  payloads.bucket_bytes = {128, 128};
  TraceContext context;
  context.model = "m.json";
  context.cluster = "c.json";
  context.strategy_json = R"({"pp":2})";
  context.loom_version = "1.2.3";
  context.tp = 2;
  context.dp = 2;
  context.chunk_of_virtual_stage = ChunkOfVirtualStages(*schedule);
  context.layers_per_virtual_stage = {2, 2};
  context.payloads = &payloads;
  const TraceRun run{&*timeline, nullptr, "", 0};
  const std::string text = ChromeTraceJson(step, {&run, 1}, context);
  // F 0-3, its send 3-4, then (blocking sends) stage 0's BW waits for stage 1's BW (7-12) and its
  // send (12-13); global ranks tp * cp * (dp_rank + dp * pp_rank): 0 and 4.
  EXPECT_EQ(text, R"json({"traceEvents":[
{"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0 (pp 0, dp 0, cp 0, tp 0)"}},
{"name":"process_sort_index","ph":"M","pid":0,"args":{"sort_index":0}},
{"name":"process_name","ph":"M","pid":1,"args":{"name":"rank 4 (pp 1, dp 0, cp 0, tp 0)"}},
{"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}},
{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"compute"}},
{"name":"thread_sort_index","ph":"M","pid":0,"tid":0,"args":{"sort_index":0}},
{"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"tp"}},
{"name":"thread_sort_index","ph":"M","pid":0,"tid":1,"args":{"sort_index":1}},
{"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"pp"}},
{"name":"thread_sort_index","ph":"M","pid":0,"tid":2,"args":{"sort_index":2}},
{"name":"thread_name","ph":"M","pid":0,"tid":3,"args":{"name":"dp"}},
{"name":"thread_sort_index","ph":"M","pid":0,"tid":3,"args":{"sort_index":3}},
{"name":"thread_name","ph":"M","pid":1,"tid":4,"args":{"name":"compute"}},
{"name":"thread_sort_index","ph":"M","pid":1,"tid":4,"args":{"sort_index":4}},
{"name":"thread_name","ph":"M","pid":1,"tid":5,"args":{"name":"tp"}},
{"name":"thread_sort_index","ph":"M","pid":1,"tid":5,"args":{"sort_index":5}},
{"name":"thread_name","ph":"M","pid":1,"tid":6,"args":{"name":"pp"}},
{"name":"thread_sort_index","ph":"M","pid":1,"tid":6,"args":{"sort_index":6}},
{"name":"thread_name","ph":"M","pid":1,"tid":7,"args":{"name":"dp"}},
{"name":"thread_sort_index","ph":"M","pid":1,"tid":7,"args":{"sort_index":7}},
{"name":"F mb0 c0","cat":"compute","ph":"X","pid":0,"tid":0,"ts":0.000,"dur":3.000,"args":{"task":0,"micro_batch":0,"chunk":0,"virtual_stage":0,"layers":"0-1"}},
{"name":"BW mb0 c0","cat":"compute","ph":"X","pid":0,"tid":0,"ts":13.000,"dur":5.000,"args":{"task":1,"micro_batch":0,"chunk":0,"virtual_stage":0,"layers":"0-1"}},
{"name":"F mb0 c0","cat":"compute","ph":"X","pid":1,"tid":4,"ts":4.000,"dur":3.000,"args":{"task":2,"micro_batch":0,"chunk":0,"virtual_stage":1,"layers":"2-3"}},
{"name":"BW mb0 c0","cat":"compute","ph":"X","pid":1,"tid":4,"ts":7.000,"dur":5.000,"args":{"task":3,"micro_batch":0,"chunk":0,"virtual_stage":1,"layers":"2-3"}},
{"name":"send F mb0 c0","cat":"pp","ph":"X","pid":0,"tid":2,"ts":3.000,"dur":1.000,"args":{"task":4,"micro_batch":0,"chunk":0,"virtual_stage":0,"layers":"0-1","bytes":64,"peer":"rank 4 (pp 1, dp 0, cp 0, tp 0)"}},
{"name":"send BW mb0 c0","cat":"pp","ph":"X","pid":1,"tid":6,"ts":12.000,"dur":1.000,"args":{"task":5,"micro_batch":0,"chunk":0,"virtual_stage":1,"layers":"2-3","bytes":64,"peer":"rank 0 (pp 0, dp 0, cp 0, tp 0)"}},
{"name":"grad reduce c0","cat":"dp","ph":"X","pid":0,"tid":3,"ts":18.000,"dur":2.000,"args":{"task":6,"chunk":0,"virtual_stage":0,"layers":"0-1","bytes":128,"collective":"all_reduce","group":"dp x cp","group_size":2}},
{"name":"optimizer","cat":"optimizer","ph":"X","pid":0,"tid":0,"ts":20.000,"dur":1.000,"args":{"task":7}},
{"name":"grad reduce c0","cat":"dp","ph":"X","pid":1,"tid":7,"ts":12.000,"dur":2.000,"args":{"task":8,"chunk":0,"virtual_stage":1,"layers":"2-3","bytes":128,"collective":"all_reduce","group":"dp x cp","group_size":2}},
{"name":"optimizer","cat":"optimizer","ph":"X","pid":1,"tid":4,"ts":14.000,"dur":1.000,"args":{"task":9}},
{"name":"dependency","cat":"dependency","ph":"s","id":0,"pid":0,"tid":0,"ts":0.000},
{"name":"dependency","cat":"dependency","ph":"f","id":0,"pid":0,"tid":2,"ts":3.000,"bp":"e"},
{"name":"pp-send","cat":"pp-send","ph":"s","id":1,"pid":0,"tid":2,"ts":3.000},
{"name":"pp-send","cat":"pp-send","ph":"f","id":1,"pid":1,"tid":4,"ts":4.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":2,"pid":0,"tid":2,"ts":3.000},
{"name":"dependency","cat":"dependency","ph":"f","id":2,"pid":0,"tid":0,"ts":13.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":3,"pid":1,"tid":4,"ts":7.000},
{"name":"dependency","cat":"dependency","ph":"f","id":3,"pid":1,"tid":6,"ts":12.000,"bp":"e"},
{"name":"pp-send","cat":"pp-send","ph":"s","id":4,"pid":1,"tid":6,"ts":12.000},
{"name":"pp-send","cat":"pp-send","ph":"f","id":4,"pid":0,"tid":0,"ts":13.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":5,"pid":0,"tid":0,"ts":13.000},
{"name":"dependency","cat":"dependency","ph":"f","id":5,"pid":0,"tid":3,"ts":18.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":6,"pid":0,"tid":3,"ts":18.000},
{"name":"dependency","cat":"dependency","ph":"f","id":6,"pid":0,"tid":0,"ts":20.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":7,"pid":1,"tid":4,"ts":7.000},
{"name":"dependency","cat":"dependency","ph":"f","id":7,"pid":1,"tid":7,"ts":12.000,"bp":"e"},
{"name":"dependency","cat":"dependency","ph":"s","id":8,"pid":1,"tid":7,"ts":12.000},
{"name":"dependency","cat":"dependency","ph":"f","id":8,"pid":1,"tid":4,"ts":14.000,"bp":"e"}
],
"displayTimeUnit":"ms",
"otherData":{"model":"m.json","cluster":"c.json","strategy":{"pp":2},"loom_version":"1.2.3","processes":"each process is one pipeline stage of one data-parallel replica (all replicas with --full, replica 0 alone otherwise), named by the Megatron-LM global rank (order tp-cp-ep-dp-pp) of its tp 0, cp 0 member; it stands for its tp x cp group of 2 GPUs"}}
)json");
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(ChromeTrace, MergesRunsAsDistinctProcessesWithUniqueFlowIds) {
  const TracedStep traced = MustTrace(TracedPipeline(ScheduleKind::k1F1B), false, 1);
  const std::vector<TraceRun> runs = {
      {&traced.result.timeline, &traced.result.memory, "predicted ", 0},
      {&traced.result.timeline, nullptr, "measured ", 4}};
  const std::string text = TraceOf(traced, runs);
  const nlohmann::json trace = nlohmann::json::parse(text);
  std::map<int64_t, std::string> processes;
  for (const nlohmann::json& e : EventsWithPhase(trace, "M")) {
    if (e.at("name") == "process_name") {
      EXPECT_TRUE(processes.emplace(e.at("pid"), e.at("args").at("name")).second);
    }
  }
  ASSERT_EQ(processes.size(), 8u);
  EXPECT_EQ(processes.at(0), "predicted rank 0 (pp 0, dp 0, cp 0, tp 0)");
  EXPECT_EQ(processes.at(7), "measured rank 6 (pp 3, dp 0, cp 0, tp 0)");
  const std::vector<nlohmann::json> slices = EventsWithPhase(trace, "X");
  ASSERT_EQ(slices.size(), 2u * static_cast<size_t>(traced.result.step.graph.num_tasks()));
  EXPECT_EQ(slices.back().at("pid").get<int64_t>(),
            4 + traced.result.step.graph.rank_of(slices.size() / 2 - 1));
  const std::map<std::string, int> flows = ExpectFlowsPairUp(trace);
  EXPECT_EQ(flows.at("pp-send"), 2 * 8 * 2 * 3);
  EXPECT_EQ(text, TraceOf(traced, runs));  // byte-deterministic
}

}  // namespace
}  // namespace loom
