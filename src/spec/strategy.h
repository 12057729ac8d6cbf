#ifndef LOOM_SPEC_STRATEGY_H_
#define LOOM_SPEC_STRATEGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/status.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {

enum class ScheduleKind { kGpipe, k1F1B, kInterleaved, kZbH1, kZbV, kDualPipeV };
inline constexpr EnumNames<ScheduleKind, 6> kScheduleNames({{
    {ScheduleKind::kGpipe, "gpipe"},
    {ScheduleKind::k1F1B, "1f1b"},
    {ScheduleKind::kInterleaved, "interleaved"},
    {ScheduleKind::kZbH1, "zb-h1"},
    {ScheduleKind::kZbV, "zb-v"},
    {ScheduleKind::kDualPipeV, "dualpipev"},
}});

enum class Recompute { kNone, kSelective, kFull };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames({{
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
}});

enum class Optimizer { kAdam, kAdafactor, kSgd };
inline constexpr EnumNames<Optimizer, 3> kOptimizerNames({{
    {Optimizer::kAdam, "adam"},
    {Optimizer::kAdafactor, "adafactor"},
    {Optimizer::kSgd, "sgd"},
}});

enum class Offload { kNone, kOptimizer };
inline constexpr EnumNames<Offload, 2> kOffloadNames({{
    {Offload::kNone, "none"},
    {Offload::kOptimizer, "optimizer"},
}});

// How one training step is spread over GPUs. Field names follow Megatron-LM's arguments.
struct Strategy {
  int64_t tp = 1;   // tensor parallel
  int64_t pp = 1;   // pipeline parallel
  int64_t dp = 1;   // data parallel
  int64_t cp = 1;   // context parallel
  int64_t ep = 1;   // expert parallel
  bool sp = false;  // sequence parallel (over the tp group)
  int64_t vpp = 1;  // model chunks per pipeline stage (virtual stages)
  int64_t micro_batch = 1;
  int64_t global_batch = 1;
  int64_t seq_len = 2048;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  Recompute recompute = Recompute::kNone;
  // With full recompute: how many layers of each model chunk are recomputed (Megatron-LM's
  // --recompute-method block --recompute-num-layers); the others keep their activations.
  // 0 recomputes every layer.
  int64_t recompute_layers = 0;
  int64_t zero_stage = 0;  // 0..3 (Rajbhandari et al. 2020)
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Offload offload = Offload::kNone;
  bool allow_cross_node_tp = false;  // accept tp > GPUs per node

  // tp * pp * dp * cp: the GPUs one step occupies (ep is carved out of dp * cp).
  int64_t WorldSize() const { return tp * pp * dp * cp; }
  // global_batch / (micro_batch * dp). REQUIRES: Validate() passed.
  int64_t NumMicroBatches() const { return global_batch / (micro_batch * dp); }
};

// Every rule |strategy| breaks for |model| on |cluster|, one message each, in a fixed order.
// Each message names the setting (as its command-line flag), the values and the fix.
std::vector<std::string> StrategyViolations(const Strategy& strategy, const ModelSpec& model,
                                            const ClusterSpec& cluster);

// OK, or InvalidArgument with every violation on its own line.
Status ValidateStrategy(const Strategy& strategy, const ModelSpec& model, const ClusterSpec& cluster);

}  // namespace loom

#endif  // LOOM_SPEC_STRATEGY_H_
