#ifndef LOOM_TESTS_SIM_SIM_TEST_SUPPORT_H_
#define LOOM_TESTS_SIM_SIM_TEST_SUPPORT_H_

// What the simulator tests share: shipped inputs, and how to see an overlap in a timeline.

#include <string>

#include <gtest/gtest.h>

#include "program/step_graph.h"
#include "sim/engine.h"
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
