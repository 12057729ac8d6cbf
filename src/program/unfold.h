#ifndef LOOM_PROGRAM_UNFOLD_H_
#define LOOM_PROGRAM_UNFOLD_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "program/gpu_layout.h"
#include "program/plan_file.h"

namespace loom {

// A plan file's step is folded: one graph rank per pipeline stage of each simulated data-parallel
// replica, its tensor- and context-parallel GPUs folded into it (a pass's tp, cp and ep
// collectives are one task on its tp stream) and, in files that hold one replica, its replicas
// too. UnfoldPlan makes it the step of every GPU: each GPU its own copy of its stage's kernels,
// and every collective a rendezvous of exactly the GPUs of its group.
//
// The step of every GPU of |folded| (whose |gpus| says how it folds), with its baselines; the
// source, prediction, workload and layout are kept. What each task of the folded step becomes:
//  - everything on one graph rank (kernels, the optimizer, offload copies, host issue): a copy on
//    each of its GPUs, same duration, same memory;
//  - a pass's tp collectives task (WorkKind::kTpComm): one task per group its pass's collective
//    ops run on (tp, cp, ep or etp; OpsOfPass of the whole pass, since the builder gives each
//    part of a pass an equal slice of all its collectives), in the order the pass first uses each,
//    on the same stream, each a rendezvous of that group; the task's time is shared out over them
//    in proportion to their ops' predicted times, to the nanosecond, so the chain takes exactly
//    the folded task's time. TaskWork::group names the group. With ring attention the cp ops are
//    the ring sends, tasks of their own;
//  - a pipeline transfer: from a GPU to the GPU of the same lane on the neighbouring stage;
//  - a ring-attention send: from context rank c to c + 1 (mod cp) of the same tensor rank and
//    replica, the receiver's next attention block waiting for it;
//  - a gradient bucket or weight all-gather: a rendezvous of the dense data-parallel group, and
//    where the stage holds routed experts, a second one of the expert data-parallel group (the
//    time shared by bytes); a ZeRO-3 layer gather: the dense group. TaskWork::group says which.
// A group of one GPU is no collective. On symmetric steps the unfolded step's predicted time is
// the folded one's to the nanosecond.
// Errors (InvalidArgument naming plan.file): a layout that does not tile (CheckGpuLayout); a step
// whose replicas are neither 1 nor dp, or whose replicas differ; a collective of the folded step
// that is not a data-parallel one; a channel on no rank's port.
Result<PlanFile> UnfoldPlan(const PlanFile& folded);

// The program of GPU |rank| of |unfolded| alone, as one GPU runs it when it cannot host its
// groups (validate --one-gpu): rank 0 of a step of one rank with GPU |rank|'s streams, tasks (the
// same durations and work), memory events and baselines. Its dependencies on other GPUs are
// dropped and its collectives dissolved, so every communication task is a task of its own that
// takes its predicted time on its stream; transfers share no bandwidth. The source, prediction,
// workload and layout are kept. InvalidArgument when |rank| is not a rank of |unfolded|.
Result<PlanFile> OneGpuPlan(const PlanFile& unfolded, int32_t rank);

}  // namespace loom

#endif  // LOOM_PROGRAM_UNFOLD_H_
