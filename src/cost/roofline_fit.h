#ifndef LOOM_COST_ROOFLINE_FIT_H_
#define LOOM_COST_ROOFLINE_FIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/profile.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// The compute fits (compute_fit.h, profile_fit.h) see RooflineComputeModel in a linear form:
//   time = overhead + work_s / efficiency,
// where work_s is the kernel's time at the datasheet rate (efficiency 1) without the overhead.
// The memory floors of GEMM and attention are left out: the fits take kernels to be bound by
// the term they calibrate.

// Time of |gemm|'s waves at the dtype's dense peak with a |tile_m| x |tile_n| output tile:
// waves * 2 * tile_m * tile_n * k / (peak / sm_count), waves = ceil(batch * tiles / sm_count).
// REQUIRES: |gpu| has a peak for the GEMM's dtype.
double GemmWorkSeconds(const GemmShape& gemm, int64_t tile_m, int64_t tile_n, const GpuSpec& gpu);
// AttentionKernelFlops at the dtype's dense peak. REQUIRES: |gpu| has a peak for the dtype.
double AttentionWorkSeconds(const AttentionShape& attention, const GpuSpec& gpu);
// Bytes read and written at the datasheet HBM bandwidth.
double MemoryWorkSeconds(const MemoryShape& memory, const GpuSpec& gpu);

// The samples of one kernel class: work and measured time, in seconds.
struct WorkGroup {
  std::vector<double> work_s;
  std::vector<double> time_s;
};

struct SharedOverheadFit {
  // False when the work is constant within every group: the overhead cannot be told apart.
  bool determined = false;
  double overhead_s = 0;
  std::vector<double> inverse_efficiency;  // per group
  double sse = 0;                          // sum of squared relative residuals
};

// Minimises sum over groups c and their samples i of ((o + a_c w_i) / t_i - 1)^2 over one shared
// overhead o >= 0 and one inverse efficiency a_c per group: weighted linear least squares on
// relative residuals (weights 1/t^2), so that microsecond and second kernels count alike. For a
// fixed o each a_c is a one-variable least squares,
//   a_c(o) = (S_wt - o S_w) / S_ww,   S_x = sum over the group of x / t^2,
// and setting the derivative in o to zero (the a_c at their optimum) gives o in closed form,
//   o = sum_c (S_t - S_wt S_w / S_ww) / sum_c (S_1 - S_w^2 / S_ww),
// clamped to 0 (the a_c then refitted). A closed form recovers the model's own parameters
// exactly from times the model generated.
SharedOverheadFit FitSharedOverhead(const std::vector<WorkGroup>& groups);

// A fitted efficiency may exceed 1 by rounding only.
inline constexpr double kEfficiencyTolerance = 1e-6;

// Checks the samples of one class, |what| naming them in messages ("a.json: the gemm bf16
// samples"): at least 3 distinct shapes, every size and time > 0.
Status CheckClassSamples(const std::string& what, const std::vector<KernelShape>& shapes,
                         const std::vector<double>& times);

// Checks a fitted inverse efficiency of the |kind| samples |what| names: > 0 (times grow with the
// work) and an efficiency of at most 1 (+ kEfficiencyTolerance), else a message naming the key of
// |gpu|'s file the measurements beat (peak_tflops.<dtype>, hbm_bandwidth_GBps) and what to check.
Status CheckInverseEfficiency(double inverse, const std::string& what, OpKind kind,
                              std::optional<Dtype> dtype, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_ROOFLINE_FIT_H_
