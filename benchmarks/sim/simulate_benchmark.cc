// Time of one `loom simulate` of GPT-3 175B on 1024 A100s (TP8 PP16 DP8, micro-batch 1, global
// batch 1536, interleaved schedule with 2 chunks per stage): loading excluded, everything from
// strategy checks to the memory report included. Arguments: whether transfers share the NICs'
// bandwidth (SimulationOptions::share_bandwidth), and whether the data-parallel collectives hold
// SMs that the compute beside them loses (SimulationOptions::share_sms). Beside it, what the
// planner pays per strategy before simulating, PrepareTrainingStep, and of that the memory reserve
// (ReserveOf: the CUDA context, workspaces, NCCL buffers and headroom, with their bases in words),
// to read as a ratio of the two in one run.

#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "sim/memory_reserve.h"
#include "sim/simulator.h"
#include "spec/scenario.h"

namespace loom {
namespace {

// The shipped GPT-3 scenario's inputs; nullopt (and the benchmark skipped) when they do not load.
struct Gpt3 {
  Scenario scenario;
  ModelSpec model;
  ClusterSpec cluster;
};
std::optional<Gpt3> LoadGpt3(benchmark::State& state) {
  const std::string root = LOOM_SOURCE_DIR;
  Result<Scenario> scenario = LoadScenario(root + "/scenarios/gpt3-175b-1024gpu.json");
  if (scenario.ok()) {
    Result<ModelSpec> model = LoadModelSpec(scenario->model_path);
    Result<ClusterSpec> cluster = LoadClusterSpec(scenario->cluster_path, scenario->nodes);
    if (model.ok() && cluster.ok()) return Gpt3{*scenario, *model, *cluster};
  }
  state.SkipWithError("cannot load scenarios/gpt3-175b-1024gpu.json");
  return std::nullopt;
}

void BM_SimulateGpt3On1024Gpus(benchmark::State& state) {
  const std::optional<Gpt3> in = LoadGpt3(state);
  if (!in) return;
  const Scenario* scenario = &in->scenario;
  const ModelSpec* model = &in->model;
  const ClusterSpec* cluster = &in->cluster;
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

void BM_PrepareGpt3On1024Gpus(benchmark::State& state) {
  const std::optional<Gpt3> in = LoadGpt3(state);
  if (!in) return;
  const Strategy& s = in->scenario.strategy;
  const Placements placements = PlaceStrategy(s, in->cluster);
  for (auto _ : state) {
    if (state.range(0) == 0) {
      Result<PreparedStep> step = PrepareTrainingStep(in->model, in->cluster, s);
      benchmark::DoNotOptimize(step.ok());
    } else {
      MemoryReserve r =
          ReserveOf(in->cluster.gpu, in->cluster, s, placements, nullptr, std::nullopt);
      benchmark::DoNotOptimize(r.parts_bytes);
    }
  }
}
// 0: the whole preparation; 1: the reserve alone.
BENCHMARK(BM_PrepareGpt3On1024Gpus)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace loom
