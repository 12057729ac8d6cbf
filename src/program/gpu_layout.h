#ifndef LOOM_PROGRAM_GPU_LAYOUT_H_
#define LOOM_PROGRAM_GPU_LAYOUT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "op/op.h"

namespace loom {

// GPUs are numbered as Megatron-core numbers them (megatron/core/parallel_state.py,
// RankGenerator with its default order "tp-cp-ep-dp-pp"): inside pipeline stage s, the dense
// layers see GPU g = s * (tp * cp * dp) + lane with lane = t + tp * (c + cp * r) (tensor rank t,
// context rank c, data-parallel replica r), and the expert layers see the same lane as
// lane = e_t + etp * (e + ep * d) (expert-tensor rank e_t, expert rank e, expert-data rank d).
//
// The unfolded graph keeps StepGraph's rank convention so that every reader of a step (the
// engine, the comparison, the trace) reads it unchanged: rank u is stage u % stages of lane
// u / stages (StepGraph::replicas is the number of lanes, tp * cp * dp). GpuOfRank gives the
// Megatron rank of a graph rank.
struct GpuLayout {
  int32_t tp = 1, cp = 1, dp = 1, ep = 1, etp = 1;

  int32_t lanes() const { return tp * cp * dp; }    // GPUs per pipeline stage
  int32_t edp() const { return lanes() / (ep * etp); }  // expert data parallel
  friend bool operator==(const GpuLayout&, const GpuLayout&) = default;
};

// Where a GPU sits in its stage's groups.
struct GpuCoordinates {
  int32_t stage = 0;
  int32_t lane = 0;
  int32_t t = 0, c = 0, r = 0;     // dense: tensor, context, data-parallel ranks
  int32_t et = 0, e = 0, ed = 0;   // experts: expert-tensor, expert, expert-data ranks
};

GpuCoordinates CoordinatesOf(const GpuLayout& layout, int32_t stages, int32_t rank);
// The Megatron-core global rank of graph rank |rank| of an unfolded step.
int32_t GpuOfRank(const GpuLayout& layout, int32_t stages, int32_t rank);

// OK when |layout|'s groups tile the GPUs: every size at least 1, and the expert groups
// (etp * ep) divide the GPUs of a stage (tp * cp * dp). Otherwise InvalidArgument naming
// |where| (e.g. "plan.json: gpus"), the sizes and the fix.
Status CheckGpuLayout(const GpuLayout& layout, std::string_view where);

// Which group a collective of the unfolded step runs on.
enum class UnfoldedGroup : uint8_t {
  kTp,   // same stage, context rank and replica
  kCp,   // same stage, tensor rank and replica
  kEp,   // same stage, expert-tensor and expert-data rank
  kEtp,  // same stage, expert and expert-data rank
  kDp,   // the dense gradients' group: same stage and tensor rank (data x context, as Megatron's
         // data-parallel group with context parallelism)
  kEdp,  // the experts' gradients: same stage, expert-tensor and expert rank
};
inline constexpr int32_t kUnfoldedGroups = 6;
// The name of |kind|: "tp", "cp", "ep", "etp", "dp", "edp".
std::string_view UnfoldedGroupName(UnfoldedGroup kind);
// The number of GPUs in a group of |kind|.
int32_t GroupSize(const GpuLayout& layout, UnfoldedGroup kind);
// The lane of the first member (the one whose varying ranks are all 0) of the group of |kind| that
// lane |lane| is in: together with the stage, it names the group.
int32_t GroupLeaderLane(const GpuLayout& layout, int32_t lane, UnfoldedGroup kind);
// The group of the op vocabulary's |group| (kDp: the dense data-parallel group), and back (kEdp,
// the expert data-parallel group, is data-parallel: kDp).
UnfoldedGroup UnfoldedGroupOf(CommGroup group);
CommGroup CommGroupOf(UnfoldedGroup group);
// The ranks of the group of |kind| that graph rank |rank| belongs to, ascending.
std::vector<int32_t> GroupRanks(const GpuLayout& layout, int32_t stages, int32_t rank,
                                UnfoldedGroup kind);

}  // namespace loom

#endif  // LOOM_PROGRAM_GPU_LAYOUT_H_
