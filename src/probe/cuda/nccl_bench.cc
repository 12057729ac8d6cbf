#include "probe/cuda/nccl_bench.h"

#include <algorithm>
#include <atomic>
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
#include "device/cuda/cuda_check.h"
#include "device/cuda/device_buffer.h"
#include "device/cuda/device_kernels.h"
#include "device/deadline.h"
#include "device/watchdog.h"
#include "probe/collective_timing.h"
#include "probe/cuda/nccl_queue.h"
#include "probe/groups.h"

namespace loom::cuda {
namespace {

// Communicator init and split run NCCL's bootstrap over the network: minutes on a large job.
constexpr double kInitTimeoutS = 300;
// ncclCommFinalize only flushes and meets the other ranks once.
constexpr double kCloseTimeoutS = 30;
// After ncclCommAbort, NCCL's abort flag makes the aborted kernels return within moments.
constexpr double kDrainTimeoutS = 30;

// Communicators come in two kinds (NVIDIA/nccl dbc86fd06e8b0c4517b95d8958a09ccacf9520c9 =
// v2.28.9-1):
//   - the world communicator the groups are split from is non-blocking, so that its init and
//     every split are waited for with a deadline and aborted (docs/userguide/source/usage/
//     communicators.rst, "Fault Tolerance"). A split runs in the background whenever the parent
//     is non-blocking: ncclCommSplit queues its job with ncclAsyncLaunch(..., parent), which takes
//     the group's blocking mode from the parent's config (src/group.cc, ncclAsyncLaunch);
//   - the communicators that are timed are blocking, as nccl-tests' are (NCCL_CONFIG_INITIALIZER
//     in src/common.cu, initComms): a non-blocking one answers ncclInProgress to every operation
//     and needs polling between operations, which made small collectives several times too slow.
//     A split child takes its own config when one is passed (src/init.cc, ncclCommInitChildComm:
//     parseCommConfig(childComm, config); it inherits the parent's only when config is NULL), so a
//     blocking child comes out of a non-blocking parent. NCCL_COMM_BLOCKING in the environment
//     overrides both (src/init.cc, envConfigOverride); NcclQueue::Enqueue says so.
ncclConfig_t ConfigOf(bool blocking) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  return config;
}

// Polls |comm| until NCCL's background work on it (an init, a split, an enqueue that returned
// ncclInProgress, a finalize) is done.
Status WaitForComm(ncclComm_t comm, Clock& clock, double timeout_s, const std::string& what) {
  auto poll = [&]() -> Result<bool> {
    ncclResult_t state = ncclSuccess;
    LOOM_NCCL(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) return AsyncError(comm, state).WithContext(what);
    return true;
  };
  return WaitUntilDone(poll, clock, timeout_s, what);
}

// Aborts |comm| after |why| and returns |why|, with abort's own failure added if it failed.
Status AbortAfter(ncclComm_t comm, const Status& why) {
  const ncclResult_t code = ncclCommAbort(comm);
  if (code == ncclSuccess) return why;
  return why.WithSuffix(std::string("; ncclCommAbort failed too: ") + ncclGetErrorString(code));
}

// Finalizes and destroys the non-blocking |comm|, or aborts it when finalizing fails or does not
// finish.
Status CloseComm(ncclComm_t comm, Clock& clock, const std::string& what) {
  const ncclResult_t code = ncclCommFinalize(comm);
  const Status finalized = code == ncclSuccess || code == ncclInProgress
                               ? WaitForComm(comm, clock, kCloseTimeoutS, what)
                               : CheckNccl(code, "ncclCommFinalize(comm)", __FILE__, __LINE__);
  if (!finalized.ok()) return AbortAfter(comm, finalized);
  LOOM_NCCL(ncclCommDestroy(comm));
  return Status::Ok();
}

// A buffer of the fp32 elements nccl-tests' "float" type measures.
float* Floats(const DeviceBuffer& buffer) { return static_cast<float*>(buffer.get()); }

// The communicator of one group on this rank.
struct GroupComm {
  GroupMembership membership;
  ncclComm_t comm = nullptr;
  std::string gone;  // why the communicator was aborted; empty while it is usable
};

std::string GroupName(ProbeGroup group) { return std::string(kProbeGroupNames.Name(group)); }

// "all_reduce of 1073741824 B over group intra_node (8 ranks)", for messages.
std::string Describe(const CollectivePoint& point, const GroupMembership& membership,
                     bool in_place) {
  return std::string(kProfiledCollectiveNames.Name(point.collective)) + " of " +
         std::to_string(point.size_bytes) + " B over group " + GroupName(point.group) + " (" +
         std::to_string(membership.ranks) + " ranks" + (in_place ? ", in place)" : ")");
}

// Checks that NCCL placed this rank in |group|'s communicator where MembershipOf did.
Status CheckPlace(const GroupComm& group, const std::string& what) {
  int count = 0;
  int rank = 0;
  LOOM_NCCL(ncclCommCount(group.comm, &count));
  LOOM_NCCL(ncclCommUserRank(group.comm, &rank));
  if (count == group.membership.ranks && rank == group.membership.key) return Status::Ok();
  return Status::Internal(what + ": NCCL made this rank " + std::to_string(rank) + " of " +
                          std::to_string(count) + ", the group's membership says " +
                          std::to_string(group.membership.key) + " of " +
                          std::to_string(group.membership.ranks));
}

// The CollectiveBench over NCCL: one CUDA stream carries every operation, one point at a time.
//
// Hangs: every wait has a deadline. The timed communicators are blocking, so their deadlines are
// kept by |watchdog_|, which calls ncclCommAbort from its own thread when an operation, or the
// wait for it, runs past its deadline; NCCL's abort flag then makes the aborted kernels (and a
// call blocked inside NCCL) return. A communicator whose operation misses its deadline, or that
// reports an asynchronous error, is aborted and stays gone for the rest of the run; its peers,
// whose operations cannot finish without this rank, miss their deadlines too and abort theirs, so
// the group is gone on every rank after at most one more timeout. Should the aborted kernels not
// leave the stream within kDrainTimeoutS, the GPU is wedged: every later point of every group is
// Unavailable, the point's buffers are leaked rather than freed (cudaFree would wait for the hung
// kernel) and only ending the process frees the GPU.
//
// NCCL documents ncclCommAbort as safe only while no other thread is inside NCCL on that
// communicator (docs/userguide/source/usage/communicators.rst, "Fault Tolerance"). The host's
// queries (ncclCommGetAsyncError) never overlap the abort (Watchdog::RunUnlessFired), and nothing
// is queued once it started; only an operation that is itself stuck inside NCCL when the deadline
// passes (a first connection to a dead peer) is aborted under it: the one case a blocking
// communicator cannot end otherwise.
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
  Result<ncclComm_t> InitWorld();
  Status Split(ncclComm_t world, ProbeGroup group);
  Status CloseBlocking(ncclComm_t comm, const std::string& what);
  Status Prepare(const CollectiveBuffers& buffers, DeviceBuffer& send, DeviceBuffer& recv);
  Result<CollectiveTimes> Measure(GroupComm& group, const CollectivePoint& point,
                                  const CollectiveBuffers& buffers, const DeviceBuffer& send,
                                  const DeviceBuffer& recv, const BenchSettings& settings,
                                  double timeout_s);
  Result<std::vector<double>> TimeOperation(GroupComm& group, const Operation& op,
                                            const TimingPlan& timing);
  Status Abandon(GroupComm& group, const Status& why);

  Launcher& launcher_;
  int device_;
  cudaStream_t stream_ = nullptr;
  std::map<ProbeGroup, GroupComm> groups_;  // every one blocking
  std::string wedged_;                      // why the GPU can run nothing more; empty while it can
  SteadyClock clock_;
  Watchdog watchdog_{clock_};
};

NcclCollectiveBench::~NcclCollectiveBench() {
  // In the same order on every rank, since finalizing meets the other ranks. A destructor cannot
  // return errors; CloseBlocking aborts what it could not finalize, and a wedged GPU is not
  // waited for at all.
  for (ProbeGroup group : {ProbeGroup::kRails, ProbeGroup::kIntraNode, ProbeGroup::kWorld}) {
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second.comm == nullptr) continue;
    if (wedged_.empty()) {
      CloseBlocking(it->second.comm, "closing the " + GroupName(group) + " communicator");
    } else {
      ncclCommAbort(it->second.comm);
    }
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

// Every group, the world too when it is measured, is a blocking split of a non-blocking world
// communicator (ConfigOf says why), which is closed once the splits are made.
Status NcclCollectiveBench::Init(const std::vector<ProbeGroup>& groups) {
  LOOM_RETURN_IF_ERROR(AgreeOnDevice());
  LOOM_ASSIGN_OR_RETURN(ncclComm_t world, InitWorld());
  for (ProbeGroup group : groups) {
    if (groups_.count(group) == 0) LOOM_RETURN_IF_ERROR(Split(world, group));
  }
  return CloseComm(world, clock_, "closing the world communicator the groups were split from");
}

// Every rank learns whether every rank could select its GPU before any rank waits in an NCCL init
// that a failed rank would never join.
Status NcclCollectiveBench::AgreeOnDevice() {
  const Status local = SetUpDevice();
  LOOM_ASSIGN_OR_RETURN(double failures, launcher_.MaxOverRanks(local.ok() ? 0.0 : 1.0));
  if (!local.ok()) return local;
  if (failures > 0) {
    return Status::Internal(
        "another rank could not set up its GPU for NCCL (that rank's error says why); no "
        "communicator was made");
  }
  return Status::Ok();
}

Status NcclCollectiveBench::SetUpDevice() {
  LOOM_CUDA(cudaSetDevice(device_));
  LOOM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  return Status::Ok();
}

// The non-blocking world communicator, ready. Rank 0's ncclGetUniqueId outcome travels with the
// id, so that when it failed every rank stops instead of waiting for an init that cannot happen.
Result<ncclComm_t> NcclCollectiveBench::InitWorld() {
  struct IdMessage {
    ncclUniqueId id;
    int32_t failed;
  } message{};
  Status made = Status::Ok();
  if (launcher_.Rank() == 0) {
    made =
        CheckNccl(ncclGetUniqueId(&message.id), "ncclGetUniqueId(&message.id)", __FILE__, __LINE__);
    message.failed = made.ok() ? 0 : 1;
  }
  LOOM_RETURN_IF_ERROR(launcher_.Broadcast(&message, static_cast<int64_t>(sizeof message), 0));
  if (!made.ok()) return made;
  if (message.failed != 0) {
    return Status::Internal(
        "rank 0 could not make NCCL's unique id (ncclGetUniqueId); rank 0's error says why");
  }
  const std::string what =
      "NCCL's init of the world communicator (" + std::to_string(launcher_.Size()) + " ranks)";
  ncclComm_t world = nullptr;
  ncclConfig_t config = ConfigOf(/*blocking=*/false);
  const NcclCall call = LOOM_NCCL_CALL(
      ncclCommInitRankConfig(&world, launcher_.Size(), message.id, launcher_.Rank(), &config));
  Status status =
      Failed(call) ? CheckNccl(call.code, call.text, __FILE__, call.line) : Status::Ok();
  if (status.ok() && world == nullptr)
    status = Status::Internal(what + ": NCCL returned no communicator");
  if (status.ok()) status = WaitForComm(world, clock_, kInitTimeoutS, what);
  if (!status.ok()) return world == nullptr ? status : AbortAfter(world, status);
  return world;
}

// Splits |group|'s blocking communicator from |world|, checks this rank's place in it and keeps it.
// The split runs in the background and is waited for on |world| (communicators.rst's example of a
// non-blocking split): NCCL writes the child's handle only once it is made, from its own thread
// (src/init.cc, ncclCommInitRankFunc). On failure |world| is aborted, which joins that thread
// (ncclCommAbort -> ncclCommEnsureReady -> ncclGroupJobAbort), then the child if NCCL made one.
Status NcclCollectiveBench::Split(ncclComm_t world, ProbeGroup group) {
  GroupComm child;
  child.membership = MembershipOf(group, launcher_.Hosts(), launcher_.Rank());
  const std::string what = "ncclCommSplit of the " + GroupName(group) + " communicator (" +
                           std::to_string(child.membership.ranks) + " ranks)";
  ncclComm_t made = nullptr;
  ncclConfig_t config = ConfigOf(/*blocking=*/true);
  const NcclCall call = LOOM_NCCL_CALL(
      ncclCommSplit(world, child.membership.color, child.membership.key, &made, &config));
  Status status = Failed(call) ? CheckNccl(call.code, call.text, __FILE__, call.line)
                               : WaitForComm(world, clock_, kInitTimeoutS,
                                             what + " (waiting on the world communicator)");
  if (status.ok()) {
    child.comm = std::atomic_ref<ncclComm_t>(made).load(std::memory_order_acquire);
    if (child.comm == nullptr) status = Status::Internal(what + ": NCCL returned no communicator");
  }
  if (status.ok()) status = CheckPlace(child, what);
  if (status.ok()) {
    groups_[group] = std::move(child);
    return Status::Ok();
  }
  status = AbortAfter(world, status);
  return made == nullptr ? status : AbortAfter(made, status);
}

// Finalizes and destroys the blocking |comm|; the watchdog aborts it when finalizing does not
// finish in time, and it is aborted when finalizing fails.
Status NcclCollectiveBench::CloseBlocking(ncclComm_t comm, const std::string& what) {
  auto finalize = [comm] {
    return CheckNccl(ncclCommFinalize(comm), "ncclCommFinalize(comm)", __FILE__, __LINE__);
  };
  auto abort = [comm] {
    return CheckNccl(ncclCommAbort(comm), "ncclCommAbort(comm)", __FILE__, __LINE__);
  };
  LOOM_RETURN_IF_ERROR(RunOrAbort(watchdog_, kCloseTimeoutS, what, finalize, abort));
  LOOM_NCCL(ncclCommDestroy(comm));
  return Status::Ok();
}

Result<CollectiveTimes> NcclCollectiveBench::Time(const CollectivePoint& point,
                                                  const BenchSettings& settings, double timeout_s) {
  const std::string name = GroupName(point.group);
  auto it = groups_.find(point.group);
  if (it == groups_.end()) {
    return Status::InvalidArgument(
        "no " + name +
        " communicator: the group was not among those the NCCL bench was "
        "made for");
  }
  GroupComm& group = it->second;
  if (!wedged_.empty()) return Status::Unavailable(wedged_);
  if (group.comm == nullptr) return Status::Unavailable(group.gone);
  if (settings.repeats < 1 || settings.warmup < 0) {
    return Status::InvalidArgument("bench settings: repeats (" + std::to_string(settings.repeats) +
                                   ") must be at least 1 and warmup (" +
                                   std::to_string(settings.warmup) + ") at least 0");
  }
  LOOM_ASSIGN_OR_RETURN(CollectiveBuffers buffers,
                        BuffersOf(point.collective, point.size_bytes, group.membership.ranks));
  LOOM_CUDA(cudaSetDevice(device_));
  DeviceBuffer send;
  DeviceBuffer recv;
  LOOM_RETURN_IF_ERROR(Prepare(buffers, send, recv));
  Result<CollectiveTimes> times = Measure(group, point, buffers, send, recv, settings, timeout_s);
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
Status NcclCollectiveBench::Prepare(const CollectiveBuffers& buffers, DeviceBuffer& send,
                                    DeviceBuffer& recv) {
  const int64_t element_bytes = BytesPerElement(Dtype::kFp32);
  const int64_t recv_count = std::max(buffers.send_count, buffers.recv_count);
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer send_memory,
                        AllocateDevice(buffers.send_count * element_bytes));
  LOOM_ASSIGN_OR_RETURN(DeviceBuffer recv_memory, AllocateDevice(recv_count * element_bytes));
  send = std::move(send_memory);
  recv = std::move(recv_memory);
  const uint64_t seed = 2 * static_cast<uint64_t>(launcher_.Rank());
  LOOM_CUDA(FillRandom(send.get(), buffers.send_count, Dtype::kFp32, seed, stream_));
  LOOM_CUDA(FillRandom(recv.get(), recv_count, Dtype::kFp32, seed + 1, stream_));
  return Status::Ok();
}

// Out of place, then in place (nccl-tests' order).
Result<CollectiveTimes> NcclCollectiveBench::Measure(GroupComm& group, const CollectivePoint& point,
                                                     const CollectiveBuffers& buffers,
                                                     const DeviceBuffer& send,
                                                     const DeviceBuffer& recv,
                                                     const BenchSettings& settings,
                                                     double timeout_s) {
  const GroupMembership& m = group.membership;
  TimingPlan timing{settings.warmup, settings.repeats, OperationsPerBatch(point.size_bytes),
                    timeout_s, Describe(point, m, false)};
  Operation op{point.collective, Floats(send), Floats(recv), buffers.count, m.key, m.ranks};
  CollectiveTimes times;
  LOOM_ASSIGN_OR_RETURN(times.out_of_place_us, TimeOperation(group, op, timing));
  op.send = Floats(recv) + m.key * buffers.in_place_send_offset;
  op.recv = Floats(recv) + m.key * buffers.in_place_recv_offset;
  timing.what = Describe(point, m, true);
  LOOM_ASSIGN_OR_RETURN(times.in_place_us, TimeOperation(group, op, timing));
  return times;
}

// Times |op| on |group|'s communicator (TimeCollective says how). Once an operation was queued,
// any failure leaves the communicator in an unknown state: TimeCollective has aborted it, and it
// is abandoned.
Result<std::vector<double>> NcclCollectiveBench::TimeOperation(GroupComm& group,
                                                               const Operation& op,
                                                               const TimingPlan& timing) {
  EventChain events;
  LOOM_RETURN_IF_ERROR(
      events.Create(timing.repeats + 1));  // nothing queued yet: the communicator is fine
  NcclQueue queue(group.comm, stream_, op, events);
  Result<std::vector<double>> times = TimeCollective(queue, watchdog_, timing);
  if (!times.ok()) return Abandon(group, times.status());
  return times;
}

// Marks |group|'s communicator, which TimeCollective aborted after |why|, gone, and checks that
// the aborted kernels leave the stream (else the GPU is wedged); returns |why|.
Status NcclCollectiveBench::Abandon(GroupComm& group, const Status& why) {
  const bool hang = why.code() == Status::Code::kDeadlineExceeded;
  const std::string name = GroupName(group.membership.group);
  const std::string after = hang ? "a hang" : "an error (" + why.message() + ")";
  group.gone = "the " + name + " communicator was aborted after " + after +
               "; rerun loom probe --resume to measure its remaining points";
  group.comm = nullptr;
  auto drained = [this]() -> Result<bool> { return Finished(cudaStreamQuery(stream_)); };
  const Status drain = WaitUntilDone(drained, clock_, kDrainTimeoutS, "the aborted kernels");
  if (drain.ok()) return why;
  const std::string stuck = drain.code() == Status::Code::kDeadlineExceeded
                                ? "did not leave its stream within " +
                                      std::to_string(static_cast<int>(kDrainTimeoutS)) + " s"
                                : "left its stream in error: " + drain.message();
  wedged_ = "the GPU is wedged: the kernels of the " + name + " communicator, aborted after " +
            after + ", " + stuck +
            "; no more points can be measured in this process: rerun loom probe --resume";
  return why.WithSuffix("; " + wedged_);
}

}  // namespace

Result<std::unique_ptr<CollectiveBench>> MakeNcclCollectiveBench(
    Launcher& launcher, int device, const std::vector<ProbeGroup>& groups) {
  auto bench = std::make_unique<NcclCollectiveBench>(launcher, device);
  LOOM_RETURN_IF_ERROR(bench->Init(groups));
  return std::unique_ptr<CollectiveBench>(std::move(bench));
}

}  // namespace loom::cuda
