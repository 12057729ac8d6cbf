#include "program/gpu_layout.h"

#include <string>

namespace loom {

GpuCoordinates CoordinatesOf(const GpuLayout& layout, int32_t stages, int32_t rank) {
  GpuCoordinates at;
  at.stage = rank % stages;
  at.lane = rank / stages;
  at.t = at.lane % layout.tp;
  at.c = (at.lane / layout.tp) % layout.cp;
  at.r = at.lane / (layout.tp * layout.cp);
  at.et = at.lane % layout.etp;
  at.e = (at.lane / layout.etp) % layout.ep;
  at.ed = at.lane / (layout.etp * layout.ep);
  return at;
}

int32_t GpuOfRank(const GpuLayout& layout, int32_t stages, int32_t rank) {
  return (rank % stages) * layout.lanes() + rank / stages;
}

Status CheckGpuLayout(const GpuLayout& layout, std::string_view where) {
  const auto sizes = [&] {
    return "tp " + std::to_string(layout.tp) + ", cp " + std::to_string(layout.cp) + ", dp " +
           std::to_string(layout.dp) + ", ep " + std::to_string(layout.ep) + ", etp " +
           std::to_string(layout.etp);
  };
  for (int32_t size : {layout.tp, layout.cp, layout.dp, layout.ep, layout.etp}) {
    if (size < 1) {
      return Status::InvalidArgument(std::string(where) + ": every group size is at least 1, not " +
                                     sizes() + "; write the plan again with loom plan --emit plan");
    }
  }
  // Guard the products against overflow before multiplying: a plan of 2^31 GPUs is not a plan.
  const int64_t lanes = int64_t{layout.tp} * layout.cp * layout.dp;
  const int64_t expert = int64_t{layout.ep} * layout.etp;
  if (lanes > (int64_t{1} << 24)) {
    return Status::InvalidArgument(std::string(where) + ": " + sizes() + " makes " +
                                   std::to_string(lanes) +
                                   " GPUs per pipeline stage, more than loom runs (2^24)");
  }
  if (lanes % expert != 0) {
    return Status::InvalidArgument(
        std::string(where) + ": the expert groups do not tile the GPUs of a stage: " + sizes() +
        " gives " + std::to_string(lanes) + " GPUs per stage (tp x cp x dp), which ep x etp = " +
        std::to_string(expert) +
        " does not divide; choose ep and etp whose product divides tp x cp x dp (Megatron-core "
        "requires it too)");
  }
  return Status::Ok();
}

std::string_view UnfoldedGroupName(UnfoldedGroup kind) {
  switch (kind) {
    case UnfoldedGroup::kTp: return "tp";
    case UnfoldedGroup::kCp: return "cp";
    case UnfoldedGroup::kEp: return "ep";
    case UnfoldedGroup::kEtp: return "etp";
    case UnfoldedGroup::kDp: return "dp";
    case UnfoldedGroup::kEdp: return "edp";
  }
  return "?";
}

UnfoldedGroup UnfoldedGroupOf(CommGroup group) {
  switch (group) {
    case CommGroup::kTp: return UnfoldedGroup::kTp;
    case CommGroup::kCp: return UnfoldedGroup::kCp;
    case CommGroup::kEp: return UnfoldedGroup::kEp;
    case CommGroup::kEtp: return UnfoldedGroup::kEtp;
    case CommGroup::kDp: return UnfoldedGroup::kDp;
  }
  return UnfoldedGroup::kDp;
}

CommGroup CommGroupOf(UnfoldedGroup group) {
  switch (group) {
    case UnfoldedGroup::kTp: return CommGroup::kTp;
    case UnfoldedGroup::kCp: return CommGroup::kCp;
    case UnfoldedGroup::kEp: return CommGroup::kEp;
    case UnfoldedGroup::kEtp: return CommGroup::kEtp;
    case UnfoldedGroup::kDp:
    case UnfoldedGroup::kEdp: break;
  }
  return CommGroup::kDp;
}

int32_t GroupSize(const GpuLayout& layout, UnfoldedGroup kind) {
  switch (kind) {
    case UnfoldedGroup::kTp: return layout.tp;
    case UnfoldedGroup::kCp: return layout.cp;
    case UnfoldedGroup::kEp: return layout.ep;
    case UnfoldedGroup::kEtp: return layout.etp;
    case UnfoldedGroup::kDp: return layout.cp * layout.dp;
    case UnfoldedGroup::kEdp: return layout.edp();
  }
  return 1;
}

int32_t GroupLeaderLane(const GpuLayout& layout, int32_t lane, UnfoldedGroup kind) {
  const int32_t t = lane % layout.tp, c = (lane / layout.tp) % layout.cp;
  const int32_t et = lane % layout.etp, e = (lane / layout.etp) % layout.ep;
  switch (kind) {
    case UnfoldedGroup::kTp: return lane - t;
    case UnfoldedGroup::kCp: return lane - layout.tp * c;
    case UnfoldedGroup::kEp: return lane - layout.etp * e;
    case UnfoldedGroup::kEtp: return lane - et;
    case UnfoldedGroup::kDp: return t;
    case UnfoldedGroup::kEdp: return lane % (layout.etp * layout.ep);
  }
  return lane;
}

std::vector<int32_t> GroupRanks(const GpuLayout& layout, int32_t stages, int32_t rank,
                                UnfoldedGroup kind) {
  const int32_t stage = rank % stages;
  const int32_t leader = GroupLeaderLane(layout, rank / stages, kind);
  std::vector<int32_t> ranks;
  for (int32_t lane = 0; lane < layout.lanes(); ++lane) {
    if (GroupLeaderLane(layout, lane, kind) == leader) ranks.push_back(stage + stages * lane);
  }
  return ranks;
}

}  // namespace loom
