#ifndef LOOM_PROBE_PROBE_ESTIMATE_H_
#define LOOM_PROBE_PROBE_ESTIMATE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "probe/bench.h"
#include "probe/sweep.h"
#include "spec/cluster.h"

namespace loom {

// How long `loom probe` takes to measure a sweep, before it runs: what `probe --dry-run` prints.

// Set-up time of every point apart from its timed runs and its input fills: allocating and freeing
// its buffers, planning its kernel (cuBLASLt's heuristic), synchronising, and rewriting the
// profile. Fitted, with kAttentionGraphBuildS, to the two probe runs of
// hardware/validation/2026-11-27 (one H100 80GB HBM3; hardware/validation/README.md): stage 1
// measured 278 GEMM, attention, memory-bound and host points of four models' shapes in 14 s; stage
// 3 the generic bf16 grid's 106 GEMM and 192 attention points in 37 s. Subtracting what
// EstimateProbeDuration models (timed runs and fills at the calibrated rates of
// hardware/gpus/h100-sxm5-80gb.json: 4.4 s and 21.6 s) leaves 278 c + 30 a = 9.6 s (stage 1 has 30
// attention points) and 298 c + 192 a = 15.4 s, whose solution these are (rounded). Stage 1's four
// probe processes each start CUDA, cuBLASLt and cuDNN; that start is spread over c. Two runs on one
// GPU: a first calibration, not a fit to many; tests/probe/probe_estimate_test.cc checks both runs'
// estimates stay within 1.5x of the measured.
inline constexpr double kPointSetupS = 0.031;
// Building and finalising the cuDNN graph of one attention point (cudnn_frontend's
// build_operation_graph, create_execution_plans, check_support, build_plans), which the probe does
// for every attention point, beside kPointSetupS.
inline constexpr double kAttentionGraphBuildS = 0.032;

// The estimate, per measurement class and in all.
struct ProbeDurationEstimate {
  // Seconds per ProbeKind, indexed by the kind's value (the ProbePoint alternative's index).
  std::array<double, 5> kind_s{};
  // Points per ProbeKind.
  std::array<int64_t, 5> kind_points{};
  double total_s = 0;
};

// The time `loom probe` takes to measure |points| with |settings| on |cluster|'s GPU:
// - each point's warmup + repeats runs, each run the time RooflineComputeModel (the GPU file's
//   calibrated roofline) gives it: a GEMM's kernel alone (cuBLASLt times operands already in the
//   dtype, so no fp8 casts), a fused attention kernel, a memory-bound kernel's bytes over the
//   achieved HBM bandwidth; the launch point's 100 empty kernels per run at the calibrated kernel
//   overhead; a host copy's bytes over the cluster's PCIe bandwidth;
// - a collective: warmup operations, then repeats batches of back-to-back operations (20 up to
//   1 MiB, 5 up to 256 MiB, 1 above: OperationsPerBatch, probe/bench.h), out of place and in place,
//   each operation at RingCommModel's time over the group's placement on |cluster| (world: every
//   GPU of the cluster's "nodes"; intra_node: one node's; rails: one per node);
// - every point's set-up: kPointSetupS, plus the random fill of its rotated input copies (as many
//   copies as exceed kColdL2Multiple L2 capacities, probe/bench.h's RotationCount) at
//   the HBM bandwidth, plus kAttentionGraphBuildS per attention point.
// A GEMM whose dtype the GPU file has no peak for fails at once on the GPU: it costs its set-up.
// Errors: InvalidArgument naming |cluster|'s file when a collective point needs the node count
// and the file has none ("nodes"), or when the GPU file has no HBM bandwidth.
Result<ProbeDurationEstimate> EstimateProbeDuration(const std::vector<ProbePoint>& points,
                                                    const BenchSettings& settings,
                                                    const ClusterSpec& cluster);

}  // namespace loom

#endif  // LOOM_PROBE_PROBE_ESTIMATE_H_
