#ifndef LOOM_WORKLOAD_LAYER_DIMS_H_
#define LOOM_WORKLOAD_LAYER_DIMS_H_

// Internal to src/workload: the sizes the op builders share, and the pieces every block uses.

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "op/op.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// Bytes of an int64 index, as torch indexes: token and position ids, row indices of a gather.
inline constexpr int64_t kIndexBytes = 8;

// The sizes of one layer's tensors on one tensor-parallel rank for one micro-batch.
// The dtype activations are kept and sent in when the model trains in |dtype|: bf16 when the
// GEMMs run in fp8 (Transformer Engine casts per GEMM; Micikevicius et al. 2022, Section 4), else
// |dtype| itself (tf32 is a compute mode over fp32 storage).
Dtype ActivationDtype(Dtype dtype);

struct LayerDims {
  int64_t batch = 0;      // sequences in the micro-batch
  int64_t seq = 0;        // queries per sequence on this rank: seq_len / cp
  int64_t seq_kv = 0;     // keys per sequence the attention reads: seq_len
  int64_t window = 0;     // the layer's sliding window where shorter than seq_len; 0: none
  int64_t tokens = 0;     // batch * seq: the rows of every GEMM
  int64_t tokens_sp = 0;  // tokens / tp with sequence parallelism, else tokens: rows of norms,
                          // dropout and residuals
  int64_t hidden = 0;
  int64_t heads = 0;     // query heads on this rank
  int64_t kv_heads = 0;  // key/value heads on this rank
  int64_t head_dim = 0;
  int64_t q_width = 0;   // heads * head_dim
  int64_t kv_width = 0;  // kv_heads * head_dim
  int64_t ffn = 0;       // intermediate_size / tp
  int64_t vocab = 0;     // padded vocabulary / tp
  // Multi-head latent attention (DeepSeek-V2 Section 2.1), when the model has it. Each of the
  // |heads| query heads of the rank has keys and values of its own; head_dim, q_width and kv_width
  // are not used by it.
  bool mla = false;
  int64_t q_lora_rank = 0;  // 0: queries projected from the hidden state directly
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_dim = 0;  // per-head query and key width without rotary embedding
  int64_t qk_rope_dim = 0;  // per-head width with it; the key part is one, shared by all heads
  int64_t v_head_dim = 0;
  // Mixture of experts, when the layer has one.
  bool moe = false;
  int64_t experts = 0;  // routed experts
  int64_t top_k = 0;    // experts per token
  int64_t ep = 1;
  int64_t local_experts = 0;  // experts / ep
  int64_t shared_ffn = 0;     // shared experts * expert intermediate size / tp
  // Expert parallelism of the routed experts (Megatron-core's expert grid: etp fastest, then ep,
  // then expert data parallel), and the router's load model (see MoeRouting).
  int64_t etp = 1;             // ranks each routed expert's MLP is split over (Strategy::ExpertTp)
  int64_t expert_ffn = 0;      // expert intermediate size / etp
  double capacity_factor = 0;  // 0: dropless
  double imbalance = 1.0;      // busiest expert's rows over the mean
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t act_bytes = 2;  // bytes of one activation element
  Dtype gemm_dtype = Dtype::kBf16;
  Dtype act_dtype = Dtype::kBf16;
  bool sp = false;
  bool gated = false;
  bool rope = false;
  bool learned_positions = false;
  bool dropout = false;
  // Megatron-LM's own layers (AttentionKernel::kUnfused): the unfused core attention, and linear
  // layers that add a column-parallel bias and reduce every bias gradient in kernels of their own.
  bool unfused = false;
  // With |unfused|: the scores are a shape Megatron-LM's fused softmax does not take
  // (FusedSoftmaxTakes), so PyTorch's runs instead: the scores cast to fp32, scaled with
  // modules.query_key_layer_scaling, masked, the softmax and the cast back, each a kernel.
  bool torch_softmax = false;
  // LayerOpsOptions::modules: the framework's own module kernels around the layer.
  ModuleKernels modules{};
  // Whether every bias gradient is a reduction kernel of its own (Megatron-LM's own linears, or
  // modules.linear_bias_grads).
  bool BiasGradKernels() const { return unfused || modules.linear_bias_grads; }
  AttentionFamily fused_family = AttentionFamily::kFlashAttention2;  // LayerOpsOptions'
  bool causal = true;                                                // LayerOpsOptions'
  bool attention_bias = false;         // the model's q, k and v projections have biases
  bool attention_output_bias = false;  // its output projection has one (not in Qwen2)
  bool mlp_bias = false;               // its MLP projections have biases
  Recompute recompute = Recompute::kNone;

  // Bytes of |rows| x |width| activations.
  int64_t Bytes(int64_t rows, int64_t width) const { return rows * width * act_bytes; }
  // Bytes of the hidden state of |rows| tokens.
  int64_t Hidden(int64_t rows) const { return Bytes(rows, hidden); }
  GemmShape Gemm(int64_t m, int64_t n, int64_t k) const { return {m, n, k, 1, gemm_dtype}; }
};

// OK if |options.layer| exists, its MoE (if any) has sound sizes and, with tp > 1, sequence
// parallelism, and its attention kernel is modelled for |strategy| and its attention (the fused
// kernel only for latent attention).
// REQUIRES: LayerSplitViolations(strategy, model) is empty (spec/strategy.h).
Status CheckLayerSupported(const ModelSpec& model, const Strategy& strategy,
                           const LayerOpsOptions& options);

// Derives the sizes, checking the model's own (at least 1, whole query groups, latent attention)
// and that no product overflows; the layer itself is checked by CheckLayerSupported. Errors name
// the model, the key and the fix.
// REQUIRES: LayerSplitViolations(strategy, model) is empty (spec/strategy.h): the sizes split
// evenly over tp, etp, ep, cp and sp.
Result<LayerDims> ComputeLayerDims(const ModelSpec& model, const Strategy& strategy,
                                   const LayerOpsOptions& options);

// A norm (LayerNorm or RMSNorm) over tokens_sp rows; it keeps its input.
Op NormOp(const LayerDims& d, OpName name);
// Its backward: reads dY, X and the residual branch's gradient, writes dX.
Op NormGradOp(const LayerDims& d, OpName name);
// Dropout and residual add over tokens_sp rows; keeps the 1-byte mask when there is dropout.
Op ResidualOp(const LayerDims& d, OpName name);
// Dropout backward (only with dropout: without it the gradient passes through the add).
Op ResidualGradOp(const LayerDims& d, OpName name);

// Megatron-LM's own linear layers (d.unfused) keep biases out of their GEMMs. A column-parallel
// linear that adds its bias (the QKV projection; the others pass theirs to a fused bias-GeLU or
// bias-dropout-add) does it in a kernel of its own after the GEMM, reading and writing the
// tokens x |width| output (output = output + bias: LinearWithGradAccumulationAndAsyncCommunication
// .forward, megatron/core/tensor_parallel/layers.py at NVIDIA/Megatron-LM d98e8a64; F.linear's
// matmul then add_ for 3-D inputs at 6985e589) ...
Op ColumnBiasOp(const LayerDims& d, OpName name, int64_t width);
// ... and every bias gradient is a reduction of the output gradient over the |rows| tokens of the
// bias's input (grad_output.sum(dim=0) in that backward; autograd's sum over the broadcast for the
// fused bias-GeLU and bias-dropout-add), reading rows x |width| activations. Transformer Engine's
// linears fold both into cuBLASLt epilogues (BIAS, BGRADB) instead.
Op BiasGradOp(const LayerDims& d, OpName name, int64_t rows, int64_t width);

// Tensor-parallel communication around Megatron's linear layers (Shoeybi et al. 2019, Section 3;
// Korthikanti et al. 2022, Section 4.2.2, Figure 5). None when tp is 1.
// Before a column-parallel linear, forward: with sp an all-gather of the input.
void AppendColumnInputForward(const LayerDims& d, OpName gather, std::vector<Op>* ops);
// Its backward B, in Megatron's issue order (megatron/core/tensor_parallel/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication.backward): with sp, before the dX GEMM, an
// all-gather of the saved sequence-sharded input, which the W GEMM reads ...
void AppendColumnInputRegather(const LayerDims& d, OpName regather, std::vector<Op>* ops);
// ... and after it a reduce-scatter of dX; without sp an all-reduce of dX.
void AppendColumnInputGradReduce(const LayerDims& d, OpName reduce, std::vector<Op>* ops);
// The same around a column-parallel linear whose input is |width| wide per token, not hidden
// (MLA's up projections read the q and kv latents); the regather is a second forward gather.
void AppendColumnInputForward(const LayerDims& d, OpName gather, int64_t width,
                              std::vector<Op>* ops);
void AppendColumnInputGradReduce(const LayerDims& d, OpName reduce, int64_t width,
                                 std::vector<Op>* ops);
// After a row-parallel linear, forward: a reduce-scatter with sp, else an all-reduce.
void AppendRowOutputForward(const LayerDims& d, OpName reduce, std::vector<Op>* ops);
// Its backward B: with sp an all-gather of the output gradient; nothing without.
void AppendRowOutputBackward(const LayerDims& d, OpName gather, std::vector<Op>* ops);

// Bytes a column-parallel linear keeps of its input: the sequence-sharded copy with sp
// (Korthikanti et al. 2022, Section 4.2.2), else the full one.
int64_t ColumnInputSavedBytes(const LayerDims& d);

// Appends |from| to |to|.
void Append(const std::vector<Op>& from, std::vector<Op>* to);

}  // namespace loom

#endif  // LOOM_WORKLOAD_LAYER_DIMS_H_
