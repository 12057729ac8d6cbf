#include "sim/trace_merge.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;

// One parsed input and the pids and ids its events use.
struct ParsedTrace {
  Json root;
  std::set<int64_t> pids, named_pids;
  int64_t max_pid = -1, max_id = -1;
};

// |event|'s string |key|, or "" when it has none (or one of another type).
std::string StringField(const Json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Status BadEvent(const TraceToMerge& in, size_t i, const std::string& what) {
  return Status::InvalidArgument(in.path + ": traceEvents[" + std::to_string(i) + "]" + what +
                                 "; fix the event or merge another trace file");
}

// The largest pid or integer id an input may use: shifting ids up to it past those of many inputs
// stays far inside int64_t.
constexpr int64_t kMaxId = int64_t{1} << 48;

bool IdInRange(const Json& id) {
  return id.is_number_unsigned()
             ? id.get<uint64_t>() <= static_cast<uint64_t>(kMaxId)
             : id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= kMaxId;
}

// Records |event|'s pid and integer id; a negative or huge one (or a pid that is no integer) is an
// error, since shifting it could collide with another input's or overflow.
Status ScanEvent(const TraceToMerge& in, size_t i, const Json& event, ParsedTrace& trace) {
  if (!event.is_object()) return BadEvent(in, i, " is not an object");
  if (const auto pid = event.find("pid"); pid != event.end()) {
    if (!IdInRange(*pid))
      return BadEvent(in, i, ".pid is " + pid->dump() + ", not an integer from 0 to 2^48");
    trace.pids.insert(pid->get<int64_t>());
    trace.max_pid = std::max(trace.max_pid, pid->get<int64_t>());
    if (StringField(event, "ph") == "M" && StringField(event, "name") == "process_name") {
      trace.named_pids.insert(pid->get<int64_t>());
    }
  }
  if (const auto id = event.find("id"); id != event.end() && id->is_number_integer()) {
    if (!IdInRange(*id))
      return BadEvent(in, i, ".id is " + id->dump() + ", not an integer from 0 to 2^48");
    trace.max_id = std::max(trace.max_id, id->get<int64_t>());
  }
  return Status::Ok();
}

// The events of a trace: the root itself when it is an array, else its traceEvents (null: none).
const Json* EventsOf(const Json& root) {
  if (root.is_array()) return &root;
  if (!root.is_object() || !root.contains("traceEvents") || !root.at("traceEvents").is_array())
    return nullptr;
  return &root.at("traceEvents");
}

Result<ParsedTrace> ParseTrace(const TraceToMerge& in) {
  LOOM_ASSIGN_OR_RETURN(Json root, ParseOrderedJson(in.text, in.path));
  ParsedTrace trace;
  trace.root = std::move(root);
  const Json* events = EventsOf(trace.root);
  if (events == nullptr) {
    return Status::InvalidArgument(
        in.path +
        ": no traceEvents array; a Chrome trace is {\"traceEvents\":[...]} "
        "or an array of events (pass a trace file, e.g. from loom simulate --trace)");
  }
  for (size_t i = 0; i < events->size(); ++i)
    LOOM_RETURN_IF_ERROR(ScanEvent(in, i, (*events)[i], trace));
  return trace;
}

std::string Labelled(const std::string& label, const std::string& name) {
  return label.empty() ? name : label + " " + name;
}

// |event| as it sits in the merged file: input |index|, pids moved by |pid_shift|, ids by
// |id_shift|.
Json Shifted(Json event, const TraceToMerge& in, size_t index, int64_t pid_shift,
             int64_t id_shift) {
  if (const auto pid = event.find("pid"); pid != event.end())
    *pid = pid->get<int64_t>() + pid_shift;
  if (const auto id = event.find("id"); id != event.end()) {
    if (id->is_number_integer()) *id = id->get<int64_t>() + id_shift;
    if (id->is_string()) *id = std::to_string(index) + ":" + id->get<std::string>();
  }
  if (StringField(event, "ph") != "M" || !event.contains("args") || !event["args"].is_object())
    return event;
  Json& args = event["args"];
  if (StringField(event, "name") == "process_name" && args.contains("name") &&
      args["name"].is_string()) {
    args["name"] = Labelled(in.label, args["name"].get<std::string>());
  }
  if (StringField(event, "name") == "process_sort_index" && args.contains("sort_index") &&
      IdInRange(args["sort_index"])) {
    args["sort_index"] = args["sort_index"].get<int64_t>() + pid_shift;
  }
  return event;
}

}  // namespace

Result<std::string> MergeChromeTraces(std::span<const TraceToMerge> inputs) {
  std::string out = "{\"traceEvents\":[\n";
  Json merged = Json::array();
  int64_t next_pid = 0, next_id = 0;
  for (size_t index = 0; index < inputs.size(); ++index) {
    const TraceToMerge& in = inputs[index];
    LOOM_ASSIGN_OR_RETURN(ParsedTrace trace, ParseTrace(in));
    const int64_t pid_shift = next_pid, id_shift = next_id;
    for (int64_t pid : trace.pids) {
      if (trace.named_pids.contains(pid)) continue;
      const Json name = {{"name", "process_name"},
                         {"ph", "M"},
                         {"pid", pid + pid_shift},
                         {"args", {{"name", Labelled(in.label, "pid " + std::to_string(pid))}}}};
      out.append(name.dump()).append(",\n");
    }
    for (const Json& event : *EventsOf(trace.root)) {
      out.append(Shifted(event, in, index, pid_shift, id_shift).dump()).append(",\n");
    }
    next_pid = std::max(next_pid, trace.max_pid + pid_shift + 1);
    next_id = std::max(next_id, trace.max_id + id_shift + 1);
    const Json& root = trace.root;
    merged.push_back(
        {{"file", in.path},
         {"label", in.label},
         {"otherData",
          root.is_object() && root.contains("otherData") ? root["otherData"] : Json()}});
  }
  // Every event above ends in ",\n"; JSON allows no trailing comma.
  if (out.ends_with(",\n")) out.erase(out.size() - 2, 1);
  out.append("],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":");
  out.append(Json{{"merged", merged}}.dump()).append("}\n");
  return out;
}

}  // namespace loom
