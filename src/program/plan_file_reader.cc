#include "program/plan_file.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "program/plan_file_layout.h"

namespace loom {
namespace {

using plan_file_layout::kMemoryEventFields;
using plan_file_layout::kTaskFields;
using plan_file_layout::kWorkFields;

// What to do about a file whose ids do not fit together.
constexpr char kRewrite[] =
    "the file was edited or truncated; write it again with `loom plan ... --emit plan`";

// A short rendering of a value for messages.
std::string Show(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// |value| if it is an object, else an empty one; JsonReader holds a reference to what it reads.
const nlohmann::json& ObjectOrEmpty(const nlohmann::json& value) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return value.is_object() ? value : kEmpty;
}

// Where a value sits in "step": "tasks[5].duration_ns", "collectives[3]".
struct Place {
  std::string_view array;
  size_t index;
  std::string_view field = {};
};

// The values an integer may take: an id into a |table| of |hi| entries (|lo| -1 allows "none"),
// or, without a table, any value from |lo| up to |most|.
// The longest task a plan file may hold: 10^6 s, the longest step loom simulates. A longer one is
// a corrupt file, and validate would wait on it for as long.
constexpr int64_t kMaxTaskNanos = 1'000'000'000'000'000;

struct Bound {
  int64_t lo;
  int64_t hi;
  std::string_view table = {};
  int64_t most = INT64_MAX;
};

// Reads the "step" object into a StepGraph through TaskGraph's builder, so that the builder's
// checks apply. Ids are checked before they reach the builder, with messages that name the key.
// A section (one array) stops at its first problem, and the sections after a bad one are not
// read: their ids would only repeat the damage.
class StepReader {
 public:
  StepReader(const nlohmann::json& step, JsonReader& reader, PlanFile& plan)
      : step_(step), r_(reader), plan_(plan), g_(plan.step.graph) {}

  void Read();
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void Fail(std::string_view key, std::string_view problem) {
    errors_.push_back(r_.Where(key) + " " + std::string(problem));
  }
  void Fail(const Place& at, std::string_view problem) { Fail(Key(at), problem); }
  static std::string Key(const Place& at) {
    std::string key = std::string(at.array) + "[" + std::to_string(at.index) + "]";
    return at.field.empty() ? key : key + "." + std::string(at.field);
  }
  // The array |key|, or nullptr after recording why not (an absent |optional| one: nullptr only).
  const nlohmann::json* Array(std::string_view key, bool optional = false);
  // |array[index]| if it is an array of |size| values (named by |fields|), else nullptr.
  const nlohmann::json* Row(const nlohmann::json& array, const Place& at, size_t size,
                            std::string_view fields);
  std::optional<int64_t> Int(const nlohmann::json& value, const Place& at, const Bound& bound);
  // |value| as a string, or nullopt after recording why not.
  std::optional<std::string> String(const nlohmann::json& value, const Place& at);

  void ReadNames();
  void ReadStreams();
  void ReadNamedTables();
  void ReadRoutes();
  void ReadWorks();
  void ReadTasks();
  void ReadDependencies();
  void ReadCollectives();
  void ReadMemoryEvents();
  void ReadBaselines();
  void ReadPorts();
  void ReadRingTransfers();
  void RestoreStepFields();
  std::optional<Task> ReadTask(const nlohmann::json& row, size_t index);
  // Pairs of task ids (dependencies, ring transfers).
  void ReadTaskPairs(std::string_view key, bool optional,
                     const std::function<void(TaskId, TaskId)>& add);

  const nlohmann::json& step_;
  JsonReader& r_;
  PlanFile& plan_;
  TaskGraph& g_;
  std::vector<std::string> errors_;
  int64_t ranks_ = 0;
  int64_t names_ = 0;  // ids 0 .. names_ - 1 are valid
  std::vector<TaskWork> works_;
};

const nlohmann::json* StepReader::Array(std::string_view key, bool optional) {
  auto it = step_.find(key);
  if (it == step_.end()) {
    if (!optional) Fail(key, std::string("is missing; ") + kRewrite);
    return nullptr;
  }
  if (!it->is_array()) {
    Fail(key, "must be an array, got " + std::string(it->type_name()) + " " + Show(*it) + "; " +
                  kRewrite);
    return nullptr;
  }
  return &*it;
}

const nlohmann::json* StepReader::Row(const nlohmann::json& array, const Place& at, size_t size,
                                      std::string_view fields) {
  const nlohmann::json& row = array[at.index];
  if (row.is_array() && row.size() == size) return &row;
  Fail(at, "must be an array of " + std::to_string(size) + " values (" + std::string(fields) +
               "), got " + Show(row) + "; " + kRewrite);
  return nullptr;
}

std::optional<int64_t> StepReader::Int(const nlohmann::json& value, const Place& at,
                                       const Bound& bound) {
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    Fail(at, "must be an integer, got " + std::string(value.type_name()) + " " + Show(value) +
                 "; " + kRewrite);
    return std::nullopt;
  }
  const int64_t v = value.get<int64_t>();
  if (v >= bound.lo && (bound.table.empty() ? v <= bound.most : v < bound.hi)) return v;
  if (bound.table.empty() && bound.most != INT64_MAX) {
    Fail(at, "is " + std::to_string(v) + "; it must be between " + std::to_string(bound.lo) +
                 " and " + std::to_string(bound.most) + "; " + kRewrite);
  } else if (bound.table.empty()) {
    Fail(at, "is " + std::to_string(v) + "; it must be at least " + std::to_string(bound.lo) +
                 "; " + kRewrite);
  } else {
    Fail(at, "names " + std::string(bound.table) + " " + std::to_string(v) + ", but the step has " +
                 std::to_string(bound.hi) + " " + std::string(bound.table) + "s" +
                 (bound.lo < 0 ? " (-1: none)" : "") + "; " + kRewrite);
  }
  return std::nullopt;
}

std::optional<std::string> StepReader::String(const nlohmann::json& value, const Place& at) {
  if (value.is_string()) return value.get<std::string>();
  Fail(at, "must be a string, got " + std::string(value.type_name()) + " " + Show(value) + "; " +
               kRewrite);
  return std::nullopt;
}

void StepReader::Read() {
  for (std::string_view key :
       {"names", "streams", "links", "channels", "routes", "pools", "ports", "work_fields", "works",
        "task_fields", "tasks", "dependencies", "collectives", "memory_event_fields",
        "memory_events", "baselines", "ring_transfers"}) {
    r_.Allow(key);
  }
  constexpr IntRange kStages{1, 1 << 12}, kReplicas{1, 1 << 18};
  plan_.step.stages = static_cast<int32_t>(r_.Int("stages", kStages));
  plan_.step.replicas = static_cast<int32_t>(r_.Int("replicas", kReplicas));
  ranks_ = int64_t{plan_.step.stages} * plan_.step.replicas;
  // Without the true rank count every rank id would look wrong; r_ has said why.
  const auto valid = [this](std::string_view key, IntRange range) {
    auto it = step_.find(key);
    return it != step_.end() && it->is_number_integer() && it->get<int64_t>() >= range.min &&
           it->get<int64_t>() <= range.max;
  };
  if (!valid("stages", kStages) || !valid("replicas", kReplicas)) return;
  using Section = void (StepReader::*)();
  for (Section section :
       {&StepReader::ReadNames, &StepReader::ReadStreams, &StepReader::ReadNamedTables,
        &StepReader::ReadRoutes, &StepReader::ReadWorks, &StepReader::ReadTasks,
        &StepReader::ReadDependencies, &StepReader::ReadCollectives, &StepReader::ReadMemoryEvents,
        &StepReader::ReadBaselines, &StepReader::ReadPorts, &StepReader::ReadRingTransfers,
        &StepReader::RestoreStepFields}) {
    (this->*section)();
    if (!errors_.empty()) return;
  }
  if (!g_.build_status().ok()) Fail("", g_.build_status().message() + "; " + kRewrite);
}

// Interned in order, so that every name keeps its id; a TaskGraph starts with "" and "default".
void StepReader::ReadNames() {
  const nlohmann::json* names = Array("names");
  if (names == nullptr) return;
  for (size_t i = 0; i < names->size(); ++i) {
    std::optional<std::string> name = String((*names)[i], {"names", i});
    if (!name) return;
    if (g_.Intern(*name) != static_cast<NameId>(i)) {
      Fail(Place{"names", i},
           "is " + Show((*names)[i]) +
               ", which is not a new name (each name is listed once, and the table starts with "
               "\"\" and \"default\"); " +
               kRewrite);
      return;
    }
  }
  names_ = std::max<int64_t>(static_cast<int64_t>(names->size()), 2);
}

void StepReader::ReadStreams() {
  const nlohmann::json* streams = Array("streams");
  if (streams == nullptr) return;
  const std::string ranks = std::to_string(ranks_) + " ranks (stages " +
                            std::to_string(plan_.step.stages) + " x replicas " +
                            std::to_string(plan_.step.replicas) + ")";
  for (size_t i = 0; i < streams->size(); ++i) {
    const std::string where = "step." + Key({"streams", i});
    JsonReader e(ObjectOrEmpty((*streams)[i]), r_.file(), where);
    if (!(*streams)[i].is_object())
      e.AddError("", "must be an object {\"rank\", \"name\"}; " + std::string(kRewrite));
    const int64_t rank = e.Int("rank", {0, INT32_MAX});
    const std::string name = e.String("name");
    if (Status status = e.Finish(UnknownKeys::kError); !status.ok()) {
      errors_.push_back(status.message());
      return;
    }
    if (rank >= ranks_) {
      Fail(Place{"streams", i, "rank"},
           "is " + std::to_string(rank) + ", but the step has " + ranks + "; " + kRewrite);
      return;
    }
    g_.AddStream(static_cast<int32_t>(rank), name);
  }
}

// Links, channels and pools: lists of names. Pool 0 is the graph's own "default".
void StepReader::ReadNamedTables() {
  for (std::string_view key : {"links", "channels", "pools"}) {
    const nlohmann::json* names = Array(key);
    if (names == nullptr) return;
    for (size_t i = 0; i < names->size(); ++i) {
      std::optional<std::string> name = String((*names)[i], {key, i});
      if (!name) return;
      if (key == "links") g_.AddLink(*name);
      if (key == "channels") g_.AddChannel(*name);
      if (key == "pools" && i > 0) g_.AddPool(*name);
      if (key == "pools" && i == 0 && *name != "default") {
        Fail(Place{key, i},
             "is " + Show((*names)[i]) + "; pool 0 is always \"default\"; " + kRewrite);
        return;
      }
    }
  }
}

void StepReader::ReadRoutes() {
  const nlohmann::json* routes = Array("routes");
  if (routes == nullptr) return;
  std::vector<ChannelId> channels;
  for (size_t i = 0; i < routes->size(); ++i) {
    const nlohmann::json& route = (*routes)[i];
    if (!route.is_array()) {
      Fail(Place{"routes", i},
           "must be an array of channel ids, got " + Show(route) + "; " + kRewrite);
      return;
    }
    channels.clear();
    for (size_t c = 0; c < route.size(); ++c) {
      std::optional<int64_t> id = Int(route[c], {"routes", i}, {0, g_.num_channels(), "channel"});
      if (!id) return;
      channels.push_back(static_cast<ChannelId>(*id));
    }
    if (g_.AddRoute(channels) == kNoRoute) {
      Fail(Place{"routes", i}, "is not a route: " + g_.build_status().message() + "; " + kRewrite);
      return;
    }
  }
}

std::optional<Task> StepReader::ReadTask(const nlohmann::json& row, size_t index) {
  const std::array<Bound, 10> bounds = {{
      {0, g_.num_streams(), "stream"},
      {0, 0, {}, kMaxTaskNanos},
      {0, names_, "name"},
      {0, names_, "name"},
      {-1, g_.num_links(), "link"},
      {-1, g_.num_routes(), "route"},
      {0, g_.num_pools(), "pool"},
      {0, 0},
      {0, 0},
      {0, static_cast<int64_t>(works_.size()), "works"},
  }};
  std::array<int64_t, 10> v{};
  for (size_t f = 0; f < v.size(); ++f) {
    std::optional<int64_t> value = Int(row[f], {"tasks", index, kTaskFields[f]}, bounds[f]);
    if (!value) return std::nullopt;
    v[f] = *value;
  }
  Task t;
  t.stream = static_cast<StreamId>(v[0]);
  t.duration = SimTime::FromNanos(v[1]);
  t.name = static_cast<NameId>(v[2]);
  t.category = static_cast<NameId>(v[3]);
  t.link = static_cast<LinkId>(v[4]);
  t.route = static_cast<RouteId>(v[5]);
  t.pool = static_cast<PoolId>(v[6]);
  t.alloc_at_start_bytes = v[7];
  t.free_at_end_bytes = v[8];
  plan_.step.work.push_back(works_[v[9]]);
  return t;
}

// Checks that |key| lists |expected|: the positions of each row of the array it describes.
bool FieldsMatch(const nlohmann::json& step, JsonReader& r, std::string_view key,
                 const std::vector<std::string>& expected, std::vector<std::string>& errors) {
  auto it = step.find(key);
  if (it != step.end() && *it == nlohmann::json(expected)) return true;
  errors.push_back(r.Where(key) + " is " + (it == step.end() ? std::string("missing") : Show(*it)) +
                   "; this loom reads " + nlohmann::json(expected).dump() + "; " + kRewrite);
  return false;
}

void StepReader::ReadWorks() {
  if (!FieldsMatch(step_, r_, "work_fields", kWorkFields, errors_)) return;
  const nlohmann::json* works = Array("works");
  if (works == nullptr) return;
  for (size_t i = 0; i < works->size(); ++i) {
    const nlohmann::json* row = Row(*works, {"works", i}, kWorkFields.size(), "work_fields");
    if (row == nullptr) return;
    const std::optional<WorkKind> kind =
        (*row)[0].is_string() ? kWorkKindNames.Parse((*row)[0].get<std::string>()) : std::nullopt;
    const std::optional<Pass> pass =
        (*row)[1].is_string() ? kPassNames.Parse((*row)[1].get<std::string>()) : std::nullopt;
    if (!kind || !pass) {
      Fail(Place{"works", i}, "is " + Show(*row) + "; its kind must be one of " +
                                  kWorkKindNames.Choices() + " and its pass one of " +
                                  kPassNames.Choices() + "; " + kRewrite);
      return;
    }
    std::optional<int64_t> index = Int((*row)[2], {"works", i, "index"}, {-1, 0});
    std::optional<int64_t> part =
        index ? Int((*row)[3], {"works", i, "part"}, {0, 0}) : std::nullopt;
    std::optional<int64_t> parts =
        part ? Int((*row)[4], {"works", i, "parts"}, {1, 0}) : std::nullopt;
    if (!parts) return;
    if (*part >= *parts || *index > INT32_MAX || *parts > INT32_MAX) {
      Fail(Place{"works", i},
           "is part " + std::to_string(*part) + " of " + std::to_string(*parts) + "; " + kRewrite);
      return;
    }
    works_.push_back({*kind, *pass, static_cast<int32_t>(*index), static_cast<int32_t>(*part),
                      static_cast<int32_t>(*parts)});
  }
}

void StepReader::ReadTasks() {
  if (!FieldsMatch(step_, r_, "task_fields", kTaskFields, errors_)) return;
  const nlohmann::json* tasks = Array("tasks");
  if (tasks == nullptr) return;
  const nlohmann::json* dependencies = Array("dependencies", true);
  g_.Reserve(static_cast<int32_t>(tasks->size()),
             dependencies == nullptr ? 0 : static_cast<int32_t>(dependencies->size()));
  for (size_t i = 0; i < tasks->size(); ++i) {
    const nlohmann::json* row = Row(*tasks, {"tasks", i}, kTaskFields.size(), "task_fields");
    if (row == nullptr) return;
    std::optional<Task> task = ReadTask(*row, i);
    if (!task) return;
    g_.AddTask(*task);
  }
}

void StepReader::ReadTaskPairs(std::string_view key, bool optional,
                               const std::function<void(TaskId, TaskId)>& add) {
  const nlohmann::json* pairs = Array(key, optional);
  if (pairs == nullptr) return;
  const Bound task{0, g_.num_tasks(), "task"};
  for (size_t i = 0; i < pairs->size(); ++i) {
    const nlohmann::json* row =
        Row(*pairs, {key, i}, 2, key == "dependencies" ? "before, after" : "transfer, beside");
    if (row == nullptr) return;
    std::optional<int64_t> first = Int((*row)[0], {key, i}, task);
    std::optional<int64_t> second = first ? Int((*row)[1], {key, i}, task) : std::nullopt;
    if (!second) return;
    if (*first == *second) {
      Fail(Place{key, i}, "names task " + std::to_string(*first) +
                              " twice; a task cannot wait for itself; " + kRewrite);
      return;
    }
    add(static_cast<TaskId>(*first), static_cast<TaskId>(*second));
  }
}

void StepReader::ReadDependencies() {
  ReadTaskPairs("dependencies", false,
                [this](TaskId before, TaskId after) { g_.AddDependency(before, after); });
}

void StepReader::ReadCollectives() {
  const nlohmann::json* collectives = Array("collectives");
  if (collectives == nullptr) return;
  std::vector<TaskId> members;
  for (size_t i = 0; i < collectives->size(); ++i) {
    const nlohmann::json& group = (*collectives)[i];
    if (!group.is_array()) {
      Fail(Place{"collectives", i},
           "must be an array of task ids, got " + Show(group) + "; " + kRewrite);
      return;
    }
    members.clear();
    for (const nlohmann::json& member : group) {
      std::optional<int64_t> id = Int(member, {"collectives", i}, {0, g_.num_tasks(), "task"});
      if (!id) return;
      members.push_back(static_cast<TaskId>(*id));
    }
    if (g_.AddCollective(members) == kNoGroup) {
      Fail(Place{"collectives", i},
           "is not a collective: " + g_.build_status().message() + "; " + kRewrite);
      return;
    }
  }
}

void StepReader::ReadMemoryEvents() {
  if (!FieldsMatch(step_, r_, "memory_event_fields", kMemoryEventFields, errors_)) return;
  const nlohmann::json* events = Array("memory_events");
  if (events == nullptr) return;
  for (size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json* row = Row(*events, {"memory_events", i}, 4, "memory_event_fields");
    if (row == nullptr) return;
    std::optional<int64_t> task =
        Int((*row)[0], {"memory_events", i, "task"}, {0, g_.num_tasks(), "task"});
    if (!task) return;
    const nlohmann::json& phase = (*row)[1];
    if (phase != "start" && phase != "end") {
      Fail(Place{"memory_events", i, "phase"},
           "is " + Show(phase) + "; it must be \"start\" or \"end\"; " + kRewrite);
      return;
    }
    std::optional<int64_t> pool =
        Int((*row)[2], {"memory_events", i, "pool"}, {0, g_.num_pools(), "pool"});
    std::optional<int64_t> delta =
        pool ? Int((*row)[3], {"memory_events", i, "delta_bytes"}, {INT64_MIN, 0}) : std::nullopt;
    if (!delta) return;
    g_.AddMemoryEvent(static_cast<TaskId>(*task),
                      phase == "start" ? MemoryPhase::kAtStart : MemoryPhase::kAtEnd,
                      static_cast<PoolId>(*pool), *delta);
  }
}

void StepReader::ReadBaselines() {
  const nlohmann::json* baselines = Array("baselines");
  if (baselines == nullptr) return;
  for (size_t i = 0; i < baselines->size(); ++i) {
    const nlohmann::json& entry = (*baselines)[i];
    JsonReader e(ObjectOrEmpty(entry), r_.file(), "step." + Key({"baselines", i}));
    if (!entry.is_object())
      e.AddError("", "must be an object {\"rank\", \"pool\", \"bytes\"}; " + std::string(kRewrite));
    const int64_t rank = e.Int("rank", {0, ranks_ - 1});
    const int64_t pool = e.Int("pool", {0, g_.num_pools() - 1});
    const int64_t bytes = e.Int("bytes", {0});
    if (Status status = e.Finish(UnknownKeys::kError); !status.ok()) {
      errors_.push_back(status.message());
      return;
    }
    plan_.baselines.push_back({static_cast<int32_t>(rank), static_cast<PoolId>(pool), bytes});
  }
}

// Optional: each fabric's [tx, rx] channels, one pair per rank or none.
void StepReader::ReadPorts() {
  auto it = step_.find("ports");
  if (it == step_.end()) return;
  JsonReader ports(ObjectOrEmpty(*it), r_.file(), "step.ports");
  if (!it->is_object()) ports.AddError("", "must be an object {\"intra_node\", \"inter_node\"}");
  ports.Allow("intra_node");
  ports.Allow("inter_node");
  if (Status status = ports.Finish(UnknownKeys::kError); !status.ok()) {
    errors_.push_back(status.message() + "; " + kRewrite);
    return;
  }
  for (std::string_view fabric : {"intra_node", "inter_node"}) {
    auto list = it->find(fabric);
    if (list == it->end()) continue;
    const std::string key = "ports." + std::string(fabric);
    std::vector<Port>& out =
        fabric == "intra_node" ? plan_.step.intra_node_port : plan_.step.inter_node_port;
    if (!list->is_array() || (!list->empty() && static_cast<int64_t>(list->size()) != ranks_)) {
      Fail(key, "must be an array of one [tx, rx] pair per rank (" + std::to_string(ranks_) +
                    "), or empty; " + kRewrite);
      return;
    }
    for (size_t r = 0; r < list->size(); ++r) {
      const nlohmann::json* pair = Row(*list, {key, r}, 2, "tx, rx");
      std::optional<int64_t> tx =
          pair ? Int((*pair)[0], {key, r, "tx"}, {0, g_.num_channels(), "channel"}) : std::nullopt;
      std::optional<int64_t> rx =
          tx ? Int((*pair)[1], {key, r, "rx"}, {0, g_.num_channels(), "channel"}) : std::nullopt;
      if (!rx) return;
      out.push_back({static_cast<ChannelId>(*tx), static_cast<ChannelId>(*rx)});
    }
  }
}

void StepReader::ReadRingTransfers() {
  ReadTaskPairs("ring_transfers", true, [this](TaskId transfer, TaskId beside) {
    plan_.step.ring_transfers.push_back({transfer, beside});
  });
}

// The fields of StepGraph that are names in the graph: each rank's "compute" stream, the pools
// and the task categories (as step_graph.cc names them).
void StepReader::RestoreStepFields() {
  StepGraph& step = plan_.step;
  step.compute_stream.assign(static_cast<size_t>(ranks_), -1);
  const NameId compute = g_.Intern("compute");
  for (StreamId s = g_.num_streams() - 1; s >= 0; --s) {
    if (g_.stream_name(s) == compute) step.compute_stream[g_.stream_rank(s)] = s;
  }
  for (int64_t rank = 0; rank < ranks_; ++rank) {
    if (step.compute_stream[rank] >= 0) continue;
    Fail("streams", "has no stream named \"compute\" on rank " + std::to_string(rank) +
                        "; every rank runs its passes on one; " + kRewrite);
    return;
  }
  NameStepParts(step);
}

// A number >= 0 that must be there.
double RequiredNumber(JsonReader& r, std::string_view key) {
  if (!r.Has(key)) {
    r.AddError(key, std::string("is missing; ") + kRewrite);
    r.Allow(key);
    return 0;
  }
  return r.OptionalNonNegativeNumber(key, {0, 1e6}).value_or(0);
}

}  // namespace

Result<PlanFile> ParsePlanFile(const nlohmann::json& json, const std::string& file) {
  auto schema = json.is_object() ? json.find("schema") : json.end();
  if (!json.is_object() || schema == json.end() || *schema != kPlanFileSchema) {
    const std::string found = !json.is_object()
                                  ? "the top level is a JSON " + std::string(json.type_name())
                              : schema == json.end() ? "\"schema\" is missing"
                                                     : "schema is " + Show(*schema);
    return Status::InvalidArgument(file + ": " + found +
                                   "; this loom reads plan files of schema \"" + kPlanFileSchema +
                                   "\"; write the plan again with this loom's "
                                   "`loom plan ... --emit plan`");
  }
  PlanFile plan;
  plan.file = file;
  JsonReader r(json, file);
  r.Allow("schema");
  r.Allow("loom_version");  // the writer's, for people: the schema says what this loom can read
  r.Allow("source");
  if (auto source = json.find("source"); source != json.end()) {
    if (source->is_object()) {
      plan.source = nlohmann::ordered_json(*source);
    } else {
      r.AddError("source", "must be an object, got " + Show(*source));
    }
  }
  JsonReader& prediction = r.Object("prediction");
  plan.prediction.step_time_s = RequiredNumber(prediction, "step_time_s");
  plan.prediction.bubble_fraction = RequiredNumber(prediction, "bubble_fraction");
  plan.prediction.peak_memory_bytes = prediction.Int("peak_memory_bytes", {0});
  JsonReader& gpus = r.Object("gpus");
  constexpr IntRange kGroup{1, 1 << 24};
  plan.gpus.tp = static_cast<int32_t>(gpus.Int("tp", kGroup));
  plan.gpus.cp = static_cast<int32_t>(gpus.Int("cp", kGroup));
  plan.gpus.dp = static_cast<int32_t>(gpus.Int("dp", kGroup));
  plan.gpus.ep = static_cast<int32_t>(gpus.Int("ep", kGroup));
  plan.gpus.etp = static_cast<int32_t>(gpus.Int("etp", kGroup));
  r.Allow("workload");
  std::string workload_error;
  if (auto workload = json.find("workload"); workload == json.end()) {
    workload_error =
        file + ": workload is missing; write the plan again with `loom plan ... --emit plan`";
  } else if (Result<PlanWorkload> parsed = ParseWorkload(*workload, file); parsed.ok()) {
    plan.workload = std::move(parsed).value();
  } else {
    workload_error = parsed.status().message();
  }
  JsonReader& step = r.Object("step");
  static const nlohmann::json kNoStep = nlohmann::json::object();
  const auto step_json = json.find("step");
  StepReader reader(step_json == json.end() ? kNoStep : ObjectOrEmpty(*step_json), step, plan);
  reader.Read();
  const Status keys = r.Finish(UnknownKeys::kError);
  std::string message = keys.ok() ? "" : keys.message();
  for (const std::string& error : reader.errors()) message += (message.empty() ? "" : "\n") + error;
  if (!workload_error.empty()) message += (message.empty() ? "" : "\n") + workload_error;
  if (!message.empty()) return Status::InvalidArgument(message);
  LOOM_RETURN_IF_ERROR(CheckWorkFits(plan.step, plan.workload, file));
  LOOM_RETURN_IF_ERROR(CheckGpuLayout(plan.gpus, file + ": gpus"));
  if (plan.step.replicas != 1 && plan.step.replicas != plan.gpus.dp) {
    return Status::InvalidArgument(file + ": step.replicas is " +
                                   std::to_string(plan.step.replicas) + " but gpus.dp is " +
                                   std::to_string(plan.gpus.dp) +
                                   ": a plan holds one data-parallel replica or all of them; " +
                                   kRewrite);
  }
  return plan;
}

Result<PlanFile> ReadPlanFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(
      nlohmann::json json,
      ReadJsonObjectFile(
          path,
          "check the path, or write the plan with `loom plan ... --emit plan --out " + path + "`"));
  return ParsePlanFile(json, path);
}

}  // namespace loom
