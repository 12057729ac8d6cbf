// What `loom validate` does with a plan file before anything runs, for Llama 3 70B on 1,024 H100s
// (tp 8, pp 4, dp 32, micro-batch 1, global batch 512, 1F1B): unfold the file's 4 rank programs to
// the 1,024 GPUs' (UnfoldPlan), and then check that they cannot deadlock and plan their
// execution (PlanExecution). Making the plan file is excluded.

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "exec/exec_plan.h"
#include "program/unfold.h"
#include "sim/simulated_plan.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

Result<PlanFile> Llama70bOn1024Gpus() {
  const std::string root = LOOM_SOURCE_DIR;
  LOOM_ASSIGN_OR_RETURN(ModelSpec model, LoadModelSpec(root + "/models/llama3-70b.json"));
  LOOM_ASSIGN_OR_RETURN(ClusterSpec cluster,
                        LoadClusterSpec(root + "/hardware/clusters/dgx-h100.json", 128));
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 32;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 512;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return MakePlanFile(model, cluster, s, {}, {});
}

void BM_UnfoldLlama70bOn1024Gpus(benchmark::State& state) {
  const Result<PlanFile> folded = Llama70bOn1024Gpus();
  if (!folded.ok()) {
    state.SkipWithError(folded.status().message().c_str());
    return;
  }
  const bool plan_execution = state.range(0) != 0;
  int64_t tasks = 0, groups = 0;
  for (auto _ : state) {
    Result<PlanFile> unfolded = UnfoldPlan(*folded);
    if (!unfolded.ok()) {
      state.SkipWithError(unfolded.status().message().c_str());
      return;
    }
    if (plan_execution) {
      Result<ExecPlan> exec =
          PlanExecution(unfolded->step.graph, unfolded->step.graph.num_ranks());
      if (!exec.ok()) {
        state.SkipWithError(exec.status().message().c_str());
        return;
      }
    }
    tasks = unfolded->step.graph.num_tasks();
    groups = unfolded->step.graph.num_groups();
  }
  state.counters["folded_tasks"] = static_cast<double>(folded->step.graph.num_tasks());
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["collectives"] = static_cast<double>(groups);
}
// 0: UnfoldPlan alone; 1: and PlanExecution (with TaskGraph::Validate), as validate runs them.
BENCHMARK(BM_UnfoldLlama70bOn1024Gpus)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loom
