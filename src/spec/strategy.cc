#include "spec/strategy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/checked.h"
#include "core/formatted.h"
#include "spec/pipeline_layout.h"
#include "spec/stage_gpus.h"

namespace loom {
namespace {

using Violations = std::vector<StrategyViolation>;

// Divisor lists in messages stop here: no parallel degree in practice exceeds it.
constexpr int64_t kMaxListedDivisor = 128;

// The product of |factors|, or INT64_MAX when it overflows. A saturated product exceeds every
// dimension it is compared with, so a rule using it still fires, and nothing wraps.
int64_t SaturatingProduct(std::initializer_list<int64_t> factors) {
  CheckedInt product = 1;
  for (int64_t factor : factors) product *= factor;
  return product.get().value_or(INT64_MAX);
}

bool AllPositive(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v >= 1; });
}

// "1, 2, 4, 8": the divisors of |n| up to kMaxListedDivisor, then "..." if |n| has larger ones.
std::string DivisorList(int64_t n) {
  if (n < 1) return "none";
  std::string out;
  for (int64_t d = 1; d <= std::min(n, kMaxListedDivisor); ++d) {
    if (n % d != 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(d);
  }
  if (n > kMaxListedDivisor) out += ", ...";
  return out;
}

// "2048 or 2056": the positive multiples of |step| nearest to |value|, below and above.
// REQUIRES: step >= 1.
std::string NearestMultiples(int64_t value, int64_t step) {
  const int64_t below = value >= step ? value - value % step : 0;
  std::optional<int64_t> above = (CheckedInt(below) + step).get();
  std::string out = below >= 1 ? std::to_string(below) : "";
  if (above.has_value()) out += StrCat(out.empty() ? "" : " or ", *above);
  return out;
}

// "62.50": |numerator| / |denominator| with two decimals, for non-integer ratios.
std::string Ratio(int64_t numerator, int64_t denominator) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2)
      << static_cast<double>(numerator) / static_cast<double>(denominator);
  return out.str();
}

// The most ranks in one parallel group, or GPUs in all: 2^20.
constexpr int64_t kMaxGroup = int64_t{1} << 20;
// Micro-batches per step, and forward passes in one pipeline schedule, loom simulates at most.
constexpr int64_t kMaxMicroBatches = int64_t{1} << 20;
constexpr int64_t kMaxPipelinePasses = int64_t{1} << 21;

void CheckRanges(const Strategy& s, Violations& out) {
  if (s.zero_stage < 0 || s.zero_stage > 3) {
    out.push_back(
        {"--zero",
         StrCat("--zero ", s.zero_stage,
                ": ZeRO has stages 0 to 3 (Rajbhandari et al. 2020); use --zero 0, 1, 2 or 3")});
  }
  const std::array<std::pair<std::string_view, int64_t>, 9> positive = {{
      {"--tp", s.tp},
      {"--pp", s.pp},
      {"--dp", s.dp},
      {"--cp", s.cp},
      {"--ep", s.ep},
      {"--vpp", s.vpp},
      {"--micro-batch", s.micro_batch},
      {"--global-batch", s.global_batch},
      {"--seq", s.seq_len},
  }};
  // Upper bounds: far beyond any training run (the largest use some 10^5 GPUs, batches of 10^4
  // sequences and contexts of 10^6 tokens), low enough that loom's products of them (ranks, tokens,
  // passes) fit in 64 bits and its schedules' 32-bit indices.
  const std::array<int64_t, 9> most = {kMaxGroup,        kMaxGroup,        kMaxGroup,
                                       kMaxGroup,        kMaxGroup,        1024,
                                       int64_t{1} << 20, int64_t{1} << 30, int64_t{1} << 27};
  bool in_range = true;
  for (size_t i = 0; i < positive.size(); ++i) {
    const auto& [flag, value] = positive[i];
    if (value < 1) {
      out.push_back({std::string(flag),
                     StrCat(flag, " ", value, ": must be at least 1; use ", flag, " 1 or more")});
    } else if (value > most[i]) {
      out.push_back({std::string(flag), StrCat(flag, " ", value, ": must be at most ", most[i],
                                               "; no training run is that large")});
    }
    in_range = in_range && value >= 1 && value <= most[i];
  }
  if (!in_range) return;  // the products below would only repeat it
  const CheckedInt gpus = CheckedInt(s.tp) * s.pp * s.dp * s.cp;
  if (!gpus.get() || *gpus.get() > kMaxGroup) {
    out.push_back({"--tp", StrCat("--tp ", s.tp, " --pp ", s.pp, " --dp ", s.dp, " --cp ", s.cp,
                                  ": ", "their product, the GPUs, must be at most ", kMaxGroup)});
  }
  if (s.global_batch / s.micro_batch / s.dp > kMaxMicroBatches) {
    out.push_back(
        {"--global-batch",
         StrCat(
             "--global-batch ", s.global_batch, ": ", s.global_batch / s.micro_batch / s.dp,
             " micro-batches per step (global batch / (micro-batch * dp)); loom simulates at most ",
             kMaxMicroBatches, "; raise --micro-batch or --dp")});
  }
  if (s.microbatch_group < 0 || s.microbatch_group > kMaxMicroBatches) {
    out.push_back({"--microbatch-group",
                   StrCat("--microbatch-group ", s.microbatch_group,
                          ": must be 0 (pp, Megatron-LM's default) to ", kMaxMicroBatches)});
  }
  const CheckedInt passes = CheckedInt(s.pp) * s.vpp * (s.global_batch / s.micro_batch / s.dp);
  if (!passes.get() || *passes.get() > kMaxPipelinePasses) {
    out.push_back(
        {"--pp", StrCat("--pp ", s.pp, " --vpp ", s.vpp, " --global-batch ", s.global_batch,
                        ": stages * chunks * micro-batches must be at most ", kMaxPipelinePasses,
                        " forward passes for loom to simulate the step")});
  }
}

// Megatron-LM splits attention heads, query groups and the MLP's column-parallel matmuls evenly
// over the tp ranks (megatron/core/transformer/attention.py divides num_attention_heads and
// num_query_groups by the tp size; megatron/core/tensor_parallel/layers.py ColumnParallelLinear
// divides output_size).
void CheckTensorSplits(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.tp < 1) return;
  const auto check = [&](std::string_view key, int64_t size, std::string_view why) {
    if (size % s.tp == 0) return;
    out.push_back({"--tp", StrCat("--tp ", s.tp, ": ", key, " (", size, ") of ", ModelRef(model),
                                  " is not divisible by it", why, "; use a tp that divides ", size,
                                  " (", DivisorList(size), ")")});
  };
  check("num_attention_heads", model.num_heads, "");
  check("num_key_value_heads", model.num_kv_heads,
        " (Megatron-core divides the query groups over the tp ranks)");
  check("intermediate_size", model.intermediate_size,
        " (the MLP's first matmul is split column-wise over the tp ranks)");
  if (model.moe.has_value() && model.moe->expert_intermediate_size > 0) {
    check("the expert intermediate size", model.moe->expert_intermediate_size,
          " (each expert's MLP is split column-wise over the tp ranks)");
  }
}

// "8 GPUs per node" or, where NVLink joins several nodes, "72 GPUs per NVLink domain": the
// GPUs that tensor parallelism may span without the network.
std::string NvlinkDomainWords(const ClusterSpec& cluster) {
  const int64_t domain = cluster.NvlinkDomainGpus();
  return StrCat(domain,
                domain == cluster.gpus_per_node ? " GPUs per node" : " GPUs per NVLink domain");
}

void CheckTensorPlacement(const Strategy& s, const ClusterSpec& cluster, Violations& out) {
  const int64_t domain = cluster.NvlinkDomainGpus();
  if (s.allow_cross_node_tp || domain < 1 || s.tp <= domain) return;
  out.push_back(
      {"--tp", StrCat("--tp ", s.tp, ": exceeds the ", NvlinkDomainWords(cluster), " of ",
                      ClusterRef(cluster),
                      "; tensor parallelism all-reduces activations in every layer, and over the "
                      "network that is rarely worth it; use --tp ",
                      domain, " or less, or pass --allow-cross-node-tp to accept it")});
}

// Megatron-LM's validate_args sets sequence_parallel = False when tp is 1 (megatron/training/
// arguments.py); loom refuses instead, so that what is simulated is what was asked for.
void CheckSequenceParallel(const Strategy& s, Violations& out) {
  if (!s.sp || s.tp < 1) return;
  if (s.tp == 1) {
    out.push_back(
        {"--sp",
         "--sp with --tp 1: sequence parallelism splits activations over the tp group, which has "
         "one rank (Megatron-LM would silently turn it off; loom refuses); drop --sp or use --tp 2 "
         "or more"});
    return;
  }
  if (!AllPositive({s.cp, s.seq_len})) return;
  const int64_t split = SaturatingProduct({s.cp, s.tp});
  if (s.seq_len % split == 0) return;
  out.push_back({"--seq", StrCat("--seq ", s.seq_len, " with --sp, --tp ", s.tp, " and --cp ", s.cp,
                                 ": each tp rank holds seq / (cp * tp) tokens, and ", s.seq_len,
                                 " is not divisible by ", split, "; use --seq ",
                                 NearestMultiples(s.seq_len, split))});
}

// An explicit layout (Megatron-core's --pipeline-model-parallel-layout): one entry per virtual
// stage, the layers adding up to the model's, and no empty virtual stage but the first (the
// embedding alone) and the last (the loss alone). Megatron's TransformerConfig refuses a layout
// together with --decoder-first/last-pipeline-num-layers (megatron/core/transformer/
// transformer_config.py at NVIDIA/Megatron-LM d98e8a64).
// "stage S, chunk C": where virtual stage |v| runs (VirtualStageOf).
std::string PlaceText(const Strategy& s, int64_t v) {
  const bool back = IsVShapedSchedule(s.schedule) && v >= s.pp;
  return StrCat("stage ", StageOfVirtualStage(s.pp, s.schedule, v), ", chunk ",
                back ? 1 : v / s.pp);
}

void CheckLayout(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.first_stage_layers != 0 || s.last_stage_layers != 0) {
    out.push_back(
        {"--pipeline-layout",
         StrCat(
             "--pipeline-layout with --first-stage-layers ", s.first_stage_layers,
             " --last-stage-layers ", s.last_stage_layers,
             ": a layout places every layer itself (Megatron-core refuses both together); drop the "
             "stage counts, or the layout")});
    return;
  }
  const int64_t chunks = SaturatingProduct({s.pp, s.vpp});
  if (static_cast<int64_t>(s.layout.size()) != chunks) {
    out.push_back({"--pipeline-layout",
                   StrCat("--pipeline-layout: ", s.layout.size(), " virtual stages, but --pp ",
                          s.pp, " --vpp ", s.vpp, " makes ", chunks,
                          "; give one \"|\"-separated entry per stage and model chunk")});
    return;
  }
  int64_t total = 0;
  for (size_t v = 0; v < s.layout.size(); ++v) {
    const int64_t layers = s.layout[v];
    const bool end = v == 0 || v + 1 == s.layout.size();
    if (layers < 0 || layers > model.num_layers || (layers == 0 && !end)) {
      out.push_back(
          {"--pipeline-layout",
           StrCat(
               "--pipeline-layout: virtual stage ", v, " (", PlaceText(s, static_cast<int64_t>(v)),
               ") holds ", layers,
               " layers; only the first and the last virtual stage may be empty (the embedding or "
               "the loss alone), the others hold 1 to ",
               model.num_layers)});
      return;
    }
    total += layers;
  }
  if (total != model.num_layers) {
    out.push_back(
        {"--pipeline-layout",
         StrCat("--pipeline-layout places ", total, " transformer layers, and ", ModelRef(model),
                " has ", model.num_layers, " (num_hidden_layers); place each layer once")});
  }
}

// Megatron-LM assigns num_layers / pp layers to every stage, or with
// --decoder-first/last-pipeline-num-layers the given layers to the first and last stage and the
// rest evenly to the others (megatron/core/transformer/transformer_block.py,
// get_num_layers_to_build). A stage's layers then split over its vpp chunks, unevenly where vpp
// does not divide them (LayersPerVirtualStage), so no chunk may be empty but the first (beside the
// embedding) and the last (beside the loss).
void CheckLayerSplit(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (!AllPositive({s.pp, s.vpp})) return;
  if (!s.layout.empty()) {
    CheckLayout(s, model, out);
    return;
  }
  const int64_t first = s.first_stage_layers, last = s.last_stage_layers;
  if (s.pp == 1 && (first > 0 || last > 0)) {
    out.push_back(
        {"--first-stage-layers",
         StrCat("--first-stage-layers ", first, " --last-stage-layers ", last,
                " with --pp 1: one stage holds every layer, so there is nothing to place; "
                "drop them, or raise "
                "--pp")});
    return;
  }
  if (first > model.num_layers || last > model.num_layers || first + last > model.num_layers) {
    out.push_back({"--first-stage-layers",
                   StrCat("--first-stage-layers ", first, " --last-stage-layers ", last, ": ",
                          ModelRef(model), " has ", model.num_layers,
                          " layers (num_hidden_layers), fewer than the two stages would hold; give "
                          "counts that leave layers for the stages between")});
    return;
  }
  if (first < 0 || last < 0) {
    out.push_back({"--first-stage-layers",
                   StrCat("--first-stage-layers ", first, " --last-stage-layers ", last,
                          ": layer counts cannot be negative; use 0 for an even split")});
    return;
  }
  if (first == 0 && last == 0) {
    if (model.num_layers % s.pp == 0 && model.num_layers / s.pp >= s.vpp) return;
    const int64_t chunks = SaturatingProduct({s.pp, s.vpp});
    out.push_back(
        {"--pp",
         StrCat("--pp ", s.pp, " --vpp ", s.vpp, ": num_hidden_layers (", model.num_layers, ") of ",
                ModelRef(model), " does not split evenly over ", s.pp, " stages of ", s.vpp,
                " chunks each; use a pp that divides ", model.num_layers, " (",
                DivisorList(model.num_layers), ") with at most ",
                model.num_layers / std::max<int64_t>(1, s.pp),
                " chunks a stage, give the first and last stage their own layer counts with "
                "--first-stage-layers and --last-stage-layers, or place every chunk with "
                "--pipeline-layout",
                chunks > model.num_layers ? " (there are fewer layers than pp * vpp)" : "")});
    return;
  }
  const int64_t fixed_stages = (first > 0) + (last > 0);
  if (s.pp < fixed_stages + (fixed_stages == 2 ? 0 : 1)) {
    out.push_back(
        {"--first-stage-layers",
         StrCat("--first-stage-layers ", first, " --last-stage-layers ", last, " with --pp ", s.pp,
                ": uneven stages need a stage for each given count and one more for the rest; "
                "use --pp ",
                fixed_stages + 1, " or more")});
    return;
  }
  const int64_t middle_stages = s.pp - fixed_stages;
  const int64_t rest = model.num_layers - first - last;
  const bool splits =
      middle_stages == 0 ? rest == 0 : rest >= middle_stages && rest % middle_stages == 0;
  if (!splits) {
    out.push_back(
        {"--first-stage-layers",
         StrCat("--first-stage-layers ", first, " --last-stage-layers ", last, ": the other ", rest,
                " of the ", model.num_layers, " layers of ", ModelRef(model),
                " do not split evenly over the ", middle_stages, " other stages of --pp ", s.pp,
                "; choose counts that leave a multiple of ", std::max<int64_t>(middle_stages, 1),
                " layers (at least one per stage)")});
    return;
  }
  // Every chunk holds a layer, but the first chunk of the first stage and the last of the last.
  const int64_t middle = middle_stages > 0 ? rest / middle_stages : 0;
  const bool too_few = (middle_stages > 0 && middle < s.vpp) || (first > 0 && first < s.vpp - 1) ||
                       (last > 0 && last < s.vpp - 1);
  if (too_few) {
    out.push_back(
        {"--vpp", StrCat("--vpp ", s.vpp, " with stages of ", first, ", ", middle, " and ", last,
                         " layers: every model chunk but the first (beside the embedding) and the "
                         "last (beside the "
                         "loss) holds at least one layer; use --vpp ",
                         std::max<int64_t>(1, std::min({middle_stages > 0 ? middle : INT64_MAX,
                                                        first > 0 ? first + 1 : INT64_MAX,
                                                        last > 0 ? last + 1 : INT64_MAX})),
                         " or less")});
  }
}

// Megatron-LM: validate_args requires pp > 1 with a virtual pipeline (megatron/training/
// arguments.py), and forward_backward_pipelining_with_interleaving (megatron/core/
// pipeline_parallel/schedules.py, NVIDIA/Megatron-LM d98e8a64 and since core_r0.12.0) requires pp
// <= micro-batch group <= micro-batches, and the last group whole or of at least pp micro-batches.
void CheckInterleaved(const Strategy& s, Violations& out) {
  if (s.pp == 1) {
    out.push_back(
        {"--schedule",
         "--schedule interleaved with --pp 1: interleaving needs at least 2 pipeline stages "
         "(Megatron-LM: \"pipeline-model-parallel size should be greater than 1 with interleaved "
         "schedule\"); use --pp 2 or more, or --schedule 1f1b"});
  }
  if (s.vpp == 1) {
    out.push_back(
        {"--schedule",
         "--schedule interleaved with --vpp 1: the interleaved schedule runs at least 2 model "
         "chunks per stage; use --vpp 2 or more, or --schedule 1f1b"});
  }
  if (!AllPositive({s.pp, s.micro_batch, s.dp, s.global_batch}) || s.microbatch_group < 0) return;
  const int64_t per_step = SaturatingProduct({s.micro_batch, s.dp});
  if (s.global_batch % per_step != 0) return;  // CheckBatch reports it
  const int64_t micro_batches = s.global_batch / per_step;
  const std::string count =
      StrCat("the number of micro-batches (", micro_batches, " = --global-batch ", s.global_batch,
             " / (--micro-batch ", s.micro_batch, " * --dp ", s.dp, "))");
  if (micro_batches < s.pp) {
    out.push_back(
        {"--schedule",
         StrCat("--schedule interleaved with --pp ", s.pp, ": ", count,
                " is below pp, and Megatron-LM's interleaved schedule runs groups of at least pp "
                "micro-batches; use --global-batch ",
                SaturatingProduct({per_step, s.pp}), " or more, or --schedule 1f1b")});
    return;
  }
  const int64_t group = s.MicrobatchGroup();
  const int64_t rest = group > 0 ? micro_batches % group : 0;
  if (group >= s.pp && group <= micro_batches && (rest == 0 || rest >= s.pp)) return;
  const int64_t smallest = SmallestMicrobatchGroup(micro_batches, s.pp);
  out.push_back(
      {"--schedule",
       StrCat("--schedule interleaved with --pp ", s.pp, " and micro-batch groups of ", group, ": ",
              count, " must split into groups of pp to ", micro_batches,
              " micro-batches, the last whole or of at least pp (Megatron-LM's "
              "--microbatch-group-size-per-virtual-pipeline-stage); use --microbatch-group ",
              smallest, ", or --global-batch ",
              NearestMultiples(s.global_batch, SaturatingProduct({per_step, s.pp})))});
}

// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism") and DualPipeV (DeepSeek-V3 report)
// place two model chunks on each stage in a V: the first chunk down the stages, the second back.
void CheckVShaped(const Strategy& s, Violations& out) {
  const std::string_view name = kScheduleNames.Name(s.schedule);
  if (s.pp == 1) {
    out.push_back(
        {"--schedule", StrCat("--schedule ", name,
                              " with --pp 1: a V-shaped schedule needs at least 2 "
                              "pipeline stages; use --pp 2 or more, or --schedule 1f1b")});
  }
  if (s.vpp >= 1 && s.vpp != 2) {
    out.push_back({"--schedule",
                   StrCat("--schedule ", name, " with --vpp ", s.vpp,
                          ": a V-shaped schedule places exactly 2 model chunks on each stage; use "
                          "--vpp 2")});
  }
  if (s.microbatch_group != 0) {
    out.push_back({"--microbatch-group",
                   StrCat("--microbatch-group ", s.microbatch_group, " with --schedule ", name,
                          ": micro-batch groups belong to the interleaved schedule; drop it")});
  }
  // A layout lists the virtual stages in the model's order, which the V places on stages 0, 1,
  // ..., pp - 1, pp - 1, ..., 0 (VirtualStageOf); CheckLayout checks it. Without one, the V's two
  // chunks of a stage hold its layers in halves.
  if (!s.layout.empty() || !AllPositive({s.pp, s.vpp}) || s.vpp != 2) return;
  for (int64_t stage_layers : {s.first_stage_layers, s.last_stage_layers}) {
    if (stage_layers % 2 == 0) continue;
    out.push_back(
        {"--schedule",
         StrCat("--schedule ", name, ": a stage of ", stage_layers,
                " layers does not split evenly over its 2 chunks; use even layer counts")});
    return;
  }
}

void CheckSchedule(const Strategy& s, Violations& out) {
  switch (s.schedule) {
    case ScheduleKind::kInterleaved:
      CheckInterleaved(s, out);
      return;
    case ScheduleKind::kZbV:
    case ScheduleKind::kDualPipeV:
      CheckVShaped(s, out);
      return;
    case ScheduleKind::kGpipe:
    case ScheduleKind::k1F1B:
    case ScheduleKind::kZbH1:
      if (s.microbatch_group != 0) {
        out.push_back(
            {"--microbatch-group",
             StrCat("--microbatch-group ", s.microbatch_group, " with --schedule ",
                    kScheduleNames.Name(s.schedule),
                    ": micro-batch groups belong to the interleaved schedule; drop it, or use "
                    "--schedule interleaved")});
      }
      if (s.vpp > 1) {
        out.push_back(
            {"--vpp",
             StrCat("--vpp ", s.vpp, " with --schedule ", kScheduleNames.Name(s.schedule),
                    ": only the interleaved, zb-v and dualpipev schedules run several model "
                    "chunks per stage; use --vpp 1, or --schedule interleaved")});
      }
      return;
  }
}

void CheckBatch(const Strategy& s, Violations& out) {
  if (!AllPositive({s.micro_batch, s.dp, s.global_batch})) return;
  const int64_t per_step = SaturatingProduct({s.micro_batch, s.dp});
  if (s.global_batch % per_step == 0) return;
  out.push_back({"--global-batch",
                 StrCat("--global-batch ", s.global_batch, ": not divisible by --micro-batch ",
                        s.micro_batch, " * --dp ", s.dp, " (", per_step, "); it would be ",
                        s.global_batch, " / ", per_step, " = ", Ratio(s.global_batch, per_step),
                        " micro-batches per data-parallel rank; use --global-batch ",
                        NearestMultiples(s.global_batch, per_step))});
}

void CheckWorldSize(const Strategy& s, const ClusterSpec& cluster, Violations& out) {
  if (!AllPositive({s.tp, s.pp, s.dp, s.cp})) return;
  const std::optional<int64_t> total = cluster.TotalGpus();
  if (!total.has_value()) return;
  const int64_t world = SaturatingProduct({s.tp, s.pp, s.dp, s.cp});
  if (world <= *total) return;
  std::string fix = "use smaller parallel degrees";
  if (cluster.gpus_per_node >= 1) {
    const int64_t nodes = world / cluster.gpus_per_node + (world % cluster.gpus_per_node != 0);
    fix = StrCat("use --nodes ", nodes, " or more, or ", fix);
  }
  out.push_back({"--tp", StrCat("--tp ", s.tp, " --pp ", s.pp, " --dp ", s.dp, " --cp ", s.cp,
                                ": tp * pp * dp * cp = ", world, " GPUs, more than the ", *total,
                                " of ", ClusterRef(cluster), " (", cluster.nodes.value_or(0),
                                " nodes of ", cluster.gpus_per_node, " GPUs); ", fix)});
}

// Load-balanced causal context parallelism splits the sequence into 2 * cp chunks and gives rank
// r chunks r and 2cp - 1 - r (Megatron-LM's get_batch_on_this_cp_rank, megatron/core/utils.py).
void CheckContextParallel(const Strategy& s, Violations& out) {
  if (s.cp == 1 && s.cp_comm != CpComm::kP2p) {
    out.push_back({"--cp-comm", StrCat("--cp-comm ", kCpCommNames.Name(s.cp_comm),
                                       " with --cp 1: there is no context-parallel exchange to run "
                                       "this way; drop --cp-comm, or "
                                       "raise --cp")});
  }
  if (s.cp < 2 || s.seq_len < 1) return;
  const int64_t chunks = SaturatingProduct({2, s.cp});
  if (s.seq_len % chunks == 0) return;
  out.push_back(
      {"--seq",
       StrCat("--seq ", s.seq_len, " with --cp ", s.cp,
              ": load-balanced causal context parallelism splits the sequence into 2 * cp = ",
              chunks, " chunks, and ", s.seq_len, " is not divisible by ", chunks, "; use --seq ",
              NearestMultiples(s.seq_len, chunks))});
}

// Transformer Engine's context parallelism runs sliding-window attention only with the all-gather
// and all-to-all exchanges (attn_forward_func_with_cp asserts it: transformer_engine/pytorch/
// attention/dot_product_attention/context_parallel.py, NVIDIA/TransformerEngine d0067d0d).
void CheckWindowedContextParallel(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.cp < 2 || s.cp_comm != CpComm::kP2p || s.seq_len <= model.sliding_window) return;
  if (model.NumWindowedLayers() == 0) return;
  out.push_back({"--cp-comm", StrCat("--cp ", s.cp, " --cp-comm p2p with the sliding window of ",
                                     ModelRef(model), " (", model.sliding_window,
                                     " keys, shorter than --seq ", s.seq_len,
                                     "): Transformer Engine's ring attention has no window; use "
                                     "--cp-comm all_gather, or --cp 1")});
}

// A learned absolute position table has one row per position; rotary embeddings have no limit.
void CheckPositions(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (model.position != PositionKind::kLearnedAbsolute) return;
  if (s.seq_len <= model.max_position_embeddings) return;
  out.push_back({"--seq", StrCat("--seq ", s.seq_len, ": exceeds max_position_embeddings (",
                                 model.max_position_embeddings, ") of ", ModelRef(model),
                                 ", whose learned position table has no rows beyond it; use --seq ",
                                 model.max_position_embeddings, " or less")});
}

// Megatron-LM carves the expert-parallel groups out of the data- (and context-) parallel ranks:
// initialize_model_parallel (megatron/core/parallel_state.py) requires them to divide evenly.
void CheckExperts(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.ep < 2) return;
  if (!model.moe.has_value() || model.moe->num_experts < 1) {
    out.push_back(
        {"--ep", StrCat("--ep ", s.ep, ": ", ModelRef(model),
                        " is a dense model, with no experts to spread over expert-parallel ranks; "
                        "use --ep 1")});
    return;
  }
  const int64_t experts = model.moe->num_experts;
  if (experts % s.ep != 0) {
    out.push_back(
        {"--ep", StrCat("--ep ", s.ep, ": num_experts (", experts, ") of ", ModelRef(model),
                        " is not divisible by it; use an ep that divides ", experts, " (",
                        DivisorList(experts), ")")});
  }
  if (s.etp != 0) return;  // CheckExpertTensorParallel places the expert groups
  if (!AllPositive({s.dp, s.cp})) return;
  const int64_t replicas = SaturatingProduct({s.dp, s.cp});
  if (replicas % s.ep == 0) return;
  out.push_back({"--ep", StrCat("--ep ", s.ep, " with --dp ", s.dp, " --cp ", s.cp,
                                ": expert-parallel ranks are carved from the dp * cp = ", replicas,
                                " data- and context-parallel ranks, and ", replicas,
                                " is not divisible by ", s.ep, "; use an ep that divides ",
                                replicas, " (", DivisorList(replicas), "), or raise --dp")});
}

// Whether |s|'s ranks fit in |cluster| (CheckWorldSize), so that they name GPUs of its groups.
bool RanksInCluster(const Strategy& s, const ClusterSpec& cluster) {
  if (!AllPositive({s.tp, s.pp, s.dp, s.cp})) return false;
  return SaturatingProduct({s.tp, s.pp, s.dp, s.cp}) <= cluster.TotalGpus().value_or(INT64_MAX);
}

// A pipeline stage runs on the GPUs of one node group (StageAcrossGroups).
void CheckStageGroups(const Strategy& s, const ClusterSpec& cluster, Violations& out) {
  if (!RanksInCluster(s, cluster)) return;
  if (std::optional<StrategyViolation> v = StageAcrossGroups(cluster, s)) out.push_back(*v);
}

void CheckGpuDtype(const Strategy& s, const GpuSpec& gpu, const ClusterSpec& cluster,
                   Violations& out) {
  if (gpu.PeakTflops(s.dtype).has_value()) return;
  std::string available;
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32}) {
    if (!gpu.PeakTflops(dtype).has_value()) continue;
    available += StrCat(available.empty() ? "" : ", ", kDtypeNames.Name(dtype));
  }
  const std::string_view name = kDtypeNames.Name(s.dtype);
  out.push_back({"--dtype", StrCat("--dtype ", name, ": ", GpuRef(gpu), " of ", ClusterRef(cluster),
                                   " lists no ", name, " tensor-core peak (", name,
                                   "_tflops); use a --dtype it has (",
                                   available.empty() ? std::string("none listed") : available,
                                   "), or a cluster whose GPU has ", name)});
}

// Every stage's GPU runs |s|'s dtype: the cluster's one GPU, or each node group's that holds a
// stage.
void CheckDtype(const Strategy& s, const ClusterSpec& cluster, Violations& out) {
  if (cluster.node_groups.size() < 2 || !RanksInCluster(s, cluster)) {
    CheckGpuDtype(s, cluster.gpu, cluster, out);
    return;
  }
  std::vector<const GpuSpec*> checked;
  for (int64_t stage = 0; stage < s.pp; ++stage) {
    const GpuSpec* gpu = &GpuOfStage(cluster, s, stage);
    if (std::find(checked.begin(), checked.end(), gpu) != checked.end()) continue;
    checked.push_back(gpu);
    CheckGpuDtype(s, *gpu, cluster, out);
  }
}

// ZeRO-Offload (Ren et al. 2021) keeps the ZeRO-partitioned optimizer state in CPU memory, so it
// needs ZeRO stage 1 or higher; DeepSpeed's offload_optimizer is likewise a ZeRO option.
// Parameter offload (ZeRO-Infinity, Rajbhandari et al. 2021) fetches each layer's weights when
// ZeRO-3 gathers them; DeepSpeed accepts offload_param with stage 3 only.
void CheckOffload(const Strategy& s, Violations& out) {
  if (s.offload == Offload::kOptimizer && s.zero_stage < 1) {
    out.push_back(
        {"--offload",
         StrCat("--offload optimizer with --zero ", s.zero_stage,
                ": ZeRO-Offload moves the ZeRO-partitioned optimizer state to the CPU, so it "
                "runs on top of ZeRO; use --zero 1 or higher, or --offload none")});
  }
  if (s.offload == Offload::kOptimizerAndParams && s.zero_stage < 3) {
    out.push_back(
        {"--offload",
         StrCat(
             "--offload optimizer+params with --zero ", s.zero_stage,
             ": parameters live on the CPU only between ZeRO-3's per-layer gathers; use --zero 3, "
             "or --offload optimizer")});
  }
}

// Megatron-LM's --recompute-num-layers (block method) counts layers of one model chunk: each
// chunk is a TransformerBlock that recomputes its first N layers.
void CheckRecomputeLayers(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.recompute_layers == 0) return;
  if (s.recompute_layers < 0) {
    out.push_back({"--recompute-layers", StrCat("--recompute-layers ", s.recompute_layers,
                                                ": must be at least 0; use 0 for every layer")});
    return;
  }
  if (s.recompute != Recompute::kFull) {
    out.push_back(
        {"--recompute-layers",
         StrCat("--recompute-layers ", s.recompute_layers, " with --recompute ",
                kRecomputeNames.Name(s.recompute),
                ": the layer count applies to full recompute only; use --recompute full, or drop "
                "--recompute-layers")});
    return;
  }
  Violations split;
  CheckLayerSplit(s, model, split);
  if (!AllPositive({s.pp, s.vpp}) || !split.empty())
    return;  // the range and layer-split rules report it
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, model.num_layers);
  const int64_t most = *std::max_element(layers.begin(), layers.end());
  if (s.recompute_layers > most) {
    out.push_back(
        {"--recompute-layers", StrCat("--recompute-layers ", s.recompute_layers,
                                      ": the largest model chunk of ", ModelRef(model), " holds ",
                                      most, " layers; use --recompute-layers ", most, " or less")});
  }
}

// The expert rank grid of Megatron-core (megatron/core/parallel_state.py, the expert
// RankGenerator): etp fastest, then ep, then expert data parallel, over the same tp * cp * dp
// ranks as the attention layers.
void CheckExpertTensorParallel(const Strategy& s, const ModelSpec& model, Violations& out) {
  if (s.etp == 0) return;
  if (s.etp < 0) {
    out.push_back(
        {"--etp", StrCat("--etp ", s.etp,
                         ": must be at least 1, or 0 for the tp size (Megatron-LM's default)")});
    return;
  }
  if (!model.moe.has_value() || model.moe->num_experts < 1) {
    if (s.etp != 1 && s.etp != s.tp) {
      out.push_back({"--etp", StrCat("--etp ", s.etp, ": ", ModelRef(model),
                                     " is a dense model with no experts to split; drop --etp")});
    }
    return;
  }
  const int64_t ffn = model.moe->expert_intermediate_size;
  if (ffn > 0 && ffn % s.etp != 0) {
    out.push_back(
        {"--etp", StrCat("--etp ", s.etp, ": the expert intermediate size (", ffn, ") of ",
                         ModelRef(model), " is not divisible by it; use an etp that divides ", ffn,
                         " (", DivisorList(ffn), ")")});
  }
  if (!AllPositive({s.tp, s.dp, s.cp, s.ep})) return;
  const int64_t ranks = SaturatingProduct({s.tp, s.dp, s.cp});
  const int64_t group = SaturatingProduct({s.ep, s.etp});
  if (ranks % group != 0) {
    out.push_back({"--ep", StrCat("--ep ", s.ep, " --etp ", s.etp, ": the expert grid (ep * etp = ",
                                  group, ") is carved from the tp * dp * cp = ", ranks,
                                  " ranks of a stage, and ", ranks, " is not divisible by ", group,
                                  "; use an ep * etp that divides ", ranks)});
  }
}

// Expert tensor parallelism all-reduces within each expert's MLP, as tensor parallelism does in
// every layer: the same NVLink bound (CheckTensorPlacement), for the expert grids
// CheckExpertTensorParallel accepts the shape of.
void CheckExpertTensorPlacement(const Strategy& s, const ModelSpec& model,
                                const ClusterSpec& cluster, Violations& out) {
  const bool moe = model.moe.has_value() && model.moe->num_experts >= 1;
  if (s.etp < 1 || !moe || !AllPositive({s.tp, s.dp, s.cp, s.ep})) return;
  const int64_t domain = cluster.NvlinkDomainGpus();
  if (!s.allow_cross_node_tp && domain >= 1 && s.etp > domain) {
    out.push_back({"--etp", StrCat("--etp ", s.etp, ": exceeds the ", NvlinkDomainWords(cluster),
                                   " of ", ClusterRef(cluster), "; use --etp ", domain,
                                   " or less, or pass --allow-cross-node-tp")});
  }
}

void CheckMoeRouting(const Strategy& s, const ModelSpec& model, Violations& out) {
  const bool moe = model.moe.has_value() && model.moe->num_experts >= 1;
  // Written so that NaN fails too: every comparison with NaN is false.
  if (!(s.moe_capacity_factor >= 0) || !std::isfinite(s.moe_capacity_factor)) {
    out.push_back(
        {"--moe-capacity-factor",
         StrCat("--moe-capacity-factor ", s.moe_capacity_factor,
                ": must be positive, or 0 for dropless routing (Megatron-LM's default)")});
  }
  if (!(s.moe_imbalance >= 1) || !std::isfinite(s.moe_imbalance)) {
    out.push_back(
        {"--moe-imbalance",
         StrCat(
             "--moe-imbalance ", s.moe_imbalance,
             ": the busiest expert's tokens over the mean cannot be below 1; use 1 for a balanced "
             "router, more for a skewed one")});
  }
  if (!moe && (s.moe_capacity_factor != 0 || s.moe_imbalance != 1.0)) {
    out.push_back({"--moe-capacity-factor",
                   StrCat("--moe-capacity-factor / --moe-imbalance: ", ModelRef(model),
                          " is a dense model with no router; drop them")});
  }
}

// DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3 (deepspeed/runtime/pipe/engine.py:
// "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"): gradient accumulation over
// micro-batches would reduce-scatter, and with stage 3 all-gather, every layer per micro-batch.
void CheckZeroWithPipeline(const Strategy& s, Violations& out) {
  if (s.zero_stage < 2 || s.zero_stage > 3) return;
  if (s.schedule == ScheduleKind::kZbH1) {
    out.push_back(
        {"--zero", StrCat("--zero ", s.zero_stage,
                          " with --schedule zb-h1: ZeRO-2 and -3 reduce-scatter each "
                          "micro-batch's gradients as its backward produces them, which a "
                          "deferred weight-gradient "
                          "pass would hold back; use --schedule 1f1b")});
  }
  if (s.pp <= 1) return;
  out.push_back(
      {"--zero",
       StrCat("--zero ", s.zero_stage, " with --pp ", s.pp,
              ": ZeRO stages 2 and 3 shard gradients across micro-batches, which pipeline "
              "parallelism accumulates (DeepSpeed refuses the pair); use --zero 1 (Megatron-LM's "
              "distributed optimizer) or --pp 1")});
}

// Megatron-LM's validate_args: --overlap-param-gather needs the distributed optimizer and
// --overlap-grad-reduce; --tp-comm-overlap needs sequence parallelism; --grad-reduce-in-bf16
// applies to bf16 and fp8 training.
void CheckOverlap(const Strategy& s, Violations& out) {
  if (s.overlap_param_gather && s.zero_stage < 1) {
    out.push_back(
        {"--overlap-param-gather",
         "--overlap-param-gather with --zero 0: there is no parameter all-gather without the "
         "distributed optimizer; use --zero 1 or more, or drop --overlap-param-gather"});
  }
  if (s.overlap_param_gather && !s.overlap_grad_reduce) {
    out.push_back(
        {"--overlap-param-gather",
         "--overlap-param-gather without --overlap-grad-reduce: Megatron-LM requires both; add "
         "--overlap-grad-reduce"});
  }
  if (s.tp_comm_overlap && (s.tp < 2 || !s.sp)) {
    out.push_back(
        {"--tp-comm-overlap",
         StrCat("--tp-comm-overlap with --tp ", s.tp, s.sp ? "" : " and no --sp",
                ": it overlaps the sequence-parallel all-gathers and reduce-scatters with GEMMs; "
                "use --tp 2 or more with --sp, or drop --tp-comm-overlap")});
  }
  // fp8 runs on bf16 parameters and gradients (Megatron-LM takes --fp8-format on top of --bf16), so
  // bf16 reduction applies to it as to bf16: megatron/training/arguments.py reads
  // --grad-reduce-in-bf16 in its "if args.bf16" branch (NVIDIA/Megatron-LM d98e8a64).
  if (s.grad_reduce_in_bf16 && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp8) {
    out.push_back(
        {"--grad-reduce-in-bf16",
         StrCat("--grad-reduce-in-bf16 with --dtype ", kDtypeNames.Name(s.dtype),
                ": it applies to bf16 and fp8 training; drop it or use --dtype bf16 or fp8")});
  }
}

// A sharded optimizer (ZeRO >= 1: Megatron-LM's distributed optimizer, DeepSpeed's ZeRO) reduces
// and shards a contiguous gradient buffer, the main_grad buffer that fused and add accumulate
// into; plain .grad accumulation has none.
void CheckGradAccumulation(const Strategy& s, Violations& out) {
  if (s.grad_accumulation == GradAccumulation::kAutograd && s.zero_stage >= 1) {
    out.push_back(
        {"--grad-accumulation",
         StrCat("--grad-accumulation autograd with --zero ", s.zero_stage,
                ": the sharded optimizer reduces a contiguous main-gradient buffer, which autograd "
                "accumulation has none of; use --grad-accumulation fused or add, or --zero 0")});
  }
}

}  // namespace

std::vector<StrategyViolation> StrategyViolations(const Strategy& strategy, const ModelSpec& model,
                                                  const ClusterSpec& cluster) {
  Violations out;
  CheckRanges(strategy, out);
  CheckTensorSplits(strategy, model, out);
  CheckTensorPlacement(strategy, cluster, out);
  CheckSequenceParallel(strategy, out);
  CheckLayerSplit(strategy, model, out);
  CheckSchedule(strategy, out);
  CheckBatch(strategy, out);
  CheckWorldSize(strategy, cluster, out);
  CheckStageGroups(strategy, cluster, out);
  CheckContextParallel(strategy, out);
  CheckWindowedContextParallel(strategy, model, out);
  CheckPositions(strategy, model, out);
  CheckExperts(strategy, model, out);
  CheckDtype(strategy, cluster, out);
  CheckOffload(strategy, out);
  CheckRecomputeLayers(strategy, model, out);
  CheckExpertTensorParallel(strategy, model, out);
  CheckExpertTensorPlacement(strategy, model, cluster, out);
  CheckMoeRouting(strategy, model, out);
  CheckZeroWithPipeline(strategy, out);
  CheckOverlap(strategy, out);
  CheckGradAccumulation(strategy, out);
  return out;
}

std::vector<StrategyViolation> LayerSplitViolations(const Strategy& strategy,
                                                    const ModelSpec& model) {
  Violations out;
  CheckRanges(strategy, out);
  CheckTensorSplits(strategy, model, out);
  CheckSequenceParallel(strategy, out);
  CheckContextParallel(strategy, out);
  CheckExperts(strategy, model, out);
  CheckExpertTensorParallel(strategy, model, out);
  return out;
}

std::vector<int64_t> LayersPerVirtualStage(const Strategy& s, int64_t num_layers) {
  if (!s.layout.empty()) return s.layout;
  const int64_t fixed_stages = (s.first_stage_layers > 0) + (s.last_stage_layers > 0);
  const int64_t middle_stages = s.pp - fixed_stages;
  const int64_t rest = num_layers - s.first_stage_layers - s.last_stage_layers;
  const int64_t middle = middle_stages > 0 ? rest / middle_stages : 0;
  std::vector<int64_t> per_stage(static_cast<size_t>(s.pp), middle);
  if (s.first_stage_layers > 0) per_stage.front() = s.first_stage_layers;
  if (s.last_stage_layers > 0) per_stage.back() = s.last_stage_layers;
  return SplitStagesIntoChunks(per_stage, s.vpp, s.schedule);
}

std::vector<int64_t> SplitStagesIntoChunks(const std::vector<int64_t>& stage_layers, int64_t vpp,
                                           ScheduleKind schedule) {
  const int64_t pp = static_cast<int64_t>(stage_layers.size());
  std::vector<int64_t> layers(static_cast<size_t>(pp * vpp), 0);
  for (int64_t stage = 0; stage < pp; ++stage) {
    const int64_t base = stage_layers[stage] / vpp, extra = stage_layers[stage] % vpp;
    for (int64_t chunk = 0; chunk < vpp; ++chunk) {
      // The first stage's lighter chunks come first (beside the embedding); every other stage's
      // come last (the last stage's beside the loss).
      const bool heavier = stage == 0 && pp > 1 ? chunk >= vpp - extra : chunk < extra;
      layers[static_cast<size_t>(VirtualStageOf(pp, schedule, stage, chunk))] =
          base + (heavier ? 1 : 0);
    }
  }
  return layers;
}

Status ValidateStrategy(const Strategy& strategy, const ModelSpec& model,
                        const ClusterSpec& cluster) {
  const Violations violations = StrategyViolations(strategy, model, cluster);
  if (violations.empty()) return Status::Ok();
  std::string message;
  for (const StrategyViolation& violation : violations) {
    if (!message.empty()) message += '\n';
    message += violation.message;
  }
  return Status::InvalidArgument(std::move(message));
}

}  // namespace loom
