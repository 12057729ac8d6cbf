#ifndef LOOM_PLAN_DEEPSPEED_CONFIG_H_
#define LOOM_PLAN_DEEPSPEED_CONFIG_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// A plan for DeepSpeed: its config file and what the config cannot say.
struct DeepSpeedPlan {
  // ds_config.json (https://www.deepspeed.ai/docs/config-json/), keys in this order:
  // train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16 or fp16,
  // communication_data_type, optimizer, zero_allow_untested_optimizer, zero_optimization,
  // activation_checkpointing. Optimizer hyperparameters (lr, betas, ...) are left out; |notes|
  // says so.
  nlohmann::ordered_json config;
  // DeepSpeed's config has no tensor-, pipeline- or expert-parallel degree: pipelines are built in
  // code (deepspeed.pipe.PipelineModule(num_stages=...)) and tensor parallelism by the model. These
  // are the arguments of Megatron-DeepSpeed's pretrain_gpt.py (microsoft/Megatron-DeepSpeed,
  // megatron/arguments.py) that build them, one token per element, in this order: parallelism,
  // schedule, batch, mixture of experts, precision, optimizer and ZeRO, recompute, and the
  // switches that hand the run to DeepSpeed (--deepspeed --deepspeed_config ds_config.json).
  // Model-shape, data, tokenizer and learning-rate arguments are the run's own.
  std::vector<std::string> launcher_args;
  // What the reader must know: the batch equation with its numbers, the process count, what was
  // left out of the config and why.
  std::vector<std::string> notes;
};

// The DeepSpeed plan that trains |model| with |strategy|. train_batch_size =
// train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp: DeepSpeed's "number of GPUs"
// in that equation is the data-parallel size when a model-parallel unit is given
// (DeepSpeedConfig in deepspeed/runtime/config.py divides by mpu.get_data_parallel_world_size()).
// REQUIRES: |strategy| passed ValidateStrategy for |model|.
// Errors: InvalidArgument, naming the loom setting and the fix, for what DeepSpeed and
// Megatron-DeepSpeed cannot express: context parallelism, virtual stages and the gpipe, zb-v and
// dualpipev schedules, uneven first/last stages, ZeRO-2/3 with pipeline parallelism, fp8,
// --tp-comm-overlap, --overlap-param-gather below ZeRO-3, --overlap-grad-reduce with pipeline
// parallelism, --grad-reduce-in-bf16 without bf16, selective or partial recompute, adafactor,
// offload with another optimizer than Adam, a global batch that is not a multiple of micro-batch *
// dp, multi-head latent attention, and mixtures of experts with shared experts, leading dense
// layers, an expert-tensor-parallel size other than 1 or tp, or an ep that does not divide dp.
Result<DeepSpeedPlan> DeepSpeedConfig(const ModelSpec& model, const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_PLAN_DEEPSPEED_CONFIG_H_
