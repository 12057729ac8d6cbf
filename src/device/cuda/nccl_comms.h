#ifndef LOOM_DEVICE_CUDA_NCCL_COMMS_H_
#define LOOM_DEVICE_CUDA_NCCL_COMMS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nccl.h>

#include "core/status.h"
#include "device/launcher.h"

namespace loom::cuda {

// The two ranks of the job that one point-to-point edge joins: |from| sends to |to|.
struct NcclEdge {
  int32_t from = -1;
  int32_t to = -1;
};

// The NCCL communicators one rank of a job runs on (`loom validate --backend cuda`: the step of
// its rank program): the world, one per communicator of two ranks or more (the plan's), and one
// per point-to-point edge (the device program's), so that each communicator is used from one
// stream on each rank.
//
// They are blocking (ncclConfig_t::blocking = 1): every NCCL call returns once its kernel is on
// the stream, so that an event recorded after it on the stream times it. Destroying the object
// aborts every communicator still held; Close is the orderly end of a run that went well.
class NcclComms {
 public:
  // Makes the communicators, collectively over every rank of |launcher|, which all pass the same
  // |communicators| (each one's world ranks, ascending) and |edges|: the world communicator from
  // rank 0's ncclGetUniqueId, broadcast over |launcher| (as nccl-tests does); then, in the order
  // of |communicators|, one ncclCommSplit of the world per communicator of two ranks or more
  // (color 0 for its members, NCCL_SPLIT_NOCOLOR for the others, key the world rank, so that a
  // communicator's ranks keep their ascending order); then one split per edge, of its two ranks.
  // Internal when NCCL fails or places this rank elsewhere than expected; a rank that fails in a
  // split leaves the others waiting in it (blocking calls). REQUIRES: the current device is this
  // rank's GPU.
  static Result<std::unique_ptr<NcclComms>> Create(
      std::span<const std::vector<int32_t>> communicators, std::span<const NcclEdge> edges,
      Launcher& launcher);

  ~NcclComms() { Abort(); }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  ncclComm_t world() const { return world_; }
  // The communicator of |communicators|[index]; null when this rank is not one of its ranks, or
  // it has one rank only.
  ncclComm_t communicator(int32_t index) const {
    return communicators_[static_cast<size_t>(index)];
  }
  // The communicator of edge |index|; null when this rank is neither of its ends.
  ncclComm_t edge(int32_t index) const { return edges_[static_cast<size_t>(index)]; }
  // The NCCL rank of |peer| in the communicator of an edge between |peer| and |self| (world
  // ranks): the split orders its two ranks by world rank.
  static int PeerInEdge(int32_t peer, int32_t self) { return peer < self ? 0 : 1; }

  // Internal, naming the communicator, when NCCL reported an asynchronous error on one of them
  // (a peer that failed, a broken connection).
  Status CheckAsyncErrors() const;

  // Destroys every communicator, the splits first and the world last, in one order on every rank
  // (each rank calls it once its last step went well). After a failure the rest are aborted.
  Status Close();

  // Aborts every communicator still held: NCCL's kernels that wait for a peer return, and the
  // communicators are gone. Local to this rank; for a rank that stops after an error.
  void Abort();

 private:
  NcclComms() = default;

  struct Held {
    ncclComm_t comm = nullptr;
    std::string name;  // "the world communicator", for messages
  };

  Status InitWorld(Launcher& launcher);
  // Splits the world into the communicator of |ranks| (ascending world ranks); every rank calls
  // it, and the result is null where this rank is not one of |ranks|. Checks this rank's place.
  Result<ncclComm_t> Split(const std::vector<int32_t>& ranks, const std::string& name);
  // Forgets every communicator: the lookups below answer null.
  void Forget();

  int32_t rank_ = 0;
  std::vector<Held> held_;  // in the order they were made: the world, communicators, edges
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> communicators_;  // by the plan's communicator index
  std::vector<ncclComm_t> edges_;          // by edge index
};

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_NCCL_COMMS_H_
