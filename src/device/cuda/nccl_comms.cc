#include "device/cuda/nccl_comms.h"

#include <algorithm>
#include <utility>

#include "device/cuda/cuda_check.h"

namespace loom::cuda {
namespace {

ncclConfig_t BlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  return config;
}

std::string RanksText(const std::vector<int32_t>& ranks) {
  std::string text;
  for (int32_t r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

}  // namespace

Result<std::unique_ptr<NcclComms>> NcclComms::Create(
    std::span<const std::vector<int32_t>> communicators, std::span<const NcclEdge> edges,
    Launcher& launcher) {
  std::unique_ptr<NcclComms> comms(new NcclComms());
  comms->rank_ = launcher.Rank();
  LOOM_RETURN_IF_ERROR(comms->InitWorld(launcher));
  comms->communicators_.assign(communicators.size(), nullptr);
  for (size_t c = 0; c < communicators.size(); ++c) {
    // A communicator of one rank has nothing to communicate (validate's collectives on one are
    // DeviceWork::kNothing).
    if (communicators[c].size() < 2) continue;
    const std::string name =
        "communicator " + std::to_string(c) + " (ranks " + RanksText(communicators[c]) + ")";
    LOOM_ASSIGN_OR_RETURN(ncclComm_t comm, comms->Split(communicators[c], name));
    comms->communicators_[c] = comm;
  }
  comms->edges_.assign(edges.size(), nullptr);
  for (size_t e = 0; e < edges.size(); ++e) {
    const NcclEdge& edge = edges[e];
    if (edge.from == edge.to || std::min(edge.from, edge.to) < 0 ||
        std::max(edge.from, edge.to) >= launcher.Size()) {
      return Status::Internal("device program: edge " + std::to_string(e) + " from rank " +
                              std::to_string(edge.from) + " to rank " + std::to_string(edge.to) +
                              " does not join two ranks of the " + std::to_string(launcher.Size()) +
                              " in the job");
    }
    const std::vector<int32_t> ends = {std::min(edge.from, edge.to), std::max(edge.from, edge.to)};
    const std::string name = "edge " + std::to_string(e) + " (rank " + std::to_string(edge.from) +
                             " to " + std::to_string(edge.to) + ")";
    LOOM_ASSIGN_OR_RETURN(ncclComm_t comm, comms->Split(ends, name));
    comms->edges_[e] = comm;
  }
  return comms;
}

Status NcclComms::InitWorld(Launcher& launcher) {
  // Rank 0's ncclGetUniqueId outcome travels with the id, so that when it failed every rank stops
  // instead of waiting for an init that cannot happen.
  struct IdMessage {
    ncclUniqueId id;
    int32_t failed;
  } message{};
  Status made = Status::Ok();
  if (launcher.Rank() == 0) {
    made =
        CheckNccl(ncclGetUniqueId(&message.id), "ncclGetUniqueId(&message.id)", __FILE__, __LINE__);
    message.failed = made.ok() ? 0 : 1;
  }
  LOOM_RETURN_IF_ERROR(launcher.Broadcast(&message, static_cast<int64_t>(sizeof message), 0));
  if (!made.ok()) return made;
  if (message.failed != 0) {
    return Status::Internal(
        "rank 0 could not make NCCL's unique id (ncclGetUniqueId); rank 0's error says why");
  }
  ncclConfig_t config = BlockingConfig();
  LOOM_NCCL(ncclCommInitRankConfig(&world_, launcher.Size(), message.id, launcher.Rank(), &config));
  held_.push_back(
      {world_, "the world communicator (" + std::to_string(launcher.Size()) + " ranks)"});
  return Status::Ok();
}

Result<ncclComm_t> NcclComms::Split(const std::vector<int32_t>& ranks, const std::string& name) {
  const auto place = std::find(ranks.begin(), ranks.end(), rank_);
  const bool member = place != ranks.end();
  ncclConfig_t config = BlockingConfig();
  ncclComm_t comm = nullptr;
  LOOM_NCCL(ncclCommSplit(world_, member ? 0 : NCCL_SPLIT_NOCOLOR, rank_, &comm, &config));
  if (!member) return comm;  // null: NCCL_SPLIT_NOCOLOR makes no communicator
  if (comm == nullptr)
    return Status::Internal("ncclCommSplit of " + name + " returned no communicator");
  held_.push_back({comm, name});
  int count = 0, user_rank = 0;
  LOOM_NCCL(ncclCommCount(comm, &count));
  LOOM_NCCL(ncclCommUserRank(comm, &user_rank));
  const int expected = static_cast<int>(place - ranks.begin());
  if (count != static_cast<int>(ranks.size()) || user_rank != expected) {
    return Status::Internal("ncclCommSplit of " + name + " made world rank " +
                            std::to_string(rank_) + " rank " + std::to_string(user_rank) + " of " +
                            std::to_string(count) + ", expected " + std::to_string(expected) +
                            " of " + std::to_string(ranks.size()));
  }
  return comm;
}

Status NcclComms::CheckAsyncErrors() const {
  for (const Held& held : held_) {
    ncclResult_t state = ncclSuccess;
    LOOM_NCCL(ncclCommGetAsyncError(held.comm, &state));
    if (state == ncclSuccess || state == ncclInProgress) continue;
    return Status::Internal("NCCL reported an asynchronous error on " + held.name + " of rank " +
                            std::to_string(rank_) + ": " + ncclGetErrorString(state) + ": " +
                            ncclGetLastError(held.comm));
  }
  return Status::Ok();
}

Status NcclComms::Close() {
  Status closed = Status::Ok();
  while (!held_.empty() && closed.ok()) {
    // ncclCommDestroy finalizes first: it flushes the communicator's work.
    closed = CheckNccl(ncclCommDestroy(held_.back().comm), "ncclCommDestroy", __FILE__, __LINE__);
    if (!closed.ok()) closed = Status::Internal(closed.message() + " (" + held_.back().name + ")");
    held_.pop_back();
  }
  Abort();
  return closed;
}

void NcclComms::Abort() {
  // A destructor's path: abort's own failure has nowhere to go, and the communicator is gone either
  // way.
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) ncclCommAbort(it->comm);
  held_.clear();
  Forget();
}

void NcclComms::Forget() {
  world_ = nullptr;
  std::fill(communicators_.begin(), communicators_.end(), nullptr);
  std::fill(edges_.begin(), edges_.end(), nullptr);
}

}  // namespace loom::cuda
