#ifndef LOOM_COST_COMM_FIT_H_
#define LOOM_COST_COMM_FIT_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/nccl_tests_parser.h"
#include "spec/cluster.h"

namespace loom {

struct CommFitOptions {
  // Rows below this size are reported but not fitted: NCCL runs them with fewer channels and
  // the LL/LL128 protocols, which the bulk (Simple) terms do not describe. 16 MiB, the smallest
  // size of the accuracy target of tests/reference/nccl_busbw_test.cc.
  int64_t min_fit_bytes = int64_t{16} << 20;
  // Fit nccl-tests' in-place timings (its right-hand columns), else the out-of-place ones.
  bool in_place = true;
  // The calibration's "source"; when empty, "FitCommCalibration on <the runs' files>".
  std::string source;
};

// One measured row against the fitted model.
struct CommFitRow {
  std::string where;  // the row's file:line
  NcclTest test = NcclTest::kAllReduce;
  int64_t ranks = 0;
  int64_t size_bytes = 0;
  bool fitted = false;  // size_bytes >= min_fit_bytes
  double measured_time_us = 0;
  double predicted_time_us = 0;
  double measured_busbw_GBps = 0;
  double predicted_busbw_GBps = 0;
  double time_residual = 0;  // (predicted - measured) / measured
  double busbw_error = 0;    // (predicted - measured) / measured
  std::string
      predicted_choice;  // "NVLS/Simple", "Ring/LL128", ...; "p2p" for all-to-all, send/recv
};

struct CommFit {
  // The cluster's calibration with the fitted values in place and the others as they were.
  CommCalibration calibration;
  // The keys fitted, in the order they are written: intra_node_busbw_fraction,
  // inter_node_busbw_fraction, nvls_busbw_fraction, intra_node_extra_latency_us,
  // inter_node_extra_latency_us (those the runs determine).
  std::vector<std::string> fitted_keys;
  std::vector<CommFitRow> rows;  // every row of every run, in order
  double busbw_mape = 0;         // mean |busbw_error| over the fitted rows
};

// Fits NcclCommModel's calibration on |cluster| to nccl-tests |runs|. Each row of at least
// min_fit_bytes is modelled by NcclCommModel::BulkTerms (NVLS where the cluster has it, else Ring;
// Simple protocol; send/recv and all-to-all as point-to-point; a run with nvls_disabled by the
// model without NVLS), then refitted as the algorithm the calibrated model picks for it:
//   measured_us = nccl_latency_us + extra_latency_us(path) + nominal_transfer_us / fraction(path),
// linear in the unknowns (each path's extra latency and 1/fraction), solved by weighted linear
// least squares on relative residuals (predicted - measured) / measured. Relative, because the
// sizes span three orders of magnitude and absolute residuals would let the largest size decide
// alone; not log time, because relative residuals agree with it for small errors and keep the
// problem linear: a closed-form solution that recovers the model's own parameters exactly.
// A run within one node fits intra_node_busbw_fraction (or nvls_busbw_fraction) and
// intra_node_extra_latency_us; a run across nodes the inter_node_ pair. A negative extra latency
// is clamped to 0 and the fractions refitted. Errors, naming the run's file (and row): no runs; a
// run whose rank count is unknown, below 2, or not a whole number of the cluster's nodes; a row
// without the chosen timing or with a time or busbw <= 0; fewer than 3 distinct sizes of at least
// min_fit_bytes on a path, unless another path with 3 shares its extra latency (NVLS and Ring
// within a node) and the path has one; a fitted fraction above 1 (measurements beat the file's
// nominal bandwidth) or not above 0 (times that do not grow with size).
Result<CommFit> FitCommCalibration(const std::vector<NcclTestsRun>& runs,
                                   const ClusterSpec& cluster, const CommFitOptions& options = {});

// |cluster_file| (a cluster file's JSON) with its "calibration" object holding |fit|'s values: the
// fitted keys replaced or added (rounded to 4 significant digits), the other keys kept, "source"
// set and last, naming the earlier source of the kept keys (WithCalibration,
// cost/calibration_file.h).
nlohmann::ordered_json WithCommCalibration(const nlohmann::ordered_json& cluster_file,
                                           const CommFit& fit);

}  // namespace loom

#endif  // LOOM_COST_COMM_FIT_H_
