#include "reference/fidelity_tables.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "cost/comm_model.h"
#include "cost/nccl_model.h"
#include "cost/compute_model.h"
#include "sim/pass_costs.h"
#include "sim/simulator.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

// The cost models SimulateTrainingStep builds (src/sim/simulator.cc), so that the op-level and
// collective tables test what the step tables use.
RooflineComputeModel SimulatorComputeModel(const ClusterSpec& cluster) { return RooflineComputeModel(cluster.gpu); }
NcclCommModel SimulatorCommModel(const ClusterSpec& cluster) { return NcclCommModel(cluster); }

FidelityRow Failed(const std::string& name, double measured, const Status& status) {
  return {name, 0, measured, status.message().empty() ? status.ToString() : status.message()};
}

double SumMs(const std::vector<Op>& ops, const ComputeModel& compute, const CommModel& comm,
             const Placements& placements) {
  SimTime total;
  for (const Op& op : ops) total += OpTime(op, compute, comm, placements);
  return total.ToSeconds() * 1e3;
}

Result<SimulationResult> SimulateCase(const StepCase& c) {
  SimulationOptions options;
  options.kernels = c.kernels;
  return SimulateTrainingStep(c.model, c.cluster, c.strategy, options);
}

void AddLayerSetting(const LayerCases& cases, const LayerSetting& setting, FidelityTable& table) {
  const std::string forward_name = setting.name + " forward";
  const std::string backward_name = setting.name + " backward";
  Status valid = ValidateStrategy(setting.strategy, cases.model, cases.cluster);
  Result<LayerOps> ops = valid.ok() ? BuildTransformerLayerOps(cases.model, setting.strategy, cases.kernels)
                                    : Result<LayerOps>(valid);
  if (!ops.ok()) {
    table.rows.push_back(Failed(forward_name, setting.forward_ms, ops.status()));
    table.rows.push_back(Failed(backward_name, setting.backward_ms, ops.status()));
    return;
  }
  const RooflineComputeModel compute = SimulatorComputeModel(cases.cluster);
  const NcclCommModel comm = SimulatorCommModel(cases.cluster);
  const Placements placements = PlaceStrategy(setting.strategy, cases.cluster);
  const double forward_ms = SumMs(ops->forward, compute, comm, placements);
  const double backward_ms = SumMs(ops->recompute, compute, comm, placements) +
                             SumMs(ops->backward_input, compute, comm, placements) +
                             SumMs(ops->backward_weight, compute, comm, placements);
  table.rows.push_back({forward_name, forward_ms, setting.forward_ms, ""});
  table.rows.push_back({backward_name, backward_ms, setting.backward_ms, ""});
}

}  // namespace

int64_t FidelityTable::Failed() const {
  return std::count_if(rows.begin(), rows.end(), [](const FidelityRow& r) { return !r.ok(); });
}

double FidelityTable::MapePct() const {
  double sum = 0;
  int64_t n = 0;
  for (const FidelityRow& r : rows) {
    if (!r.ok()) continue;
    sum += std::abs(r.ErrorPct());
    ++n;
  }
  return n == 0 ? 0 : sum / static_cast<double>(n);
}

double FidelityTable::MaxAbsErrorPct() const {
  double most = 0;
  for (const FidelityRow& r : rows) {
    if (r.ok()) most = std::max(most, std::abs(r.ErrorPct()));
  }
  return most;
}

FidelityTable PredictIterationTimes(const std::vector<StepCase>& cases) {
  FidelityTable table{"korthikanti2022_table5",
                      "Korthikanti et al. 2022, Table 5: seconds per iteration, Selene (DGX A100)", "s", {}};
  for (const StepCase& c : cases) {
    Result<SimulationResult> r = SimulateCase(c);
    table.rows.push_back(r.ok() ? FidelityRow{c.name, r->step_time_s, c.measured, ""}
                                : Failed(c.name, c.measured, r.status()));
  }
  return table;
}

FidelityTable PredictLayerTimes(const LayerCases& cases) {
  FidelityTable table{"korthikanti2022_table4",
                      "Korthikanti et al. 2022, Table 4: one 22B layer (tp 8, micro batch 4), forward and "
                      "backward ms",
                      "ms",
                      {}};
  for (const LayerSetting& setting : cases.settings) AddLayerSetting(cases, setting, table);
  return table;
}

double NarayananIterationFlops(const ModelSpec& model, const Strategy& strategy) {
  const double b = static_cast<double>(strategy.global_batch);
  const double s = static_cast<double>(strategy.seq_len);
  const double l = static_cast<double>(model.num_layers);
  const double h = static_cast<double>(model.hidden_size);
  const double v = static_cast<double>(model.vocab_size);
  return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

FidelityTable PredictNarayananTflops(const std::vector<StepCase>& cases) {
  FidelityTable table{"narayanan2021_table1",
                      "Narayanan et al. 2021, Table 1: TFLOP/s per GPU (the paper's FLOP count over the "
                      "simulated step time), Selene (DGX A100)",
                      "TFLOP/s",
                      {}};
  for (const StepCase& c : cases) {
    Result<SimulationResult> r = SimulateCase(c);
    if (!r.ok()) {
      table.rows.push_back(Failed(c.name, c.measured, r.status()));
      continue;
    }
    const double gpus = static_cast<double>(c.strategy.WorldSize());
    const double tflops = NarayananIterationFlops(c.model, c.strategy) / (r->step_time_s * gpus) / 1e12;
    table.rows.push_back({c.name, tflops, c.measured, ""});
  }
  return table;
}

FidelityTable PredictAllReduceBusBandwidth(const std::string& name, const std::string& title,
                                           const std::vector<AllReduceCase>& cases) {
  FidelityTable table{name, title, "GB/s", {}};
  for (const AllReduceCase& c : cases) {
    const NcclCommModel comm = SimulatorCommModel(c.cluster);
    const GroupPlacement node = PlaceGroup(c.cluster.gpus_per_node, 1, c.cluster.gpus_per_node);
    const double seconds = comm.Collective(CollectiveKind::kAllReduce, c.bytes, node).ToSeconds();
    const double factor = BusBandwidthFactor(CollectiveKind::kAllReduce, node.ranks);
    const double busbw_GBps = static_cast<double>(c.bytes) * factor / seconds / 1e9;
    table.rows.push_back({c.name, busbw_GBps, c.busbw_GBps, ""});
  }
  return table;
}

Result<std::vector<FidelityTable>> BuildFidelityReport(const ReferencePaths& paths) {
  Result<std::vector<StepCase>> iterations = LoadKorthikantiIterationCases(paths);
  if (!iterations.ok()) return iterations.status();
  Result<LayerCases> layers = LoadKorthikantiLayerCases(paths);
  if (!layers.ok()) return layers.status();
  Result<std::vector<StepCase>> weak_scaling = LoadNarayananCases(paths);
  if (!weak_scaling.ok()) return weak_scaling.status();
  Result<std::vector<AllReduceCase>> a100 = LoadAllReduceCases(paths, "dgx-a100.json", "a100_busbw_GBps");
  if (!a100.ok()) return a100.status();
  Result<std::vector<AllReduceCase>> h100 = LoadAllReduceCases(paths, "dgx-h100.json", "h100_busbw_GBps");
  if (!h100.ok()) return h100.status();
  std::vector<FidelityTable> tables;
  tables.push_back(PredictIterationTimes(*iterations));
  tables.push_back(PredictLayerTimes(*layers));
  tables.push_back(PredictNarayananTflops(*weak_scaling));
  tables.push_back(PredictAllReduceBusBandwidth(
      "nccl_allreduce_dgx-a100", "nccl-tests all-reduce busbw, 8x A100-SXM4-80GB in one node (GB/s)", *a100));
  tables.push_back(PredictAllReduceBusBandwidth(
      "nccl_allreduce_dgx-h100", "nccl-tests all-reduce busbw, 8x H100-SXM5-80GB in one node (GB/s)", *h100));
  return tables;
}

}  // namespace loom
