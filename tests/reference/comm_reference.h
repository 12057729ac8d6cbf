// The published nccl-tests all-reduce measurements of tests/reference/ as the runs the
// communication fit (cost/comm_fit.h) takes, each with the table it comes from, so that the
// shipped cluster calibrations can be checked against their fit and refitted without one table
// (the leave-one-source-out columns of the fidelity report).

#ifndef LOOM_TESTS_REFERENCE_COMM_REFERENCE_H_
#define LOOM_TESTS_REFERENCE_COMM_REFERENCE_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "cost/nccl_tests_parser.h"
#include "reference/fidelity_cases.h"
#include "spec/cluster.h"

namespace loom {

inline constexpr std::string_view kSingleNodeAllReduceTable = "nccl_allreduce_8gpu.csv";
inline constexpr std::string_view kMultiNodeAllReduceTable = "nccl_allreduce_multinode.csv";
inline constexpr std::string_view kHopperNodeTable = "nccl_hopper_1node.csv";

// One published all-reduce run: one node count and rank count, every size it printed.
struct CommReferenceRun {
  std::string table;  // its file name in tests/reference/
  std::string
      source;  // the source id within the table ("azure_ai_benchmarking_guide" for the 8-GPU table)
  std::string
      site;  // the machines it ran on (the table's "site" column; the source for the 8-GPU table)
  NcclTestsRun run;  // file = the table's path, rows with in-place timings only
};

// Every published all-reduce run on |cluster| ("dgx-a100", "dgx-h100" or "hgx-h200"): the cluster's
// column of nccl_allreduce_8gpu.csv (one node of 8) and the runs of nccl_allreduce_multinode.csv
// whose settings are "default" (NCCL chose algorithm and channels, as loom's model does); for the
// Hopper clusters also nccl_hopper_1node.csv (8x H200: all-reduce, all-gather and reduce-scatter
// over 4-8 GPUs of one node, default or with NVLS disabled, a run per source, rank count,
// collective and setting), whose NVLink 4 fabric H100 and H200 SXM nodes share, and for hgx-h200
// the DGX H100 runs of the other tables (HGX H200 has no table of its own beyond that node). The
// time of a row follows from nccl-tests' busbw convention, busbw = size / time * 2(n-1)/n. Errors
// name the table, row and column.
Result<std::vector<CommReferenceRun>> LoadCommReferenceRuns(const std::string& tables_dir,
                                                            std::string_view cluster);

// FitCommCalibration on |runs| except those from |excluded_table| (none when empty) - only its runs
// on |excluded_site| when that is given - for |cluster| with its calibration removed; the
// calibration's fitted_on lists the tables used. A calibration with no value (CommCalibration{}:
// the nominal bandwidths) when no run remains.
Result<CommCalibration> FitReferenceCommCalibration(const std::vector<CommReferenceRun>& runs,
                                                    const ClusterSpec& cluster,
                                                    std::string_view excluded_table = "",
                                                    std::string_view excluded_site = "");

// The rows of nccl_allreduce_multinode.csv on hardware/clusters/<cluster>.json from 16 MiB, the
// runs with default settings only, each over its nodes x ranks per node (Megatron numbering: the
// ranks of a node are consecutive), named "<source> <nodes>x<ranks per node> <size>", with its
// site.
Result<std::vector<AllReduceCase>> LoadMultiNodeAllReduceCases(const ReferencePaths& paths,
                                                               std::string_view cluster);

// The rows of nccl_hopper_1node.csv on hardware/clusters/hgx-h200.json (the GPUs it ran on), each
// over its ranks of one node with its collective and NVLS setting, named "<collective> <ranks> GPUs
// [NVLS off] <size>".
Result<std::vector<AllReduceCase>> LoadHopperNodeCases(const ReferencePaths& paths);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_COMM_REFERENCE_H_
