#ifndef LOOM_SIM_STEP_UTILIZATION_H_
#define LOOM_SIM_STEP_UTILIZATION_H_

#include <cstdint>
#include <vector>

#include "program/step_graph.h"
#include "sim/engine.h"

namespace loom {

// How each stage of the first replica spent one step, read off any timeline of it, simulated or
// measured: what the simulator reports as compute, bubble, exposed communication, optimizer and
// host time. Every instant of a stage's step, [0, makespan], is one thing, the first of these that
// holds at it: a compute task runs; an optimizer task runs; a tp collective runs (its exposed part:
// the hidden part, tp_hidden_category, runs beside kernels); the compute stream waits for a ring
// transfer; the compute stream waits for the host thread to issue its next task; otherwise the
// stream is idle, which is bubble within the span of a pipeline, communication the stream waits
// for within the span of one stage, and communication after the span (the data-parallel
// collectives and the other stages the step waits for). So per stage
//   compute + tp + optimizer + comm_wait + host_wait + host_wait_after + bubble + tail = makespan.
// Per-stage vectors are indexed by stage (rank s of replica 0).
struct StepUtilization {
  // The compute stream running a compute task.
  std::vector<double> compute_s;
  // A tp collective running while no compute task does.
  std::vector<double> tp_s;
  // compute_s + tp_s: the GPU busy with the passes' work.
  std::vector<double> busy_s;
  // An optimizer task running while none of the above does.
  std::vector<double> optimizer_s;
  // The compute stream waiting for communication: ring transfers that ended after the attention
  // block beside them. With one stage, also all of the stream's idle time in the span (nothing
  // waits on a pipeline then, so an idle compute stream waits for communication: ZeRO-3's layer
  // gathers, the weights' all-gather at the start).
  std::vector<double> comm_wait_s;
  // The compute stream waiting for the host thread (HostConfig::enabled, sim/step_builder.h) while
  // the host is busy issuing: from the end of the stream's previous task, or from when the host
  // last started issuing without a break if that is later (before that it waited, on a
  // synchronisation point, for what the GPU was waiting for too), to the task's start. Within the
  // span, and after it (the optimizer's issue after the last pass).
  std::vector<double> host_wait_s;
  std::vector<double> host_wait_after_s;
  // Idle within the span, none of the above: the pipeline's bubble. Always 0 with one stage.
  std::vector<double> bubble_s;
  // Idle after the span, none of the above: waiting for the step's last collectives.
  std::vector<double> tail_s;
  // End of the last compute or tp task of the first replica: how long the pipeline runs.
  double span_s = 0;
  // The makespan of the step (StepTimeline::makespan).
  double step_s = 0;
  // The bubble over the stages' spans: sum of bubble_s / (span * stages); 0 when span is 0.
  double bubble_fraction = 0;
};

// Measures |timeline| of |step| as above, by the task categories of |step|.
// REQUIRES: timeline.start and timeline.end have one entry per task of step.graph.
StepUtilization MeasureUtilization(const StepGraph& step, const StepTimeline& timeline);

}  // namespace loom

#endif  // LOOM_SIM_STEP_UTILIZATION_H_
