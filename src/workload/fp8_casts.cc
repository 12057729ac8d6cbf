#include "workload/fp8_casts.h"

#include <cstdint>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "op/op.h"

namespace loom {
namespace {

// The activations an fp8 step keeps (ActivationDtype, workload/layer_dims.h).
constexpr int64_t kBf16Bytes = BytesPerElement(Dtype::kBf16);

// The unfused attention core's batched GEMMs multiply activations, not a linear's weight.
bool IsAttentionCore(OpName name) {
  switch (name) {
    case OpName::kAttentionScores:
    case OpName::kAttentionContext:
    case OpName::kAttentionContextDgradProbs:
    case OpName::kAttentionContextDgradValues:
    case OpName::kAttentionScoresDgradQuery:
    case OpName::kAttentionScoresDgradKey:
      return true;
    default:
      return false;
  }
}

// A cast of |elements| bf16 values to fp8 with its fp8 transpose.
Op CastTranspose(OpName name, int64_t elements) {
  return MakeMemory(name, {elements * kBf16Bytes, elements * kBf16Bytes});
}

// |ops| with the casts |casts_of| gives each fp8 linear GEMM inserted before it.
template <typename CastsOf>
std::vector<Op> WithCasts(const std::vector<Op>& ops, CastsOf casts_of) {
  std::vector<Op> out;
  out.reserve(ops.size() * 2);
  for (const Op& op : ops) {
    const GemmShape* g = std::get_if<GemmShape>(&op.shape);
    if (op.kind == OpKind::kGemm && g != nullptr && g->dtype == Dtype::kFp8 &&
        !IsAttentionCore(op.name)) {
      casts_of(*g, &out);
    }
    out.push_back(op);
  }
  return out;
}

}  // namespace

void AppendFp8Casts(bool weight_cast_every_microbatch, LayerOps* ops) {
  // Forward GEMMs are [m tokens, k in] x [k, n out]: the input is m x k, the weight k x n.
  ops->forward = WithCasts(ops->forward, [&](const GemmShape& g, std::vector<Op>* out) {
    out->push_back(CastTranspose(OpName::kFp8Cast, g.batch * g.m * g.k));
    if (weight_cast_every_microbatch)
      out->push_back(CastTranspose(OpName::kFp8WeightCast, g.batch * g.k * g.n));
  });
  // Input-gradient GEMMs are [m tokens, k out] x [k, n in]: the output gradient is m x k.
  ops->backward_input =
      WithCasts(ops->backward_input, [](const GemmShape& g, std::vector<Op>* out) {
        out->push_back(CastTranspose(OpName::kFp8GradCast, g.batch * g.m * g.k));
      });
}

}  // namespace loom
