#ifndef LOOM_SIM_ENGINE_H_
#define LOOM_SIM_ENGINE_H_

#include <span>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "program/step_timeline.h"
#include "program/task_graph.h"

namespace loom {

// Runs |graph| as a discrete-event simulation from time zero and returns when each task ran.
//
// A task becomes ready when its dependencies and the previous task on its stream have ended.
//  - A task with no link and no collective starts as soon as it is ready.
//  - A task with a link queues for it; a free link goes to the waiting request that became
//    ready first, ties to the lower task id (FIFO, independent of event processing order).
//  - A collective becomes ready when its last member does; it then queues, as one request, for
//    the links of all its members and starts when it heads all those queues and they are all
//    free (a link waits, idle, for a collective at its head). All members start together and end
//    together, after the longest member's duration.
//  - A task with a route never waits for its channels; it shares their bandwidth. Its duration is
//    its time alone. While k tasks are on a channel, each gets 1/k of the channel (processor
//    sharing), and a task progresses at the smallest share among its channels. A collective is on
//    every channel of its members' routes, once per member, and progresses at its slowest
//    member's share, so its members still start and end together. Shares change only when a
//    task on the channel starts or ends; the engine then charges each affected task the work it
//    did at its old share and moves its end, rounded to the nanosecond. A task of zero duration
//    takes no share.
//    Why: among flows limited by one link and nothing else, the max-min fair allocation is the
//    equal split (Bertsekas and Gallager, Data Networks, 2nd ed., 1992, section 6.5.2), the usual
//    assumption of flow-level network simulators, and roughly what NCCL's concurrent transfers
//    over one InfiniBand port or NVLink get from the hardware's round-robin arbitration. It is an
//    approximation: it ignores congestion control and protocol effects, and a share that a task
//    cannot use (another of its channels is more crowded) is not handed to the channel's other
//    tasks as true max-min fairness would, so where routes cross, transfers err on the slow side.
//  - A task may hold a share of its rank's SMs and of its HBM bandwidth while it runs, or yield
//    to such tasks (TaskGraph::SetSmUse). While tasks holding SM shares h1, h2, ... and HBM shares
//    b1, b2, ... run on a rank, each yielding task on it (not on a route, not in a collective)
//    progresses at 1 - (h1 + h2 + ...) of its rate alone in its compute-bound part and at the
//    smaller of that and 1 - (b1 + b2 + ...) in its memory-bound part (SmUse::memory of its time),
//    each at least SmSharing::kMinRate; rates change when a holder starts or ends, and the
//    engine charges the work done at the old rate and moves the end, as for channels.
//    Why: an NCCL kernel runs one CTA per channel, resident on its SM for the whole collective
//    (NCCL src/enqueue.cc launches nChannels blocks; each loops over the channel's chunks until
//    the collective ends), and its registers and shared memory leave no room for a GEMM's CTA
//    beside it, so a GEMM or attention kernel that runs meanwhile has only the other SMs: the
//    extra wave described in the NVIDIA developer forum thread "Compute-Communication Overlap
//    Causes Severe GEMM Performance Degradation because of Tail Effect" (H100, a 132-block GEMM
//    beside a 24-block ncclAllGather, forums.developer.nvidia.com/t/337991). Throughput over
//    many waves goes with the SMs left. A memory-bound kernel streams HBM, which the transfer's
//    kernels read and write too (each byte through a connection FIFO written and read, plus the
//    user buffers: NcclHbmBytesPerByte), so it goes with the bandwidth left. The wave quantisation
//    of a single short kernel, the HBM a GEMM needs, and the delay of a transfer whose CTAs wait
//    for SMs a kernel holds are not modelled.
// Events are ordered by (time, sequence number), so equal times are handled FIFO and the result is
// identical on every run. Ties never change times; they only fix start_sequence.
//
// Returns build_status() if the graph recorded a build error, or an InvalidArgument naming the
// wait cycle if the step deadlocks (stream order contradicting dependencies, or collectives ordered
// differently on their members' streams) - it never hangs. TaskGraph::Validate() finds the same
// cycles before simulating.
//
// Cost: O((tasks + edges) log tasks) time and O(tasks + edges) memory, allocated once; about
// 1-2 ms for 50k tasks and 100k edges on one core. A task on a route adds, at its start and end,
// work for each task on its channels whose share changes.
Result<StepTimeline> Simulate(const TaskGraph& graph);

// Every task's Task::duration, in task id order: what Simulate() runs the graph with, and the
// base that what-ifs change (sim/stragglers.h).
std::vector<SimTime> TaskDurations(const TaskGraph& graph);

// Simulate() with |durations| (one per task, in task id order) in place of each Task::duration:
// for runs of one graph that differ only in how long tasks take (a straggler, Monte Carlo draws
// of per-GPU speed, sim/stragglers.h), so the graph is built once. Errors: InvalidArgument if
// |durations| is not one per task or holds a negative time; else those of Simulate().
Result<StepTimeline> Simulate(const TaskGraph& graph, std::span<const SimTime> durations);

}  // namespace loom

#endif  // LOOM_SIM_ENGINE_H_
