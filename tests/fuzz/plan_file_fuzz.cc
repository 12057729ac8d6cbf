// Fuzzes the plan file reader (ReadPlanFile, program/plan_file.h: `loom plan --emit plan` writes
// it, `loom validate` reads it), then what validate does before it runs anything: unfold the rank
// programs to every GPU (program/unfold.h) and plan their execution, which refuses a plan that
// would deadlock. Plans of more than 256 GPUs are read but not unfolded: the same code at a size
// that would spend the fuzzer's time on copying.

#include <cstddef>
#include <cstdint>

#include "exec/exec_plan.h"
#include "fuzz_input.h"
#include "program/plan_file.h"
#include "program/unfold.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("plans", "fuzz.plan.json", data, size);
  loom::Result<loom::PlanFile> plan = loom::ReadPlanFile(path);
  if (!plan.ok()) return loom::fuzz::Rejected(plan.status());
  if (int64_t{plan->step.stages} * plan->gpus.lanes() > 256) return 0;
  loom::Result<loom::PlanFile> unfolded = loom::UnfoldPlan(*plan);
  if (!unfolded.ok()) return loom::fuzz::Rejected(unfolded.status());
  (void)loom::PlanExecution(unfolded->step.graph, unfolded->step.graph.num_ranks());
  return 0;
}
