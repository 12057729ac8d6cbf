#ifndef LOOM_TESTS_SIM_SIM_TEST_SUPPORT_H_
#define LOOM_TESTS_SIM_SIM_TEST_SUPPORT_H_

// What the simulator tests share: shipped inputs, and how to see an overlap in a timeline.

#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>  // full header: Llama8bPlan's source defaults to {}

#include "program/plan_file.h"
#include "program/step_graph.h"
#include "sim/engine.h"
#include "sim/simulated_plan.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {

// A file of the source tree, by its path from the repository root.
inline std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
};

// A shipped model and cluster of |nodes| nodes; a load error fails the test.
inline Inputs Load(const std::string& model, const std::string& cluster, int64_t nodes) {
  Result<ModelSpec> m = LoadModelSpec(Shipped(model));
  EXPECT_TRUE(m.ok()) << m.status().message();
  Result<ClusterSpec> c = LoadClusterSpec(Shipped(cluster), nodes);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return {m.ok() ? *m : ModelSpec(), c.ok() ? *c : ClusterSpec()};
}

// The pipelined strategy the plan-file tests share: |pp| stages and |dp| replicas, each replica
// running |micro_batches| micro-batches of one 1,024-token sequence, ZeRO-1; 1F1B with one chunk
// per stage, any other |schedule| with two.
inline Strategy PipelineStrategy(int64_t pp, int64_t dp, int64_t micro_batches,
                                 ScheduleKind schedule) {
  Strategy s;
  s.pp = pp;
  s.dp = dp;
  s.vpp = schedule == ScheduleKind::k1F1B ? 1 : 2;
  s.schedule = schedule;
  s.micro_batch = 1;
  s.global_batch = micro_batches * dp;
  s.seq_len = 1024;
  s.zero_stage = 1;
  return s;
}

// The plan file (MakePlanFile) of |strategy| for Llama 3 8B on one DGX H100 node; a failure fails
// the test and gives an empty plan.
inline PlanFile Llama8bPlan(const Strategy& strategy, const SimulationOptions& options = {},
                            const nlohmann::ordered_json& source = {}) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Result<PlanFile> plan = MakePlanFile(in.model, in.cluster, strategy, options, source);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PlanFile();
}

// Whether a task of |category| on rank 0 runs while a compute task of rank 0 runs.
inline bool RunsBesideCompute(const StepGraph& step, const StepTimeline& timeline,
                              NameId category) {
  const TaskGraph& g = step.graph;
  for (TaskId a = 0; a < g.num_tasks(); ++a) {
    if (g.task(a).category != category || g.rank_of(a) != 0) continue;
    for (TaskId c = 0; c < g.num_tasks(); ++c) {
      if (g.task(c).category != step.compute_category || g.rank_of(c) != 0) continue;
      if (timeline.start[a] < timeline.end[c] && timeline.start[c] < timeline.end[a]) return true;
    }
  }
  return false;
}

}  // namespace loom

#endif  // LOOM_TESTS_SIM_SIM_TEST_SUPPORT_H_
