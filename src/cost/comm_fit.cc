#include "cost/comm_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/calibration_file.h"
#include "cost/linear_solve.h"
#include "cost/nccl_model.h"

namespace loom {
namespace {

// The unknowns of the linear fit: per path an extra latency and an inverse fraction.
enum Unknown {
  kExtraIntra = 0,
  kExtraInter,
  kInverseIntra,
  kInverseInter,
  kInverseNvls,
  kUnknowns
};

// Calibration keys of the unknowns, and the order fitted keys are listed and written in.
constexpr std::array<std::pair<Unknown, std::string_view>, kUnknowns> kKeyOrder = {{
    {kInverseIntra, "intra_node_busbw_fraction"},
    {kInverseInter, "inter_node_busbw_fraction"},
    {kInverseNvls, "nvls_busbw_fraction"},
    {kExtraIntra, "intra_node_extra_latency_us"},
    {kExtraInter, "inter_node_extra_latency_us"},
}};

// A fitted fraction may exceed 1 by rounding only.
constexpr double kFractionTolerance = 1e-9;
constexpr size_t kMinSizes = 3;  // a latency and a bandwidth, and one size to check them

int ExtraOf(CommPath path) { return path == CommPath::kInterNode ? kExtraInter : kExtraIntra; }

int InverseOf(CommPath path) {
  switch (path) {
    case CommPath::kIntraNode:
      return kInverseIntra;
    case CommPath::kInterNode:
      return kInverseInter;
    case CommPath::kNvls:
      return kInverseNvls;
  }
  return kInverseIntra;
}

std::string_view PathName(int inverse) {
  return inverse == kInverseNvls    ? "NVLS"
         : inverse == kInverseInter ? "across nodes"
                                    : "within a node";
}

std::string Show(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// The model of |cluster| as NCCL ran each run: with NVLS, and without it for the runs made with
// NCCL_NVLS_ENABLE=0.
struct RunModels {
  explicit RunModels(const ClusterSpec& cluster) : nvls(cluster, true), no_nvls(cluster, false) {}
  const NcclCommModel& For(const NcclTestsRun& run) const {
    return run.nvls_disabled ? no_nvls : nvls;
  }
  NcclCommModel nvls;
  NcclCommModel no_nvls;
};

// One measured row and its bulk-transfer terms.
struct Sample {
  size_t run = 0;
  size_t row = 0;
  GroupPlacement group;
  double time_us = 0;
  double busbw_GBps = 0;
  LinearTimeTerms terms;
  bool fitted = false;
};

Result<GroupPlacement> PlaceRun(const NcclTestsRun& run, const ClusterSpec& cluster) {
  if (!run.ranks) {
    return Status::InvalidArgument(run.file +
                                   ": states no rank count (no \"#  Rank\" lines, no \"nThread\"/"
                                   "\"nGpus\" header); keep nccl-tests' header in the file");
  }
  const int64_t n = *run.ranks;
  const int64_t per_node = cluster.gpus_per_node;
  if (n < 2) {
    return Status::InvalidArgument(
        run.file + ": ran on " + std::to_string(n) +
        " rank(s); a collective needs at least 2 to measure communication");
  }
  if (!run.nodes && n > per_node && n % per_node != 0) {
    return Status::InvalidArgument(run.file + ": " + std::to_string(n) +
                                   " ranks do not fill whole nodes of " + std::to_string(per_node) +
                                   " GPUs (gpus_per_node of " + cluster.file +
                                   "); fit with runs on one node or on whole nodes");
  }
  const int64_t nodes = run.nodes.value_or(n <= per_node ? 1 : n / per_node);
  if (n % nodes != 0 || n / nodes > per_node) {
    return Status::InvalidArgument(run.file + ": " + std::to_string(n) + " ranks on " +
                                   std::to_string(nodes) + " node(s) do not match " + cluster.file +
                                   ", which has " + std::to_string(per_node) +
                                   " GPUs per node; fit with the cluster file of the "
                                   "machine that ran it");
  }
  if (cluster.nodes && nodes > *cluster.nodes) {
    return Status::InvalidArgument(run.file + ": ran on " + std::to_string(nodes) + " nodes but " +
                                   cluster.file + " has " + std::to_string(*cluster.nodes) +
                                   "; fit with the right cluster file");
  }
  // nccl-tests counts hosts; the model places on NVLink domains, which may join several hosts.
  return PlaceGroup(n, 1, n / nodes * (cluster.NvlinkDomainGpus() / per_node));
}

Result<Sample> MakeSample(const NcclTestsRun& run, const NcclTestsRow& row, GroupPlacement group,
                          const NcclCommModel& model, const CommFitOptions& options) {
  const std::optional<NcclTestsTiming>& timing = options.in_place ? row.in_place : row.out_of_place;
  if (!timing) {
    return Status::InvalidArgument(row.where + ": no " +
                                   (options.in_place ? "in-place" : "out-of-place") +
                                   " timing; fit the other one or re-run nccl-tests with both");
  }
  // nccl-tests prints busbw with two decimals, so the smallest sizes of a full sweep (-b 8) read
  // 0.00 GB/s; only the rows the fit uses need a bandwidth above 0.
  const bool fitted = row.size_bytes >= options.min_fit_bytes;
  if (row.size_bytes <= 0 || timing->time_us <= 0 || timing->busbw_GBps < 0 ||
      (fitted && timing->busbw_GBps == 0)) {
    return Status::InvalidArgument(row.where + ": size " + std::to_string(row.size_bytes) +
                                   " B, time " + Show(timing->time_us) + " us, busbw " +
                                   Show(timing->busbw_GBps) +
                                   " GB/s; the fit needs all three > 0: remove the row or re-run");
  }
  Sample sample;
  sample.group = group;
  sample.time_us = timing->time_us;
  sample.busbw_GBps = timing->busbw_GBps;
  sample.fitted = fitted;
  std::optional<CollectiveKind> kind = CollectiveOf(run.test);
  sample.terms = kind ? model.BulkTerms(*kind, row.size_bytes, group)
                      : model.PointToPointTerms(row.size_bytes, group.Nodes() > 1);
  return sample;
}

Result<std::vector<Sample>> CollectSamples(const std::vector<NcclTestsRun>& runs,
                                           const ClusterSpec& cluster,
                                           const CommFitOptions& options) {
  const RunModels models(cluster);
  std::vector<Sample> samples;
  for (size_t r = 0; r < runs.size(); ++r) {
    LOOM_ASSIGN_OR_RETURN(GroupPlacement group, PlaceRun(runs[r], cluster));
    for (size_t i = 0; i < runs[r].rows.size(); ++i) {
      LOOM_ASSIGN_OR_RETURN(
          Sample sample, MakeSample(runs[r], runs[r].rows[i], group, models.For(runs[r]), options));
      samples.push_back(sample);
      samples.back().run = r;
      samples.back().row = i;
    }
  }
  return samples;
}

// The sizes of at least |min_bytes| that |sweep| asks for, up to |limit| of them.
int64_t SweepSizesFrom(const NcclTestsSweep& sweep, int64_t min_bytes, int64_t limit) {
  int64_t count = 0;
  for (int64_t size = std::max<int64_t>(sweep.min_bytes, 1);
       size <= sweep.max_bytes && count < limit;) {
    if (size >= min_bytes) ++count;
    const int64_t next = sweep.step_factor
                             ? size * std::max<int64_t>(*sweep.step_factor, 2)
                             : size + std::max<int64_t>(sweep.step_bytes.value_or(1), 1);
    if (next <= size) break;
    size = next;
  }
  return count;
}

// What to change so that |run| gives the fit |needed| sizes of at least |min_bytes|: its header
// says which of -e (too small a largest size), -f (too coarse a step) or neither (the output was
// cut short or filtered) it is.
std::string SizeHint(const NcclTestsRun& run, int64_t min_bytes, size_t needed) {
  const std::string whole_sweep = "run nccl-tests with -b 8 -e 8G -f 2";
  if (!run.sweep) return whole_sweep + " (the output states no sweep)";
  const NcclTestsSweep& sweep = *run.sweep;
  const int64_t limit = static_cast<int64_t>(needed);
  const std::string stated =
      "its header asks for -b " + std::to_string(sweep.min_bytes) + " -e " +
      std::to_string(sweep.max_bytes) +
      (sweep.step_factor ? " -f " + std::to_string(*sweep.step_factor)
                         : " -i " + std::to_string(sweep.step_bytes.value_or(0)));
  if (SweepSizesFrom(sweep, min_bytes, limit) >= limit) {
    return stated +
           ", which has enough sizes, but the output holds fewer: it was cut short or filtered; "
           "fit the "
           "whole output";
  }
  NcclTestsSweep doubling = sweep;
  doubling.step_factor = 2;
  doubling.step_bytes.reset();
  if (SweepSizesFrom(doubling, min_bytes, limit) >= limit) {
    return stated + ": the step leaves too few sizes between; re-run with -f 2 (doubling)";
  }
  return stated + ": its largest size is too small; re-run up to larger sizes (-e 8G), with -f 2";
}

// Each path's bandwidth needs sizes enough to separate it from the path's extra latency: three,
// unless another path that shares that latency (NVLS and Ring within a node) has three, which fix
// the latency; then one size of its own fixes the bandwidth.
Status CheckSizes(const std::vector<Sample>& samples, const std::vector<NcclTestsRun>& runs,
                  const CommFitOptions& options) {
  std::map<int, std::set<int64_t>> sizes;
  std::map<int, std::set<std::string>> files;
  std::map<int, std::set<int>> latencies;  // inverse -> the extra latencies its fitted rows carry
  std::map<int, size_t> first_run;         // inverse -> its first run, whose header the hint reads
  for (const Sample& s : samples) {
    const int inverse = InverseOf(s.terms.path);
    files[inverse].insert(runs[s.run].file);
    first_run.emplace(inverse, s.run);
    if (!s.fitted) continue;
    sizes[inverse].insert(runs[s.run].rows[s.row].size_bytes);
    if (s.terms.extra_latency) latencies[inverse].insert(ExtraOf(s.terms.LatencyPath()));
  }
  const auto latency_fixed_elsewhere = [&](int inverse) {
    for (const auto& [other, other_sizes] : sizes) {
      if (other == inverse || other_sizes.size() < kMinSizes) continue;
      for (int latency : latencies[inverse]) {
        if (latencies[other].count(latency) > 0) return true;
      }
    }
    return false;
  };
  for (const auto& [inverse, names] : files) {
    if (sizes[inverse].size() >= kMinSizes) continue;
    if (!sizes[inverse].empty() && latency_fixed_elsewhere(inverse)) continue;
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    return Status::InvalidArgument(
        list + ": " + std::to_string(sizes[inverse].size()) + " distinct size(s) of at least " +
        std::to_string(options.min_fit_bytes) + " bytes " + std::string(PathName(inverse)) +
        "; the fit needs at least " + std::to_string(kMinSizes) +
        " to separate latency from bandwidth; " +
        SizeHint(runs[first_run[inverse]], options.min_fit_bytes, kMinSizes));
  }
  return Status::Ok();
}

bool SameTerms(const LinearTimeTerms& a, const LinearTimeTerms& b) {
  // Relative, as the terms come back through the calibrated fractions by floating point.
  const auto near = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
  };
  return a.path == b.path && a.LatencyPath() == b.LatencyPath() &&
         a.extra_latency == b.extra_latency && near(a.nccl_latency_us, b.nccl_latency_us) &&
         near(a.nominal_transfer_us, b.nominal_transfer_us);
}

// Weighted least squares over the active unknowns; inactive ones stay 0.
bool SolveActive(const std::vector<Sample>& samples, const std::array<bool, kUnknowns>& active,
                 std::array<double, kUnknowns>* x) {
  std::vector<int> index;
  for (int u = 0; u < kUnknowns; ++u) {
    if (active[u]) index.push_back(u);
  }
  const size_t k = index.size();
  std::vector<std::vector<double>> normal(k, std::vector<double>(k, 0.0));
  std::vector<double> rhs(k, 0.0);
  for (const Sample& s : samples) {
    if (!s.fitted) continue;
    std::array<double, kUnknowns> row{};
    if (s.terms.extra_latency) row[ExtraOf(s.terms.LatencyPath())] = 1.0;
    row[InverseOf(s.terms.path)] = s.terms.nominal_transfer_us;
    const double y = s.time_us - s.terms.nccl_latency_us;
    const double w = 1.0 / (s.time_us * s.time_us);
    for (size_t i = 0; i < k; ++i) {
      rhs[i] += w * row[index[i]] * y;
      for (size_t j = 0; j < k; ++j) normal[i][j] += w * row[index[i]] * row[index[j]];
    }
  }
  std::vector<double> solution;
  if (!SolveLinear(normal, rhs, &solution)) return false;
  x->fill(0.0);
  for (size_t i = 0; i < k; ++i) (*x)[index[i]] = solution[i];
  return true;
}

// Fits the unknowns the samples touch; a negative extra latency is fixed at 0 and the rest
// refitted.
Status Solve(const std::vector<Sample>& samples, std::array<bool, kUnknowns>* fitted,
             std::array<double, kUnknowns>* x) {
  fitted->fill(false);
  for (const Sample& s : samples) {
    if (!s.fitted) continue;
    if (s.terms.extra_latency) (*fitted)[ExtraOf(s.terms.LatencyPath())] = true;
    (*fitted)[InverseOf(s.terms.path)] = true;
  }
  std::array<bool, kUnknowns> active = *fitted;
  for (int pass = 0; pass <= kUnknowns; ++pass) {
    if (!SolveActive(samples, active, x)) {
      return Status::InvalidArgument(
          "the runs cannot separate latency from bandwidth (singular fit); add sizes");
    }
    bool clamped = false;
    for (int e : {kExtraIntra, kExtraInter}) {
      if (active[e] && (*x)[e] < 0) active[e] = false, clamped = true;
    }
    if (!clamped) return Status::Ok();
  }
  return Status::Ok();
}

Status CheckFractions(const std::array<bool, kUnknowns>& fitted,
                      const std::array<double, kUnknowns>& x, const ClusterSpec& cluster) {
  for (int u : {kInverseIntra, kInverseInter, kInverseNvls}) {
    if (!fitted[u]) continue;
    if (x[u] <= 0) {
      return Status::InvalidArgument(
          "the measured times " + std::string(PathName(u)) +
          " do not grow with size, so no bandwidth fits them; check the runs");
    }
    if (1.0 / x[u] > 1.0 + kFractionTolerance) {
      return Status::InvalidArgument(
          "the bandwidth measured " + std::string(PathName(u)) + " is " + Show(1.0 / x[u]) +
          " times the nominal bandwidth of " + cluster.file +
          "; a measurement cannot beat the hardware: correct the bandwidth keys "
          "of the cluster file (intra_node.bandwidth_GBps or inter_node)");
    }
  }
  return Status::Ok();
}

std::optional<double>* Slot(CommCalibration& c, int unknown) {
  switch (unknown) {
    case kExtraIntra:
      return &c.intra_node_extra_latency_us;
    case kExtraInter:
      return &c.inter_node_extra_latency_us;
    case kInverseIntra:
      return &c.intra_node_busbw_fraction;
    case kInverseInter:
      return &c.inter_node_busbw_fraction;
    default:
      return &c.nvls_busbw_fraction;
  }
}

CommFitRow Predict(const Sample& s, const std::vector<NcclTestsRun>& runs,
                   const NcclCommModel& model) {
  const NcclTestsRun& run = runs[s.run];
  const NcclTestsRow& row = run.rows[s.row];
  CommFitRow out;
  out.where = row.where;
  out.test = run.test;
  out.ranks = s.group.ranks;
  out.size_bytes = row.size_bytes;
  out.fitted = s.fitted;
  out.measured_time_us = s.time_us;
  out.measured_busbw_GBps = s.busbw_GBps;
  std::optional<CollectiveKind> kind = CollectiveOf(run.test);
  out.predicted_choice = "p2p";
  if (kind && *kind != CollectiveKind::kAllToAll) {
    NcclChoice choice = model.Choose(*kind, row.size_bytes, s.group);
    out.predicted_choice = std::string(kNcclAlgorithmNames.Name(choice.algorithm)) + "/" +
                           std::string(kNcclProtocolNames.Name(choice.protocol));
  }
  out.predicted_time_us = kind ? model.CollectiveUs(*kind, row.size_bytes, s.group)
                               : model.PointToPointUs(row.size_bytes, s.group.Nodes() > 1);
  const double factor = kind ? BusBandwidthFactor(*kind, s.group.ranks) : 1.0;
  out.predicted_busbw_GBps =
      static_cast<double>(row.size_bytes) * factor / (out.predicted_time_us * 1e3);
  out.time_residual = (out.predicted_time_us - out.measured_time_us) / out.measured_time_us;
  // From the times rather than the printed busbw, which nccl-tests rounds to 0.00 for small sizes:
  // both bandwidths are size * factor / time, so their relative error is the inverse time ratio.
  out.busbw_error = out.measured_time_us / out.predicted_time_us - 1;
  return out;
}

std::string DefaultSource(const std::vector<NcclTestsRun>& runs) {
  std::string files;
  for (const NcclTestsRun& run : runs) files += (files.empty() ? "" : ", ") + run.file;
  return "FitCommCalibration (src/cost/comm_fit.h) on " + files;
}

}  // namespace

Result<CommFit> FitCommCalibration(const std::vector<NcclTestsRun>& runs,
                                   const ClusterSpec& cluster, const CommFitOptions& options) {
  if (runs.empty())
    return Status::InvalidArgument("no nccl-tests runs to fit; pass at least one result file");
  LOOM_ASSIGN_OR_RETURN(std::vector<Sample> samples, CollectSamples(runs, cluster, options));
  LOOM_RETURN_IF_ERROR(CheckSizes(samples, runs, options));
  std::array<bool, kUnknowns> fitted{};
  std::array<double, kUnknowns> x{};
  LOOM_RETURN_IF_ERROR(Solve(samples, &fitted, &x));
  LOOM_RETURN_IF_ERROR(CheckFractions(fitted, x, cluster));
  CommFit fit;
  const auto apply = [&]() {
    fit.calibration = cluster.calibration;
    fit.fitted_keys.clear();
    for (const auto& [unknown, key] : kKeyOrder) {
      if (!fitted[unknown]) continue;
      const bool inverse = unknown >= kInverseIntra;
      *Slot(fit.calibration, unknown) = inverse ? 1.0 / x[unknown] : x[unknown];
      fit.fitted_keys.emplace_back(key);
    }
  };
  apply();
  // NCCL runs each size with the algorithm and protocol its tuner finds fastest, and so does the
  // calibrated model: a mid-size row may run LL128 or Tree, not the bulk Ring/Simple the first
  // solve assumed. Refit with each row's terms under the choice the calibrated model makes, until
  // the choices stop changing (a few rounds; the last solve stands if they alternate).
  constexpr int kChoiceRounds = 8;
  for (int round = 0; round < kChoiceRounds; ++round) {
    ClusterSpec calibrated = cluster;
    calibrated.calibration = fit.calibration;
    const RunModels choosers(calibrated);
    bool changed = false;
    for (Sample& sample : samples) {
      const std::optional<CollectiveKind> kind = CollectiveOf(runs[sample.run].test);
      if (!sample.fitted || !kind || *kind == CollectiveKind::kAllToAll) continue;
      const NcclCommModel& chooser = choosers.For(runs[sample.run]);
      const int64_t bytes = runs[sample.run].rows[sample.row].size_bytes;
      // ChoiceTerms takes the calibration back out: NCCL's latency and the nominal transfer.
      const LinearTimeTerms terms =
          chooser.ChoiceTerms(chooser.Choose(*kind, bytes, sample.group), bytes);
      // A choice over a link the runs never calibrated (Ring within an H100 node, where NCCL ran
      // NVLS) wins only by its nominal bandwidth; the row keeps the terms the data determined.
      if (!fitted[InverseOf(terms.path)] || SameTerms(terms, sample.terms)) continue;
      sample.terms = terms;
      changed = true;
    }
    if (!changed) break;
    std::array<bool, kUnknowns> refitted{};
    std::array<double, kUnknowns> rx{};
    LOOM_RETURN_IF_ERROR(Solve(samples, &refitted, &rx));
    LOOM_RETURN_IF_ERROR(CheckFractions(refitted, rx, cluster));
    for (int u = 0; u < kUnknowns; ++u) {
      if (refitted[u]) fitted[u] = true, x[u] = rx[u];
    }
    apply();
  }
  fit.calibration.source = options.source.empty() ? DefaultSource(runs) : options.source;
  // The runs' files by name, each once, in the order given.
  fit.calibration.fitted_on.clear();
  for (const NcclTestsRun& run : runs) AddFittedOn(run.file, &fit.calibration.fitted_on);
  ClusterSpec calibrated = cluster;
  calibrated.calibration = fit.calibration;
  const RunModels models(calibrated);
  double error_sum = 0;
  int fitted_rows = 0;
  for (const Sample& s : samples) {
    fit.rows.push_back(Predict(s, runs, models.For(runs[s.run])));
    if (s.fitted) error_sum += std::abs(fit.rows.back().busbw_error), ++fitted_rows;
  }
  fit.busbw_mape = fitted_rows > 0 ? error_sum / fitted_rows : 0.0;
  return fit;
}

nlohmann::ordered_json WithCommCalibration(const nlohmann::ordered_json& cluster_file,
                                           const CommFit& fit) {
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  CommCalibration calibration = fit.calibration;
  for (const std::string& key : fit.fitted_keys) {
    for (const auto& [unknown, name] : kKeyOrder) {
      if (name == key) values[key] = RoundSignificant(Slot(calibration, unknown)->value_or(0.0), 4);
    }
  }
  if (!fit.calibration.fitted_on.empty()) values["fitted_on"] = fit.calibration.fitted_on;
  return WithCalibration(cluster_file, values, fit.calibration.source);
}

}  // namespace loom
