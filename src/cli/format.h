#ifndef LOOM_CLI_FORMAT_H_
#define LOOM_CLI_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/attention_family.h"
#include "sim/simulator.h"
#include "spec/step_intervals.h"

namespace loom {

// The framework whose host thread simulate and plan model unless told otherwise: Megatron-LM's
// megatron-core, the code of every step-time table loom is checked against.
inline constexpr const char* kDefaultFramework = "megatron-core";
// What loom plan --emit deepspeed models unless told otherwise: the Megatron-DeepSpeed and
// DeepSpeed its configs are written for.
inline constexpr const char* kDeepSpeedFramework = "megatron-deepspeed-2024";
inline constexpr const char* kFrameworkHelp =
    "Training framework whose host thread issues the GPU's work (hardware/frameworks/): its host "
    "time per op, CUDA graphs, its training script's work per micro-batch, where it waits for the "
    "GPU, which tensor-parallel collectives it runs beside its GEMMs, how it runs ZeRO-3 and which "
    "kernels its modules add around each layer. A name in hardware/frameworks/ (megatron-core, "
    "megatron-core-cudagraphs, megatron-deepspeed, megatron-deepspeed-2024, pytorch-eager, "
    "deepspeed-zero3-2021, llm-foundry), a framework file, or none (the GPU is always fed and "
    "every collective blocks)";

// --memory-headroom of simulate and plan.
inline constexpr const char* kMemoryHeadroomHelp =
    "Share of each GPU's memory kept free for the caching allocator's fragmentation, beside the "
    "CUDA context, cuBLAS workspaces and NCCL buffers loom counts: a strategy fits when its peak "
    "stays under the rest, and one that fits only inside the headroom is marked so. Default: the "
    "framework file's memory.allocator_headroom, else 0.15 (PyTorch's caching allocator as "
    "GMLake, ASPLOS 2024, measured it); lower it where PYTORCH_CUDA_ALLOC_CONF="
    "expandable_segments:True or a measured run says so";

// --attention of simulate and plan: fused (the framework's fused kernel on each GPU), flash2,
// cudnn or triton (that fused kernel), or unfused (Megatron-LM's own core attention).
inline constexpr const char* kAttentionHelp =
    "Attention kernel: fused (the framework's fused kernel for the GPU: the framework file's "
    "fused_attention, e.g. Transformer Engine's cuDNN attention from Hopper on and "
    "FlashAttention-2 before it), flash2 (FlashAttention-2, at the GPU file's "
    "attention_tiles_flash2, else its attention_efficiency), cudnn (cuDNN's fused attention, at "
    "its attention_tiles), triton (the Triton port of the first FlashAttention, llm-foundry's "
    "attn_impl triton, at its attention_tiles_triton: the A100, H100 and H200 files), or unfused "
    "(Megatron-LM's own layers without Transformer Engine: its core attention, which keeps the "
    "softmax for backward, and bias adds and bias gradients as kernels of their own)";
inline const std::vector<std::string> kAttentionChoices = AttentionChoices();

// The kernel an --attention choice runs: unfused, else fused (of whichever family).
AttentionKernel AttentionKernelOf(const std::string& attention);

// Sets |options|' attention kernel, and its family where |attention| names one (flash2, cudnn,
// triton);
// fused leaves the family to the framework. REQUIRES: |attention| is one of kAttentionChoices.
void SetAttention(const std::string& attention, SimulationOptions& options);

// "70.55 B", "12.88 B", "46.70 M": a count with an SI suffix and 4 significant digits.
std::string HumanCount(double count);

// "131.42 GiB": a byte count in binary units.
std::string HumanBytes(double bytes);

// "450.6 GFLOP", "1.35 TFLOP".
std::string HumanFlops(double flops);

// "70,553,706,496": digits grouped by thousands.
std::string GroupedDigits(int64_t value);

// "1 node", "1,024 nodes": |count| (grouped) and |noun|, plural but for one (an "s" added, which
// the nouns loom counts take: node, GPU, NIC, rank, stage).
std::string Counted(int64_t count, std::string_view noun);

// |json| as indented JSON text. Bytes that are not UTF-8 (a GPU or run name read from a text log)
// are written as U+FFFD instead of throwing, so that such a name never fails a command.
template <typename Json>
std::string JsonText(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace);
}

// |items| joined by |separator|: "a, b, c".
std::string JoinedList(const std::vector<std::string>& items, std::string_view separator = ", ");

// {"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "host_s"}: where a simulated step
// went, as `loom simulate --json` and `loom plan --json` write it.
nlohmann::ordered_json BreakdownJson(const StepBreakdown& breakdown);

// A step-time interval as the tables print it: "10.52-25.09" (one decimal from 10 s up), "-"
// without one.
std::string IntervalText(const std::optional<StepInterval>& interval);

// Adds "step_time_interval_s" ([low, high], or null) and "interval_basis" to |j|.
void AddIntervalJson(const std::optional<StepInterval>& interval, nlohmann::ordered_json& j);

}  // namespace loom

#endif  // LOOM_CLI_FORMAT_H_
