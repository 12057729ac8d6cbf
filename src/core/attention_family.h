#ifndef LOOM_CORE_ATTENTION_FAMILY_H_
#define LOOM_CORE_ATTENTION_FAMILY_H_

#include <cstdint>

#include "core/enum_names.h"

namespace loom {

// Which library's kernel runs a fused attention (one kernel for softmax(Q K^T) V and one for its
// gradient). The families reach different rates on the same shape: on an H100 SXM5, at head dim
// 128, FlashAttention-2 runs at about 35 % of the tensor peak (Shah et al. 2024, FlashAttention-3,
// Section 1) where cuDNN's fused SDPA reached 318-678 TFLOP/s on the committed run
// (hardware/validation/2026-11-27/profile.json). The GPU file calibrates each family
// (ComputeCalibration: attention_efficiency and attention_tiles); the framework file says which
// one its attention layer calls (FrameworkProfile::fused_attention).
enum class AttentionFamily : uint8_t {
  // Dao-AILab/flash-attention 2.x (Dao 2023): flash_attn_func, and PyTorch's
  // scaled_dot_product_attention on its flash backend.
  kFlashAttention2,
  // cuDNN's fused scaled-dot-product attention (cudnn-frontend's SDPA graph), as Transformer
  // Engine's FusedAttention (its F16_arbitrary_seqlen backend) and loom probe call it.
  kCudnn,
};
inline constexpr EnumNames<AttentionFamily, 2> kAttentionFamilyNames({{
    {AttentionFamily::kFlashAttention2, "flash2"},
    {AttentionFamily::kCudnn, "cudnn"},
}});

}  // namespace loom

#endif  // LOOM_CORE_ATTENTION_FAMILY_H_
