#ifndef LOOM_TESTS_EXEC_SINGLE_GPU_PLAN_H_
#define LOOM_TESTS_EXEC_SINGLE_GPU_PLAN_H_

#include <utility>

#include <gtest/gtest.h>

#include "exec/device_program.h"
#include "exec/exec_plan.h"
#include "program/plan_file.h"
#include "sim/sim_test_support.h"
#include "sim/simulated_plan.h"

namespace loom {

// A plan the GPU validation runs (tools/gpu_validate): |model| on one H100 of the DGX H100
// cluster, 16 sequences of 2,048 tokens in micro-batches of 4, full recompute, and its one rank's
// device program.
struct SingleGpuPlan {
  Inputs in;
  PlanFile plan;
  DeviceProgram program;
};

// Fills |out| with |model|'s SingleGpuPlan; fails the test when a step does not succeed (call it
// through ASSERT_NO_FATAL_FAILURE).
inline void MakeSingleGpuPlan(const char* model, SingleGpuPlan* out) {
  out->in = Load(model, "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.micro_batch = 4;
  s.global_batch = 16;
  s.seq_len = 2048;
  s.recompute = Recompute::kFull;
  Result<PlanFile> plan = MakePlanFile(out->in.model, out->in.cluster, s, {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  out->plan = std::move(plan).value();
  Result<ExecPlan> exec = PlanExecution(out->plan.step.graph, 1);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  Result<DeviceProgram> program = BuildDeviceProgram(out->plan, *exec, 0);
  ASSERT_TRUE(program.ok()) << program.status().message();
  out->program = std::move(program).value();
}

}  // namespace loom

#endif  // LOOM_TESTS_EXEC_SINGLE_GPU_PLAN_H_
