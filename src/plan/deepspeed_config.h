#ifndef LOOM_PLAN_DEEPSPEED_CONFIG_H_
#define LOOM_PLAN_DEEPSPEED_CONFIG_H_

#include <nlohmann/json.hpp>  // full header: DeepSpeedPlan holds its config as a value
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// What the launch must run as the simulation ran, beyond the strategy.
struct DeepSpeedOptions {
  // The attention kernel the plan was simulated with (loom plan --attention).
  AttentionKernel attention = AttentionKernel::kFused;
};

// A plan for DeepSpeed: its config file, the environment and arguments of its processes, and what
// the config cannot say.
struct DeepSpeedPlan {
  // ds_config.json (https://www.deepspeed.ai/docs/config-json/), keys in this order:
  // train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16 or fp16,
  // communication_data_type, data_types (grad_accum_dtype: the dtype of the buffer the simulation
  // accumulated gradients into, GradAccumulatorBytes'), optimizer, zero_allow_untested_optimizer,
  // zero_optimization, activation_checkpointing (with DeepSpeed's checkpointing of whole layers),
  // pipeline (pipe_partitioned and grad_partitioned off for a mixture of experts with pp > 1 and
  // tp > 1). Optimizer hyperparameters (lr, betas, ...) are left out; |notes| says so.
  nlohmann::ordered_json config;
  // Environment variables (name, value) every process needs, in the order to set them:
  // CUDA_DEVICE_MAX_CONNECTIONS=1 with sequence parallelism.
  std::vector<std::pair<std::string, std::string>> env;
  // DeepSpeed's config has no tensor-, pipeline- or expert-parallel degree: pipelines are built in
  // code (deepspeed.pipe.PipelineModule(num_stages=...)) and tensor parallelism by the model. These
  // are the arguments of Megatron-DeepSpeed's pretrain_gpt.py (microsoft/Megatron-DeepSpeed,
  // megatron/arguments.py) that build them, one token per element, in this order: parallelism,
  // schedule, batch, mixture of experts, attention kernel, precision, optimizer and ZeRO,
  // recompute, and the switches that hand the run to DeepSpeed (--deepspeed --deepspeed_config
  // ds_config.json). Model-shape, data, tokenizer and learning-rate arguments are the run's own.
  std::vector<std::string> launcher_args;
  // What the reader must know: the batch equation with its numbers, the process count, the
  // environment and why, what was left out of the config and why.
  std::vector<std::string> notes;
};

// The DeepSpeed plan that trains |model| with |strategy| as loom simulated it with |options|.
// train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp: DeepSpeed's
// "number of GPUs" in that equation is the data-parallel size when a model-parallel unit is given
// (DeepSpeedConfig in deepspeed/runtime/config.py divides by mpu.get_data_parallel_world_size()).
// |options| default to loom plan's and simulate's: a caller that simulated another attention
// kernel passes it, or the launch runs another kernel than the one simulated.
// REQUIRES: |strategy| passed ValidateStrategy for |model|.
// Errors: InvalidArgument, naming the loom setting and the fix, for what DeepSpeed and
// Megatron-DeepSpeed cannot express or would run otherwise than simulated: a gradient accumulation
// other than DeepSpeedGradAccumulation's; bf16 gradients accumulated in fp32 where DeepSpeed keeps
// them in bf16 (DeepSpeedKeepsBf16Gradients, without --grad-reduce-in-bf16), and in bf16 without
// ZeRO and without a pipeline, where DeepSpeed raises; context parallelism; virtual stages and the
// gpipe, zb-v and dualpipev schedules; stages split otherwise than DeepSpeed's partition_balanced
// (MegatronDeepSpeedStageLayers); ZeRO-2/3 with pipeline parallelism; fp8 beyond Transformer
// Engine's layers (pp 1, a dense multi-head LayerNorm and GeLU model, fused attention);
// --tp-comm-overlap; --overlap-param-gather below ZeRO-3;
// --overlap-grad-reduce with pipeline parallelism; --grad-reduce-in-bf16 without bf16; selective
// recompute with fused attention (Megatron-DeepSpeed checkpoints only its unfused core attention);
// recompute of only some layers (--recompute-layers, the block method) with pipeline parallelism;
// adafactor; offload with another optimizer than Adam; a global batch that is not a multiple of
// micro-batch * dp; multi-head latent attention; and mixtures of experts with ZeRO-3, with shared
// experts, with leading dense layers, with an expert-tensor-parallel size other than 1 or tp, or
// with an ep that does not divide dp.
Result<DeepSpeedPlan> DeepSpeedConfig(const ModelSpec& model, const Strategy& strategy,
                                      const DeepSpeedOptions& options = {});

// How DeepSpeed sums the micro-batches' weight gradients of |strategy|, the only mode
// DeepSpeedConfig accepts. Megatron-DeepSpeed returns every weight gradient to autograd (its fused
// accumulation into main_grad is commented out: megatron/core/tensor_parallel/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication.backward, microsoft/Megatron-DeepSpeed f4157bea).
// With ZeRO (stages 1-3) the engine's optimizer then adds each micro-batch's gradients into its
// accumulation buffer (accumulated_grad.add_ in stage_1_and_2.py's epilogue, grad_buffer.add_ in
// stage3.py, BF16_Optimizer's at stage 1; its dtype: DeepSpeedKeepsBf16Gradients); so does
// BF16_Optimizer for bf16 without ZeRO (its backward adds into a buffer of grad_accum_dtype):
// add. Without ZeRO the fp16 optimizer steps on .grad as autograd summed it in fp16: autograd.
GradAccumulation DeepSpeedGradAccumulation(const Strategy& strategy);

// Whether DeepSpeed sums the micro-batches' bf16 gradients of |strategy| in bf16 whatever
// data_types.grad_accum_dtype asks for: at ZeRO-2, and at ZeRO-1 with offload (stage_1_and_2.py
// keeps the running sum in the parameters' dtype). Elsewhere the buffer is of grad_accum_dtype,
// fp32 when asked: BF16_Optimizer's without ZeRO and at ZeRO-1 without offload, stage3.py's
// gradient partitions at ZeRO-3 (deepspeed/runtime/engine.py, _do_optimizer_sanity_check). A bf16
// plan for a strategy that keeps bf16 budgets 2-byte gradients: grad_reduce_in_bf16.
bool DeepSpeedKeepsBf16Gradients(const Strategy& strategy);

// What the planner sets grad_reduce_in_bf16 to for a DeepSpeed search: true for a bf16 strategy
// whose gradients DeepSpeed keeps in bf16 (DeepSpeedKeepsBf16Gradients) in a main-gradient buffer,
// so that the plan budgets and reduces what DeepSpeed runs; false otherwise. REQUIRES:
// strategy.grad_accumulation is DeepSpeedGradAccumulation(strategy).
bool DeepSpeedBudgetsBf16Gradients(const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_PLAN_DEEPSPEED_CONFIG_H_
