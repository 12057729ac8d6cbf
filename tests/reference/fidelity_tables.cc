#include "reference/fidelity_tables.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "cost/nccl_model.h"
#include "reference/attention_tables.h"
#include "reference/comm_reference.h"
#include "reference/gemm_tables.h"
#include "reference/steptime_tables.h"
#include "sim/pass_costs.h"
#include "sim/simulator.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

// The cost models SimulateTrainingStep builds (src/sim/simulator.cc), so that the op-level and
// collective tables test what the step tables use.
RooflineComputeModel SimulatorComputeModel(const ClusterSpec& cluster) {
  return RooflineComputeModel(cluster.gpu);
}
NcclCommModel SimulatorCommModel(const ClusterSpec& cluster, bool nvls_enabled = true) {
  return NcclCommModel(cluster, nvls_enabled);
}

FidelityRow Failed(const std::string& name, double measured, const Status& status) {
  return {name, 0, measured, status.message().empty() ? status.ToString() : status.message()};
}

void AddLayerSetting(const LayerCases& cases, const LayerSetting& setting, FidelityTable& table) {
  const std::string forward_name = setting.name + " forward";
  const std::string backward_name = setting.name + " backward";
  Status valid = ValidateStrategy(setting.strategy, cases.model, cases.cluster);
  Result<LayerOps> ops =
      valid.ok() ? BuildTransformerLayerOps(cases.model, setting.strategy, cases.kernels)
                 : Result<LayerOps>(valid);
  if (!ops.ok()) {
    table.rows.push_back(Failed(forward_name, setting.forward_ms, ops.status()));
    table.rows.push_back(Failed(backward_name, setting.backward_ms, ops.status()));
    return;
  }
  const RooflineComputeModel compute = SimulatorComputeModel(cases.cluster);
  const NcclCommModel comm = SimulatorCommModel(cases.cluster);
  const Placements placements = PlaceStrategy(setting.strategy, cases.cluster);
  // The layer alone on its GPUs: its passes as the engine runs them, the hidden collectives
  // beside the GEMMs holding their SMs.
  const BlockPasses passes =
      CostBlockPasses(*ops, setting.strategy, compute, comm, placements, cases.kernels);
  const double share = TpHiddenSmHold(cases.cluster, cases.cluster.gpu, setting.strategy,
                                      placements, cases.kernels.tp_backward_overlap)
                           .share;
  const double forward_ms = PassSpan(passes.forward, share).ToSeconds() * 1e3;
  const double backward_ms = PassSpan(passes.backward, share).ToSeconds() * 1e3;
  table.rows.push_back({forward_name, forward_ms, setting.forward_ms, ""});
  table.rows.push_back({backward_name, backward_ms, setting.backward_ms, ""});
}

}  // namespace

Result<SimulationResult> SimulateCase(const StepCase& c) {
  SimulationOptions options;
  options.kernels = c.kernels;
  options.framework = c.framework;
  return SimulateTrainingStep(c.model, c.cluster, c.strategy, options);
}

int64_t FidelityTable::Failed() const {
  return std::count_if(rows.begin(), rows.end(), [](const FidelityRow& r) { return !r.ok(); });
}

namespace {

enum class Column { kInSample, kLoso, kSiteLoso };

ErrorSummary Summarize(const std::vector<FidelityRow>& rows, Column column) {
  ErrorSummary out;
  int64_t n = 0;
  std::vector<double> abs_errors;
  for (const FidelityRow& r : rows) {
    if (!r.ok()) continue;
    const double e = column == Column::kInSample ? r.ErrorPct()
                     : column == Column::kLoso   ? r.LosoErrorPct()
                                                 : r.SiteLosoErrorPct();
    abs_errors.push_back(std::abs(e));
    out.mape_pct += std::abs(e);
    out.bias_pct += e;
    out.max_abs_pct = std::max(out.max_abs_pct, std::abs(e));
    ++n;
  }
  if (n > 0) {
    out.mape_pct /= static_cast<double>(n);
    out.bias_pct /= static_cast<double>(n);
    std::sort(abs_errors.begin(), abs_errors.end());
    const size_t mid = abs_errors.size() / 2;
    out.median_abs_pct =
        abs_errors.size() % 2 == 1 ? abs_errors[mid] : (abs_errors[mid - 1] + abs_errors[mid]) / 2;
  }
  return out;
}

}  // namespace

std::vector<FidelityTable::Part> FidelityTable::ByPart() const {
  std::vector<std::string> names;
  for (const FidelityRow& r : rows) {
    if (!r.part.empty() && std::find(names.begin(), names.end(), r.part) == names.end())
      names.push_back(r.part);
  }
  std::vector<Part> parts;
  for (const std::string& name : names) {
    std::vector<FidelityRow> of;
    for (const FidelityRow& r : rows) {
      if (r.part == name) of.push_back(r);
    }
    const int64_t predicted =
        std::count_if(of.begin(), of.end(), [](const FidelityRow& r) { return r.ok(); });
    parts.push_back(
        {name, predicted, Summarize(of, Column::kInSample), Summarize(of, Column::kLoso)});
  }
  return parts;
}

ErrorSummary FidelityTable::InSample() const { return Summarize(rows, Column::kInSample); }
ErrorSummary FidelityTable::LeaveOneSourceOut() const { return Summarize(rows, Column::kLoso); }
ErrorSummary FidelityTable::LeaveOneSiteOut() const { return Summarize(rows, Column::kSiteLoso); }

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
                      "Korthikanti et al. 2022, Table 5: seconds per iteration, Selene (DGX A100)",
                      "s",
                      {}};
  for (const StepCase& c : cases) {
    Result<SimulationResult> r = SimulateCase(c);
    table.rows.push_back(r.ok() ? FidelityRow{c.name, r->step_time_s, c.measured, ""}
                                : Failed(c.name, c.measured, r.status()));
  }
  return table;
}

FidelityTable PredictLayerTimes(const LayerCases& cases) {
  FidelityTable table{
      "korthikanti2022_table4",
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
  FidelityTable table{
      "narayanan2021_table1",
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
    const double tflops =
        NarayananIterationFlops(c.model, c.strategy) / (r->step_time_s * gpus) / 1e12;
    table.rows.push_back({c.name, tflops, c.measured, ""});
  }
  return table;
}

FidelityTable PredictAllReduceBusBandwidth(const std::string& name, const std::string& title,
                                           const std::vector<AllReduceCase>& cases) {
  FidelityTable table{name, title, "GB/s", {}};
  for (const AllReduceCase& c : cases) {
    const NcclCommModel comm = SimulatorCommModel(c.cluster, !c.nvls_disabled);
    const double seconds = comm.Collective(c.kind, c.bytes, c.group).ToSeconds();
    const double factor = BusBandwidthFactor(c.kind, c.group.ranks);
    const double busbw_GBps = static_cast<double>(c.bytes) * factor / seconds / 1e9;
    table.rows.push_back({c.name, busbw_GBps, c.busbw_GBps, "", 0, c.site, 0});
  }
  return table;
}

namespace {

// The cluster files' calibrations refitted without one reference file, by cluster file.
class Refitter {
 public:
  Refitter(const ReferencePaths& paths, std::string_view excluded)
      : paths_(paths), excluded_(excluded) {}

  // Replaces |cluster|'s calibration by its refit when it was fitted on the excluded file.
  Status Apply(ClusterSpec& cluster) {
    const std::vector<std::string>& fitted_on = cluster.calibration.fitted_on;
    if (excluded_.empty() ||
        std::find(fitted_on.begin(), fitted_on.end(), excluded_) == fitted_on.end()) {
      return Status::Ok();
    }
    const std::string key = std::filesystem::path(cluster.file).stem().string();
    auto it = refits_.find(key);
    if (it == refits_.end()) {
      Result<std::vector<CommReferenceRun>> runs = LoadCommReferenceRuns(paths_.tables_dir, key);
      if (!runs.ok()) return runs.status();
      Result<CommCalibration> fit = FitReferenceCommCalibration(*runs, cluster, excluded_);
      if (!fit.ok())
        return fit.status().WithSuffix(" (refitting " + cluster.file + " without " + excluded_ +
                                       ")");
      it = refits_.emplace(key, *fit).first;
    }
    cluster.calibration = it->second;
    return Status::Ok();
  }

 private:
  const ReferencePaths& paths_;
  std::string excluded_;
  std::map<std::string, CommCalibration> refits_;
};

// Each site's rows of |table| (predicted from |cases|, the multi-node cases of |cluster|) predicted
// again with the cluster's calibration refitted without that site's rows: how well one cluster's
// runs predict another's. Nothing when the table holds fewer than two sites.
Status AddSiteLoso(const ReferencePaths& paths, std::string_view cluster,
                   const std::vector<AllReduceCase>& cases, FidelityTable& table) {
  std::set<std::string> sites;
  for (const AllReduceCase& c : cases) sites.insert(c.site);
  if (sites.size() < 2) return Status::Ok();
  Result<std::vector<CommReferenceRun>> runs = LoadCommReferenceRuns(paths.tables_dir, cluster);
  if (!runs.ok()) return runs.status();
  for (const std::string& site : sites) {
    Result<CommCalibration> fit =
        FitReferenceCommCalibration(*runs, cases.front().cluster, kMultiNodeAllReduceTable, site);
    if (!fit.ok()) {
      return fit.status().WithSuffix(" (refitting " + std::string(cluster) + " without site " +
                                     site + ")");
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].site != site) continue;
      AllReduceCase c = cases[i];
      c.cluster.calibration = *fit;
      table.rows[i].site_loso_predicted =
          PredictAllReduceBusBandwidth("", "", {c}).rows.front().predicted;
    }
  }
  table.site_refitted = true;
  return Status::Ok();
}

template <typename Case>
Status ApplyAll(Refitter& refitter, std::vector<Case>& cases) {
  for (Case& c : cases) LOOM_RETURN_IF_ERROR(refitter.Apply(c.cluster));
  return Status::Ok();
}

}  // namespace

Result<std::vector<FidelityTable>> BuildFidelityTables(const ReferencePaths& paths,
                                                       std::string_view excluded_file) {
  Refitter refitter(paths, excluded_file);
  Result<std::vector<StepCase>> iterations = LoadKorthikantiIterationCases(paths);
  if (!iterations.ok()) return iterations.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, iterations.value()));
  Result<LayerCases> layers = LoadKorthikantiLayerCases(paths);
  if (!layers.ok()) return layers.status();
  LOOM_RETURN_IF_ERROR(refitter.Apply(layers.value().cluster));
  Result<std::vector<StepCase>> weak_scaling = LoadNarayananCases(paths);
  if (!weak_scaling.ok()) return weak_scaling.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, weak_scaling.value()));
  Result<std::vector<AllReduceCase>> a100 =
      LoadAllReduceCases(paths, "dgx-a100.json", "a100_busbw_GBps");
  if (!a100.ok()) return a100.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, a100.value()));
  Result<std::vector<AllReduceCase>> h100 =
      LoadAllReduceCases(paths, "dgx-h100.json", "h100_busbw_GBps");
  if (!h100.ok()) return h100.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, h100.value()));
  Result<std::vector<AllReduceCase>> a100_nodes = LoadMultiNodeAllReduceCases(paths, "dgx-a100");
  if (!a100_nodes.ok()) return a100_nodes.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, a100_nodes.value()));
  Result<std::vector<AllReduceCase>> h100_nodes = LoadMultiNodeAllReduceCases(paths, "dgx-h100");
  if (!h100_nodes.ok()) return h100_nodes.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, h100_nodes.value()));
  Result<std::vector<AllReduceCase>> hopper_node = LoadHopperNodeCases(paths);
  if (!hopper_node.ok()) return hopper_node.status();
  LOOM_RETURN_IF_ERROR(ApplyAll(refitter, hopper_node.value()));

  std::vector<FidelityTable> tables;
  tables.push_back(PredictIterationTimes(*iterations));
  tables.back().source_file = "korthikanti2022_iteration_time.csv";
  tables.push_back(PredictLayerTimes(*layers));
  tables.back().source_file = "korthikanti2022_layer_time.csv";
  tables.push_back(PredictNarayananTflops(*weak_scaling));
  tables.back().source_file = "narayanan2021_table1.csv";
  tables.push_back(PredictAllReduceBusBandwidth(
      "nccl_allreduce_dgx-a100",
      "nccl-tests all-reduce busbw, 8x A100-SXM4-80GB in one node (GB/s)", *a100));
  tables.back().source_file = std::string(kSingleNodeAllReduceTable);
  tables.push_back(PredictAllReduceBusBandwidth(
      "nccl_allreduce_dgx-h100",
      "nccl-tests all-reduce busbw, 8x H100-SXM5-80GB in one node (GB/s)", *h100));
  tables.back().source_file = std::string(kSingleNodeAllReduceTable);
  tables.push_back(
      PredictAllReduceBusBandwidth("nccl_hopper_1node",
                                   "nccl-tests busbw on one 8x H200 node (NVLink 4, as DGX "
                                   "H100's): all-reduce over 4-8 GPUs with NVLS and with it "
                                   "disabled (Ring), all-gather, reduce-scatter (GB/s)",
                                   *hopper_node));
  tables.back().source_file = std::string(kHopperNodeTable);
  tables.push_back(
      PredictAllReduceBusBandwidth("nccl_allreduce_multinode_dgx-a100",
                                   "nccl-tests all-reduce busbw across DGX A100 nodes (8x HDR 200 "
                                   "Gb/s per node), nodes x ranks per node (GB/s)",
                                   *a100_nodes));
  tables.back().source_file = std::string(kMultiNodeAllReduceTable);
  tables.push_back(
      PredictAllReduceBusBandwidth("nccl_allreduce_multinode_dgx-h100",
                                   "nccl-tests all-reduce busbw across DGX H100 nodes (8x NDR 400 "
                                   "Gb/s per node), nodes x ranks per node (GB/s)",
                                   *h100_nodes));
  tables.back().source_file = std::string(kMultiNodeAllReduceTable);
  if (excluded_file.empty()) {
    LOOM_RETURN_IF_ERROR(AddSiteLoso(paths, "dgx-a100", *a100_nodes, tables[tables.size() - 2]));
    LOOM_RETURN_IF_ERROR(AddSiteLoso(paths, "dgx-h100", *h100_nodes, tables.back()));
  }
  return tables;
}

Result<std::vector<FidelityTable>> BuildFidelityReport(const ReferencePaths& paths) {
  Result<std::vector<FidelityTable>> tables = BuildFidelityTables(paths, "");
  if (!tables.ok()) return tables.status();
  // The corpus of measured steps (issue 41), after the tables above: no calibration is fitted on
  // it yet, so it is predicted once, in-sample, and that is its leave-one-source-out column too.
  Result<Corpus> corpus = LoadStepTimeCorpus(paths);
  if (!corpus.ok()) return corpus.status();
  const size_t corpus_begin = tables.value().size();
  for (FidelityTable& t : PredictCorpus(*corpus)) tables.value().push_back(std::move(t));
  // The files some shipped cluster calibration was fitted on.
  std::set<std::string> fitted;
  for (const char* file : {"dgx-a100.json", "dgx-h100.json"}) {
    Result<ClusterSpec> cluster = LoadClusterSpec(paths.clusters_dir + "/" + file);
    if (!cluster.ok()) return cluster.status();
    fitted.insert(cluster->calibration.fitted_on.begin(), cluster->calibration.fitted_on.end());
  }
  std::map<std::string, std::vector<FidelityTable>> without;  // by excluded file
  for (size_t index = 0; index < corpus_begin; ++index) {
    FidelityTable& table = tables.value()[index];
    table.refitted = fitted.count(table.source_file) > 0;
    if (!table.refitted) {
      for (FidelityRow& r : table.rows) r.loso_predicted = r.predicted;
      continue;
    }
    auto it = without.find(table.source_file);
    if (it == without.end()) {
      Result<std::vector<FidelityTable>> refit = BuildFidelityTables(paths, table.source_file);
      if (!refit.ok()) return refit.status();
      it = without.emplace(table.source_file, std::move(*refit)).first;
    }
    for (const FidelityTable& other : it->second) {
      if (other.name != table.name) continue;
      for (size_t i = 0; i < table.rows.size() && i < other.rows.size(); ++i) {
        table.rows[i].loso_predicted = other.rows[i].predicted;
      }
    }
  }
  // The GEMM kernels the GPU files were fitted on (issue 42, mechanism 5), each refitted without
  // its table and its source, last: the step tables' numbering stays.
  Result<std::vector<FidelityTable>> gemms = PredictGemmTables(paths);
  if (!gemms.ok()) return gemms.status();
  for (FidelityTable& t : gemms.value()) tables.value().push_back(std::move(t));
  // Megatron's unfused attention kernels on an A100 (issue 42, mechanism 4), after them.
  Result<FidelityTable> attention = PredictMegatronAttentionTable(paths);
  if (!attention.ok()) return attention.status();
  tables.value().push_back(std::move(*attention));
  // FlashAttention-2 and its Triton port on an A100 and an H100 against the FlashAttention-2
  // paper's figures (issue 42, mechanism 3), on which their tiles are fitted.
  Result<std::vector<FidelityTable>> figures = PredictAttentionFigureTables(paths);
  if (!figures.ok()) return figures.status();
  for (FidelityTable& t : figures.value()) tables.value().push_back(std::move(t));
  return tables;
}

}  // namespace loom
