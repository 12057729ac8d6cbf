// The dense MLP block of a transformer layer: norm, up (and gate) projection, activation, down
// projection, residual; Megatron-LM's layout (megatron/core/transformer/mlp.py), which fuses the
// gate and up projections of a gated MLP into one column-parallel GEMM (linear_fc1).

#include <vector>

#include "workload/blocks.h"

namespace loom {
namespace {

int64_t UpWidth(const LayerDims& d, int64_t ffn) { return d.gated ? 2 * ffn : ffn; }

}  // namespace

void AppendMlpForward(const LayerDims& d, int64_t ffn, bool keeps_input, std::vector<Op>* f) {
  const int64_t up = UpWidth(d, ffn);
  // GeLU keeps its input (Korthikanti et al. 2022, Section 4.1: 8sbh with ffn 4h); SwiGLU keeps
  // both of its inputs, gate and up (Shazeer 2020).
  const int64_t act_saved = d.Bytes(d.tokens, up);
  AppendColumnInputForward(d, OpName::kMlpInputAllGather, f);
  f->push_back(MakeGemm(OpName::kMlpUp, d.Gemm(d.tokens, up, d.hidden),
                        keeps_input ? ColumnInputSavedBytes(d) : 0));
  f->push_back(MakeMemory(OpName::kMlpActivation, {act_saved, d.Bytes(d.tokens, ffn)}, act_saved));
  f->push_back(MakeGemm(OpName::kMlpDown, d.Gemm(d.tokens, d.hidden, ffn), d.Bytes(d.tokens, ffn)));
  AppendRowOutputForward(d, OpName::kMlpOutputReduce, f);
}

void AppendMlpBackward(const LayerDims& d, int64_t ffn, std::vector<Op>* b) {
  const int64_t up = UpWidth(d, ffn);
  AppendRowOutputBackward(d, OpName::kMlpOutputGradAllGather, b);
  b->push_back(MakeGemm(OpName::kMlpDownDgrad, d.Gemm(d.tokens, ffn, d.hidden)));
  // Reads the output gradient and the kept inputs, writes the inputs' gradients.
  b->push_back(
      MakeMemory(OpName::kMlpActivationGrad, {d.Bytes(d.tokens, ffn + up), d.Bytes(d.tokens, up)}));
  AppendColumnInputRegather(d, OpName::kMlpInputRegather, b);
  b->push_back(MakeGemm(OpName::kMlpUpDgrad, d.Gemm(d.tokens, d.hidden, up)));
  AppendColumnInputGradReduce(d, OpName::kMlpInputGradReduce, b);
}

void AppendMlpWeightGrads(const LayerDims& d, int64_t ffn, std::vector<Op>* w) {
  w->push_back(MakeGemm(OpName::kMlpDownWgrad, d.Gemm(ffn, d.hidden, d.tokens)));
  w->push_back(MakeGemm(OpName::kMlpUpWgrad, d.Gemm(d.hidden, UpWidth(d, ffn), d.tokens)));
}

LayerOps DenseMlpOps(const LayerDims& d) {
  LayerOps ops;
  ops.forward.push_back(NormOp(d, OpName::kPostAttentionNorm));
  AppendMlpForward(d, d.ffn, /*keeps_input=*/true, &ops.forward);
  ops.forward.push_back(ResidualOp(d, OpName::kMlpResidual));
  if (d.dropout) ops.backward_input.push_back(ResidualGradOp(d, OpName::kMlpResidualGrad));
  AppendMlpBackward(d, d.ffn, &ops.backward_input);
  ops.backward_input.push_back(NormGradOp(d, OpName::kPostAttentionNormGrad));
  AppendMlpWeightGrads(d, d.ffn, &ops.backward_weight);
  if (d.BiasGradKernels() && d.mlp_bias) {
    // The up projection's bias is added in the fused bias-GeLU and the down projection's in the
    // bias-dropout-add (or, in eager modules, in their GEMMs); autograd reduces each one's gradient
    // over the tokens.
    ops.backward_weight.push_back(BiasGradOp(d, OpName::kMlpDownBgrad, d.tokens_sp, d.hidden));
    ops.backward_weight.push_back(BiasGradOp(d, OpName::kMlpUpBgrad, d.tokens, UpWidth(d, d.ffn)));
  }
  return ops;
}

}  // namespace loom
