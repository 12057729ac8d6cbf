// Fuzzes the reader of nccl-tests' -J JSON output (ParseNcclTestsJson, cost/nccl_tests_parser.h),
// then what `loom fit --cluster` does with a run: the communication-model fit on the shipped DGX
// H100. The parser takes the text itself; the name only tells the test when the output does not
// (all_reduce_perf, as for an output saved under that name).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cost/comm_fit.h"
#include "cost/nccl_tests_parser.h"
#include "fuzz_input.h"
#include "spec/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  loom::Result<loom::NcclTestsRun> run =
      loom::ParseNcclTestsJson(text, "all_reduce_perf.fuzz.json");
  if (!run.ok()) return loom::fuzz::Rejected(run.status());
  (void)loom::CollectiveOf(run->test);
  static const loom::Result<loom::ClusterSpec> cluster =
      loom::LoadClusterSpec(loom::fuzz::Shipped("hardware/clusters/dgx-h100.json"));
  if (cluster.ok()) (void)loom::FitCommCalibration({*run}, *cluster);
  return 0;
}
