#include <gtest/gtest.h>

#include <string>

#include "device/cuda/sdpa_support.h"

// cudnn-frontend's version guards for the SDPA graphs loom builds, checked without a GPU.

namespace loom::cuda {
namespace {

constexpr int64_t kCudnn9_19_0 = 91900;

// Llama-3-8B's attention at 4k: b=1 h=32 h_kv=8 s=4096 d=128, causal bf16.
AttentionShape Llama(int64_t seq_q = 4096, int64_t seq_kv = 4096) {
  AttentionShape shape;
  shape.batch = 1;
  shape.heads = 32;
  shape.kv_heads = 8;
  shape.seq_q = seq_q;
  shape.seq_kv = seq_kv;
  shape.head_dim_qk = 128;
  shape.head_dim_v = 128;
  return shape;
}

bool ReasonContains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudnnVersionName, SplitsMajorMinorAndPatch) {
  EXPECT_EQ(CudnnVersionName(91900), "9.19.0");
  EXPECT_EQ(CudnnVersionName(91001), "9.10.1");
  EXPECT_EQ(CudnnVersionName(90000), "9.0.0");
}

TEST(CheckCudnnSdpaSupport, AcceptsLlamaOnCurrentCudnn) {
  EXPECT_TRUE(CheckCudnnSdpaSupport(Llama(), SdpaPass::kForward, kCudnn9_19_0).ok());
  EXPECT_TRUE(CheckCudnnSdpaSupport(Llama(), SdpaPass::kBackward, kCudnn9_19_0).ok());
}

TEST(CheckCudnnSdpaSupport, RefusesBothPassesOnCudnn9_10_0And9_10_1) {
  for (int64_t version : {91000, 91001}) {
    for (SdpaPass pass : {SdpaPass::kForward, SdpaPass::kBackward}) {
      Status status = CheckCudnnSdpaSupport(Llama(), pass, version);
      EXPECT_EQ(status.code(), Status::Code::kUnimplemented) << version;
      EXPECT_TRUE(ReasonContains(status.message(), "use cuDNN 9.10.2 or newer"))
          << status.message();
    }
  }
  Status status = CheckCudnnSdpaSupport(Llama(), SdpaPass::kBackward, 91001);
  EXPECT_EQ(status.message(),
            "attention fwd causal b1 h32/8 s4096/4096 d128/128 bf16 on cuDNN 9.10.1: cuDNN 9.10.0 "
            "and 9.10.1 have known bugs in the bf16/fp16 attention backward (cudnn-frontend "
            "refuses it there): use cuDNN 9.10.2 or newer");
  EXPECT_TRUE(CheckCudnnSdpaSupport(Llama(), SdpaPass::kBackward, 91002).ok());
  EXPECT_TRUE(CheckCudnnSdpaSupport(Llama(), SdpaPass::kForward, 90900).ok());
}

TEST(CheckCudnnSdpaSupport, RefusesTheBackwardWhereTheFrontendAddsAPaddingMask) {
  const AttentionShape ragged_kv = Llama(4096, 4000);  // 4000 % 128 = 32
  Status status = CheckCudnnSdpaSupport(ragged_kv, SdpaPass::kBackward, 91500);
  EXPECT_EQ(status.code(), Status::Code::kUnimplemented);
  EXPECT_TRUE(ReasonContains(status.message(),
                             "on cuDNN 9.15.0: cuDNN 9.15.0 and older need a padding mask in the "
                             "attention backward when s_kv (4000) is not a multiple of 128"))
      << status.message();
  EXPECT_EQ(CheckCudnnSdpaSupport(ragged_kv, SdpaPass::kBackward, 91100).code(),
            Status::Code::kUnimplemented);
  // Newer cuDNN, the forward, or an s_kv that is a multiple of 128 (whatever s_q is) need no mask.
  EXPECT_TRUE(CheckCudnnSdpaSupport(ragged_kv, SdpaPass::kBackward, 91501).ok());
  EXPECT_TRUE(CheckCudnnSdpaSupport(ragged_kv, SdpaPass::kForward, 91500).ok());
  EXPECT_TRUE(CheckCudnnSdpaSupport(Llama(4000, 4096), SdpaPass::kBackward, 91500).ok());
}

TEST(CheckCudnnSdpaSupport, RefusesHeadDimsThatAreNotMultiplesOf8) {
  AttentionShape shape = Llama();
  shape.head_dim_v = 100;
  for (SdpaPass pass : {SdpaPass::kForward, SdpaPass::kBackward}) {
    Status status = CheckCudnnSdpaSupport(shape, pass, kCudnn9_19_0);
    EXPECT_EQ(status.code(), Status::Code::kUnimplemented);
    EXPECT_TRUE(ReasonContains(status.message(), "multiples of 8; d_qk is 128 and d_v 100"))
        << status.message();
  }
}

TEST(CheckCudnnSdpaSupport, RefusesTheBackwardOfOneQueryAndOneKey) {
  const AttentionShape single = Llama(1, 1);
  EXPECT_TRUE(
      ReasonContains(CheckCudnnSdpaSupport(single, SdpaPass::kBackward, kCudnn9_19_0).message(),
                     "does not run s_q = s_kv = 1"));
  EXPECT_TRUE(CheckCudnnSdpaSupport(single, SdpaPass::kForward, kCudnn9_19_0).ok());
}

TEST(CheckCudnnSdpaSupport, RefusesMaskedDecodeOnCudnn9_9AndOlder) {
  AttentionShape decode = Llama(1, 4096);
  EXPECT_EQ(CheckCudnnSdpaSupport(decode, SdpaPass::kForward, 90900).code(),
            Status::Code::kUnimplemented);
  EXPECT_TRUE(CheckCudnnSdpaSupport(decode, SdpaPass::kForward, 91002).ok());
  decode.causal = false;
  EXPECT_TRUE(CheckCudnnSdpaSupport(decode, SdpaPass::kForward, 90900).ok());
}

}  // namespace
}  // namespace loom::cuda
