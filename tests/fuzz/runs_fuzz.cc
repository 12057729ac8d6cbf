// Fuzzes the runs file reader of `loom fit --runs` (LoadRuns, plan/run_fit.h): JSON when the input
// starts with '{', else CSV, as a file in tests/cli/data/ beside the shipped runs file, so that
// its "../../../models/..." paths resolve. Every run's cluster is the shipped DGX H100. Then the
// strategy rules of each run; the fit itself simulates every run, too slow to fuzz the reader.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "plan/run_fit.h"
#include "spec/strategy.h"

namespace {

bool LooksLikeJson(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = loom::fuzz::WriteText(
      "tests/cli/data", LooksLikeJson(text) ? "fuzz-runs.json" : "fuzz-runs.csv", text);
  static const std::string cluster = loom::fuzz::Shipped("hardware/clusters/dgx-h100.json");
  loom::Result<std::vector<loom::MeasuredRun>> runs =
      loom::LoadRuns(path, cluster, "megatron-core");
  if (!runs.ok()) return loom::fuzz::Rejected(runs.status());
  for (const loom::MeasuredRun& run : *runs)
    (void)loom::StrategyViolations(run.strategy, run.model, run.cluster);
  return 0;
}
