#ifndef LOOM_CORE_ATTENTION_FAMILY_H_
#define LOOM_CORE_ATTENTION_FAMILY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace loom {

// Which library's kernel runs a fused attention (one kernel for softmax(Q K^T) V and one for its
// gradient). The families reach different rates on the same shape: on an H100 SXM5, at head dim
// 128, FlashAttention-2 runs at about 35 % of the tensor peak (Shah et al. 2024, FlashAttention-3,
// Section 1) where cuDNN's fused SDPA reached 318-678 TFLOP/s on the committed run
// (hardware/validation/2026-11-27/profile.json). The GPU file calibrates each family
// (ComputeCalibration: attention_efficiency and the attention tiles of each family); the framework
// file says which one its attention layer calls (FrameworkProfile::fused_attention).
enum class AttentionFamily : uint8_t {
  // Dao-AILab/flash-attention 2.x (Dao 2023): flash_attn_func, and PyTorch's
  // scaled_dot_product_attention on its flash backend.
  kFlashAttention2,
  // cuDNN's fused scaled-dot-product attention (cudnn-frontend's SDPA graph), as Transformer
  // Engine's FusedAttention (its F16_arbitrary_seqlen backend) and loom probe call it.
  kCudnn,
  // The Triton port of the first FlashAttention (Dao-AILab/flash-attention 1.x,
  // flash_attn/flash_attn_triton.py), which llm-foundry copied as its attn_impl triton (the default
  // of its 2023 benchmark scripts) and Megatron-DeepSpeed calls with --use-flash-attn-triton: about
  // half FlashAttention-2's rate on an A100 (Dao 2023, Figure 4).
  kTriton,
};
inline constexpr EnumNames<AttentionFamily, 3> kAttentionFamilyNames({{
    {AttentionFamily::kFlashAttention2, "flash2"},
    {AttentionFamily::kCudnn, "cudnn"},
    {AttentionFamily::kTriton, "triton"},
}});

// What a user may name as the attention of a step (--attention, a scenario's "attention"): fused
// (the family the framework calls), a family by name, or unfused.
inline std::vector<std::string> AttentionChoices() {
  std::vector<std::string> names = {"fused"};
  for (const std::string& family : kAttentionFamilyNames.Names()) names.push_back(family);
  names.push_back("unfused");
  return names;
}

}  // namespace loom

#endif  // LOOM_CORE_ATTENTION_FAMILY_H_
