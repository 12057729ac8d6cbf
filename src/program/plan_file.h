#ifndef LOOM_PROGRAM_PLAN_FILE_H_
#define LOOM_PROGRAM_PLAN_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>  // full header: PlanFile holds its source as a value

#include "core/status.h"
#include "program/gpu_layout.h"
#include "program/memory_baseline.h"
#include "program/plan_workload.h"
#include "program/step_graph.h"

namespace loom {

// A plan file (schema "loom.plan-file/3", written by `loom plan --emit plan`, read by `loom
// validate`) carries one strategy's training step as the simulator ran it: the rank programs
// themselves (every task on every stream of every rank, with its predicted duration, the
// dependencies, the collectives and the memory events), the memory each rank holds for the whole
// step, and the prediction. `validate` runs exactly these rank programs; it never rebuilds the step
// from the model, so what it measures is what was predicted.
//
// The file holds each distinct rank program once: the pipeline stages of one data-parallel
// replica, with the tensor- and context-parallel GPUs of each stage folded into it (a pass's tp,
// cp and ep collectives are one task). "gpus" says how it folds; UnfoldPlan (program/unfold.h)
// gives every GPU of the job its own program, with every collective on its real group, as
// validate runs them. A file may also hold every replica (step.replicas = gpus.dp): rank r is
// stage r % stages of replica r / stages, and the data-parallel collectives are rendezvous
// between the replicas.
//
// The layout, compact enough for 10^5 tasks (every id is an index into the table it names, from 0):
//   {"schema": "loom.plan-file/3", "loom_version": the writer's, "source": {...},
//    "prediction": {"step_time_s", "bubble_fraction", "peak_memory_bytes"},
//    "gpus": {"tp", "cp", "dp", "ep", "etp"},
//    "step": {"stages", "replicas",
//      "names": [string table; tasks name theirs by index; [0] is "", [1] "default"],
//      "streams": [{"rank", "name"}], "links": [names], "channels": [names],
//      "routes": [[channel ids]], "pools": [names; [0] is "default"],
//      "ports": {"intra_node": [[tx, rx] channel ids per rank], "inter_node": [...]},
//      "work_fields": ["kind", "pass", "index", "part", "parts"],
//      "works": [one array per distinct TaskWork: what a task runs, kind and pass by name],
//      "task_fields": ["stream", "duration_ns", "name", "category", "link", "route", "pool",
//                      "alloc_at_start_bytes", "free_at_end_bytes", "work"],
//      "tasks": [one array per task in that order; link and route -1: none; work: index into
//      works], "dependencies": [[before, after]], "collectives": [[member task ids]],
//      "memory_event_fields": ["task", "phase", "pool", "delta_bytes"],
//      "memory_events": [[task, "start" or "end", pool, delta_bytes]],
//      "baselines": [{"rank", "pool", "bytes"}], "ring_transfers": [[transfer, beside]]},
//    "workload": {the ops of every pass and the bytes of every transfer: plan_workload.h}}
// Durations are whole nanoseconds (SimTime), so a round trip is exact.
inline constexpr char kPlanFileSchema[] = "loom.plan-file/3";

struct PlanPrediction {
  double step_time_s = 0;
  double bubble_fraction = 0;
  int64_t peak_memory_bytes = 0;
};

struct PlanFile {
  std::string file;  // where it was read from; empty for one made in memory
  // What the plan was made from, for people: {"model": ..., "cluster": ..., "strategy": {...},
  // "simulation": {...}}. validate prints it and does not interpret it. Read back from a file, its
  // keys come in sorted order (ParsePlanFile takes the JSON as a map).
  nlohmann::ordered_json source;
  PlanPrediction prediction;
  // The rank programs: graph, stages, replicas, compute_stream, the pools and categories by name.
  StepGraph step;
  // Per rank: the model states (weights, gradients, optimizer) live for the whole step.
  std::vector<MemoryBaseline> baselines;
  // What the tasks run (step.work says which part of it each task is).
  PlanWorkload workload;
  // How the step's graph ranks fold the job's GPUs (program/unfold.h unfolds them).
  GpuLayout gpus;
};

// The file's JSON; ParsePlanFile reads it back to an equal plan (same tasks, names and name ids,
// streams, links, channels, routes, pools, dependencies, collectives, memory events, baselines,
// ports, ring transfers, step categories and prediction).
nlohmann::ordered_json PlanFileJson(const PlanFile& plan);
// PlanFileJson as text: whatever fits in a line (a task, a stream, a collective) on one line.
std::string PlanFileText(const PlanFile& plan);
// Writes PlanFileText(plan) to |path| atomically: to |path|.tmp, then renamed over |path|, so that
// a reader never sees half a plan. Errors (IoError) name |path| and the reason.
Status WritePlanFile(const PlanFile& plan, const std::string& path);

// Reads a plan file. Every error names |file| and the key (e.g. "plan.json: step.collectives[3]
// names task 907, but the step has 120 tasks"), and says what to do; unknown keys are errors, and
// so is a "gpus" layout whose groups do not tile the GPUs (CheckGpuLayout).
// The rank programs are checked as TaskGraph's builder checks them (unknown streams, pools, tasks
// or groups, negative durations); deadlocks are not (see exec/exec_plan.h).
Result<PlanFile> ParsePlanFile(const nlohmann::json& json, const std::string& file);
Result<PlanFile> ReadPlanFile(const std::string& path);

}  // namespace loom

#endif  // LOOM_PROGRAM_PLAN_FILE_H_
