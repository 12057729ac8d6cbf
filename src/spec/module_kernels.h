#ifndef LOOM_SPEC_MODULE_KERNELS_H_
#define LOOM_SPEC_MODULE_KERNELS_H_

namespace loom {

// Kernels that a framework's own modules launch around loom's transformer layer
// (workload/layer_ops.h), whose linear layers fold their biases into the GEMMs and whose fused
// attention takes Q, K and V as the QKV projection leaves them, as Megatron-core with Transformer
// Engine runs it. Eager PyTorch modules launch more: the framework file's "layer_kernels" object
// (FrameworkProfile::layer_kernels) says which.
struct ModuleKernels {
  // Each linear layer's bias gradient is a reduction of its output gradient over the tokens, a
  // kernel of its own: autograd's backward of the bias broadcast in F.linear (addmm), where
  // Transformer Engine's Linear folds it into the weight-gradient GEMM's epilogue (cuBLASLt's
  // BGRADB).
  bool linear_bias_grads = false;
  // The QKV projection's output is split into q, k and v views (torch.split), whose backward
  // concatenates their three gradients into one tensor (SplitWithSizesBackward: a cat): a copy of
  // the tokens x (q + 2 kv) gradient.
  bool qkv_split_grad_copy = false;
  // The attention runs FlashAttention's variable-length kernel on unpadded rows: q, k and v are
  // each gathered to the rows the padding mask keeps (flash_attn.bert_padding.unpad_input:
  // torch.gather) and the output scattered back into a zeroed padded tensor (pad_input:
  // torch.zeros then index_put); backward zeroes and scatters each of q's, k's and v's gradients
  // back (zeros, scatter_) and gathers the output's gradient.
  bool attention_unpad = false;
  // In fp8, each linear's weight is cast to fp8 with its transpose before every micro-batch's
  // forward: Transformer Engine's Linear called without is_first_microbatch (te.Linear in place of
  // nn.Linear), where Megatron-LM passes it and TE reuses the first micro-batch's cast
  // (workload/fp8_casts.h).
  bool fp8_weight_cast_every_microbatch = false;
  // Megatron-LM's own attention scales the scores by the layer number inside the softmax
  // (query-key layer scaling: on by default in Megatron-LM before core and in Megatron-DeepSpeed,
  // --no-query-key-layer-scaling; off in Megatron-core, --apply-query-key-layer-scaling). The fused
  // softmax folds it in; PyTorch's fallback, where the fused kernel does not take the shape,
  // multiplies in a kernel of its own (workload/attention_ops.cc).
  bool query_key_layer_scaling = false;
};

}  // namespace loom

#endif  // LOOM_SPEC_MODULE_KERNELS_H_
