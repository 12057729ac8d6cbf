#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "op/op.h"
#include "sim/task_label.h"
#include "spec/strategy.h"

namespace loom {
namespace {

// Appends JSON text to one string. Written by hand rather than through a JSON library: a trace
// has ~10^5 events, and the output must be byte-identical from run to run.
class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& Raw(std::string_view text) {
    out_->append(text);
    return *this;
  }

  JsonWriter& Key(std::string_view key) {
    out_->append(",\"").append(key).append("\":");
    return *this;
  }

  JsonWriter& Int(int64_t value) {
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out_->append(buffer, result.ptr);
    return *this;
  }

  // Microseconds with exactly three decimals, from the integer nanoseconds.
  JsonWriter& Micros(SimTime time) { return Raw(FormatMicros(time)); }

  JsonWriter& String(std::string_view text) {
    out_->push_back('"');
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        out_->push_back('\\');
        out_->push_back(c);
      } else if (c == '\n') {
        out_->append("\\n");
      } else if (c == '\t') {
        out_->append("\\t");
      } else if (static_cast<unsigned char>(c) < 0x20) {
        constexpr char kHex[] = "0123456789abcdef";
        const char escape[6] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xf], kHex[c & 0xf]};
        out_->append(escape, 6);
      } else {
        out_->push_back(c);
      }
    }
    out_->push_back('"');
    return *this;
  }

 private:
  std::string* out_;
};

// What the trace knows of the step beside its graph: none of it for a bare graph.
struct StepView {
  const TaskGraph& graph;
  const StepGraph* step = nullptr;
  const TraceContext* context = nullptr;
  std::vector<int32_t> micro_batches;  // per task (MicroBatchesOf); empty for a bare graph
  std::vector<TaskId> receiver;        // per task: a send's receiving task on another rank, or -1
};

StepView ViewOf(const TaskGraph& graph, const StepGraph* step, const TraceContext* context) {
  StepView view{
      graph, step, context, {}, std::vector<TaskId>(static_cast<size_t>(graph.num_tasks()), -1)};
  if (step == nullptr) return view;
  view.micro_batches = MicroBatchesOf(*step);
  for (const Dependency& d : graph.dependencies()) {
    const bool send = static_cast<size_t>(d.before) < step->work.size() &&
                      step->work[d.before].kind == WorkKind::kTransfer;
    if (send && view.receiver[d.before] < 0 && graph.rank_of(d.after) != graph.rank_of(d.before)) {
      view.receiver[d.before] = d.after;
    }
  }
  return view;
}

std::string ProcessName(const StepView& view, int32_t rank) {
  if (view.step == nullptr) return "rank " + std::to_string(rank);
  return TraceRankName(*view.step, *view.context, rank);
}

void WriteMetadata(const StepView& view, std::span<const TraceRun> runs, JsonWriter& json) {
  const TaskGraph& graph = view.graph;
  for (const TraceRun& run : runs) {
    for (int32_t rank = 0; rank < graph.num_ranks(); ++rank) {
      const int64_t pid = run.pid_offset + rank;
      json.Raw("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":").Int(pid);
      json.Raw(",\"args\":{\"name\":")
          .String(run.process_prefix + ProcessName(view, rank))
          .Raw("}},\n");
      json.Raw("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":").Int(pid);
      json.Raw(",\"args\":{\"sort_index\":").Int(pid).Raw("}},\n");
    }
    for (StreamId s = 0; s < graph.num_streams(); ++s) {
      const int64_t pid = run.pid_offset + graph.stream_rank(s);
      json.Raw("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":").Int(pid);
      json.Raw(",\"tid\":").Int(s).Raw(",\"args\":{\"name\":");
      json.String(graph.Name(graph.stream_name(s))).Raw("}},\n");
      json.Raw("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":").Int(pid);
      json.Raw(",\"tid\":").Int(s).Raw(",\"args\":{\"sort_index\":").Int(s).Raw("}},\n");
    }
  }
}

// The channels of a transfer and its time alone on them, which "dur" exceeds when it shared
// them (engine.h); a collective's time alone is its longest member's.
void WriteRoute(const TaskGraph& graph, TaskId t, JsonWriter& json) {
  json.Raw(",\"channels\":[");
  const std::span<const ChannelId> channels = graph.route_channels(graph.task(t).route);
  for (size_t i = 0; i < channels.size(); ++i) {
    if (i > 0) json.Raw(",");
    json.String(graph.Name(graph.channel_name(channels[i])));
  }
  SimTime alone = graph.task(t).duration;
  if (const GroupId g = graph.group_of(t); g != kNoGroup) {
    for (TaskId m : graph.group_members(g)) alone = Max(alone, graph.task(m).duration);
  }
  json.Raw("],\"alone_us\":").Micros(alone);
}

// "24-31": the transformer layers of |virtual_stage|, counted from 0 in model order; empty when it
// holds none (a first or last chunk of only the embedding or the loss).
std::string LayerRange(const std::vector<int64_t>& layers, int32_t virtual_stage) {
  if (static_cast<size_t>(virtual_stage) >= layers.size() || layers[virtual_stage] <= 0) return "";
  int64_t first = 0;
  for (int32_t v = 0; v < virtual_stage; ++v) first += layers[v];
  return std::to_string(first) + "-" + std::to_string(first + layers[virtual_stage] - 1);
}

// What a tp task's pass moves in its tp, cp and ep collectives: {"tp":bytes,...}, groups that
// move nothing left out.
void WritePassCollectives(const std::vector<PassCollectiveBytes>& stages, const TaskWork& work,
                          JsonWriter& json) {
  if (work.index < 0 || static_cast<size_t>(work.index) >= stages.size()) return;
  const auto& by_group =
      stages[static_cast<size_t>(work.index)].bytes[static_cast<size_t>(work.pass)];
  json.Key("pass_collective_bytes").Raw("{");
  bool first = true;
  for (size_t g = 0; g < by_group.size(); ++g) {
    if (by_group[g] == 0) continue;
    json.Raw(first ? "\"" : ",\"")
        .Raw(kCommGroupNames.Name(static_cast<CommGroup>(g)))
        .Raw("\":")
        .Int(by_group[g]);
    first = false;
  }
  json.Raw("}");
}

// Bytes of a send or collective (as the executor's device program counts them), with its kind.
void WritePayload(const StepPayloads& payloads, const TaskWork& work, JsonWriter& json) {
  const auto at = [](const std::vector<int64_t>& v, int32_t i) {
    return i >= 0 && static_cast<size_t>(i) < v.size() ? v[i] : int64_t{0};
  };
  if (work.kind == WorkKind::kTransfer) json.Key("bytes").Int(payloads.p2p_bytes);
  if (work.kind == WorkKind::kGradReduce) {
    json.Key("bytes").Int(at(payloads.bucket_bytes, work.index));
    if (const int64_t expert = at(payloads.expert_bucket_bytes, work.index))
      json.Key("expert_bytes").Int(expert);
    json.Key("collective").String(kCollectiveKindNames.Name(payloads.grad_reduce));
  }
  if (work.kind == WorkKind::kParamGather) {
    json.Key("bytes").Int(at(payloads.param_gather_bytes, work.index) / std::max(work.parts, 1));
    if (const int64_t expert = at(payloads.expert_param_gather_bytes, work.index))
      json.Key("expert_bytes").Int(expert);
    json.Key("collective").String(kCollectiveKindNames.Name(CollectiveKind::kAllGather));
  }
}

// Who a transfer or collective talks to: a send's receiver, a collective's members (global rank
// names' numbers when the graph holds the group), or the kind and size of group it stands for.
void WritePeers(const StepView& view, TaskId t, const TaskWork& work, JsonWriter& json) {
  const TaskGraph& graph = view.graph;
  const TraceContext& c = *view.context;
  if (view.receiver[t] >= 0)
    json.Key("peer").String(ProcessName(view, graph.rank_of(view.receiver[t])));
  if (const GroupId g = graph.group_of(t); g != kNoGroup) {
    json.Key("group").Raw("[");
    bool first = true;
    for (TaskId m : graph.group_members(g)) {
      json.Raw(first ? "" : ",").String(ProcessName(view, graph.rank_of(m)));
      first = false;
    }
    json.Raw("]");
  } else if (work.kind == WorkKind::kGradReduce || work.kind == WorkKind::kParamGather ||
             work.kind == WorkKind::kLayerGather) {
    json.Key("group").String("dp x cp").Key("group_size").Int(c.dp * c.cp);
  }
  if (work.kind == WorkKind::kTpComm)
    json.Key("group").String("tp x cp").Key("group_size").Int(c.tp * c.cp);
  if (work.kind == WorkKind::kRingSend) json.Key("group").String("cp").Key("group_size").Int(c.cp);
}

void WriteStepArgs(const StepView& view, TaskId t, JsonWriter& json) {
  const StepGraph& step = *view.step;
  const TraceContext& c = *view.context;
  const TaskPlace place = PlaceOfTask(step, c.chunk_of_virtual_stage, view.micro_batches, t);
  if (place.micro_batch >= 0) json.Key("micro_batch").Int(place.micro_batch);
  if (place.chunk >= 0) json.Key("chunk").Int(place.chunk);
  if (place.virtual_stage >= 0) {
    json.Key("virtual_stage").Int(place.virtual_stage);
    if (const std::string layers = LayerRange(c.layers_per_virtual_stage, place.virtual_stage);
        !layers.empty()) {
      json.Key("layers").String(layers);
    }
  }
  const TaskWork work = static_cast<size_t>(t) < step.work.size() ? step.work[t] : TaskWork{};
  if (c.payloads != nullptr) WritePayload(*c.payloads, work, json);
  if (work.kind == WorkKind::kTpComm) WritePassCollectives(c.pass_collectives, work, json);
  WritePeers(view, t, work, json);
}

std::string SliceName(const StepView& view, TaskId t) {
  if (view.step == nullptr) return std::string(view.graph.Name(view.graph.task(t).name));
  const TaskPlace place =
      PlaceOfTask(*view.step, view.context->chunk_of_virtual_stage, view.micro_batches, t);
  return TaskLabel(*view.step, place, t);
}

void WriteTasks(const StepView& view, const TraceRun& run, JsonWriter& json) {
  const TaskGraph& graph = view.graph;
  const StepTimeline& timeline = *run.timeline;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    json.Raw("{\"name\":").String(SliceName(view, t));
    json.Raw(",\"cat\":").String(graph.Name(task.category));
    json.Raw(",\"ph\":\"X\",\"pid\":").Int(run.pid_offset + graph.stream_rank(task.stream));
    json.Raw(",\"tid\":").Int(task.stream);
    json.Raw(",\"ts\":").Micros(timeline.start[t]);
    json.Raw(",\"dur\":").Micros(timeline.end[t] - timeline.start[t]);
    json.Raw(",\"args\":{\"task\":").Int(t);
    if (view.step != nullptr) WriteStepArgs(view, t, json);
    if (task.link != kNoLink) json.Raw(",\"link\":").String(graph.Name(graph.link_name(task.link)));
    if (task.route != kNoRoute) WriteRoute(graph, t, json);
    json.Raw("}},\n");
  }
}

void WriteFlowEnd(const TaskGraph& graph, const TraceRun& run, TaskId t, std::string_view phase,
                  std::string_view category, int64_t id, JsonWriter& json) {
  json.Raw("{\"name\":").String(category).Raw(",\"cat\":").String(category);
  json.Raw(",\"ph\":\"").Raw(phase).Raw("\",\"id\":").Int(id);
  json.Raw(",\"pid\":")
      .Int(run.pid_offset + graph.rank_of(t))
      .Raw(",\"tid\":")
      .Int(graph.task(t).stream);
  json.Raw(",\"ts\":").Micros(run.timeline->start[t]);
  if (phase == "f") json.Raw(",\"bp\":\"e\"");
  json.Raw("},\n");
}

// A flow from each send to the pass it feeds and along each other dependency across streams, in
// dependency order; |next_id| numbers them through every run of the file.
void WriteFlows(const StepView& view, const TraceRun& run, int64_t& next_id, JsonWriter& json) {
  const TaskGraph& graph = view.graph;
  for (const Dependency& d : graph.dependencies()) {
    if (graph.task(d.before).stream == graph.task(d.after).stream) continue;
    // A measured step whose ranks' clocks disagree can start a task before what it waited for: no
    // arrow then, rather than one that runs backwards.
    if (run.timeline->start[d.after] < run.timeline->start[d.before]) continue;
    const std::string_view category = view.receiver[d.before] == d.after ? "pp-send" : "dependency";
    const int64_t id = next_id++;
    WriteFlowEnd(graph, run, d.before, "s", category, id, json);
    WriteFlowEnd(graph, run, d.after, "f", category, id, json);
  }
}

void WriteMemory(const MemoryReport& memory, const TraceRun& run, JsonWriter& json) {
  for (size_t rank = 0; rank < memory.ranks.size(); ++rank) {
    for (const MemorySample& sample : memory.ranks[rank].timeline) {
      json.Raw("{\"name\":\"memory\",\"ph\":\"C\",\"pid\":")
          .Int(run.pid_offset + static_cast<int64_t>(rank));
      json.Raw(",\"ts\":").Micros(sample.time);
      json.Raw(",\"args\":{\"bytes\":").Int(sample.bytes).Raw("}},\n");
    }
  }
}

void WriteOtherData(const StepView& view, JsonWriter& json) {
  json.Raw("\"otherData\":{");
  if (view.step == nullptr) {
    json.Raw("}");
    return;
  }
  const TraceContext& c = *view.context;
  json.Raw("\"model\":").String(c.model).Raw(",\"cluster\":").String(c.cluster);
  json.Raw(",\"strategy\":").Raw(c.strategy_json.empty() ? "null" : c.strategy_json);
  json.Raw(",\"loom_version\":").String(c.loom_version);
  json.Raw(",\"processes\":");
  if (c.unfolded) {
    json.String(
        "each process is one GPU, named by its Megatron-LM global rank (order tp-cp-ep-dp-pp) and "
        "its place in the pipeline, data-parallel, context-parallel and tensor-parallel groups");
    json.Raw("}");
    return;
  }
  json.String(
      "each process is one pipeline stage of one data-parallel replica (all replicas with "
      "--full, "
      "replica 0 alone otherwise), named by the Megatron-LM global rank (order tp-cp-ep-dp-pp) "
      "of its "
      "tp 0, cp 0 member; it stands for its tp x cp group of " +
      std::to_string(c.tp * c.cp) + (c.tp * c.cp == 1 ? " GPU" : " GPUs"));
  json.Raw("}");
}

std::string TraceJson(const StepView& view, std::span<const TraceRun> runs) {
  std::string out;
  out.reserve(runs.size() * (220 * static_cast<size_t>(view.graph.num_tasks()) +
                             120 * view.graph.dependencies().size()) +
              4096);
  JsonWriter json(&out);
  json.Raw("{\"traceEvents\":[\n");
  WriteMetadata(view, runs, json);
  int64_t next_flow = 0;
  for (const TraceRun& run : runs) {
    WriteTasks(view, run, json);
    WriteFlows(view, run, next_flow, json);
    if (run.memory != nullptr) WriteMemory(*run.memory, run, json);
  }
  // Every event above ends in ",\n"; JSON allows no trailing comma.
  if (out.ends_with(",\n")) out.erase(out.size() - 2, 1);
  json.Raw("],\n\"displayTimeUnit\":\"ms\",\n");
  WriteOtherData(view, json);
  json.Raw("}\n");
  return out;
}

}  // namespace

Result<TraceContext> StepTraceContext(const PreparedStep& prepared, const ModelSpec& model,
                                      const LayerOpsOptions& kernels) {
  LOOM_ASSIGN_OR_RETURN(ChunkBlocks blocks, BuildChunkBlocks(model, prepared.strategy, kernels));
  TraceContext context;
  context.pass_collectives = PassCollectiveBytesOf(blocks);
  context.tp = prepared.strategy.tp;
  context.cp = prepared.strategy.cp;
  context.dp = prepared.strategy.dp;
  context.chunk_of_virtual_stage = ChunkOfVirtualStages(prepared.schedule);
  context.layers_per_virtual_stage = LayersPerVirtualStage(prepared.strategy, model.num_layers);
  context.payloads = &prepared.payloads;
  return context;
}

std::string TraceRankName(const StepGraph& step, const TraceContext& context, int32_t rank) {
  const int64_t stages = std::max<int64_t>(step.stages, 1);
  const int64_t pp_rank = rank % stages, dp_rank = rank / stages;
  if (context.unfolded) {
    const int64_t lane = dp_rank, tp = std::max<int64_t>(context.tp, 1),
                  cp = std::max<int64_t>(context.cp, 1);
    return "rank " + std::to_string(lane + tp * cp * context.dp * pp_rank) + " (pp " +
           std::to_string(pp_rank) + ", dp " + std::to_string(lane / (tp * cp)) + ", cp " +
           std::to_string(lane / tp % cp) + ", tp " + std::to_string(lane % tp) + ")";
  }
  const int64_t global = context.tp * context.cp * (dp_rank + context.dp * pp_rank);
  return "rank " + std::to_string(global) + " (pp " + std::to_string(pp_rank) + ", dp " +
         std::to_string(dp_rank) + ", cp 0, tp 0)";
}

std::string ChromeTraceJson(const StepGraph& step, std::span<const TraceRun> runs,
                            const TraceContext& context) {
  return TraceJson(ViewOf(step.graph, &step, &context), runs);
}

std::string ChromeTraceJson(const TaskGraph& graph, const StepTimeline& timeline,
                            const MemoryReport* memory) {
  const TraceRun run{&timeline, memory, "", 0};
  return TraceJson(ViewOf(graph, nullptr, nullptr), std::span<const TraceRun>(&run, 1));
}

}  // namespace loom
