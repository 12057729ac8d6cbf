#ifndef LOOM_SIM_STEP_UTILIZATION_H_
#define LOOM_SIM_STEP_UTILIZATION_H_

#include <cstdint>
#include <vector>

#include "program/step_graph.h"
#include "sim/engine.h"

namespace loom {

// How the compute streams of the first replica spent one step: what the simulator reports as
// compute, bubble and exposed communication, read off any timeline of the step, simulated or
// measured. Per-stage vectors are indexed by stage (rank s of replica 0).
struct StepUtilization {
  // Compute and tp tasks, the time each ran (end - start: a tp task that shared its port ran
  // longer than its duration).
  std::vector<double> busy_s;
  // Of busy_s, the tp tasks.
  std::vector<double> tp_s;
  // Optimizer tasks, the time each ran.
  std::vector<double> optimizer_s;
  // Time the compute stream waited for communication: ring transfers that ended after the
  // attention block beside them. With one stage, also all of the stream's idle time in the span
  // (nothing waits on a pipeline then, so an idle compute stream waits for communication:
  // ZeRO-3's layer gathers, the weights' all-gather at the start).
  std::vector<double> comm_wait_s;
  // Time the compute stream sat idle waiting for the host thread (HostConfig::enabled,
  // sim/step_builder.h) to issue a task whose start its host lead decided: from the end of the
  // stream's previous task to the task's start. Within the span, and after it (the optimizer's
  // issue after the last pass).
  std::vector<double> host_wait_s;
  std::vector<double> host_wait_after_s;
  // Idle on the compute stream within the span, neither busy nor waiting for communication or the
  // host: max(0, span - busy - comm_wait - host_wait). Always 0 with one stage.
  std::vector<double> bubble_s;
  // End of the last compute or tp task of the first replica: how long the pipeline runs.
  double span_s = 0;
  // 1 - sum over stages of (busy + comm_wait + host_wait) / (span * stages), at least 0; 0 when
  // span is 0.
  double bubble_fraction = 0;
};

// Measures |timeline| of |step| as above, by the task categories of |step|.
// REQUIRES: timeline.start and timeline.end have one entry per task of step.graph.
StepUtilization MeasureUtilization(const StepGraph& step, const StepTimeline& timeline);

}  // namespace loom

#endif  // LOOM_SIM_STEP_UTILIZATION_H_
