#include "report/step_views.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sim/task_label.h"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;

// The strings a view uses (task names, categories, labels), each once, in order of first use.
class NameTable {
 public:
  int32_t Index(std::string_view name) {
    auto [it, added] = index_.try_emplace(std::string(name), static_cast<int32_t>(names_.size()));
    if (added) names_.emplace_back(name);
    return it->second;
  }
  Json names() const { return Json(names_); }

 private:
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::string> names_;
};

Json TimelineJson(const std::string& title, const StepTimeline& timeline) {
  Json start = Json::array(), end = Json::array();
  for (const SimTime& t : timeline.start) start.push_back(t.nanos());
  for (const SimTime& t : timeline.end) end.push_back(t.nanos());
  return {{"title", title},
          {"start_ns", start},
          {"end_ns", end},
          {"makespan_ns", timeline.makespan.nanos()}};
}

Json StageMemoryJson(const RankMemory& memory, int32_t stage, const MemoryBreakdown* breakdown) {
  Json time = Json::array(), bytes = Json::array();
  for (const MemorySample& sample : memory.timeline) {
    time.push_back(sample.time.nanos());
    bytes.push_back(sample.bytes);
  }
  Json items = Json::array();
  std::string peak_task;
  if (breakdown != nullptr) {
    for (const MemoryItemBytes& item : breakdown->items) {
      items.push_back(
          {{"item", std::string(kMemoryItemNames.Name(item.item))}, {"bytes", item.bytes}});
    }
    peak_task = DescribePeakTask(breakdown->peak_task);
  }
  return {{"stage", stage},
          {"rank", stage},
          {"peak_bytes", memory.peak_bytes},
          {"peak_time_ns", memory.peak_time.nanos()},
          {"peak_task", peak_task},
          {"time_ns", time},
          {"bytes", bytes},
          {"items", items}};
}

}  // namespace

ReportView GanttView(const StepGraph& step, const std::vector<TitledTimeline>& timelines,
                     const TraceContext* context) {
  const TaskGraph& graph = step.graph;
  Json streams = Json::array();
  for (StreamId s = 0; s < graph.num_streams(); ++s) {
    streams.push_back(
        {{"rank", graph.stream_rank(s)}, {"name", std::string(graph.Name(graph.stream_name(s)))}});
  }
  NameTable names;
  const std::vector<int32_t> chunk_of = ChunkOfVirtualStages(step);
  const std::vector<int32_t> micro_batches = MicroBatchesOf(step);
  Json stream = Json::array(), name = Json::array(), category = Json::array(),
       label = Json::array(), micro_batch = Json::array(), chunk = Json::array();
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const Task& task = graph.task(id);
    const TaskPlace place = PlaceOfTask(step, chunk_of, micro_batches, id);
    stream.push_back(task.stream);
    name.push_back(names.Index(graph.Name(task.name)));
    category.push_back(names.Index(graph.Name(task.category)));
    label.push_back(names.Index(TaskLabel(step, place, id)));
    micro_batch.push_back(place.micro_batch);
    chunk.push_back(place.chunk);
  }
  Json titled = Json::array();
  for (const TitledTimeline& t : timelines) titled.push_back(TimelineJson(t.title, *t.timeline));
  Json data = {{"streams", streams},
               {"names", names.names()},
               {"tasks",
                {{"stream", stream},
                 {"name", name},
                 {"category", category},
                 {"label", label},
                 {"micro_batch", micro_batch},
                 {"chunk", chunk}}},
               {"timelines", titled}};
  if (context != nullptr) {
    Json rank_names = Json::array();
    for (int32_t rank = 0; rank < graph.num_ranks(); ++rank) {
      rank_names.push_back(TraceRankName(step, *context, rank));
    }
    data["rank_names"] = std::move(rank_names);
  }
  return {"gantt", "Pipeline Gantt", "gantt", std::move(data)};
}

ReportView StageMemoryView(const SimulationResult& result) {
  Json stages = Json::array();
  const int32_t count =
      std::min<int32_t>(result.step.stages, static_cast<int32_t>(result.memory.ranks.size()));
  for (int32_t stage = 0; stage < count; ++stage) {
    const MemoryBreakdown* breakdown = static_cast<size_t>(stage) < result.memory_by_stage.size()
                                           ? &result.memory_by_stage[stage]
                                           : nullptr;
    stages.push_back(StageMemoryJson(result.memory.ranks[stage], stage, breakdown));
  }
  Json data = {{"limit_bytes", result.memory_limit_bytes},
               {"reserved_bytes", result.reserve.ReservedBytes()},
               {"peak_stage", result.peak_stage},
               {"makespan_ns", result.timeline.makespan.nanos()},
               {"stages", stages}};
  return {"memory", "Memory per stage", "memory", std::move(data)};
}

ReportView BreakdownView(const SimulationResult& result) {
  const StepBreakdown& b = result.breakdown;
  const CriticalPathSummary& c = result.critical_path;
  Json stages = Json::array();
  for (const StageResult& s : result.stages) {
    stages.push_back({{"stage", s.stage}, {"compute_s", s.compute_s}, {"bubble_s", s.bubble_s}});
  }
  Json data = {{"step_time_s", result.step_time_s},
               {"breakdown",
                {{"compute_s", b.compute_s},
                 {"exposed_comm_s", b.exposed_comm_s},
                 {"bubble_s", b.bubble_s},
                 {"optimizer_s", b.optimizer_s},
                 {"host_s", b.host_s}}},
               {"critical_path",
                {{"compute_s", c.compute_s},
                 {"tp_comm_s", c.tp_comm_s},
                 {"cp_comm_s", c.cp_comm_s},
                 {"pp_comm_s", c.pp_comm_s},
                 {"dp_comm_s", c.dp_comm_s},
                 {"optimizer_s", c.optimizer_s},
                 {"host_s", c.host_s}}},
               {"stages", stages}};
  return {"breakdown", "Step breakdown", "breakdown", std::move(data)};
}

std::string SimulationReport(const std::string& title, const std::string& subtitle,
                             const SimulationResult& result, const TraceContext* context) {
  return HtmlReport(title, subtitle,
                    {GanttView(result.step, {{"simulated step", &result.timeline}}, context),
                     StageMemoryView(result), BreakdownView(result)});
}

}  // namespace loom
