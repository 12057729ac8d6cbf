#include "probe/cuda/nccl_bench.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/dtype.h"
#include "probe/cuda/cuda_check.h"
#include "probe/cuda/device_buffer.h"
#include "probe/cuda/device_kernels.h"
#include "probe/deadline.h"
#include "probe/groups.h"

namespace loom::cuda {

std::string NcclVersionString() {
  int version_code = 0;
  const ncclResult_t code = ncclGetVersion(&version_code);
  if (code != ncclSuccess) return std::string("unknown (ncclGetVersion: ") + ncclGetErrorString(code) + ")";
  return DecodeNcclVersion(version_code);
}

namespace {

// Communicator init and split run NCCL's bootstrap over the network: minutes on a large job.
constexpr double kInitTimeoutS = 300;
// ncclCommFinalize only flushes and meets the other ranks once.
constexpr double kCloseTimeoutS = 30;
// After ncclCommAbort, NCCL's abort flag makes the aborted kernels return within moments.
constexpr double kDrainTimeoutS = 30;

// NCCL's return code of one call and the call's text and line, for messages.
struct NcclCall {
  ncclResult_t code = ncclSuccess;
  const char* text = "";
  int line = 0;
};
#define LOOM_NCCL_CALL(call) NcclCall{(call), #call, __LINE__}

// A non-blocking communicator returns ncclInProgress from calls whose work goes on in the background.
bool Failed(const NcclCall& call) { return call.code != ncclSuccess && call.code != ncclInProgress; }

ncclConfig_t NonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// |status| with |more| appended to its message.
Status Appended(const Status& status, const std::string& more) {
  switch (status.code()) {
    case Status::Code::kDeadlineExceeded:
      return Status::DeadlineExceeded(status.message() + more);
    case Status::Code::kResourceExhausted:
      return Status::ResourceExhausted(status.message() + more);
    case Status::Code::kUnimplemented:
      return Status::Unimplemented(status.message() + more);
    default:
      return Status::Internal(status.message() + more);
  }
}

Status AsyncError(ncclComm_t comm, ncclResult_t code, const std::string& what) {
  return Status::Internal(what + ": NCCL reported an asynchronous error: " + ncclGetErrorString(code) + ": " +
                          ncclGetLastError(comm));
}

// Polls |comm| until NCCL's background work on it (an init, a split, an enqueue that returned
// ncclInProgress, a finalize) is done.
Status WaitForComm(ncclComm_t comm, Clock& clock, double timeout_s, const std::string& what) {
  auto poll = [&]() -> Result<bool> {
    ncclResult_t state = ncclSuccess;
    LOOM_NCCL(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) return AsyncError(comm, state, what);
    return true;
  };
  return WaitUntilDone(poll, clock, timeout_s, what);
}

// Aborts |comm| after |why| and returns |why|, with abort's own failure added if it failed.
Status AbortAfter(ncclComm_t comm, const Status& why) {
  const ncclResult_t code = ncclCommAbort(comm);
  if (code == ncclSuccess) return why;
  return Appended(why, std::string("; ncclCommAbort failed too: ") + ncclGetErrorString(code));
}

// Finalizes and destroys |comm|, or aborts it when finalizing fails or does not finish.
Status CloseComm(ncclComm_t comm, Clock& clock, const std::string& what) {
  const ncclResult_t code = ncclCommFinalize(comm);
  const Status finalized = code == ncclSuccess || code == ncclInProgress
                               ? WaitForComm(comm, clock, kCloseTimeoutS, what)
                               : CheckNccl(code, "ncclCommFinalize(comm)", __FILE__, __LINE__);
  if (!finalized.ok()) return AbortAfter(comm, finalized);
  LOOM_NCCL(ncclCommDestroy(comm));
  return Status::Ok();
}

// One NCCL operation of a point: its buffers as this rank passes them.
struct Operation {
  ProfiledCollective collective = ProfiledCollective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  int64_t count = 0;  // CollectiveBuffers::count
  int key = 0;        // this rank in its group
  int ranks = 1;
};

// all_to_all as nccl-tests runs it (src/alltoall.cu): one send and one receive of |count| elements
// per peer, fused in a group. Once the group is open it is always closed, also after an error.
NcclCall EnqueueAllToAll(const Operation& op, ncclComm_t comm, cudaStream_t stream) {
  NcclCall result = LOOM_NCCL_CALL(ncclGroupStart());
  if (Failed(result)) return result;
  const size_t peer_bytes = static_cast<size_t>(op.count) * sizeof(float);
  const size_t count = static_cast<size_t>(op.count);
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  for (int peer = 0; peer < op.ranks && !Failed(result); ++peer) {
    const size_t offset = static_cast<size_t>(peer) * peer_bytes;
    result = LOOM_NCCL_CALL(ncclSend(send + offset, count, ncclFloat32, peer, comm, stream));
    if (!Failed(result)) result = LOOM_NCCL_CALL(ncclRecv(recv + offset, count, ncclFloat32, peer, comm, stream));
  }
  const NcclCall end = LOOM_NCCL_CALL(ncclGroupEnd());
  return Failed(result) ? result : end;
}

// send_recv as nccl-tests runs it (src/sendrecv.cu): every rank sends to the next rank of its group
// and receives from the previous one, fused in a group so that the ring does not deadlock.
NcclCall EnqueueSendRecv(const Operation& op, ncclComm_t comm, cudaStream_t stream) {
  NcclCall result = LOOM_NCCL_CALL(ncclGroupStart());
  if (Failed(result)) return result;
  const size_t count = static_cast<size_t>(op.count);
  const int next = (op.key + 1) % op.ranks;
  const int previous = (op.key - 1 + op.ranks) % op.ranks;
  result = LOOM_NCCL_CALL(ncclSend(op.send, count, ncclFloat32, next, comm, stream));
  if (!Failed(result)) result = LOOM_NCCL_CALL(ncclRecv(op.recv, count, ncclFloat32, previous, comm, stream));
  const NcclCall end = LOOM_NCCL_CALL(ncclGroupEnd());
  return Failed(result) ? result : end;
}

NcclCall Enqueue(const Operation& op, ncclComm_t comm, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(op.count);
  switch (op.collective) {
    case ProfiledCollective::kAllReduce:
      return LOOM_NCCL_CALL(ncclAllReduce(op.send, op.recv, count, ncclFloat32, ncclSum, comm, stream));
    case ProfiledCollective::kAllGather:
      return LOOM_NCCL_CALL(ncclAllGather(op.send, op.recv, count, ncclFloat32, comm, stream));
    case ProfiledCollective::kReduceScatter:
      return LOOM_NCCL_CALL(ncclReduceScatter(op.send, op.recv, count, ncclFloat32, ncclSum, comm, stream));
    case ProfiledCollective::kBroadcast:
      return LOOM_NCCL_CALL(ncclBroadcast(op.send, op.recv, count, ncclFloat32, /*root=*/0, comm, stream));
    case ProfiledCollective::kAllToAll:
      return EnqueueAllToAll(op, comm, stream);
    case ProfiledCollective::kSendRecv:
      return EnqueueSendRecv(op, comm, stream);
  }
  return NcclCall{ncclInvalidArgument, "Enqueue: unknown collective", __LINE__};
}

// A buffer of the fp32 elements nccl-tests' "float" type measures.
float* Floats(const DeviceBuffer& buffer) { return static_cast<float*>(buffer.get()); }

// The CUDA events around the timed batches of one point: batch k runs between events k and k+1.
class EventChain {
 public:
  EventChain() = default;
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  ~EventChain() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
  }

  Status Create(int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      cudaEvent_t event = nullptr;
      LOOM_CUDA(cudaEventCreate(&event));
      events_.push_back(event);
    }
    return Status::Ok();
  }
  cudaEvent_t operator[](int64_t i) const { return events_[static_cast<size_t>(i)]; }

  // The time of one operation in each batch of |operations_per_batch|, in microseconds.
  // REQUIRES: every event has completed.
  Result<std::vector<double>> MicrosecondsPerOperation(int64_t operations_per_batch) const {
    std::vector<double> times_us;
    for (size_t k = 0; k + 1 < events_.size(); ++k) {
      float ms = 0;
      LOOM_CUDA(cudaEventElapsedTime(&ms, events_[k], events_[k + 1]));
      times_us.push_back(1000.0 * ms / static_cast<double>(operations_per_batch));
    }
    return times_us;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// The communicator of one group on this rank.
struct GroupComm {
  GroupMembership membership;
  ncclComm_t comm = nullptr;
  std::string gone;  // why the communicator was aborted; empty while it is usable
};

std::string GroupName(ProbeGroup group) { return std::string(kProbeGroupNames.Name(group)); }

// "all_reduce of 1073741824 B over group intra_node (8 ranks)", for messages.
std::string Describe(const CollectivePoint& point, const GroupMembership& membership, bool in_place) {
  return std::string(kProfiledCollectiveNames.Name(point.collective)) + " of " + std::to_string(point.size_bytes) +
         " B over group " + GroupName(point.group) + " (" + std::to_string(membership.ranks) + " ranks" +
         (in_place ? ", in place)" : ")");
}

// Checks that NCCL placed this rank in |group|'s communicator where MembershipOf did.
Status CheckPlace(const GroupComm& group, const std::string& what) {
  int count = 0;
  int rank = 0;
  LOOM_NCCL(ncclCommCount(group.comm, &count));
  LOOM_NCCL(ncclCommUserRank(group.comm, &rank));
  if (count == group.membership.ranks && rank == group.membership.key) return Status::Ok();
  return Status::Internal(what + ": NCCL made this rank " + std::to_string(rank) + " of " + std::to_string(count) +
                          ", the group's membership says " + std::to_string(group.membership.key) + " of " +
                          std::to_string(group.membership.ranks));
}

// What cudaEventQuery or cudaStreamQuery answered: done, not yet, or an error of the work queued.
Result<bool> Finished(cudaError_t query) {
  if (query == cudaErrorNotReady) {
    // Not an error, yet the runtime may keep it as the last error, which the next kernel launch's
    // check would report (PyTorch's CUDAEvent::query clears it likewise).
    cudaGetLastError();
    return false;
  }
  LOOM_RETURN_IF_ERROR(CheckCuda(query, "cudaEventQuery/cudaStreamQuery of the queued work", __FILE__, __LINE__));
  return true;
}

// Waits until |query| (cudaEventQuery or cudaStreamQuery) says the GPU is done, watching |comm| for
// NCCL's asynchronous errors meanwhile.
Status WaitForGpu(ncclComm_t comm, const std::function<cudaError_t()>& query, Clock& clock, double timeout_s,
                  const std::string& what) {
  auto poll = [&]() -> Result<bool> {
    Result<bool> done = Finished(query());
    if (!done.ok() || *done) return done;
    ncclResult_t state = ncclSuccess;
    LOOM_NCCL(ncclCommGetAsyncError(comm, &state));
    if (state != ncclSuccess && state != ncclInProgress) return AsyncError(comm, state, what);
    return false;
  };
  return WaitUntilDone(poll, clock, timeout_s, what);
}

// The CollectiveBench over NCCL: one CUDA stream carries every operation, one point at a time.
//
// Hangs: every wait has a deadline. A communicator whose operation misses it, or that reports an
// asynchronous error, is aborted and stays gone for the rest of the run; its peers, whose
// operations cannot finish without this rank, miss their deadlines too and abort theirs, so the
// group is gone on every rank after at most one more timeout. NCCL's abort makes the aborted
// kernels return; should they not leave the stream within kDrainTimeoutS, the GPU is wedged: every
// later point of every group is Unavailable, the point's buffers are leaked rather than freed
// (cudaFree would wait for the hung kernel) and only ending the process frees the GPU.
class NcclCollectiveBench : public CollectiveBench {
 public:
  NcclCollectiveBench(Launcher& launcher, int device) : launcher_(launcher), device_(device) {}
  NcclCollectiveBench(const NcclCollectiveBench&) = delete;
  NcclCollectiveBench& operator=(const NcclCollectiveBench&) = delete;
  ~NcclCollectiveBench() override;

  // Collective over every rank: the device, the world communicator, one split per group.
  Status Init(const std::vector<ProbeGroup>& groups);

  Result<CollectiveTimes> Time(const CollectivePoint& point, const BenchSettings& settings,
                               double timeout_s) override;

 private:
  Status AgreeOnDevice();
  Status SetUpDevice();
  Status InitWorld();
  Status Split(ProbeGroup group);
  Status Adopt(GroupComm group, const NcclCall& call, const std::string& what);
  Status Prepare(const CollectiveBuffers& buffers, DeviceBuffer& send, DeviceBuffer& recv);
  Result<CollectiveTimes> Measure(GroupComm& group, const CollectivePoint& point, const CollectiveBuffers& buffers,
                                  const DeviceBuffer& send, const DeviceBuffer& recv, const BenchSettings& settings,
                                  double timeout_s);
  Result<std::vector<double>> TimeOperation(GroupComm& group, const Operation& op, int64_t operations_per_batch,
                                            const BenchSettings& settings, double timeout_s, const std::string& what);
  Status Launch(GroupComm& group, const Operation& op, double timeout_s, const std::string& what);
  Status Abandon(GroupComm& group, const Status& why);

  Launcher& launcher_;
  int device_;
  cudaStream_t stream_ = nullptr;
  std::map<ProbeGroup, GroupComm> groups_;
  std::string wedged_;  // why the GPU can run nothing more; empty while it can
  SteadyClock clock_;
};

NcclCollectiveBench::~NcclCollectiveBench() {
  // Split communicators before the world they came from, in the same order on every rank, since
  // finalizing meets the other ranks. A destructor cannot return errors; CloseComm aborts what it
  // could not finalize, and a wedged GPU is not waited for at all.
  for (ProbeGroup group : {ProbeGroup::kRails, ProbeGroup::kIntraNode, ProbeGroup::kWorld}) {
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second.comm == nullptr) continue;
    if (wedged_.empty()) {
      CloseComm(it->second.comm, clock_, "closing the " + GroupName(group) + " communicator");
    } else {
      ncclCommAbort(it->second.comm);
    }
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status NcclCollectiveBench::Init(const std::vector<ProbeGroup>& groups) {
  LOOM_RETURN_IF_ERROR(AgreeOnDevice());
  LOOM_RETURN_IF_ERROR(InitWorld());
  for (ProbeGroup group : groups) {
    if (groups_.count(group) == 0) LOOM_RETURN_IF_ERROR(Split(group));
  }
  // The world communicator is the parent of the splits; it is kept only when it is measured too.
  if (std::find(groups.begin(), groups.end(), ProbeGroup::kWorld) == groups.end()) {
    const ncclComm_t world = groups_.at(ProbeGroup::kWorld).comm;
    groups_.erase(ProbeGroup::kWorld);
    return CloseComm(world, clock_, "closing the world communicator after the splits");
  }
  return Status::Ok();
}

// Every rank learns whether every rank could select its GPU before any rank waits in an NCCL init
// that a failed rank would never join.
Status NcclCollectiveBench::AgreeOnDevice() {
  const Status local = SetUpDevice();
  Result<double> failures = launcher_.MaxOverRanks(local.ok() ? 0.0 : 1.0);
  if (!failures.ok()) return failures.status();
  if (!local.ok()) return local;
  if (*failures > 0) {
    return Status::Internal("another rank could not set up its GPU for NCCL (that rank's error says why); no "
                            "communicator was made");
  }
  return Status::Ok();
}

Status NcclCollectiveBench::SetUpDevice() {
  LOOM_CUDA(cudaSetDevice(device_));
  LOOM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  return Status::Ok();
}

Status NcclCollectiveBench::InitWorld() {
  // Rank 0's ncclGetUniqueId outcome travels with the id, so that when it failed every rank stops
  // instead of waiting for an init that cannot happen.
  struct IdMessage {
    ncclUniqueId id;
    int32_t failed;
  } message{};
  Status made = Status::Ok();
  if (launcher_.Rank() == 0) {
    made = CheckNccl(ncclGetUniqueId(&message.id), "ncclGetUniqueId(&message.id)", __FILE__, __LINE__);
    message.failed = made.ok() ? 0 : 1;
  }
  LOOM_RETURN_IF_ERROR(launcher_.Broadcast(&message, static_cast<int64_t>(sizeof message), 0));
  if (!made.ok()) return made;
  if (message.failed != 0) {
    return Status::Internal("rank 0 could not make NCCL's unique id (ncclGetUniqueId); rank 0's error says why");
  }
  GroupComm world;
  world.membership = MembershipOf(ProbeGroup::kWorld, launcher_.Hosts(), launcher_.Rank());
  ncclConfig_t config = NonBlockingConfig();
  const NcclCall call = LOOM_NCCL_CALL(
      ncclCommInitRankConfig(&world.comm, launcher_.Size(), message.id, launcher_.Rank(), &config));
  return Adopt(std::move(world), call,
               "NCCL's init of the world communicator (" + std::to_string(launcher_.Size()) + " ranks)");
}

Status NcclCollectiveBench::Split(ProbeGroup group) {
  GroupComm child;
  child.membership = MembershipOf(group, launcher_.Hosts(), launcher_.Rank());
  const ncclComm_t world = groups_.at(ProbeGroup::kWorld).comm;
  const std::string what = "ncclCommSplit of the " + GroupName(group) + " communicator (" +
                           std::to_string(child.membership.ranks) + " ranks)";
  ncclConfig_t config = NonBlockingConfig();
  const NcclCall call = LOOM_NCCL_CALL(
      ncclCommSplit(world, child.membership.color, child.membership.key, &child.comm, &config));
  LOOM_RETURN_IF_ERROR(Adopt(std::move(child), call, what));
  // A non-blocking split works on the parent too; the next split starts from a quiescent parent.
  return WaitForComm(world, clock_, kInitTimeoutS, what + " (waiting for the world communicator)");
}

// Waits until the communicator that |call| made for |group| is ready, checks this rank's place in
// it and keeps it; aborts it on any failure.
Status NcclCollectiveBench::Adopt(GroupComm group, const NcclCall& call, const std::string& what) {
  Status status = Failed(call) ? CheckNccl(call.code, call.text, __FILE__, call.line) : Status::Ok();
  if (status.ok() && group.comm == nullptr) status = Status::Internal(what + ": NCCL returned no communicator");
  if (status.ok()) status = WaitForComm(group.comm, clock_, kInitTimeoutS, what);
  if (status.ok()) status = CheckPlace(group, what);
  if (!status.ok()) return group.comm == nullptr ? status : AbortAfter(group.comm, status);
  const ProbeGroup key = group.membership.group;
  groups_[key] = std::move(group);
  return Status::Ok();
}

Result<CollectiveTimes> NcclCollectiveBench::Time(const CollectivePoint& point, const BenchSettings& settings,
                                                  double timeout_s) {
  const std::string name = GroupName(point.group);
  auto it = groups_.find(point.group);
  if (it == groups_.end()) {
    return Status::InvalidArgument("no " + name + " communicator: the group was not among those the NCCL bench was "
                                   "made for");
  }
  GroupComm& group = it->second;
  if (!wedged_.empty()) return Status::Unavailable(wedged_);
  if (group.comm == nullptr) return Status::Unavailable(group.gone);
  if (settings.repeats < 1 || settings.warmup < 0) {
    return Status::InvalidArgument("bench settings: repeats (" + std::to_string(settings.repeats) +
                                   ") must be at least 1 and warmup (" + std::to_string(settings.warmup) +
                                   ") at least 0");
  }
  Result<CollectiveBuffers> buffers = BuffersOf(point.collective, point.size_bytes, group.membership.ranks);
  if (!buffers.ok()) return buffers.status();
  LOOM_CUDA(cudaSetDevice(device_));
  DeviceBuffer send;
  DeviceBuffer recv;
  LOOM_RETURN_IF_ERROR(Prepare(*buffers, send, recv));
  Result<CollectiveTimes> times = Measure(group, point, *buffers, send, recv, settings, timeout_s);
  if (!wedged_.empty()) {
    send.release();  // cudaFree would wait behind the kernel the abort did not stop
    recv.release();
  }
  return times;
}

// Allocates the send buffer of send_count elements and the receive buffer of max(send_count,
// recv_count), which in place holds both (as nccl-tests sizes it), and fills them with random fp32
// values, different on every rank. settings.rotate_inputs is not used: nccl-tests does
// not rotate a point's buffers either, and a collective is bound by links, not by the L2 cache.
Status NcclCollectiveBench::Prepare(const CollectiveBuffers& buffers, DeviceBuffer& send, DeviceBuffer& recv) {
  const int64_t element_bytes = BytesPerElement(Dtype::kFp32);
  const int64_t recv_count = std::max(buffers.send_count, buffers.recv_count);
  Result<DeviceBuffer> send_memory = AllocateDevice(buffers.send_count * element_bytes);
  if (!send_memory.ok()) return send_memory.status();
  Result<DeviceBuffer> recv_memory = AllocateDevice(recv_count * element_bytes);
  if (!recv_memory.ok()) return recv_memory.status();
  send = std::move(send_memory).value();
  recv = std::move(recv_memory).value();
  const uint64_t seed = 2 * static_cast<uint64_t>(launcher_.Rank());
  LOOM_CUDA(FillRandom(send.get(), buffers.send_count, Dtype::kFp32, seed, stream_));
  LOOM_CUDA(FillRandom(recv.get(), recv_count, Dtype::kFp32, seed + 1, stream_));
  return Status::Ok();
}

// Out of place, then in place (nccl-tests' order). Once an operation was queued, any failure
// leaves the communicator in an unknown state: it is aborted.
Result<CollectiveTimes> NcclCollectiveBench::Measure(GroupComm& group, const CollectivePoint& point,
                                                     const CollectiveBuffers& buffers, const DeviceBuffer& send,
                                                     const DeviceBuffer& recv, const BenchSettings& settings,
                                                     double timeout_s) {
  const GroupMembership& m = group.membership;
  const int64_t operations_per_batch = OperationsPerBatch(point.size_bytes);
  Operation op{point.collective, Floats(send), Floats(recv), buffers.count, m.key, m.ranks};
  CollectiveTimes times;
  Result<std::vector<double>> out =
      TimeOperation(group, op, operations_per_batch, settings, timeout_s, Describe(point, m, false));
  if (!out.ok()) return Abandon(group, out.status());
  times.out_of_place_us = std::move(out).value();
  op.send = Floats(recv) + m.key * buffers.in_place_send_offset;
  op.recv = Floats(recv) + m.key * buffers.in_place_recv_offset;
  Result<std::vector<double>> in =
      TimeOperation(group, op, operations_per_batch, settings, timeout_s, Describe(point, m, true));
  if (!in.ok()) return Abandon(group, in.status());
  times.in_place_us = std::move(in).value();
  return times;
}

// Times |op| as nccl-tests does (common.cu, BenchTime): settings.warmup untimed operations, then
// settings.repeats batches of |operations_per_batch| back-to-back operations, each batch between
// two CUDA events, its time divided by the operations. The first warm-up operation runs alone (it
// sets up NCCL's connections, which can take seconds); the rest run straight before the timed
// batches, so that every rank enters the first batch together, out of a collective. The batches
// follow each other with no gap while the host waits on each in turn, |timeout_s| per batch.
Result<std::vector<double>> NcclCollectiveBench::TimeOperation(GroupComm& group, const Operation& op,
                                                               int64_t operations_per_batch,
                                                               const BenchSettings& settings, double timeout_s,
                                                               const std::string& what) {
  EventChain events;
  LOOM_RETURN_IF_ERROR(events.Create(settings.repeats + 1));
  if (settings.warmup > 0) {
    LOOM_RETURN_IF_ERROR(Launch(group, op, timeout_s, what));
    LOOM_RETURN_IF_ERROR(WaitForGpu(group.comm, [this] { return cudaStreamQuery(stream_); }, clock_, timeout_s, what));
  }
  for (int64_t i = 1; i < settings.warmup; ++i) LOOM_RETURN_IF_ERROR(Launch(group, op, timeout_s, what));
  LOOM_CUDA(cudaEventRecord(events[0], stream_));
  for (int64_t k = 0; k < settings.repeats; ++k) {
    for (int64_t i = 0; i < operations_per_batch; ++i) LOOM_RETURN_IF_ERROR(Launch(group, op, timeout_s, what));
    LOOM_CUDA(cudaEventRecord(events[k + 1], stream_));
    // At most two batches are queued: the GPU never waits for the host, and the host, never
    // blocked in a full launch queue, sees a hung batch in time.
    if (k >= 1) {
      LOOM_RETURN_IF_ERROR(
          WaitForGpu(group.comm, [&] { return cudaEventQuery(events[k]); }, clock_, timeout_s, what));
    }
  }
  LOOM_RETURN_IF_ERROR(WaitForGpu(group.comm, [&] { return cudaEventQuery(events[settings.repeats]); }, clock_,
                                  timeout_s, what));
  return events.MicrosecondsPerOperation(operations_per_batch);
}

// Queues one operation; a non-blocking communicator may answer ncclInProgress while it still sets
// the operation up (connections on first use), which is waited for.
Status NcclCollectiveBench::Launch(GroupComm& group, const Operation& op, double timeout_s, const std::string& what) {
  const NcclCall call = Enqueue(op, group.comm, stream_);
  if (call.code == ncclInProgress) return WaitForComm(group.comm, clock_, timeout_s, what);
  return CheckNccl(call.code, call.text, __FILE__, call.line);
}

// Aborts |group|'s communicator after |why|, marks it gone, and checks that the aborted kernels
// leave the stream (else the GPU is wedged); returns |why|.
Status NcclCollectiveBench::Abandon(GroupComm& group, const Status& why) {
  const bool hang = why.code() == Status::Code::kDeadlineExceeded;
  const std::string name = GroupName(group.membership.group);
  const std::string after = hang ? "a hang" : "an error (" + why.message() + ")";
  group.gone = "the " + name + " communicator was aborted after " + after +
               "; rerun loom probe --resume to measure its remaining points";
  const Status aborted = AbortAfter(group.comm, why);
  group.comm = nullptr;
  auto drained = [this]() -> Result<bool> { return Finished(cudaStreamQuery(stream_)); };
  const Status drain = WaitUntilDone(drained, clock_, kDrainTimeoutS, "the aborted kernels");
  if (drain.ok()) return aborted;
  const std::string stuck = drain.code() == Status::Code::kDeadlineExceeded
                                ? "did not leave its stream within " +
                                      std::to_string(static_cast<int>(kDrainTimeoutS)) + " s"
                                : "left its stream in error: " + drain.message();
  wedged_ = "the GPU is wedged: the kernels of the " + name + " communicator, aborted after " + after + ", " +
            stuck + "; no more points can be measured in this process: rerun loom probe --resume";
  return Appended(aborted, "; " + wedged_);
}

}  // namespace

Result<std::unique_ptr<CollectiveBench>> MakeNcclCollectiveBench(Launcher& launcher, int device,
                                                                 const std::vector<ProbeGroup>& groups) {
  auto bench = std::make_unique<NcclCollectiveBench>(launcher, device);
  LOOM_RETURN_IF_ERROR(bench->Init(groups));
  return std::unique_ptr<CollectiveBench>(std::move(bench));
}

}  // namespace loom::cuda
