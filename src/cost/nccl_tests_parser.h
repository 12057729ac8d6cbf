#ifndef LOOM_COST_NCCL_TESTS_PARSER_H_
#define LOOM_COST_NCCL_TESTS_PARSER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "op/op.h"

namespace loom {

// The nccl-tests binaries (github.com/NVIDIA/nccl-tests) whose output loom reads.
enum class NcclTest { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
inline constexpr EnumNames<NcclTest, 5> kNcclTestNames({{
    {NcclTest::kAllReduce, "all_reduce_perf"},
    {NcclTest::kAllGather, "all_gather_perf"},
    {NcclTest::kReduceScatter, "reduce_scatter_perf"},
    {NcclTest::kAllToAll, "alltoall_perf"},
    {NcclTest::kSendRecv, "sendrecv_perf"},
}});

// The collective |test| measures; nullopt for sendrecv_perf, a point-to-point transfer.
std::optional<CollectiveKind> CollectiveOf(NcclTest test);

// One measurement of one size: nccl-tests' time, algbw and busbw columns.
struct NcclTestsTiming {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

// One size of a run. nccl-tests times each size twice, out of place and in place.
struct NcclTestsRow {
  int64_t size_bytes = 0;  // nccl-tests' "size": bytes per rank buffer (all-gather: output)
  int64_t count = 0;       // elements
  std::string type;        // "float", "half", ...
  std::string redop;       // "sum", "none", ...
  std::optional<NcclTestsTiming> out_of_place;  // absent where nccl-tests printed none
  std::optional<NcclTestsTiming> in_place;
  std::string where;  // "file:line" (text) or "file: results[i]" (JSON), for messages
};

// The sizes a run was asked for, as its header states them ("# nThread 1 nGpus 8 minBytes 8
// maxBytes 8589934592 step: 2(factor) ..."): -b, -e, and -f (a factor) or -i (an increment).
struct NcclTestsSweep {
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  std::optional<int64_t> step_factor;
  std::optional<int64_t> step_bytes;
};

// One run of one nccl-tests binary.
struct NcclTestsRun {
  std::string file;
  NcclTest test = NcclTest::kAllReduce;
  // Ranks in the communicator: the "#  Rank" lines (JSON: the devices times GPUs per process),
  // else nThread * nGpus; nullopt when the output states neither.
  std::optional<int64_t> ranks;
  // Distinct hosts among the listed devices; nullopt when none is listed.
  std::optional<int64_t> nodes;
  std::string gpu_name;  // device name of the first rank listed, "" when none is
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;  // "# Avg bus bandwidth"
  std::optional<NcclTestsSweep> sweep;   // nullopt where the output does not state it (JSON)
  // Run with NCCL_NVLS_ENABLE=0: NCCL chose among its algorithms without NVLS and NVLSTree. Set
  // from NCCL's own log line ("NCCL_NVLS_ENABLE set by environment to 0.", printed with
  // NCCL_DEBUG=INFO); nccl-tests' table does not record it.
  bool nvls_disabled = false;
};

// Parses what an nccl-tests binary prints: '#' header lines ("# nThread 1 nGpus 8 ...",
// "#  Rank  0 Group  0 Pid ... on host device  0 [0x07] NVIDIA H100 80GB HBM3", "# Collective
// test starting: all_reduce_perf"), the column header ("size count type redop root time algbw
// busbw #wrong time algbw busbw #wrong", older versions without root, "error" for "#wrong",
// "cputime" for "time", a trailing "timestamp"), the data rows (in-place only where out-of-place
// is blank) and "# Avg bus bandwidth". Lines before the column header that do not start with '#'
// and NCCL's own log lines ("NCCL INFO", "NCCL WARN") are skipped, but for the one that says NVLS
// was disabled (NcclTestsRun::nvls_disabled).
// The test is |test| if given, else the one the output names ("Collective test starting"), else
// the one |file|'s name contains (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv).
// Errors name |file|, the line number and what was expected: no column header, a row with the
// wrong number of columns or a non-number where a number belongs, no data rows, an unknown test,
// or a |test| that contradicts the output.
Result<NcclTestsRun> ParseNcclTestsText(std::string_view text, const std::string& file,
                                        std::optional<NcclTest> test = std::nullopt);

// Parses the JSON of nccl-tests' -J option (JSON_FILE_VERSION 2, src/util.cu), or a bare array
// of its result objects. Keys read, all others ignored:
//   top level:  "results" (array, required unless the top level is that array), "args" (the
//               test from the basename of args[0]), "config": {"nthreads", "ngpus", "devices":
//               [{"hostname", "device_info"}]}, "average_bus_bandwidth": {"bandwidth"}.
//   result:     "size" (integer bytes, required), "count", "type", "redop", and "out_of_place"
//               and "in_place" (object or null; at least one present), each with "time" or
//               "cpu_time" (us), "alg_bw" (or "algBw", "algbw") and "bus_bw" (or "busBw",
//               "busbw"), all numbers (nccl-tests writes the string "nan" for NaN: rejected).
// The test is found as in ParseNcclTestsText (args[0] instead of the "starting" line). Errors name
// |file| and the JSON path ("results[3].in_place.time") or, for bad JSON, the parser's position.
Result<NcclTestsRun> ParseNcclTestsJson(std::string_view text, const std::string& file,
                                        std::optional<NcclTest> test = std::nullopt);

// Reads |path| and parses it as JSON when its first non-blank character is '{' or '[', else as
// text.
Result<NcclTestsRun> ReadNcclTestsFile(const std::string& path,
                                       std::optional<NcclTest> test = std::nullopt);

}  // namespace loom

#endif  // LOOM_COST_NCCL_TESTS_PARSER_H_
