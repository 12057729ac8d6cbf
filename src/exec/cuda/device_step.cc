#include "exec/cuda/device_step.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "device/cuda/cuda_check.h"
#include "device/cuda/device_kernels.h"
#include "device/deadline.h"
#include "exec/op_operands.h"

namespace loom::cuda {
namespace {

// Regions of the state buffer are aligned as operands are (cudaMalloc's 256 bytes, more than
// StreamBytes' 16).
constexpr int64_t kAlignmentBytes = kOperandAlignmentBytes;
// What each edge sends in Connect, so that NCCL connects its two ranks there.
constexpr size_t kConnectBytes = 4;
constexpr int32_t kTasksNamedWhenLate = 5;

int32_t Size(const auto& container) { return static_cast<int32_t>(container.size()); }

// What cudaEventQuery or cudaStreamQuery answered: done, not yet, or an error of the queued work.
Result<bool> Finished(cudaError_t query) {
  if (query == cudaErrorNotReady) {
    cudaGetLastError();  // not an error, yet the next launch's check would report it
    return false;
  }
  LOOM_RETURN_IF_ERROR(
      CheckCuda(query, "cudaEventQuery/cudaStreamQuery of the step's work", __FILE__, __LINE__));
  return true;
}

ProfiledCollective ProfiledOf(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return ProfiledCollective::kAllGather;
    case CollectiveKind::kReduceScatter:
      return ProfiledCollective::kReduceScatter;
    case CollectiveKind::kAllToAll:
      return ProfiledCollective::kAllToAll;
    case CollectiveKind::kAllReduce:
      break;
  }
  return ProfiledCollective::kAllReduce;
}

}  // namespace

Status DeviceStep::SetUp(int device) {
  LOOM_RETURN_IF_ERROR(CheckProgram());
  LOOM_RETURN_IF_ERROR(FindEdges());
  LOOM_RETURN_IF_ERROR(MakeStreamsAndEvents());
  LOOM_RETURN_IF_ERROR(pool_.Create(device));
  LOOM_RETURN_IF_ERROR(AllocateState());
  LOOM_ASSIGN_OR_RETURN(runner_, OpRunner::Create(program_.ops, StreamOf(compute_)));
  return WarmUp();
}

// Every kernel of a step but NCCL's, before Connect runs the first NCCL operation: the ops', and
// StreamBytes for the optimizer's traffic (FillRandom has run in AllocateState and in the runner's
// fill). A step is enqueued whole ahead of the GPU, receives first, so the first launch of a
// kernel not yet loaded would come while NCCL kernels spin; loading a module under lazy loading
// takes the context's lock and waits for the GPU's queue to drain (meta-pytorch/torchcomms#2334),
// and cuBLASLt loading beside NCCL's first call has deadlocked in the driver (openxla/xla#38932).
// Forcing eager loading (CUDA_MODULE_LOADING=EAGER) would load every kernel of cuBLASLt and cuDNN
// at start-up instead, and must be set before CUDA initializes.
Status DeviceStep::WarmUp() {
  cudaStream_t compute = StreamOf(compute_);
  LOOM_RETURN_IF_ERROR(runner_->WarmUp(compute));
  const Status traffic =
      EnqueueTraffic({.bytes_read = kAlignmentBytes, .bytes_written = kAlignmentBytes}, compute);
  if (!traffic.ok()) return traffic.WithContext("warming up the optimizer's kernel");
  LOOM_CUDA(cudaStreamSynchronize(compute));
  return Status::Ok();
}

// BuildDeviceProgram's contract, checked because a broken index would wait on a stale event, send
// to the wrong peer or leave a task out of the timeline.
Status DeviceStep::CheckProgram() const {
  const std::string where = "device program of rank " + std::to_string(program_.rank);
  const std::span<const RankProgram> ranks = plan_.ranks();
  int64_t plan_tasks = 0;
  if (program_.rank >= 0 && program_.rank < Size(ranks)) {
    for (const std::vector<TaskId>& tasks :
         ranks[static_cast<size_t>(program_.rank)].stream_tasks) {
      plan_tasks += static_cast<int64_t>(tasks.size());
    }
  }
  if (program_.streams.empty() || plan_tasks != Size(program_.tasks)) {
    return Status::Internal(where + ": it has " + std::to_string(program_.streams.size()) +
                            " streams and " + std::to_string(program_.tasks.size()) +
                            " tasks, the plan's rank " + std::to_string(plan_tasks) + " tasks");
  }
  std::vector<bool> seen(static_cast<size_t>(plan_.graph().num_tasks()));
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    LOOM_RETURN_IF_ERROR(CheckTask(i));
    const TaskId id = program_.tasks[i].task;
    if (seen[static_cast<size_t>(id)]) {
      return Status::Internal(where + ": it lists " + plan_.graph().DescribeTask(id) + " twice");
    }
    seen[static_cast<size_t>(id)] = true;
  }
  for (size_t i = 0; i < program_.receives.size(); ++i) {
    const int32_t stream = program_.receives[i].stream;
    if (stream < 0 || stream >= Size(program_.streams)) {
      return Status::Internal(where + ": receive " + std::to_string(i) + " is on stream " +
                              std::to_string(stream) + ", which the program has not");
    }
  }
  return Status::Ok();
}

Status DeviceStep::FindEdges() {
  std::map<std::pair<int32_t, int32_t>, int32_t> index;
  for (int32_t e = 0; e < Size(program_.edges); ++e) {
    const P2pEdge& edge = program_.edges[static_cast<size_t>(e)];
    if (!index.try_emplace({edge.from, edge.to}, e).second) {
      return Status::Internal("device program of rank " + std::to_string(program_.rank) +
                              ": rank " + std::to_string(edge.from) + " sends to rank " +
                              std::to_string(edge.to) +
                              " on two edges; NCCL's order on the edge's communicator needs one");
    }
  }
  const auto find = [&](int32_t from, int32_t to, const std::string& what) -> Result<int32_t> {
    const auto it = index.find({from, to});
    if (it != index.end()) return it->second;
    return Status::Internal("device program of rank " + std::to_string(program_.rank) + ": " +
                            what + " has no edge from rank " + std::to_string(from) + " to rank " +
                            std::to_string(to));
  };
  task_edges_.assign(program_.tasks.size(), -1);
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    const DeviceTask& t = program_.tasks[i];
    if (t.work != DeviceWork::kSend) continue;
    LOOM_ASSIGN_OR_RETURN(
        int32_t e, find(program_.rank, t.peer, "the send " + plan_.graph().DescribeTask(t.task)));
    task_edges_[i] = e;
  }
  for (size_t i = 0; i < program_.receives.size(); ++i) {
    const DeviceReceive& r = program_.receives[i];
    LOOM_ASSIGN_OR_RETURN(int32_t e,
                          find(r.from_rank, program_.rank, "receive " + std::to_string(i)));
    receive_edges_.push_back(e);
  }
  return Status::Ok();
}

Status DeviceStep::CheckTask(size_t index) const {
  const DeviceTask& t = program_.tasks[index];
  const TaskGraph& graph = plan_.graph();
  const std::string where =
      "device program of rank " + std::to_string(program_.rank) + ": task " + std::to_string(index);
  if (t.task < 0 || t.task >= graph.num_tasks() || graph.rank_of(t.task) != program_.rank ||
      t.stream < 0 || t.stream >= Size(program_.streams)) {
    return Status::Internal(where + " names task id " + std::to_string(t.task) + " and stream " +
                            std::to_string(t.stream) +
                            ", not a task of this rank and a stream of the program");
  }
  const std::string task = where + ", " + graph.DescribeTask(t.task) + ",";
  for (int32_t w : t.waits) {
    if (w < 0 || w >= static_cast<int32_t>(index)) {
      return Status::Internal(task + " waits for task " + std::to_string(w) +
                              ", which is not enqueued before it");
    }
  }
  for (int32_t r : t.receives) {
    if (r < 0 || r >= Size(program_.receives)) {
      return Status::Internal(task + " waits for receive " + std::to_string(r) +
                              ", which the program has not");
    }
  }
  if (t.work != DeviceWork::kCollective) return Status::Ok();
  const std::span<const Communicator> comms = plan_.communicators();
  if (t.communicator < 0 || t.communicator >= Size(comms) ||
      std::count(comms[static_cast<size_t>(t.communicator)].ranks.begin(),
                 comms[static_cast<size_t>(t.communicator)].ranks.end(), program_.rank) == 0) {
    return Status::Internal(task + " is a collective on communicator " +
                            std::to_string(t.communicator) +
                            ", which is not one with this rank in it");
  }
  return Status::Ok();
}

Status DeviceStep::MakeStreamsAndEvents() {
  const TaskGraph& graph = plan_.graph();
  for (int32_t s = 0; s < Size(program_.streams); ++s) {
    const StreamId id = program_.streams[static_cast<size_t>(s)];
    if (id >= 0 && id < graph.num_streams() && graph.Name(graph.stream_name(id)) == "compute") {
      compute_ = s;
      break;
    }
  }
  for (size_t s = 0; s < program_.streams.size(); ++s) {
    cudaStream_t stream = nullptr;
    LOOM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    streams_.emplace_back(stream);
  }
  auto make = [](std::vector<Event>& events, size_t count, unsigned flags) -> Status {
    for (size_t i = 0; i < count; ++i) {
      cudaEvent_t event = nullptr;
      LOOM_CUDA(cudaEventCreateWithFlags(&event, flags));
      events.emplace_back(event);
    }
    return Status::Ok();
  };
  std::vector<Event> epoch;
  LOOM_RETURN_IF_ERROR(make(epoch, 1, cudaEventDefault));
  epoch_ = std::move(epoch[0]);
  LOOM_RETURN_IF_ERROR(make(starts_, program_.tasks.size(), cudaEventDefault));
  LOOM_RETURN_IF_ERROR(make(ends_, program_.tasks.size(), cudaEventDefault));
  // Receive events only order streams; they are never timed.
  return make(received_, program_.receives.size(), cudaEventDisableTiming);
}

Status DeviceStep::AllocateState() {
  int64_t largest = std::max<int64_t>(program_.largest_transfer_bytes, 1);
  collectives_.resize(program_.tasks.size());
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    const DeviceTask& task = program_.tasks[i];
    if (task.work == DeviceWork::kSend) largest = std::max(largest, task.bytes);
    if (task.work != DeviceWork::kCollective) continue;
    const std::vector<int32_t>& ranks =
        plan_.communicators()[static_cast<size_t>(task.communicator)].ranks;
    for (const CollectiveShape& shape : task.collectives) {
      CollectiveCall call;
      call.kind = shape.kind;
      call.ranks = Size(ranks);
      Result<CollectiveBuffers> buffers = BuffersOf(ProfiledOf(shape.kind), shape.bytes, call.ranks);
      if (buffers.ok() && ranks.size() >= 2) call.buffers = *buffers;
      call.key = std::find(ranks.begin(), ranks.end(), program_.rank) - ranks.begin();
      // An all-to-all sends from the front of its region and receives behind what it sends.
      const int64_t footprint =
          shape.kind == CollectiveKind::kAllToAll ? 2 * call.buffers.bytes : call.buffers.bytes;
      largest = std::max(largest, footprint);
      collectives_[i].push_back(call);
    }
  }
  for (const DeviceReceive& receive : program_.receives) largest = std::max(largest, receive.bytes);
  region_bytes_ = RoundUpToOperandAlignment(largest);
  const int64_t state_bytes =
      std::max(RoundUpToOperandAlignment(program_.baseline_bytes), 3 * region_bytes_);
  half_bytes_ = state_bytes / 2 / kAlignmentBytes * kAlignmentBytes;
  Result<DeviceBuffer> state = AllocateDevice(state_bytes + kAlignmentBytes);
  if (!state.ok())
    return state.status().WithContext("the state buffer of " + std::to_string(state_bytes) + " B");
  state_ = std::move(state).value();
  epoch_word_ = reinterpret_cast<float*>(Region(0) + state_bytes);
  // Different on every rank; no kernel or reduction runs on zeros.
  cudaStream_t compute = StreamOf(compute_);
  LOOM_CUDA(FillRandom(state_.get(), (state_bytes + kAlignmentBytes) / 2, Dtype::kBf16,
                       static_cast<uint64_t>(program_.rank) + 1, compute));
  LOOM_CUDA(cudaStreamSynchronize(compute));
  return Status::Ok();
}

Status DeviceStep::Connect(const NcclComms& comms, double timeout_s) {
  cudaStream_t stream = StreamOf(compute_);
  LOOM_NCCL(
      ncclAllReduce(epoch_word_, epoch_word_, 1, ncclFloat32, ncclMax, comms.world(), stream));
  // NCCL connects what an algorithm needs on its first use, and the algorithm depends on the size.
  // The members of a communicator issue its collectives in one order, so each lists the same ones.
  std::map<int32_t, std::vector<CollectiveCall>> distinct;  // by communicator, in the plan's order
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    const DeviceTask& t = program_.tasks[i];
    if (t.work != DeviceWork::kCollective) continue;
    std::vector<CollectiveCall>& calls = distinct[t.communicator];
    for (const CollectiveCall& call : collectives_[i]) {
      const auto same = [&](const CollectiveCall& c) {
        return c.kind == call.kind && c.buffers.bytes == call.buffers.bytes;
      };
      if (std::none_of(calls.begin(), calls.end(), same)) calls.push_back(call);
    }
  }
  for (const auto& [communicator, calls] : distinct) {
    for (const CollectiveCall& call : calls)
      LOOM_RETURN_IF_ERROR(EnqueueCall(call, comms.communicator(communicator), stream));
  }
  for (int32_t e = 0; e < Size(program_.edges); ++e) {
    const P2pEdge& edge = program_.edges[static_cast<size_t>(e)];
    if (edge.from == program_.rank) {
      LOOM_NCCL(ncclSend(Region(0), kConnectBytes, ncclInt8,
                         NcclComms::PeerInEdge(edge.to, program_.rank), comms.edge(e), stream));
    } else if (edge.to == program_.rank) {
      LOOM_NCCL(ncclRecv(Region(1), kConnectBytes, ncclInt8,
                         NcclComms::PeerInEdge(edge.from, program_.rank), comms.edge(e), stream));
    }
  }
  auto done = [&]() -> Result<bool> {
    Result<bool> finished = Finished(cudaStreamQuery(stream));
    if (!finished.ok() || *finished) return finished;
    LOOM_RETURN_IF_ERROR(comms.CheckAsyncErrors());
    return false;
  };
  SteadyClock clock;
  return WaitUntilDone(
      done, clock, timeout_s,
      "connecting rank " + std::to_string(program_.rank) + "'s NCCL communicators");
}

Result<RankTimes> DeviceStep::Run(const NcclComms& comms, double timeout_s) {
  LOOM_RETURN_IF_ERROR(Enqueue(comms));
  const Status balanced = pool_.FreeLeftovers();
  LOOM_RETURN_IF_ERROR(Wait(comms, timeout_s));
  LOOM_RETURN_IF_ERROR(balanced);
  return Times();
}

Status DeviceStep::Enqueue(const NcclComms& comms) {
  cudaStream_t compute = StreamOf(compute_);
  LOOM_NCCL(
      ncclAllReduce(epoch_word_, epoch_word_, 1, ncclFloat32, ncclMax, comms.world(), compute));
  LOOM_CUDA(cudaEventRecord(epoch_.get(), compute));
  for (int32_t s = 0; s < Size(streams_); ++s) {
    if (s != compute_) LOOM_CUDA(cudaStreamWaitEvent(StreamOf(s), epoch_.get(), 0));
  }
  // Receives first, each on its sender's receive stream in the order the sender sends: the tasks
  // that wait for them wait on their events.
  for (size_t i = 0; i < program_.receives.size(); ++i) {
    const DeviceReceive& r = program_.receives[i];
    if (r.bytes > 0) {
      LOOM_NCCL(ncclRecv(Region(1), static_cast<size_t>(r.bytes), ncclInt8,
                         NcclComms::PeerInEdge(r.from_rank, program_.rank),
                         comms.edge(receive_edges_[i]), StreamOf(r.stream)));
    }
    LOOM_CUDA(cudaEventRecord(received_[i].get(), StreamOf(r.stream)));
  }
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    const Status enqueued = EnqueueTask(i, comms);
    if (!enqueued.ok())
      return enqueued.WithContext(plan_.graph().DescribeTask(program_.tasks[i].task));
  }
  return Status::Ok();
}

Status DeviceStep::EnqueueTask(size_t index, const NcclComms& comms) {
  const DeviceTask& task = program_.tasks[index];
  cudaStream_t stream = StreamOf(task.stream);
  for (int32_t w : task.waits)
    LOOM_CUDA(cudaStreamWaitEvent(stream, ends_[static_cast<size_t>(w)].get(), 0));
  for (int32_t r : task.receives)
    LOOM_CUDA(cudaStreamWaitEvent(stream, received_[static_cast<size_t>(r)].get(), 0));
  for (const auto& [pool, bytes] : task.alloc_at_start)
    LOOM_RETURN_IF_ERROR(pool_.Allocate(pool, bytes, stream));
  LOOM_CUDA(cudaEventRecord(starts_[index].get(), stream));
  LOOM_RETURN_IF_ERROR(EnqueueWork(index, comms, stream));
  LOOM_CUDA(cudaEventRecord(ends_[index].get(), stream));
  for (const auto& [pool, bytes] : task.free_at_end)
    LOOM_RETURN_IF_ERROR(pool_.Free(pool, bytes, stream));
  return Status::Ok();
}

Status DeviceStep::EnqueueWork(size_t index, const NcclComms& comms, cudaStream_t stream) {
  const DeviceTask& task = program_.tasks[index];
  switch (task.work) {
    case DeviceWork::kNothing:
      return Status::Ok();
    case DeviceWork::kOps:
      for (size_t o = 0; o < task.ops.ops.size(); ++o) {
        LOOM_RETURN_IF_ERROR(runner_->Enqueue(*task.ops.ops[o], stream));
        if (profiling_) LOOM_CUDA(cudaEventRecord(op_ends_[index][o].get(), stream));
      }
      return Status::Ok();
    case DeviceWork::kSend:
      if (task.bytes <= 0)
        return Status::Ok();  // its receive, of 0 bytes too, posts nothing either
      LOOM_NCCL(ncclSend(Region(0), static_cast<size_t>(task.bytes), ncclInt8,
                         NcclComms::PeerInEdge(task.peer, program_.rank),
                         comms.edge(task_edges_[index]), stream));
      return Status::Ok();
    case DeviceWork::kCollective:
      return EnqueueCollective(index, comms.communicator(task.communicator), stream);
    case DeviceWork::kOptimizer:
      return EnqueueTraffic(task.traffic, stream);
    case DeviceWork::kStandIn:
      LOOM_CUDA(SpinFor(task.stand_in.nanos(), stream));
      return Status::Ok();
  }
  return Status::Internal("unknown DeviceWork " + std::to_string(static_cast<int>(task.work)));
}

Status DeviceStep::EnqueueCollective(size_t index, ncclComm_t comm, cudaStream_t stream) {
  for (const CollectiveCall& call : collectives_[index])
    LOOM_RETURN_IF_ERROR(EnqueueCall(call, comm, stream));
  return Status::Ok();
}

// In place at nccl-tests' offsets, in fp32 (nccl-tests' "float", whose elements its sizes count);
// an all-to-all out of place, count elements to and from each peer (alltoall_perf's layout).
Status DeviceStep::EnqueueCall(const CollectiveCall& call, ncclComm_t comm, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(call.buffers.count);
  if (count == 0) return Status::Ok();
  float* data = reinterpret_cast<float*>(Region(2));
  switch (call.kind) {
    case CollectiveKind::kAllGather:
      LOOM_NCCL(ncclAllGather(data + call.key * call.buffers.in_place_send_offset, data, count,
                              ncclFloat32, comm, stream));
      return Status::Ok();
    case CollectiveKind::kReduceScatter:
      LOOM_NCCL(ncclReduceScatter(data, data + call.key * call.buffers.in_place_recv_offset, count,
                                  ncclFloat32, ncclSum, comm, stream));
      return Status::Ok();
    case CollectiveKind::kAllReduce:
      LOOM_NCCL(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm, stream));
      return Status::Ok();
    case CollectiveKind::kAllToAll: {
      float* received = data + call.buffers.send_count;
      LOOM_NCCL(ncclGroupStart());
      for (int32_t peer = 0; peer < call.ranks; ++peer) {
        const size_t at = static_cast<size_t>(peer) * count;
        LOOM_NCCL(ncclSend(data + at, count, ncclFloat32, peer, comm, stream));
        LOOM_NCCL(ncclRecv(received + at, count, ncclFloat32, peer, comm, stream));
      }
      LOOM_NCCL(ncclGroupEnd());
      return Status::Ok();
    }
  }
  return Status::Internal("unknown collective kind " + std::to_string(static_cast<int>(call.kind)));
}

// The optimizer's HBM traffic over the model states: StreamBytes reading the first half of the
// state buffer and writing the second, in as many launches as the bytes need.
Status DeviceStep::EnqueueTraffic(const MemoryShape& traffic, cudaStream_t stream) {
  char* base = Region(0);
  int64_t read = std::max<int64_t>(traffic.bytes_read, 0);
  int64_t written = std::max<int64_t>(traffic.bytes_written, 0);
  while (read > 0 || written > 0) {
    const int64_t r = std::min(read, half_bytes_), w = std::min(written, half_bytes_);
    LOOM_CUDA(StreamBytes(base, r, base + half_bytes_, w, stream));
    read -= r;
    written -= w;
  }
  return Status::Ok();
}

Status DeviceStep::Wait(const NcclComms& comms, double timeout_s) {
  std::vector<cudaEvent_t> events;
  for (const Event& e : ends_) events.push_back(e.get());
  for (const Event& e : received_) events.push_back(e.get());
  size_t done = 0;  // events[0, done) have completed
  auto poll = [&]() -> Result<bool> {
    while (done < events.size()) {
      Result<bool> finished = Finished(cudaEventQuery(events[done]));
      if (!finished.ok()) return finished;
      if (!*finished) break;
      ++done;
    }
    if (done == events.size()) return true;
    LOOM_RETURN_IF_ERROR(comms.CheckAsyncErrors());
    return false;
  };
  SteadyClock clock;
  const Status waited =
      WaitUntilDone(poll, clock, timeout_s, "rank " + std::to_string(program_.rank) + "'s step");
  return waited.code() == Status::Code::kDeadlineExceeded ? NotFinished(waited) : waited;
}

Status DeviceStep::NotFinished(const Status& deadline) const {
  std::string names;
  int32_t late = 0;
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    if (cudaEventQuery(ends_[i].get()) != cudaErrorNotReady) continue;
    if (late++ < kTasksNamedWhenLate) {
      names += (names.empty() ? "" : ", ") + plan_.graph().DescribeTask(program_.tasks[i].task);
    }
  }
  cudaGetLastError();
  return Status::DeadlineExceeded(deadline.message() + "; " + std::to_string(late) +
                                  " of its tasks had not finished, the first: " + names);
}

Result<DeviceStep::ClassTimes> DeviceStep::Profile(const NcclComms& comms, double timeout_s) {
  op_ends_.resize(program_.tasks.size());
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    while (op_ends_[i].size() < program_.tasks[i].ops.ops.size()) {
      cudaEvent_t event = nullptr;
      LOOM_CUDA(cudaEventCreateWithFlags(&event, cudaEventDefault));
      op_ends_[i].emplace_back(event);
    }
  }
  profiling_ = true;
  Result<RankTimes> times = Run(comms, timeout_s);
  profiling_ = false;
  if (!times.ok()) return times.status();
  ClassTimes out;
  const auto add = [&out](int32_t c, double predicted_s, double measured_s) {
    if (c < 0) return;
    out.count[static_cast<size_t>(c)] += 1;
    out.predicted_s[static_cast<size_t>(c)] += predicted_s;
    out.measured_s[static_cast<size_t>(c)] += measured_s;
  };
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    const DeviceTask& task = program_.tasks[i];
    if (task.work != DeviceWork::kOps) {
      add(TaskClass(task), plan_.graph().task(task.task).duration.ToSeconds(),
          (times->end[i] - times->start[i]).ToSeconds());
      continue;
    }
    cudaEvent_t before = starts_[i].get();
    for (size_t o = 0; o < task.ops.ops.size(); ++o) {
      float ms = 0;
      LOOM_CUDA(cudaEventElapsedTime(&ms, before, op_ends_[i][o].get()));
      before = op_ends_[i][o].get();
      add(OpClass(*task.ops.ops[o]), task.ops.predicted[o].ToSeconds(),
          static_cast<double>(ms) * 1e-3);
    }
  }
  return out;
}

Result<RankTimes> DeviceStep::Times() const {
  RankTimes times;
  auto since_epoch = [&](const Event& event) -> Result<SimTime> {
    float ms = 0;
    LOOM_CUDA(cudaEventElapsedTime(&ms, epoch_.get(), event.get()));
    return SimTime::FromMicros(static_cast<double>(ms) * 1e3);
  };
  for (size_t i = 0; i < program_.tasks.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(SimTime start, since_epoch(starts_[i]));
    LOOM_ASSIGN_OR_RETURN(SimTime end, since_epoch(ends_[i]));
    times.tasks.push_back(program_.tasks[i].task);
    times.start.push_back(start);
    times.end.push_back(end);
  }
  return times;
}

}  // namespace loom::cuda
