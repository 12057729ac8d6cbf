#include "program/plan_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/sim_test_support.h"
#include "sim/simulated_plan.h"

namespace loom {
namespace {

// A file of this process under the temporary folder (test binaries of several builds may run at
// once).
std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("loom_plan_file_" + name + "_" + std::to_string(::getpid()) + ".json"))
      .string();
}

// Llama 3 8B on one DGX H100 node: pp = 4, dp = 2, every replica simulated (--full), so every
// step has 8 ranks and data-parallel collectives between the replicas.
PlanFile MakeSmallPlan(ScheduleKind schedule) {
  SimulationOptions full;
  full.full = true;
  return Llama8bPlan(PipelineStrategy(4, 2, 8, schedule), full,
                     {{"model", "models/llama3-8b.json"}, {"gpus", 8}});
}

// Every field of every table of |a| and |b| is the same.
void ExpectSameStep(const StepGraph& a, const StepGraph& b) {
  const TaskGraph& x = a.graph;
  const TaskGraph& y = b.graph;
  EXPECT_EQ(a.stages, b.stages);
  EXPECT_EQ(a.replicas, b.replicas);
  ASSERT_EQ(x.num_streams(), y.num_streams());
  for (StreamId s = 0; s < x.num_streams(); ++s) {
    EXPECT_EQ(x.stream_rank(s), y.stream_rank(s));
    EXPECT_EQ(x.Name(x.stream_name(s)), y.Name(y.stream_name(s)));
  }
  ASSERT_EQ(x.num_tasks(), y.num_tasks());
  for (TaskId t = 0; t < x.num_tasks(); ++t) {
    const Task& p = x.task(t);
    const Task& q = y.task(t);
    ASSERT_EQ(p.stream, q.stream) << t;
    ASSERT_EQ(p.link, q.link) << t;
    ASSERT_EQ(p.duration, q.duration) << t;
    ASSERT_EQ(p.name, q.name) << t;
    ASSERT_EQ(x.Name(p.name), y.Name(q.name)) << t;
    ASSERT_EQ(x.Name(p.category), y.Name(q.category)) << t;
    ASSERT_EQ(p.alloc_at_start_bytes, q.alloc_at_start_bytes) << t;
    ASSERT_EQ(p.free_at_end_bytes, q.free_at_end_bytes) << t;
    ASSERT_EQ(p.pool, q.pool) << t;
    ASSERT_EQ(p.route, q.route) << t;
    ASSERT_EQ(x.group_of(t), y.group_of(t)) << t;
  }
  ASSERT_EQ(x.dependencies().size(), y.dependencies().size());
  for (size_t i = 0; i < x.dependencies().size(); ++i) {
    EXPECT_EQ(x.dependencies()[i].before, y.dependencies()[i].before);
    EXPECT_EQ(x.dependencies()[i].after, y.dependencies()[i].after);
  }
  ASSERT_EQ(x.num_groups(), y.num_groups());
  for (GroupId g = 0; g < x.num_groups(); ++g) {
    EXPECT_TRUE(std::ranges::equal(x.group_members(g), y.group_members(g))) << g;
  }
  ASSERT_EQ(x.memory_events().size(), y.memory_events().size());
  for (size_t i = 0; i < x.memory_events().size(); ++i) {
    const MemoryEvent& p = x.memory_events()[i];
    const MemoryEvent& q = y.memory_events()[i];
    EXPECT_TRUE(p.task == q.task && p.phase == q.phase && p.pool == q.pool &&
                p.delta_bytes == q.delta_bytes)
        << i;
  }
  ASSERT_EQ(x.num_routes(), y.num_routes());
  for (RouteId r = 0; r < x.num_routes(); ++r)
    EXPECT_TRUE(std::ranges::equal(x.route_channels(r), y.route_channels(r)));
  ASSERT_EQ(x.num_pools(), y.num_pools());
  for (PoolId p = 0; p < x.num_pools(); ++p)
    EXPECT_EQ(x.Name(x.pool_name(p)), y.Name(y.pool_name(p)));
  EXPECT_EQ(x.num_links(), y.num_links());
  EXPECT_EQ(x.num_channels(), y.num_channels());
  EXPECT_EQ(a.compute_stream, b.compute_stream);
  for (const auto& [p, q] : {std::pair(&a.intra_node_port, &b.intra_node_port),
                             std::pair(&a.inter_node_port, &b.inter_node_port)}) {
    ASSERT_EQ(p->size(), q->size());
    for (size_t r = 0; r < p->size(); ++r)
      EXPECT_TRUE((*p)[r].tx == (*q)[r].tx && (*p)[r].rx == (*q)[r].rx) << r;
  }
  EXPECT_EQ(a.ring_transfers.size(), b.ring_transfers.size());
  EXPECT_EQ(a.work, b.work);
  EXPECT_TRUE(a.model_states == b.model_states && a.activations == b.activations &&
              a.recompute == b.recompute && a.gathered_weights == b.gathered_weights);
  EXPECT_TRUE(a.compute_category == b.compute_category && a.tp_category == b.tp_category &&
              a.tp_hidden_category == b.tp_hidden_category && a.pp_category == b.pp_category &&
              a.dp_category == b.dp_category && a.optimizer_category == b.optimizer_category &&
              a.cp_category == b.cp_category && a.offload_category == b.offload_category);
}

void ExpectRoundTrip(ScheduleKind schedule) {
  const PlanFile plan = MakeSmallPlan(schedule);
  ASSERT_EQ(plan.step.graph.num_ranks(), 8);
  ASSERT_FALSE(plan.step.inter_node_port.empty() && plan.step.intra_node_port.empty());
  ASSERT_GT(plan.step.graph.num_groups(), 0) << "dp = 2 has collectives between the replicas";
  ASSERT_FALSE(plan.step.graph.memory_events().empty());
  // Through text, as a file holds it.
  const nlohmann::json json = nlohmann::json::parse(PlanFileText(plan));
  Result<PlanFile> back = ParsePlanFile(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->file, "plan.json");
  ExpectSameStep(plan.step, back->step);
  // The parser sees the JSON as a map, so the source comes back with its keys sorted.
  EXPECT_EQ(nlohmann::json(back->source), nlohmann::json(plan.source));
  EXPECT_EQ(back->prediction.step_time_s, plan.prediction.step_time_s);
  EXPECT_EQ(back->prediction.bubble_fraction, plan.prediction.bubble_fraction);
  EXPECT_EQ(back->prediction.peak_memory_bytes, plan.prediction.peak_memory_bytes);
  ASSERT_EQ(back->baselines.size(), 24u);  // 8 ranks' weights, gradients and optimizer states
  for (size_t r = 0; r < plan.baselines.size(); ++r) {
    EXPECT_EQ(back->baselines[r].rank, plan.baselines[r].rank);
    EXPECT_EQ(back->baselines[r].pool, plan.baselines[r].pool);
    EXPECT_EQ(back->baselines[r].bytes, plan.baselines[r].bytes);
  }
  EXPECT_EQ(WorkloadJson(back->workload), WorkloadJson(plan.workload));
  // What validate runs is what was predicted: the same makespan and peak memory.
  Result<StepTimeline> timeline = Simulate(back->step.graph);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  EXPECT_EQ(timeline->makespan, SimTime::FromSeconds(plan.prediction.step_time_s));
  Result<MemoryReport> memory = TrackMemory(back->step.graph, *timeline, back->baselines);
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  int64_t peak = 0;
  for (int32_t s = 0; s < back->step.stages; ++s)
    peak = std::max(peak, memory->ranks[s].peak_bytes);
  EXPECT_EQ(peak, plan.prediction.peak_memory_bytes);
}

TEST(PlanFile, OneFOneBRoundTripKeepsEveryTableAndThePrediction) {
  ExpectRoundTrip(ScheduleKind::k1F1B);
}

TEST(PlanFile, ZbVRoundTripKeepsEveryTableAndThePrediction) { ExpectRoundTrip(ScheduleKind::kZbV); }

TEST(PlanFile, HoldsEveryReplicaWithItsModelStates) {
  const PlanFile plan = MakeSmallPlan(ScheduleKind::k1F1B);
  EXPECT_EQ(plan.step.stages, 4);
  EXPECT_EQ(plan.step.replicas, 2);
  // Per rank: its stage's weights, gradients and optimizer states, the same on both replicas.
  ASSERT_EQ(plan.baselines.size(), 24u);
  const PoolId pools[] = {plan.step.weights, plan.step.gradients, plan.step.optimizer_states};
  for (size_t i = 0; i < plan.baselines.size(); ++i) {
    EXPECT_EQ(plan.baselines[i].rank, static_cast<int32_t>(i / 3));
    EXPECT_EQ(plan.baselines[i].pool, pools[i % 3]);
    EXPECT_EQ(plan.baselines[i].bytes, plan.baselines[i % 12].bytes);
    EXPECT_GT(plan.baselines[i].bytes, 0);
  }
  // Every collective joins the two replicas of one stage.
  const TaskGraph& g = plan.step.graph;
  for (GroupId c = 0; c < g.num_groups(); ++c) {
    ASSERT_EQ(g.group_members(c).size(), 2u);
    EXPECT_EQ(g.rank_of(g.group_members(c)[0]) % 4, g.rank_of(g.group_members(c)[1]) % 4);
  }
}

TEST(PlanFile, TextHasOneTaskPerLine) {
  const PlanFile plan = MakeSmallPlan(ScheduleKind::k1F1B);
  const std::string text = PlanFileText(plan);
  if (const char* dump = std::getenv("LOOM_DUMP_PLAN")) std::ofstream(dump) << text;
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["schema"], "loom.plan-file/3");
  EXPECT_EQ(json["step"]["task_fields"][1], "duration_ns");
  int64_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_GT(lines, plan.step.graph.num_tasks());
  EXPECT_LT(lines, 2 * (plan.step.graph.num_tasks() +
                        static_cast<int64_t>(plan.step.graph.dependencies().size())));
}

TEST(PlanFile, WriteThenReadGivesTheSameSteps) {
  const PlanFile plan = MakeSmallPlan(ScheduleKind::k1F1B);
  const std::string path = TempPath("write");
  ASSERT_TRUE(WritePlanFile(plan, path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".loom.tmp"));
  Result<PlanFile> back = ReadPlanFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->file, path);
  ExpectSameStep(plan.step, back->step);
}

TEST(PlanFile, WriteIntoAMissingFolderNamesThePath) {
  const Status status = WritePlanFile(PlanFile(), "/nonexistent-loom-folder/plan.json");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent-loom-folder/plan.json"), std::string::npos)
      << status.message();
}

// The JSON of the 1F1B plan, for editing.
nlohmann::json SmallPlanJson() {
  return nlohmann::json::parse(PlanFileText(MakeSmallPlan(ScheduleKind::k1F1B)));
}

std::string ParseError(const nlohmann::json& json) {
  Result<PlanFile> plan = ParsePlanFile(json, "plan.json");
  EXPECT_FALSE(plan.ok());
  return plan.ok() ? "" : plan.status().message();
}

TEST(PlanFile, UnknownKeyIsAnError) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["taks"] = nlohmann::json::array();
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.taks"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean \"tasks\""), std::string::npos) << message;
}

TEST(PlanFile, WrongSchemaSaysWhichSchemaThisLoomReads) {
  nlohmann::json json = SmallPlanJson();
  json["schema"] = "loom.plan/1";
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: schema is \"loom.plan/1\""), std::string::npos) << message;
  EXPECT_NE(message.find("this loom reads plan files of schema \"loom.plan-file/3\""),
            std::string::npos)
      << message;
}

TEST(PlanFile, CollectiveNamingAMissingTaskSaysHowManyTasksThereAre) {
  nlohmann::json json = SmallPlanJson();
  const size_t tasks = json["step"]["tasks"].size();
  json["step"]["collectives"][3][1] = tasks + 5;
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.collectives[3] names task " + std::to_string(tasks + 5) +
                         ", but the step has " + std::to_string(tasks) + " tasks"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--emit plan"), std::string::npos) << message;
}

// A member dropped from a collective would run as nothing, the others' collective over fewer ranks.
TEST(PlanFile, ACollectiveWithAMemberMissingIsRefused) {
  nlohmann::json json = SmallPlanJson();
  nlohmann::json& collective = json["step"]["collectives"][0];
  ASSERT_GE(collective.size(), 2u);
  collective.erase(collective.size() - 1);
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("a member is missing from \"collectives\""), std::string::npos) << message;
  EXPECT_NE(message.find("plan.json: task "), std::string::npos) << message;
}

TEST(PlanFile, DependencyOutOfRangeIsAnError) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["dependencies"][5][0] = -1;
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.dependencies[5] names task -1"), std::string::npos)
      << message;
}

TEST(PlanFile, NegativeDurationIsAnError) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["tasks"][7][1] = -3;
  const std::string message = ParseError(json);
  EXPECT_NE(
      message.find(
          "plan.json: step.tasks[7].duration_ns is -3; it must be between 0 and 1000000000000000"),
      std::string::npos)
      << message;
}

TEST(PlanFile, StreamOfAnUnknownRankIsAnError) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["streams"][2]["rank"] = 8;
  const std::string message = ParseError(json);
  EXPECT_NE(
      message.find(
          "plan.json: step.streams[2].rank is 8, but the step has 8 ranks (stages 4 x replicas 2)"),
      std::string::npos)
      << message;
}

TEST(PlanFile, TwoMembersOnOneStreamPassTheBuildersMessageThrough) {
  nlohmann::json json = SmallPlanJson();
  nlohmann::json& collective = json["step"]["collectives"][0];
  collective[1] =
      collective[0].get<int64_t>() + 1;  // the next task: the same stream, or another rank's
  json["step"]["collectives"] = nlohmann::json::array({collective, collective});
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.collectives["), std::string::npos) << message;
  EXPECT_NE(message.find("is not a collective: "), std::string::npos) << message;
  EXPECT_NE(message.find("collective 1: "), std::string::npos) << message;
}

TEST(PlanFile, BadStagesIsTheOnlyErrorReported) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["stages"] = 0;
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.stages: is 0; it must be between 1 and 4096"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// Every id of the file, replaced by one no table holds, is reported at its key; none reaches the
// builder's arrays.
TEST(PlanFile, AnyIdOutOfRangeIsAnErrorAtItsKey) {
  const nlohmann::json good = SmallPlanJson();
  std::vector<nlohmann::json::json_pointer> ids = {
      nlohmann::json::json_pointer("/step/dependencies/2/0"),
      nlohmann::json::json_pointer("/step/dependencies/2/1"),
      nlohmann::json::json_pointer("/step/collectives/1/0"),
      nlohmann::json::json_pointer("/step/memory_events/0/0"),
      nlohmann::json::json_pointer("/step/memory_events/0/2"),
      nlohmann::json::json_pointer("/step/routes/0/0"),
      nlohmann::json::json_pointer("/step/ports/intra_node/1/0"),
      nlohmann::json::json_pointer("/step/baselines/0/rank"),
      nlohmann::json::json_pointer("/step/baselines/0/pool"),
      nlohmann::json::json_pointer("/step/ring_transfers/0/0")};
  for (const char* field :
       {"0", "2", "3", "4", "5", "6"}) {  // stream, name, category, link, route, pool
    ids.push_back(nlohmann::json::json_pointer(std::string("/step/tasks/3/") + field));
  }
  nlohmann::json with_ring = good;
  with_ring["step"]["ring_transfers"] = nlohmann::json::array({nlohmann::json::array({0, 1})});
  for (const nlohmann::json::json_pointer& id : ids) {
    for (int64_t bad : {int64_t{1} << 30, int64_t{-7}}) {
      nlohmann::json json = with_ring;
      json[id] = bad;
      const std::string message = ParseError(json);
      EXPECT_EQ(message.rfind("plan.json: step.", 0), 0u) << id.to_string() << ": " << message;
    }
  }
}

TEST(PlanFile, TruncatedTaskRowNamesItsFields) {
  nlohmann::json json = SmallPlanJson();
  json["step"]["tasks"][0].erase(8);
  const std::string message = ParseError(json);
  EXPECT_NE(message.find("plan.json: step.tasks[0] must be an array of 10 values (task_fields)"),
            std::string::npos)
      << message;
}

TEST(PlanFile, MissingFileSaysHowToWriteIt) {
  Result<PlanFile> plan = ReadPlanFile("/nonexistent-loom-folder/plan.json");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kNotFound);
  EXPECT_NE(plan.status().message().find("/nonexistent-loom-folder/plan.json: no such file"),
            std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("--emit plan"), std::string::npos)
      << plan.status().message();
}

TEST(PlanFile, NotJsonNamesTheFile) {
  const std::string path = TempPath("bad");
  std::ofstream(path) << "{\"schema\": ";
  Result<PlanFile> plan = ReadPlanFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find(path + ": not valid JSON"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace loom
