// Time of one `loom simulate` of GPT-3 175B on 1024 A100s (TP8 PP16 DP8, micro-batch 1, global
// batch 1536, interleaved schedule with 2 chunks per stage): loading excluded, everything from
// strategy checks to the memory report included. Arguments: whether transfers share the NICs'
// bandwidth (SimulationOptions::share_bandwidth), and whether the data-parallel collectives hold
// SMs that the compute beside them loses (SimulationOptions::share_sms).

#include <benchmark/benchmark.h>

#include "sim/simulator.h"
#include "spec/scenario.h"

namespace loom {
namespace {

void BM_SimulateGpt3On1024Gpus(benchmark::State& state) {
  const std::string root = LOOM_SOURCE_DIR;
  Result<Scenario> scenario = LoadScenario(root + "/scenarios/gpt3-175b-1024gpu.json");
  Result<ModelSpec> model = LoadModelSpec(scenario->model_path);
  Result<ClusterSpec> cluster = LoadClusterSpec(scenario->cluster_path, scenario->nodes);
  if (!scenario.ok() || !model.ok() || !cluster.ok()) {
    state.SkipWithError("cannot load scenarios/gpt3-175b-1024gpu.json");
    return;
  }
  SimulationOptions options;
  options.share_bandwidth = state.range(0) != 0;
  options.share_sms = state.range(1) != 0;
  int64_t tasks = 0;
  double step_s = 0;
  for (auto _ : state) {
    Result<SimulationResult> result =
        SimulateTrainingStep(*model, *cluster, scenario->strategy, options);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    tasks = result->step.graph.num_tasks();
    step_s = result->step_time_s;
    benchmark::DoNotOptimize(result->step_time_s);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["step_ms"] = step_s * 1e3;
}
BENCHMARK(BM_SimulateGpt3On1024Gpus)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loom
