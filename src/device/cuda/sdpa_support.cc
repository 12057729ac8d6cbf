#include "device/cuda/sdpa_support.h"

#include <string>

#include "op/op_json.h"

// Every rule below is cudnn-frontend's, at commit 3929da2ef4c1dba1bb8acb68727b9134f26f40c0
// (v1.19+, 2026-05-08), where get_backend_version() is cudnnGetVersion():
//   forward: include/cudnn_frontend/node/sdpa_support_surface.h,
//     SDPA_attributes::validate_sdpa_support_surface, the FP16/BF16 (mma_core_mode HALF) branch;
//   backward: include/cudnn_frontend/node/scaled_dot_product_flash_attention.h,
//     CompositeSDPABackwardNode::pre_validate_node.
// Rules for features loom's graphs do not use (bias, dropout, ALiBi, sliding windows, bottom-right
// causal masks, paged or ragged tensors, fp8) are left out.

namespace loom::cuda {
namespace {

constexpr int64_t kCudnn9_9_0 = 90900;
constexpr int64_t kCudnn9_10_0 = 91000;
constexpr int64_t kCudnn9_10_1 = 91001;
constexpr int64_t kCudnn9_15_0 = 91500;

// "attention bwd causal b1 h32/8 s4096/4096 d128/128 bf16 on cuDNN 9.10.1: <why>".
Status Refuse(const AttentionShape& shape, int64_t cudnn_version, const std::string& why) {
  return Status::Unimplemented(DescribeShape(shape) + " on cuDNN " +
                               CudnnVersionName(cudnn_version) + ": " + why);
}

std::string PassName(SdpaPass pass) { return pass == SdpaPass::kBackward ? "backward" : "forward"; }

// Both passes: "SDPA FP16/BF16 forward [backward] is not supported on cuDNN 9.10.0/9.10.1 due to
// known bugs. Please consider upgrading to 9.10.2 or newer." (a Transformer Engine constraint).
Status CheckKnownBadVersions(const AttentionShape& shape, SdpaPass pass, int64_t cudnn_version) {
  if (cudnn_version != kCudnn9_10_0 && cudnn_version != kCudnn9_10_1) return Status::Ok();
  return Refuse(shape, cudnn_version,
                "cuDNN 9.10.0 and 9.10.1 have known bugs in the bf16/fp16 attention " +
                    PassName(pass) +
                    " (cudnn-frontend refuses it there): use cuDNN 9.10.2 "
                    "or newer");
}

// Both passes: "hidden_dim should be multiple of 8" (the backward checks it with its largest head
// dim per architecture, which cuDNN itself enforces).
Status CheckHeadDims(const AttentionShape& shape, int64_t cudnn_version) {
  if (shape.head_dim_qk % 8 == 0 && shape.head_dim_v % 8 == 0) return Status::Ok();
  return Refuse(shape, cudnn_version,
                "cuDNN's fused attention needs head dims that are multiples of 8; d_qk is " +
                    std::to_string(shape.head_dim_qk) + " and d_v " +
                    std::to_string(shape.head_dim_v));
}

// The forward: "decode only mode, i.e. s_q == 1, not supported with masking (right_bound is set)
// for backend version 9.9 or below"; the causal mask is a diagonal band with right bound 0.
Status CheckForward(const AttentionShape& shape, int64_t cudnn_version) {
  if (shape.seq_q == 1 && shape.causal && cudnn_version <= kCudnn9_9_0) {
    return Refuse(shape, cudnn_version,
                  "cuDNN 9.9 and older run no masked attention with s_q = 1 (decode): use "
                  "cuDNN 9.10.2 or newer, or full attention");
  }
  return Status::Ok();
}

// The backward: "s_q = s_kv = 1 is not supported."; and, where s_kv % 128 != 0 on cuDNN <= 9.15.0,
// cudnn-frontend adds a padding mask with every sequence at full length ("Workaround padding mask";
// v1.15, commit 0b1577c8c83401237d601d0d0db5210506705396, whose release notes say "SDPA bprop now
// automatically applies a padding mask if the sequence length is not a multiple of the tile size";
// keyed on s_kv and limited to cuDNN <= 9.15.0 in v1.16.0,
// be6c079be8aaffa0fc079fcf039887e637c289c7). loom's graph has no padding mask (nor the
// sequence-length tensors one reads), so it does not plan what cuDNN would run without that
// workaround.
Status CheckBackward(const AttentionShape& shape, int64_t cudnn_version) {
  if (shape.seq_q == 1 && shape.seq_kv == 1) {
    return Refuse(shape, cudnn_version, "cuDNN's attention backward does not run s_q = s_kv = 1");
  }
  if (shape.seq_kv % 128 != 0 && cudnn_version <= kCudnn9_15_0) {
    return Refuse(shape, cudnn_version,
                  "cuDNN 9.15.0 and older need a padding mask in the attention backward when "
                  "s_kv (" +
                      std::to_string(shape.seq_kv) +
                      ") is not a multiple of 128; "
                      "cudnn-frontend adds one as a workaround, loom's graph has none: use cuDNN "
                      "9.15.1 or newer, or an s_kv that is a multiple of 128");
  }
  return Status::Ok();
}

}  // namespace

std::string CudnnVersionName(int64_t cudnn_version) {
  return std::to_string(cudnn_version / 10000) + "." + std::to_string(cudnn_version / 100 % 100) +
         "." + std::to_string(cudnn_version % 100);
}

Status CheckCudnnSdpaSupport(const AttentionShape& shape, SdpaPass pass, int64_t cudnn_version) {
  LOOM_RETURN_IF_ERROR(CheckKnownBadVersions(shape, pass, cudnn_version));
  LOOM_RETURN_IF_ERROR(CheckHeadDims(shape, cudnn_version));
  return pass == SdpaPass::kBackward ? CheckBackward(shape, cudnn_version)
                                     : CheckForward(shape, cudnn_version);
}

}  // namespace loom::cuda
