#include "plan/search_space.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "core/checked.h"
#include "plan/deepspeed_config.h"
#include "plan/deepspeed_partition.h"
#include "sim/stage_balance.h"
#include "spec/pipeline_layout.h"

namespace loom {
namespace {

// Recomputation candidates: none, selective, full, and Megatron-LM's block method with a quarter,
// half and three quarters of each chunk's layers recomputed.
struct RecomputeChoice {
  Recompute kind;
  int64_t layers;
};

// A setter parses one value into its Constraints field, or returns what the value should be.
using Setter = std::function<std::optional<std::string>(std::string_view, Constraints&)>;

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A whole number from |least| to |most|: a pinned degree of 0 would divide the GPUs or layers by
// zero, and a huge one overflow their product. The bounds are ValidateStrategy's
// (spec/strategy.cc).
Setter IntSetter(std::optional<int64_t> Constraints::*field, int64_t least = 0,
                 int64_t most = int64_t{1} << 20) {
  return [field, least, most](std::string_view text, Constraints& c) -> std::optional<std::string> {
    std::optional<int64_t> value = ParseInt(text);
    if (!value.has_value() || *value < least || *value > most) {
      return "a whole number from " + std::to_string(least) + " to " + std::to_string(most);
    }
    c.*field = *value;
    return std::nullopt;
  };
}

Setter BoolSetter(std::optional<bool> Constraints::*field) {
  return [field](std::string_view text, Constraints& c) -> std::optional<std::string> {
    if (text == "true" || text == "on" || text == "1") {
      c.*field = true;
    } else if (text == "false" || text == "off" || text == "0") {
      c.*field = false;
    } else {
      return std::string("true or false");
    }
    return std::nullopt;
  };
}

template <typename Enum, size_t N>
Setter EnumSetter(std::optional<Enum> Constraints::*field, const EnumNames<Enum, N>& names) {
  return [field, &names](std::string_view text, Constraints& c) -> std::optional<std::string> {
    std::optional<Enum> value = names.Parse(text);
    if (!value.has_value()) return "one of " + names.Choices();
    c.*field = *value;
    return std::nullopt;
  };
}

const std::vector<std::pair<std::string, Setter>>& Keys() {
  static const std::vector<std::pair<std::string, Setter>> keys = {
      {"tp", IntSetter(&Constraints::tp, 1)},
      {"pp", IntSetter(&Constraints::pp, 1)},
      {"dp", IntSetter(&Constraints::dp, 1)},
      {"cp", IntSetter(&Constraints::cp, 1)},
      {"ep", IntSetter(&Constraints::ep, 1)},
      {"etp", IntSetter(&Constraints::etp)},
      {"vpp", IntSetter(&Constraints::vpp, 1, 1024)},
      {"micro_batch", IntSetter(&Constraints::micro_batch, 1)},
      {"schedule", EnumSetter(&Constraints::schedule, kScheduleNames)},
      {"recompute", EnumSetter(&Constraints::recompute, kRecomputeNames)},
      {"recompute_layers", IntSetter(&Constraints::recompute_layers, 0, 10000)},
      {"zero_stage", IntSetter(&Constraints::zero_stage, 0, 3)},
      {"sp", BoolSetter(&Constraints::sp)},
      {"offload", EnumSetter(&Constraints::offload, kOffloadNames)},
      {"cp_comm", EnumSetter(&Constraints::cp_comm, kCpCommNames)},
      {"overlap_grad_reduce", BoolSetter(&Constraints::overlap_grad_reduce)},
      {"overlap_param_gather", BoolSetter(&Constraints::overlap_param_gather)},
      {"tp_comm_overlap", BoolSetter(&Constraints::tp_comm_overlap)},
      {"first_stage_layers", IntSetter(&Constraints::first_stage_layers, 0, 10000)},
      {"last_stage_layers", IntSetter(&Constraints::last_stage_layers, 0, 10000)},
      {"microbatch_group", IntSetter(&Constraints::microbatch_group, 0, int64_t{1} << 20)},
  };
  return keys;
}

std::string CanonicalKey(std::string_view key) {
  std::string out(key);
  std::replace(out.begin(), out.end(), '-', '_');
  if (out == "mbs") return "micro_batch";
  if (out == "zero") return "zero_stage";
  return out;
}

std::string KeyList() {
  std::string out;
  for (const auto& [key, setter] : Keys()) out += (out.empty() ? "" : ", ") + key;
  return out;
}

// The pinned value, or every candidate.
template <typename T>
std::vector<T> Choices(const std::optional<T>& fixed, std::vector<T> candidates) {
  if (fixed.has_value()) return {*fixed};
  return candidates;
}

std::vector<int64_t> Divisors(int64_t n, int64_t at_most) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= std::min(n, at_most); ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// A schedule and its chunks per stage.
struct ScheduleChoice {
  ScheduleKind kind;
  int64_t vpp;
};

std::vector<ScheduleChoice> ScheduleChoices(const Constraints& fixed, int64_t pp, int64_t layers) {
  if (pp == 1) return {{fixed.schedule.value_or(ScheduleKind::k1F1B), fixed.vpp.value_or(1)}};
  std::vector<ScheduleChoice> out;
  const auto chunks = [&](ScheduleKind kind, std::vector<int64_t> candidates) {
    for (int64_t vpp : Choices(fixed.vpp, std::move(candidates))) out.push_back({kind, vpp});
  };
  const std::vector<ScheduleKind> kinds =
      fixed.schedule.has_value()
          ? std::vector<ScheduleKind>{*fixed.schedule}
          : std::vector<ScheduleKind>{ScheduleKind::k1F1B, ScheduleKind::kInterleaved,
                                      ScheduleKind::kZbH1, ScheduleKind::kZbV,
                                      ScheduleKind::kDualPipeV};
  for (ScheduleKind kind : kinds) {
    if (kind == ScheduleKind::kInterleaved) {
      // Every chunk count from 2 that splits a stage's share of the layers, rounded down or up.
      const int64_t down = layers / pp, up = (layers + pp - 1) / pp;
      std::vector<int64_t> counts;
      for (int64_t v = 2; v <= up; ++v) {
        if (down % v == 0 || up % v == 0) counts.push_back(v);
      }
      if (counts.empty()) counts.push_back(2);
      chunks(kind, counts);
    } else if (kind == ScheduleKind::kZbV || kind == ScheduleKind::kDualPipeV) {
      chunks(kind, {2});
    } else {
      chunks(kind, {1});
    }
  }
  return out;
}

// Layers on the first and last stage: an even split when pp * vpp divides the layers, else the
// splits with the fewest layers on the fullest stage, the stages between equal. Llama 3 405B ran
// 126 layers on 16 stages with one layer fewer on the first and last, whose embedding and output
// layer make them heavier (Dubey et al. 2024, Section 3.3.2): 7/7, beside 6/8 and 8/6.
// - The interleaved schedule: a stage's layers split over its chunks as LayersPerVirtualStage
//   says, evenly or not (7 layers over 8 chunks leave the embedding's chunk empty, as Meta ran),
//   so only the stage totals count; an even split when pp divides the layers, else the most even
//   balanced split alone: chunks of a few layers are not balanced by moving one layer between the
//   ends as whole stages are, and one split keeps the 405B search within its time
//   (benchmarks/plan).
// - Other schedules: every balanced split whose counts divide by vpp (the V schedules' two chunks
//   hold a stage's layers in halves).
std::vector<std::pair<int64_t, int64_t>> StageSplits(const Constraints& fixed, int64_t layers,
                                                     int64_t pp, int64_t vpp, ScheduleKind kind) {
  if (fixed.first_stage_layers.has_value() || fixed.last_stage_layers.has_value()) {
    return {{fixed.first_stage_layers.value_or(0), fixed.last_stage_layers.value_or(0)}};
  }
  const bool interleaved = kind == ScheduleKind::kInterleaved;
  if (pp < 3 || layers % (pp * (interleaved ? 1 : vpp)) == 0) return {{0, 0}};
  const int64_t step = interleaved ? 1 : vpp;
  const int64_t least_end = interleaved ? std::max<int64_t>(1, vpp - 1) : vpp;
  std::vector<std::pair<int64_t, int64_t>> best;
  int64_t best_max = INT64_MAX;
  for (int64_t middle = vpp; middle * (pp - 2) < layers; middle += step) {
    const int64_t ends = layers - middle * (pp - 2);
    for (int64_t first = least_end; first < ends; first += step) {
      const int64_t last = ends - first;
      if (last % step != 0 || last < least_end) continue;
      const int64_t fullest = std::max({first, last, middle});
      if (fullest < best_max) best.clear(), best_max = fullest;
      if (fullest == best_max) best.push_back({first, last});
    }
  }
  if (best.empty()) return {{0, 0}};  // the strategy rules say why none splits
  if (interleaved) {
    return {*std::min_element(best.begin(), best.end(), [](const auto& a, const auto& b) {
      return std::abs(a.first - a.second) < std::abs(b.first - b.second);
    })};
  }
  return best;
}

// The interleaved schedule's micro-batch group: Megatron-LM's default (pp) where it groups the
// micro-batches, else the smallest group it accepts (the one that keeps the fewest micro-batches'
// activations in the warm-up), or the default, which the rules then refuse, when there is none.
int64_t MicrobatchGroup(const Constraints& fixed, int64_t micro_batches, int64_t pp) {
  if (fixed.microbatch_group.has_value()) return *fixed.microbatch_group;
  if (micro_batches % pp == 0) return 0;
  return SmallestMicrobatchGroup(micro_batches, pp);
}

std::vector<RecomputeChoice> RecomputeChoices(const Constraints& fixed, int64_t chunk_layers) {
  if (fixed.recompute.has_value()) {
    return {{*fixed.recompute,
             *fixed.recompute == Recompute::kFull ? fixed.recompute_layers.value_or(0) : 0}};
  }
  std::vector<RecomputeChoice> out = {{Recompute::kNone, 0}, {Recompute::kSelective, 0}};
  if (fixed.recompute_layers.has_value()) {
    out.push_back({Recompute::kFull, *fixed.recompute_layers});
    return out;
  }
  out.push_back({Recompute::kFull, 0});
  for (int64_t quarters = 1; quarters <= 3; ++quarters) {
    const int64_t n = chunk_layers * quarters / 4;
    if (n > 0 && n < chunk_layers && out.back().layers != n) out.push_back({Recompute::kFull, n});
  }
  return out;
}

struct Space {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const SearchRequest& request;
  std::vector<Strategy>& out;
};

// ZeRO, offload, sequence parallelism, the overlap switches and the cp exchange, for one layout,
// micro-batch, schedule and recomputation.
void AddShardingAndOverlap(const Space& space, Strategy s) {
  const Constraints& fixed = space.request.fixed;
  // Without data-parallel replicas ZeRO shards nothing and there is no gradient to reduce: ZeRO 1-3
  // and the overlap switches would repeat ZeRO 0 and "off".
  const bool replicated = s.dp * s.cp > 1 || (space.model.moe.has_value() && s.ExpertDp() > 1);
  std::vector<int64_t> zeros = {0};
  if (replicated) zeros = s.pp == 1 ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{0, 1};
  const std::vector<CpComm> rings = s.cp > 1 ? std::vector<CpComm>{CpComm::kP2p, CpComm::kAllGather}
                                             : std::vector<CpComm>{CpComm::kP2p};
  // With every switch pinned, "on" repeats "off".
  const bool switches_pinned = fixed.overlap_grad_reduce.has_value() &&
                               fixed.overlap_param_gather.has_value() &&
                               fixed.tp_comm_overlap.has_value();
  for (int64_t zero : Choices(fixed.zero_stage, zeros)) {
    s.zero_stage = zero;
    if (space.request.deepspeed_accumulation) s.grad_accumulation = DeepSpeedGradAccumulation(s);
    std::vector<Offload> offloads = {Offload::kNone};
    if (zero >= 1) offloads.push_back(Offload::kOptimizer);
    if (zero == 3) offloads.push_back(Offload::kOptimizerAndParams);
    for (Offload offload : Choices(fixed.offload, offloads)) {
      s.offload = offload;
      // DeepSpeed keeps bf16 gradients in bf16 at ZeRO-2 and at ZeRO-1 with offload, whatever its
      // config asks (DeepSpeedKeepsBf16Gradients): budget them so, as it would run.
      if (space.request.deepspeed_accumulation)
        s.grad_reduce_in_bf16 = DeepSpeedBudgetsBf16Gradients(s);
      for (bool sp : Choices(
               fixed.sp, s.tp > 1 ? std::vector<bool>{true, false} : std::vector<bool>{false})) {
        s.sp = sp;
        const bool can_overlap = !switches_pinned && (replicated || (sp && s.tp > 1));
        for (bool overlap :
             can_overlap ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
          s.overlap_grad_reduce = fixed.overlap_grad_reduce.value_or(overlap);
          s.overlap_param_gather = fixed.overlap_param_gather.value_or(overlap && zero >= 1);
          s.tp_comm_overlap = fixed.tp_comm_overlap.value_or(overlap && sp && s.tp > 1);
          for (CpComm cp_comm : Choices(fixed.cp_comm, rings)) {
            s.cp_comm = cp_comm;
            space.out.push_back(s);
          }
        }
      }
    }
  }
}

// The settings below the parallel degrees, for one layout.
void AddSettings(const Space& space, Strategy s) {
  const Constraints& fixed = space.request.fixed;
  const int64_t layers = space.model.num_layers;
  for (int64_t mbs : Choices(fixed.micro_batch, {1, 2, 4, 8, 16})) {
    if (!fixed.micro_batch.has_value() && space.request.global_batch % (mbs * s.dp) != 0) continue;
    s.micro_batch = mbs;
    for (const ScheduleChoice& schedule : ScheduleChoices(fixed, s.pp, layers)) {
      s.schedule = schedule.kind;
      s.vpp = schedule.vpp;
      s.microbatch_group =
          schedule.kind == ScheduleKind::kInterleaved
              ? MicrobatchGroup(fixed, space.request.global_batch / (mbs * s.dp), s.pp)
              : fixed.microbatch_group.value_or(0);
      // Stages on different GPUs get a balanced layout when bounded (PlannerBalancesLayers),
      // which replaces any split of the layers: one candidate, not one per split.
      Strategy unsplit = s;
      unsplit.first_stage_layers = unsplit.last_stage_layers = 0;
      const bool balanced = !fixed.first_stage_layers.has_value() &&
                            !fixed.last_stage_layers.has_value() &&
                            PlannerBalancesLayers(space.cluster, unsplit);
      const std::vector<std::pair<int64_t, int64_t>> splits =
          balanced ? std::vector<std::pair<int64_t, int64_t>>{{0, 0}}
                   : StageSplits(fixed, layers, s.pp, s.vpp, s.schedule);
      const bool deepspeed_split = space.request.deepspeed_stage_split && !balanced && s.vpp == 1 &&
                                   s.pp > 1 && layers % s.pp != 0 && !fixed.first_stage_layers &&
                                   !fixed.last_stage_layers;
      s.layout.clear();
      if (deepspeed_split) s.layout = MegatronDeepSpeedStageLayers(space.model, s.pp);
      for (const auto& [first, last] :
           deepspeed_split ? std::vector<std::pair<int64_t, int64_t>>{{0, 0}} : splits) {
        s.first_stage_layers = first;
        s.last_stage_layers = last;
        for (const RecomputeChoice& recompute : RecomputeChoices(fixed, layers / (s.pp * s.vpp))) {
          s.recompute = recompute.kind;
          s.recompute_layers = recompute.layers;
          AddShardingAndOverlap(space, s);
        }
      }
    }
  }
}

// ep and etp for one layout of tp, cp, pp and dp.
void AddExpertLayouts(const Space& space, Strategy s) {
  const Constraints& fixed = space.request.fixed;
  if (!space.model.moe.has_value()) {
    s.ep = fixed.ep.value_or(1);
    s.etp = fixed.etp.value_or(0);
    AddSettings(space, s);
    return;
  }
  const std::vector<int64_t> etps = s.tp > 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  for (int64_t etp : Choices(fixed.etp, etps)) {
    const int64_t expert_ranks = s.tp * s.dp * s.cp / (etp == 0 ? s.tp : etp);
    for (int64_t ep : Choices(fixed.ep, Divisors(space.model.moe->num_experts, expert_ranks))) {
      if (!fixed.ep.has_value() && expert_ranks % ep != 0) continue;
      s.ep = ep;
      s.etp = etp;
      AddSettings(space, s);
    }
  }
}

void AddLayouts(const Space& space, int64_t gpus) {
  const Constraints& fixed = space.request.fixed;
  const int64_t nvlink_domain = space.cluster.NvlinkDomainGpus();
  std::vector<int64_t> cps;
  for (int64_t cp = 1; space.request.seq_len / cp >= 2048 || cp == 1; cp *= 2) cps.push_back(cp);
  for (int64_t tp : Choices(fixed.tp, space.cluster.TensorParallelDegrees())) {
    for (int64_t cp : Choices(fixed.cp, cps)) {
      if (gpus % (tp * cp) != 0) continue;
      for (int64_t pp : Choices(fixed.pp, Divisors(gpus / (tp * cp), space.model.num_layers))) {
        if (gpus % (tp * cp * pp) != 0) continue;
        const int64_t dp = gpus / (tp * cp * pp);
        if (fixed.dp.has_value() && *fixed.dp != dp) continue;
        if (!fixed.dp.has_value() && space.request.global_batch % dp != 0) continue;
        Strategy s;
        s.tp = tp;
        s.cp = cp;
        s.pp = pp;
        s.dp = dp;
        s.global_batch = space.request.global_batch;
        s.seq_len = space.request.seq_len;
        s.dtype = space.request.dtype;
        s.optimizer = space.request.optimizer;
        s.grad_accumulation = space.request.grad_accumulation;
        s.allow_cross_node_tp = tp > nvlink_domain;
        AddExpertLayouts(space, s);
      }
    }
  }
}

}  // namespace

Result<Constraints> ParseConstraints(std::string_view text, std::string_view flag) {
  Constraints c;
  // Each key once: "tp=2,tp=4" or "zero=1,zero_stage=2" leave unclear which was meant.
  std::map<std::string, std::string, std::less<>> given;  // canonical key -> the pair that set it
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view pair = text.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(std::string(flag) + " " + std::string(pair) +
                                     ": expected key=value, e.g. " + std::string(flag) +
                                     " tp=8,pp=4");
    }
    const std::string key = CanonicalKey(pair.substr(0, eq));
    const std::string_view value = pair.substr(eq + 1);
    const auto& keys = Keys();
    auto it =
        std::find_if(keys.begin(), keys.end(), [&key](const auto& k) { return k.first == key; });
    if (it == keys.end()) {
      return Status::InvalidArgument(std::string(flag) + " " + std::string(pair) +
                                     ": unknown key '" + std::string(pair.substr(0, eq)) +
                                     "'; keys are " + KeyList());
    }
    if (auto [earlier, inserted] = given.emplace(key, std::string(pair)); !inserted) {
      return Status::InvalidArgument(std::string(flag) + " " + std::string(pair) + ": " + key +
                                     " is already set by " + earlier->second +
                                     "; give each key once");
    }
    if (std::optional<std::string> expected = it->second(value, c)) {
      return Status::InvalidArgument(std::string(flag) + " " + std::string(pair) + ": " + key +
                                     " must be " + *expected);
    }
  }
  return c;
}

std::string ConstraintText(const Strategy& s) {
  const auto flag = [](bool on) { return on ? "true" : "false"; };
  std::string text = "tp=" + std::to_string(s.tp) + ",pp=" + std::to_string(s.pp) +
                     ",dp=" + std::to_string(s.dp) + ",cp=" + std::to_string(s.cp) +
                     ",ep=" + std::to_string(s.ep) + ",etp=" + std::to_string(s.etp) +
                     ",vpp=" + std::to_string(s.vpp) +
                     ",micro_batch=" + std::to_string(s.micro_batch) +
                     ",schedule=" + std::string(kScheduleNames.Name(s.schedule)) +
                     ",recompute=" + std::string(kRecomputeNames.Name(s.recompute)) +
                     ",recompute_layers=" + std::to_string(s.recompute_layers) +
                     ",zero_stage=" + std::to_string(s.zero_stage) + ",sp=" + flag(s.sp) +
                     ",offload=" + std::string(kOffloadNames.Name(s.offload)) +
                     ",cp_comm=" + std::string(kCpCommNames.Name(s.cp_comm)) +
                     ",overlap_grad_reduce=" + flag(s.overlap_grad_reduce) +
                     ",overlap_param_gather=" + flag(s.overlap_param_gather) +
                     ",tp_comm_overlap=" + flag(s.tp_comm_overlap) +
                     ",first_stage_layers=" + std::to_string(s.first_stage_layers) +
                     ",last_stage_layers=" + std::to_string(s.last_stage_layers) +
                     ",microbatch_group=" + std::to_string(s.microbatch_group);
  return text;
}

void ApplyConstraints(const Constraints& c, Strategy& s) {
  const auto set = [](const auto& value, auto& field) {
    if (value.has_value()) field = *value;
  };
  set(c.tp, s.tp);
  set(c.pp, s.pp);
  set(c.dp, s.dp);
  set(c.cp, s.cp);
  set(c.ep, s.ep);
  set(c.etp, s.etp);
  set(c.vpp, s.vpp);
  set(c.micro_batch, s.micro_batch);
  set(c.recompute_layers, s.recompute_layers);
  set(c.zero_stage, s.zero_stage);
  set(c.first_stage_layers, s.first_stage_layers);
  set(c.last_stage_layers, s.last_stage_layers);
  set(c.microbatch_group, s.microbatch_group);
  set(c.schedule, s.schedule);
  set(c.recompute, s.recompute);
  set(c.offload, s.offload);
  set(c.cp_comm, s.cp_comm);
  set(c.sp, s.sp);
  set(c.overlap_grad_reduce, s.overlap_grad_reduce);
  set(c.overlap_param_gather, s.overlap_param_gather);
  set(c.tp_comm_overlap, s.tp_comm_overlap);
}

Result<std::vector<Strategy>> EnumerateStrategies(const ModelSpec& model,
                                                  const ClusterSpec& cluster,
                                                  const SearchRequest& request) {
  if (request.gpus < 1 || request.global_batch < 1 || request.seq_len < 1) {
    return Status::InvalidArgument("--gpus, --global-batch and --seq must be at least 1");
  }
  const Constraints& fixed = request.fixed;
  const CheckedInt product = CheckedInt(fixed.tp.value_or(1)) * fixed.cp.value_or(1) *
                             fixed.pp.value_or(1) * fixed.dp.value_or(1);
  if (!product.get() || *product.get() > request.gpus) {
    return Status::InvalidArgument(
        "--fix: the pinned degrees (tp * cp * pp * dp) multiply to more than --gpus " +
        std::to_string(request.gpus) + "; pin degrees whose product divides the GPU count");
  }
  const int64_t pinned = *product.get();
  if (request.gpus % pinned != 0) {
    return Status::InvalidArgument(
        "--fix: the pinned degrees (tp * cp * pp * dp = " + std::to_string(pinned) +
        ") do not divide --gpus " + std::to_string(request.gpus) +
        "; pin degrees whose product divides the GPU count");
  }
  std::vector<Strategy> out;
  const Space space{model, cluster, request, out};
  for (int64_t gpus : GpuCounts(request, cluster)) AddLayouts(space, gpus);
  return out;
}

std::vector<int64_t> GpuCounts(const SearchRequest& request, const ClusterSpec& cluster) {
  const int64_t per_node = std::max<int64_t>(1, cluster.gpus_per_node);
  const auto whole = [per_node](int64_t gpus) { return gpus < per_node || gpus % per_node == 0; };
  std::vector<int64_t> counts = {request.gpus};
  for (int64_t gpus = request.gpus; gpus % 2 == 0 &&
                                    gpus / 2 >= std::max<int64_t>(1, request.min_gpus) &&
                                    request.min_gpus > 0 && whole(gpus / 2);) {
    gpus /= 2;
    counts.push_back(gpus);
  }
  for (int64_t gpus = request.gpus; gpus <= request.max_gpus / 2 && whole(gpus * 2);) {
    gpus *= 2;
    counts.push_back(gpus);
  }
  return counts;
}

}  // namespace loom
