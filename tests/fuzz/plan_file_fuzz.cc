// Fuzzes the plan file reader (ReadPlanFile, program/plan_file.h: `loom plan --emit plan` writes
// it, `loom validate` reads it), then what validate does before it runs anything: plan the
// execution of the rank programs, which refuses a plan that would deadlock.

#include <cstddef>
#include <cstdint>

#include "exec/exec_plan.h"
#include "fuzz_input.h"
#include "program/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("plans", "fuzz.plan.json", data, size);
  loom::Result<loom::PlanFile> plan = loom::ReadPlanFile(path);
  if (!plan.ok()) return loom::fuzz::Rejected(plan.status());
  (void)loom::PlanExecution(plan->step.graph, plan->step.graph.num_ranks());
  return 0;
}
