// Fuzzes the scenario file reader (LoadScenario, spec/scenario.h), then what `loom simulate` reads
// before it simulates: the model, cluster and framework the scenario names ("../models/...",
// "../hardware/clusters/..." resolve to the shipped files) and the strategy rules. It does not
// simulate: a step takes milliseconds to seconds, too slow to fuzz the reader.

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/scenario.h"
#include "spec/strategy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("scenarios", "fuzz.json", data, size);
  loom::Result<loom::Scenario> scenario = loom::LoadScenario(path);
  if (!scenario.ok()) return loom::fuzz::Rejected(scenario.status());
  loom::Result<loom::ModelSpec> model = loom::LoadModelSpec(scenario->model_path);
  if (!model.ok()) return loom::fuzz::Rejected(model.status());
  loom::Result<loom::ClusterSpec> cluster =
      loom::LoadClusterSpec(scenario->cluster_path, scenario->nodes);
  if (!cluster.ok()) return loom::fuzz::Rejected(cluster.status());
  if (scenario->framework)
    (void)loom::ResolveFramework(*scenario->framework, scenario->cluster_path);
  (void)loom::StrategyViolations(scenario->strategy, *model, *cluster);
  return 0;
}
