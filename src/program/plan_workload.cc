#include "program/plan_workload.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "op/op_json.h"

namespace loom {
namespace {

using nlohmann::ordered_json;

constexpr char kWriteWorkloadAgain[] = "write the plan again with `loom plan ... --emit plan`";
constexpr IntRange kBytes{0, INT64_MAX};

// The four op lists of a block, by their names in the file.
constexpr std::array<std::string_view, 4> kLists = {"forward", "backward_input", "backward_weight",
                                                    "recompute"};

std::vector<Op>& List(LayerOps& ops, size_t i) {
  std::array<std::vector<Op>*, 4> lists = {&ops.forward, &ops.backward_input, &ops.backward_weight,
                                           &ops.recompute};
  return *lists[i];
}
const std::vector<Op>& List(const LayerOps& ops, size_t i) {
  return List(const_cast<LayerOps&>(ops), i);
}
std::vector<SimTime>& List(BlockTimes& t, size_t i) {
  std::array<std::vector<SimTime>*, 4> lists = {&t.forward, &t.backward_input, &t.backward_weight,
                                                &t.recompute};
  return *lists[i];
}
const std::vector<SimTime>& List(const BlockTimes& t, size_t i) {
  return List(const_cast<BlockTimes&>(t), i);
}

ordered_json OpJson(const Op& op, SimTime predicted) {
  return {{"name", OpNameString(op.name)},
          {"kind", kOpKindNames.Name(op.kind)},
          {"shape", OpShapeJson(op.shape)},
          {"saved_bytes", op.saved_bytes},
          {"predicted_ns", predicted.nanos()}};
}

ordered_json Int64s(const std::vector<int64_t>& values) { return ordered_json(values); }

// Reads the op at |path| of |file|; its errors go to |errors|.
std::pair<Op, SimTime> ReadOp(const nlohmann::json& json, const std::string& file,
                              const std::string& path, std::vector<std::string>& errors) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!json.is_object()) {
    errors.push_back(file + ": " + path +
                     " must be an object {\"name\", \"kind\", \"shape\", ...}; " +
                     kWriteWorkloadAgain);
    return {};
  }
  JsonReader r(json, file, path);
  Op op;
  const std::string name = r.String("name");
  if (const std::optional<OpName> parsed = ParseOpName(name)) {
    op.name = *parsed;
  } else if (!name.empty()) {
    r.AddError("name",
               "is \"" + name + "\", which is no op this loom knows; " + kWriteWorkloadAgain);
  }
  op.kind = ReadEnum(r, "kind", kOpKindNames);
  const nlohmann::json* shape =
      r.Has("shape") && json["shape"].is_object() ? &json["shape"] : &kEmpty;
  if (!r.Has("shape") || !json["shape"].is_object())
    r.AddError("shape", "must be an object of the op's sizes");
  r.Allow("shape");
  JsonReader s(*shape, file, path + ".shape");
  op.shape = ReadOpShape(op.kind, s);
  op.saved_bytes = r.Int("saved_bytes", kBytes);
  const SimTime predicted = SimTime::FromNanos(r.Int("predicted_ns", kBytes));
  for (Status st : {r.Finish(UnknownKeys::kError), s.Finish(UnknownKeys::kError)}) {
    if (!st.ok()) errors.push_back(std::string(st.message()));
  }
  return {std::move(op), predicted};
}

// The integers of |json| (an array), each at least |min|; errors name |where|.
std::vector<int64_t> ReadInts(const nlohmann::json* json, const std::string& where, int64_t min,
                              std::vector<std::string>& errors) {
  std::vector<int64_t> out;
  if (json == nullptr || !json->is_array()) {
    errors.push_back(where + " must be an array of integers; " + kWriteWorkloadAgain);
    return out;
  }
  for (const nlohmann::json& v : *json) {
    if (!v.is_number_integer() || v.get<int64_t>() < min) {
      errors.push_back(where + " holds " + v.dump() +
                       "; every value must be an integer of at least " + std::to_string(min) +
                       "; " + kWriteWorkloadAgain);
      return out;
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

const nlohmann::json* Member(const nlohmann::json& json, std::string_view key) {
  auto it = json.find(key);
  return it == json.end() ? nullptr : &*it;
}

void ReadBlocks(const nlohmann::json& json, const std::string& file, PlanWorkload& out,
                std::vector<std::string>& errors) {
  const nlohmann::json* blocks = Member(json, "blocks");
  if (blocks == nullptr || !blocks->is_array()) {
    errors.push_back(file + ": workload.blocks must be an array of blocks; " + kWriteWorkloadAgain);
    return;
  }
  for (size_t b = 0; b < blocks->size(); ++b) {
    const std::string where = "workload.blocks[" + std::to_string(b) + "]";
    LayerOps& ops = out.chunks.blocks.emplace_back();
    BlockTimes& times = out.predicted.emplace_back();
    const nlohmann::json& block = (*blocks)[b];
    for (size_t l = 0; l < kLists.size(); ++l) {
      const nlohmann::json* list = block.is_object() ? Member(block, kLists[l]) : nullptr;
      const std::string list_where = where + "." + std::string(kLists[l]);
      if (list == nullptr || !list->is_array()) {
        errors.push_back(file + ": " + list_where + " must be an array of ops; " +
                         kWriteWorkloadAgain);
        return;
      }
      for (size_t i = 0; i < list->size(); ++i) {
        auto [op, predicted] =
            ReadOp((*list)[i], file, list_where + "[" + std::to_string(i) + "]", errors);
        List(ops, l).push_back(std::move(op));
        List(times, l).push_back(predicted);
      }
    }
    if (block.is_object() && block.size() != kLists.size()) {
      errors.push_back(file + ": " + where +
                       " must hold exactly forward, backward_input, backward_weight and "
                       "recompute; " +
                       kWriteWorkloadAgain);
    }
  }
}

void ReadChunks(const nlohmann::json& json, const std::string& file, PlanWorkload& out,
                std::vector<std::string>& errors) {
  const nlohmann::json* chunks = Member(json, "chunks");
  if (chunks == nullptr || !chunks->is_array() || chunks->empty()) {
    errors.push_back(
        file +
        ": workload.chunks must be an array with one list of [block, count] per virtual "
        "stage; " +
        kWriteWorkloadAgain);
    return;
  }
  const int64_t blocks = static_cast<int64_t>(out.chunks.blocks.size());
  for (size_t v = 0; v < chunks->size(); ++v) {
    std::vector<BlockRun>& runs = out.chunks.chunks.emplace_back();
    const nlohmann::json& list = (*chunks)[v];
    for (size_t i = 0; list.is_array() && i < list.size(); ++i) {
      const nlohmann::json& run = list[i];
      const bool ok = run.is_array() && run.size() == 2 && run[0].is_number_integer() &&
                      run[1].is_number_integer() && run[0].get<int64_t>() >= 0 &&
                      run[0].get<int64_t>() < blocks && run[1].get<int64_t>() >= 1;
      if (!ok) {
        errors.push_back(
            file + ": workload.chunks[" + std::to_string(v) + "][" + std::to_string(i) + "] is " +
            run.dump() + "; it must be [block, count] with a block below " +
            std::to_string(blocks) + " and a count of at least 1; " + kWriteWorkloadAgain);
        return;
      }
      runs.push_back({run[0].get<int32_t>(), run[1].get<int64_t>()});
    }
    if (!list.is_array()) {
      errors.push_back(file + ": workload.chunks[" + std::to_string(v) + "] must be an array; " +
                       kWriteWorkloadAgain);
      return;
    }
  }
  out.chunks.layers = ReadInts(Member(json, "layers"), file + ": workload.layers", 0, errors);
  if (out.chunks.layers.size() != out.chunks.chunks.size() && errors.empty()) {
    errors.push_back(file + ": workload.layers has " + std::to_string(out.chunks.layers.size()) +
                     " entries for " + std::to_string(out.chunks.chunks.size()) +
                     " virtual stages; " + kWriteWorkloadAgain);
  }
}

void ReadPayloads(const nlohmann::json& json, const std::string& file, PlanWorkload& out,
                  std::vector<std::string>& errors) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* p = Member(json, "payloads");
  JsonReader r(p != nullptr && p->is_object() ? *p : kEmpty, file, "workload.payloads");
  StepPayloads& payloads = out.payloads;
  payloads.p2p_bytes = r.Int("p2p_bytes", kBytes);
  payloads.grad_reduce = ReadEnum(r, "grad_reduce", kCollectiveKindNames);
  const size_t v_count = out.chunks.chunks.size();
  const auto ints = [&](std::string_view key, size_t size) {
    r.Allow(key);
    std::vector<int64_t> values =
        ReadInts(p != nullptr ? Member(*p, key) : nullptr, r.Where(key), 0, errors);
    if (values.size() != size && errors.empty()) {
      errors.push_back(r.Where(key) + " has " + std::to_string(values.size()) + " entries, not " +
                       std::to_string(size) + "; " + kWriteWorkloadAgain);
    }
    return values;
  };
  payloads.bucket_bytes = ints("bucket_bytes", v_count);
  payloads.expert_bucket_bytes = ints("expert_bucket_bytes", v_count);
  r.Allow("optimizer");
  const nlohmann::json* optimizer = p != nullptr ? Member(*p, "optimizer") : nullptr;
  if (optimizer == nullptr || !optimizer->is_array()) {
    errors.push_back(r.Where("optimizer") +
                     " must be an array of {\"bytes_read\", \"bytes_written\"} per stage; " +
                     kWriteWorkloadAgain);
  } else {
    for (size_t s = 0; s < optimizer->size(); ++s) {
      JsonReader o((*optimizer)[s].is_object() ? (*optimizer)[s] : kEmpty, file,
                   "workload.payloads.optimizer[" + std::to_string(s) + "]");
      payloads.optimizer.push_back({o.Int("bytes_read", kBytes), o.Int("bytes_written", kBytes)});
      if (Status st = o.Finish(UnknownKeys::kError); !st.ok())
        errors.push_back(std::string(st.message()));
    }
  }
  const size_t stages = payloads.optimizer.size();
  payloads.param_gather_bytes = ints("param_gather_bytes", stages);
  payloads.expert_param_gather_bytes = ints("expert_param_gather_bytes", stages);
  if (Status st = r.Finish(UnknownKeys::kError); !st.ok())
    errors.push_back(std::string(st.message()));
}

}  // namespace

TaskWork WholePass(TaskWork work) {
  work.kind = WorkKind::kPass;
  work.group = -1;
  work.part = 0;
  work.parts = 1;
  return work;
}

PassOps OpsOfPass(const PlanWorkload& workload, const TaskWork& work) {
  PassOps all;
  const std::vector<BlockRun>& runs = workload.chunks.chunks[work.index];
  const auto add = [&](const BlockRun& run, size_t list) {
    const std::vector<Op>& ops = List(workload.chunks.blocks[run.block], list);
    const std::vector<SimTime>& times = List(workload.predicted[run.block], list);
    for (int64_t i = 0; i < run.count; ++i) {
      for (size_t o = 0; o < ops.size(); ++o) {
        all.ops.push_back(&ops[o]);
        all.predicted.push_back(times[o]);
      }
    }
  };
  const bool backward_input = work.pass == Pass::kB || work.pass == Pass::kBW;
  const bool backward_weight = work.pass == Pass::kW || work.pass == Pass::kBW;
  if (work.pass == Pass::kF) {
    for (const BlockRun& run : runs) add(run, 0);
  }
  if (backward_input) {
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      for (int64_t i = 0; i < it->count; ++i) {
        add({it->block, 1}, 3);
        add({it->block, 1}, 1);
      }
    }
  }
  if (backward_weight) {
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) add(*it, 2);
  }
  if (work.parts <= 1) return all;
  // An op belongs to the part whose equal share of the pass's predicted time holds the op's
  // midpoint (by op count when nothing has a predicted time).
  int64_t total = 0;
  for (SimTime t : all.predicted) total += t.nanos();
  PassOps slice;
  int64_t before = 0;  // predicted time of the ops before this one
  for (size_t i = 0; i < all.ops.size(); ++i) {
    const int64_t n = static_cast<int64_t>(all.ops.size());
    const double position =
        total > 0 ? (static_cast<double>(before) + all.predicted[i].nanos() / 2.0) / total
                  : (static_cast<double>(i) + 0.5) / n;
    const int32_t part = std::min(work.parts - 1, static_cast<int32_t>(position * work.parts));
    before += all.predicted[i].nanos();
    if (part != work.part) continue;
    slice.ops.push_back(all.ops[i]);
    slice.predicted.push_back(all.predicted[i]);
  }
  return slice;
}

ordered_json WorkloadJson(const PlanWorkload& workload) {
  ordered_json blocks = ordered_json::array();
  for (size_t b = 0; b < workload.chunks.blocks.size(); ++b) {
    ordered_json block;
    for (size_t l = 0; l < kLists.size(); ++l) {
      ordered_json ops = ordered_json::array();
      const std::vector<Op>& list = List(workload.chunks.blocks[b], l);
      for (size_t i = 0; i < list.size(); ++i)
        ops.push_back(OpJson(list[i], List(workload.predicted[b], l)[i]));
      block[std::string(kLists[l])] = std::move(ops);
    }
    blocks.push_back(std::move(block));
  }
  ordered_json chunks = ordered_json::array();
  for (const std::vector<BlockRun>& runs : workload.chunks.chunks) {
    ordered_json list = ordered_json::array();
    for (const BlockRun& run : runs) list.push_back(ordered_json::array({run.block, run.count}));
    chunks.push_back(std::move(list));
  }
  const StepPayloads& p = workload.payloads;
  ordered_json optimizer = ordered_json::array();
  for (const MemoryShape& m : p.optimizer) {
    optimizer.push_back({{"bytes_read", m.bytes_read}, {"bytes_written", m.bytes_written}});
  }
  ordered_json payloads = {{"p2p_bytes", p.p2p_bytes},
                           {"grad_reduce", kCollectiveKindNames.Name(p.grad_reduce)},
                           {"bucket_bytes", Int64s(p.bucket_bytes)},
                           {"expert_bucket_bytes", Int64s(p.expert_bucket_bytes)},
                           {"optimizer", std::move(optimizer)},
                           {"param_gather_bytes", Int64s(p.param_gather_bytes)},
                           {"expert_param_gather_bytes", Int64s(p.expert_param_gather_bytes)}};
  return {{"blocks", std::move(blocks)},
          {"chunks", std::move(chunks)},
          {"layers", Int64s(workload.chunks.layers)},
          {"payloads", std::move(payloads)}};
}

Result<PlanWorkload> ParseWorkload(const nlohmann::json& json, const std::string& file) {
  if (!json.is_object()) {
    return Status::InvalidArgument(
        file +
        ": workload must be an object {\"blocks\", \"chunks\", \"layers\", "
        "\"payloads\"}; " +
        kWriteWorkloadAgain);
  }
  PlanWorkload out;
  std::vector<std::string> errors;
  ReadBlocks(json, file, out, errors);
  if (errors.empty()) ReadChunks(json, file, out, errors);
  if (errors.empty()) ReadPayloads(json, file, out, errors);
  for (const auto& item : json.items()) {
    if (item.key() != "blocks" && item.key() != "chunks" && item.key() != "layers" &&
        item.key() != "payloads") {
      errors.push_back(file + ": workload." + item.key() + " is not a key this loom reads; " +
                       kWriteWorkloadAgain);
    }
  }
  if (errors.empty()) return out;
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(message);
}

namespace {

// Every rank's task of one collective work (the same kind, pass, stage and part) is a member of a
// collective of one size, or none is (one replica: nothing to reduce). A task left out of its
// collective would run as nothing, and the others' collective over fewer ranks: a plan file edited
// by hand, or cut short, must not pass for the plan.
Status CheckCollectivesWhole(const StepGraph& step, const std::string& file) {
  constexpr TaskId kNone = -1;
  struct Seen {
    TaskId grouped = kNone, ungrouped = kNone;
    size_t members = 0;
  };
  std::map<std::tuple<WorkKind, Pass, int32_t, int32_t, int32_t>, Seen> by_work;
  for (TaskId id = 0; id < static_cast<TaskId>(step.work.size()); ++id) {
    const TaskWork& w = step.work[id];
    if (w.kind != WorkKind::kTpComm && w.kind != WorkKind::kGradReduce &&
        w.kind != WorkKind::kParamGather && w.kind != WorkKind::kLayerGather) {
      continue;
    }
    Seen& seen = by_work[{w.kind, w.pass, w.index, w.part, w.parts}];
    const GroupId group = step.graph.group_of(id);
    if (group == kNoGroup) {
      if (seen.ungrouped == kNone) seen.ungrouped = id;
    } else {
      const size_t members = step.graph.group_members(group).size();
      if (seen.grouped != kNone && members != seen.members) {
        return Status::InvalidArgument(
            file + ": task " + step.graph.DescribeTask(id) + " runs its " +
            std::string(kWorkKindNames.Name(w.kind)) + " in a collective of " +
            std::to_string(members) + " members, task " + step.graph.DescribeTask(seen.grouped) +
            " the same work in one of " + std::to_string(seen.members) +
            ": a member is missing from \"collectives\"; " + kWriteWorkloadAgain);
      }
      if (seen.grouped == kNone) seen.grouped = id, seen.members = members;
    }
    if (seen.grouped != kNone && seen.ungrouped != kNone) {
      return Status::InvalidArgument(file + ": task " + step.graph.DescribeTask(seen.ungrouped) +
                                     " runs its " + std::string(kWorkKindNames.Name(w.kind)) +
                                     " in no collective, task " +
                                     step.graph.DescribeTask(seen.grouped) +
                                     " the same work in one of " + std::to_string(seen.members) +
                                     " members: a member is missing from "
                                     "\"collectives\"; " +
                                     kWriteWorkloadAgain);
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckWorkFits(const StepGraph& step, const PlanWorkload& workload, const std::string& file) {
  const int32_t v_count = static_cast<int32_t>(workload.chunks.chunks.size());
  const int32_t stages = static_cast<int32_t>(workload.payloads.optimizer.size());
  for (TaskId id = 0; id < static_cast<TaskId>(step.work.size()); ++id) {
    const TaskWork& w = step.work[id];
    const bool staged = w.kind == WorkKind::kOptimizer || w.kind == WorkKind::kParamGather;
    const bool chunked = w.kind == WorkKind::kPass || w.kind == WorkKind::kTpComm ||
                         w.kind == WorkKind::kRingSend || w.kind == WorkKind::kTransfer ||
                         w.kind == WorkKind::kGradReduce;
    const int32_t limit = staged ? stages : v_count;
    if ((staged || chunked) && (w.index < 0 || w.index >= limit)) {
      return Status::InvalidArgument(file + ": task " + step.graph.DescribeTask(id) + " runs " +
                                     std::string(kWorkKindNames.Name(w.kind)) + " of " +
                                     (staged ? "stage " : "virtual stage ") +
                                     std::to_string(w.index) + ", but the workload has " +
                                     std::to_string(limit) + "; " + kWriteWorkloadAgain);
    }
    if (w.parts < 1 || w.part < 0 || w.part >= w.parts) {
      return Status::InvalidArgument(file + ": task " + step.graph.DescribeTask(id) + " is part " +
                                     std::to_string(w.part) + " of " + std::to_string(w.parts) +
                                     "; " + kWriteWorkloadAgain);
    }
  }
  return CheckCollectivesWhole(step, file);
}

}  // namespace loom
