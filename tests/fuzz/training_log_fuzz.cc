// Fuzzes the Megatron-LM and DeepSpeed log reader (ReadTrainingLog, cost/training_log.h), then a
// runs file that names the log, as `loom fit --runs` reads it (LoadRuns, plan/run_fit.h): the
// step time from the logged values and, from a Megatron-LM argument dump, the strategy.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cost/training_log.h"
#include "fuzz_input.h"
#include "plan/run_fit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string log_path = loom::fuzz::WriteInput("tests/cli/data", "fuzz.log", data, size);
  loom::Result<loom::TrainingLog> log = loom::ReadTrainingLog(log_path);
  if (!log.ok()) return loom::fuzz::Rejected(log.status());
  (void)log->StepTimeSeconds(64);
  static const std::string runs = loom::fuzz::WriteText(
      "tests/cli/data", "fuzz-log-runs.json",
      R"({"schema": "loom.runs/1", "runs": [{"name": "fuzzed log", "model": "../../../models/gpt3-125m.json", )"
      R"("log": "fuzz.log"}]})");
  static const std::string cluster = loom::fuzz::Shipped("hardware/clusters/dgx-h100.json");
  loom::Result<std::vector<loom::MeasuredRun>> read =
      loom::LoadRuns(runs, cluster, "megatron-core");
  if (!read.ok()) return loom::fuzz::Rejected(read.status());
  return 0;
}
