#include "program/plan_file.h"

#include "core/build_info.h"
#include "core/file_io.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "program/plan_file_layout.h"

namespace loom {
namespace {

using nlohmann::ordered_json;
using plan_file_layout::kMemoryEventFields;
using plan_file_layout::kTaskFields;
using plan_file_layout::kWorkFields;

ordered_json TaskRow(const Task& t, int64_t work) {
  return ordered_json::array({t.stream, t.duration.nanos(), t.name, t.category, t.link, t.route,
                              t.pool, t.alloc_at_start_bytes, t.free_at_end_bytes, work});
}

// The highest NameId anything of |step| refers to: the names table runs from 0 to it, so that
// every id in the file is the id the graph had.
NameId LastNameUsed(const StepGraph& step) {
  const TaskGraph& g = step.graph;
  NameId last = std::max({step.compute_category, step.tp_category, step.tp_hidden_category,
                          step.pp_category, step.dp_category, step.optimizer_category,
                          step.cp_category, step.offload_category});
  for (const Task& t : g.tasks()) last = std::max({last, t.name, t.category});
  for (StreamId s = 0; s < g.num_streams(); ++s) last = std::max(last, g.stream_name(s));
  for (LinkId l = 0; l < g.num_links(); ++l) last = std::max(last, g.link_name(l));
  for (ChannelId c = 0; c < g.num_channels(); ++c) last = std::max(last, g.channel_name(c));
  for (PoolId p = 0; p < g.num_pools(); ++p) last = std::max(last, g.pool_name(p));
  return last;
}

ordered_json PortsJson(const std::vector<Port>& ports) {
  ordered_json rows = ordered_json::array();
  for (const Port& p : ports) rows.push_back(ordered_json::array({p.tx, p.rx}));
  return rows;
}

// The tables the tasks index: names, streams, links, channels, routes, pools.
void AddTables(const StepGraph& step, ordered_json& j) {
  const TaskGraph& g = step.graph;
  ordered_json names = ordered_json::array();
  for (NameId id = 0; id <= LastNameUsed(step); ++id) names.push_back(std::string(g.Name(id)));
  j["names"] = std::move(names);
  ordered_json streams = ordered_json::array();
  for (StreamId s = 0; s < g.num_streams(); ++s) {
    streams.push_back(
        {{"rank", g.stream_rank(s)}, {"name", std::string(g.Name(g.stream_name(s)))}});
  }
  j["streams"] = std::move(streams);
  const auto name_list = [&g](int32_t count, auto name_of) {
    ordered_json list = ordered_json::array();
    for (int32_t i = 0; i < count; ++i) list.push_back(std::string(g.Name(name_of(i))));
    return list;
  };
  j["links"] = name_list(g.num_links(), [&g](int32_t i) { return g.link_name(i); });
  j["channels"] = name_list(g.num_channels(), [&g](int32_t i) { return g.channel_name(i); });
  ordered_json routes = ordered_json::array();
  for (RouteId r = 0; r < g.num_routes(); ++r) {
    const std::span<const ChannelId> channels = g.route_channels(r);
    routes.push_back(ordered_json(std::vector<ChannelId>(channels.begin(), channels.end())));
  }
  j["routes"] = std::move(routes);
  j["pools"] = name_list(g.num_pools(), [&g](int32_t i) { return g.pool_name(i); });
  j["ports"] = {{"intra_node", PortsJson(step.intra_node_port)},
                {"inter_node", PortsJson(step.inter_node_port)}};
}

// The rank programs and what constrains them.
void AddWork(const PlanFile& plan, ordered_json& j) {
  const TaskGraph& g = plan.step.graph;
  // What tasks run, each distinct TaskWork once (a step repeats a few hundred of them).
  std::vector<TaskWork> works;
  std::vector<int64_t> work_of(static_cast<size_t>(g.num_tasks()), 0);
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const TaskWork work =
        static_cast<size_t>(id) < plan.step.work.size() ? plan.step.work[id] : TaskWork{};
    auto it = std::find(works.begin(), works.end(), work);
    work_of[id] = it - works.begin();
    if (it == works.end()) works.push_back(work);
  }
  j["work_fields"] = kWorkFields;
  ordered_json work_rows = ordered_json::array();
  for (const TaskWork& w : works) {
    work_rows.push_back(ordered_json::array(
        {kWorkKindNames.Name(w.kind), kPassNames.Name(w.pass), w.index, w.part, w.parts}));
  }
  j["works"] = std::move(work_rows);
  j["task_fields"] = kTaskFields;
  ordered_json tasks = ordered_json::array();
  for (TaskId id = 0; id < g.num_tasks(); ++id) tasks.push_back(TaskRow(g.task(id), work_of[id]));
  j["tasks"] = std::move(tasks);
  ordered_json dependencies = ordered_json::array();
  for (const Dependency& d : g.dependencies())
    dependencies.push_back(ordered_json::array({d.before, d.after}));
  j["dependencies"] = std::move(dependencies);
  ordered_json collectives = ordered_json::array();
  for (GroupId c = 0; c < g.num_groups(); ++c) {
    const std::span<const TaskId> members = g.group_members(c);
    collectives.push_back(ordered_json(std::vector<TaskId>(members.begin(), members.end())));
  }
  j["collectives"] = std::move(collectives);
  j["memory_event_fields"] = kMemoryEventFields;
  ordered_json events = ordered_json::array();
  for (const MemoryEvent& e : g.memory_events()) {
    events.push_back(ordered_json::array(
        {e.task, e.phase == MemoryPhase::kAtStart ? "start" : "end", e.pool, e.delta_bytes}));
  }
  j["memory_events"] = std::move(events);
  ordered_json baselines = ordered_json::array();
  for (const MemoryBaseline& b : plan.baselines) {
    baselines.push_back({{"rank", b.rank}, {"pool", b.pool}, {"bytes", b.bytes}});
  }
  j["baselines"] = std::move(baselines);
  ordered_json rings = ordered_json::array();
  for (const StepGraph::RingTransfer& r : plan.step.ring_transfers) {
    rings.push_back(ordered_json::array({r.transfer, r.beside}));
  }
  j["ring_transfers"] = std::move(rings);
}

// Appends |value| readably but compactly: a value whose JSON fits in a line stays on one line
// (a task, a stream, a collective), larger objects and arrays get one member per line.
void AppendReadable(const ordered_json& value, int indent, std::string& out) {
  constexpr size_t kLine = 120;
  // Each member takes at least two characters, so a long array or object never fits: skip dumping
  // it.
  if (!value.is_structured() || value.size() * 2 <= kLine) {
    std::string compact = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (compact.size() <= kLine || !value.is_structured()) {
      out += compact;
      return;
    }
  }
  const std::string inner(indent + 2, ' ');
  out += value.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += inner;
    if (value.is_object()) out += ordered_json(it.key()).dump() + ": ";
    AppendReadable(*it, indent + 2, out);
  }
  out += "\n" + std::string(indent, ' ') + (value.is_object() ? "}" : "]");
}

}  // namespace

nlohmann::ordered_json PlanFileJson(const PlanFile& plan) {
  ordered_json j;
  j["schema"] = kPlanFileSchema;
  j["loom_version"] =
      LoomBuildVersion();  // the writer; any loom that reads its schema reads the file
  j["source"] = plan.source.is_null() ? ordered_json::object() : plan.source;
  j["prediction"] = {{"step_time_s", plan.prediction.step_time_s},
                     {"bubble_fraction", plan.prediction.bubble_fraction},
                     {"peak_memory_bytes", plan.prediction.peak_memory_bytes}};
  j["gpus"] = {{"tp", plan.gpus.tp},
               {"cp", plan.gpus.cp},
               {"dp", plan.gpus.dp},
               {"ep", plan.gpus.ep},
               {"etp", plan.gpus.etp}};
  ordered_json step;
  step["stages"] = plan.step.stages;
  step["replicas"] = plan.step.replicas;
  AddTables(plan.step, step);
  AddWork(plan, step);
  j["step"] = std::move(step);
  j["workload"] = WorkloadJson(plan.workload);
  return j;
}

std::string PlanFileText(const PlanFile& plan) {
  std::string text;
  AppendReadable(PlanFileJson(plan), 0, text);
  return text + "\n";
}

Status WritePlanFile(const PlanFile& plan, const std::string& path) {
  return WriteFileAtomically(path, PlanFileText(plan), "pass another --out");
}

}  // namespace loom
