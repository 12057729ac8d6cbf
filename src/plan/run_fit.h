#ifndef LOOM_PLAN_RUN_FIT_H_
#define LOOM_PLAN_RUN_FIT_H_

#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// `loom fit --runs`: calibrates a few named parameters from the step times of runs a user already
// has (training logs), by simulating each run and fitting multipliers of the shipped values.

// One measured run: what ran and its step time.
struct MeasuredRun {
  std::string name;  // the row's name, or "<file>:<row>"
  ModelSpec model;
  ClusterSpec cluster;  // nodes set for the run
  Strategy strategy;
  SimulationOptions options;  // attention kernel, dropout, framework
  double step_time_s = 0;
};

// What --runs can fit, each a multiplier of the shipped value (1: as shipped):
//  host        every host time of the framework (FrameworkProfile::scale): the user's CPU
//  compute     the GPU's GEMM and attention efficiencies and HBM bandwidth fraction together
//  inter_node  the bus-bandwidth fraction of collectives across nodes
enum class RunParam { kHost, kCompute, kInterNode };
inline constexpr EnumNames<RunParam, 3> kRunParamNames({{
    {RunParam::kHost, "host"},
    {RunParam::kCompute, "compute"},
    {RunParam::kInterNode, "inter_node"},
}});

// Reads a runs file: JSON (schema "loom.runs/1") or CSV, relative paths against the file's folder.
//   {"schema": "loom.runs/1", "source": "...", "runs": [{"name": "350m-mb1", "model":
//   "../models/gpt3-350m.json",
//     "strategy": {"micro_batch": 1, "global_batch": 8, "seq_len": 1024}, "step_time_s": 0.91,
//     "nodes": 1, "attention": "unfused", "dropout": true, "framework": "megatron-core"}, ...]}
//   Instead of step_time_s a run may name "log": a Megatron-LM log (its "elapsed time per
//   iteration (ms)" lines, and without "strategy" its argument dump for the strategy; strategy keys
//   given beside it override the log's) or a DeepSpeed log (CurrSamplesPerSec over global_batch).
//   CSV: a header naming name, model, step_time_s (or log) and any strategy key, nodes, attention,
//   dropout and framework; one run per row.
// |cluster_file| is every run's cluster; |default_framework| the framework of runs naming none
// (a name of hardware/frameworks/, a path, or "none"). Errors name the file, the row and the key.
Result<std::vector<MeasuredRun>> LoadRuns(const std::string& path, const std::string& cluster_file,
                                          const std::string& default_framework);

struct RunFitRow {
  std::string name;
  double measured_s = 0;
  double before_s = 0;  // predicted with the shipped values
  double fitted_s = 0;  // predicted with the values fitted on every run
  // Predicted with the values fitted on every other run (nullopt: those runs alone could not
  // identify every parameter).
  std::optional<double> left_out_s;
};

struct RunFit {
  std::vector<RunParam> params;
  std::vector<double> values;  // multipliers, parallel to |params|
  // d log(step time) / d log(parameter) of every run at the shipped values: how much each run
  // tells about each parameter (rows parallel to |rows|, columns to |params|).
  std::vector<std::vector<double>> sensitivity;
  std::vector<RunFitRow> rows;
  double before_mape = 0, fitted_mape = 0;
  std::optional<double> left_out_mape;  // over the rows that have one
};

// Fits |params| to |runs|: robust (Huber on the log of predicted over measured, knee 5 %)
// Gauss-Newton over the log of the multipliers, then once per run without it. Refuses (with what
// would help) a parameter no run depends on, two parameters that move every run alike, fewer runs
// than parameters + 1, and a run the simulator rejects.
Result<RunFit> FitRuns(const std::vector<MeasuredRun>& runs, const std::vector<RunParam>& params);

// The |candidates| some run depends on (a 10 % change moves a predicted step time by 0.2 % or
// more); the others go to |dropped| with why.
Result<std::vector<RunParam>> IdentifiableParams(const std::vector<MeasuredRun>& runs,
                                                 const std::vector<RunParam>& candidates,
                                                 std::vector<std::string>* dropped);

// |run| with the multipliers applied (what FitRuns simulates).
MeasuredRun WithMultipliers(const MeasuredRun& run, const std::vector<RunParam>& params,
                            const std::vector<double>& values);

}  // namespace loom

#endif  // LOOM_PLAN_RUN_FIT_H_
