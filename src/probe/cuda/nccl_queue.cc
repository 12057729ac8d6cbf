#include "probe/cuda/nccl_queue.h"

#include <cstddef>
#include <string>

namespace loom::cuda {

Status AsyncError(ncclComm_t comm, ncclResult_t code) {
  return Status::Internal(std::string("NCCL reported an asynchronous error: ") +
                          ncclGetErrorString(code) + ": " + ncclGetLastError(comm));
}

namespace {

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
    if (!Failed(result))
      result = LOOM_NCCL_CALL(ncclRecv(recv + offset, count, ncclFloat32, peer, comm, stream));
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
  if (!Failed(result))
    result = LOOM_NCCL_CALL(ncclRecv(op.recv, count, ncclFloat32, previous, comm, stream));
  const NcclCall end = LOOM_NCCL_CALL(ncclGroupEnd());
  return Failed(result) ? result : end;
}

}  // namespace

NcclCall EnqueueOperation(const Operation& op, ncclComm_t comm, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(op.count);
  switch (op.collective) {
    case ProfiledCollective::kAllReduce:
      return LOOM_NCCL_CALL(
          ncclAllReduce(op.send, op.recv, count, ncclFloat32, ncclSum, comm, stream));
    case ProfiledCollective::kAllGather:
      return LOOM_NCCL_CALL(ncclAllGather(op.send, op.recv, count, ncclFloat32, comm, stream));
    case ProfiledCollective::kReduceScatter:
      return LOOM_NCCL_CALL(
          ncclReduceScatter(op.send, op.recv, count, ncclFloat32, ncclSum, comm, stream));
    case ProfiledCollective::kBroadcast:
      return LOOM_NCCL_CALL(
          ncclBroadcast(op.send, op.recv, count, ncclFloat32, /*root=*/0, comm, stream));
    case ProfiledCollective::kAllToAll:
      return EnqueueAllToAll(op, comm, stream);
    case ProfiledCollective::kSendRecv:
      return EnqueueSendRecv(op, comm, stream);
  }
  return NcclCall{ncclInvalidArgument, "EnqueueOperation: unknown collective", __LINE__};
}

Result<bool> Finished(cudaError_t query) {
  if (query == cudaErrorNotReady) {
    // Not an error, yet the runtime may keep it as the last error, which the next kernel launch's
    // check would report (PyTorch's CUDAEvent::query clears it likewise).
    cudaGetLastError();
    return false;
  }
  LOOM_RETURN_IF_ERROR(
      CheckCuda(query, "cudaEventQuery/cudaStreamQuery of the queued work", __FILE__, __LINE__));
  return true;
}

Status NcclQueue::Enqueue() {
  const NcclCall call = EnqueueOperation(op_, comm_, stream_);
  if (call.code != ncclInProgress) return CheckNccl(call.code, call.text, __FILE__, call.line);
  return Status::Internal(
      std::string(call.text) +
      " returned ncclInProgress: the communicator is non-blocking, "
      "though loom makes the ones it times blocking; NCCL_COMM_BLOCKING=0 in the environment "
      "overrides that: unset it");
}

Status NcclQueue::Mark(int64_t k) {
  LOOM_CUDA(cudaEventRecord(events_[k], stream_));
  return Status::Ok();
}

Result<bool> NcclQueue::Reached(int64_t k) {
  Result<bool> done = Finished(cudaEventQuery(events_[k]));
  if (!done.ok() || *done) return done;
  ncclResult_t state = ncclSuccess;
  LOOM_NCCL(ncclCommGetAsyncError(comm_, &state));
  if (state != ncclSuccess && state != ncclInProgress) return AsyncError(comm_, state);
  return false;
}

Result<double> NcclQueue::MicrosecondsBetween(int64_t from, int64_t to) {
  float ms = 0;
  LOOM_CUDA(cudaEventElapsedTime(&ms, events_[from], events_[to]));
  return 1000.0 * ms;
}

Status NcclQueue::Abort() {
  return CheckNccl(ncclCommAbort(comm_), "ncclCommAbort(comm)", __FILE__, __LINE__);
}

}  // namespace loom::cuda
