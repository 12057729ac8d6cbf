#include "sim/trace.h"

#include <charconv>
#include <cstdint>
#include <span>
#include <string_view>

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

void WriteMetadata(const TaskGraph& graph, JsonWriter& json) {
  for (int32_t rank = 0; rank < graph.num_ranks(); ++rank) {
    json.Raw("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":").Int(rank);
    json.Raw(",\"args\":{\"name\":\"rank ").Int(rank).Raw("\"}},\n");
    json.Raw("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":").Int(rank);
    json.Raw(",\"args\":{\"sort_index\":").Int(rank).Raw("}},\n");
  }
  for (StreamId s = 0; s < graph.num_streams(); ++s) {
    json.Raw("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":").Int(graph.stream_rank(s));
    json.Raw(",\"tid\":").Int(s).Raw(",\"args\":{\"name\":");
    json.String(graph.Name(graph.stream_name(s))).Raw("}},\n");
    json.Raw("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":").Int(graph.stream_rank(s));
    json.Raw(",\"tid\":").Int(s).Raw(",\"args\":{\"sort_index\":").Int(s).Raw("}},\n");
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

void WriteTasks(const TaskGraph& graph, const StepTimeline& timeline, JsonWriter& json) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    json.Raw("{\"name\":").String(graph.Name(task.name));
    json.Raw(",\"cat\":").String(graph.Name(task.category));
    json.Raw(",\"ph\":\"X\",\"pid\":").Int(graph.stream_rank(task.stream));
    json.Raw(",\"tid\":").Int(task.stream);
    json.Raw(",\"ts\":").Micros(timeline.start[t]);
    json.Raw(",\"dur\":").Micros(timeline.end[t] - timeline.start[t]);
    json.Raw(",\"args\":{\"task\":").Int(t);
    if (task.link != kNoLink) json.Raw(",\"link\":").String(graph.Name(graph.link_name(task.link)));
    if (task.route != kNoRoute) WriteRoute(graph, t, json);
    json.Raw("}},\n");
  }
}

void WriteMemory(const MemoryReport& memory, JsonWriter& json) {
  for (size_t rank = 0; rank < memory.ranks.size(); ++rank) {
    for (const MemorySample& sample : memory.ranks[rank].timeline) {
      json.Raw("{\"name\":\"memory\",\"ph\":\"C\",\"pid\":").Int(static_cast<int64_t>(rank));
      json.Raw(",\"ts\":").Micros(sample.time);
      json.Raw(",\"args\":{\"bytes\":").Int(sample.bytes).Raw("}},\n");
    }
  }
}

}  // namespace

std::string ChromeTraceJson(const TaskGraph& graph, const StepTimeline& timeline,
                            const MemoryReport* memory) {
  std::string out;
  out.reserve(160 * static_cast<size_t>(graph.num_tasks()) + 4096);
  JsonWriter json(&out);
  json.Raw("{\"traceEvents\":[\n");
  WriteMetadata(graph, json);
  WriteTasks(graph, timeline, json);
  if (memory != nullptr) WriteMemory(*memory, json);
  // Every event above ends in ",\n"; JSON allows no trailing comma.
  if (out.ends_with(",\n")) out.erase(out.size() - 2, 1);
  json.Raw("],\n\"displayTimeUnit\":\"ns\"}\n");
  return out;
}

}  // namespace loom
