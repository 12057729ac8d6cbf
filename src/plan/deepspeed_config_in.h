// A Megatron-DeepSpeed launch read back (issue 45): the argument list of its pretrain_gpt.py with
// the DeepSpeed config the list names (--deepspeed --deepspeed_config FILE), to the strategy and
// kernels loom simulates. The reverse of DeepSpeedConfig (plan/deepspeed_config.h): its config and
// launcher_args read back to a strategy that emits the same config and arguments.

#ifndef LOOM_PLAN_DEEPSPEED_CONFIG_IN_H_
#define LOOM_PLAN_DEEPSPEED_CONFIG_IN_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/megatron_args_in.h"
#include "spec/model.h"

namespace loom {

// The files a Megatron-DeepSpeed launch is read from, for messages.
struct MegatronDeepSpeedFiles {
  std::string args;    // the launch script or argument list (ShellWords' |file|)
  std::string config;  // the DeepSpeed config
};

// Reads |words| (ShellWords of files.args) as Megatron-DeepSpeed's pretrain_gpt.py arguments
// (microsoft/Megatron-DeepSpeed f4157bea, megatron/arguments.py) and |config| (files.config) as
// the DeepSpeed config they run with (deepspeedai/DeepSpeed 38327e07f, deepspeed/runtime/config.py
// and zero/config.py), for |model| on |world_size| GPUs unless the launcher states its own:
// - the arguments give the parallelism (tp, pp, --no-pipeline-parallel, --sequence-parallel,
//   ZB-H1), the sequence, the experts (--num-experts, --moe-expert-parallel-size, --topk,
//   --expert-interval, capacity or dropless), the attention kernel (--use-flash-attn-v2, -triton,
//   -v1; Megatron-DeepSpeed's unfused CoreAttention without one), dropout, the optimizer
//   (--optimizer, --cpu-optimizer: Megatron-DeepSpeed builds its own and hands it to DeepSpeed)
//   and recompute (--checkpoint-activations, --recompute-*);
// - the config gives the batch (train_batch_size, train_micro_batch_size_per_gpu,
//   gradient_accumulation_steps, any two, as DeepSpeed derives the third), the precision
//   (bf16/fp16, communication_data_type, data_types.grad_accum_dtype: the gradients are budgeted in
//   the dtype DeepSpeed sums them in), and ZeRO (stage, overlap_comm, offload_optimizer,
//   offload_param, stage3_prefetch_bucket_size);
// where both say a thing (micro-batch, global batch, bf16/fp16) they must agree. Flags and keys
// loom does not model are listed in not_modelled (config keys as "FILE: key value"). The result's
// strategy is one DeepSpeedConfig accepts: what it refuses (ZeRO-2/3 with a pipeline, selective
// recompute with FlashAttention, ...) is refused here with its reason.
// Errors name the file and the flag or key: a value that is not a number ("auto", a template
// placeholder), the two files disagreeing, DeepSpeed-Ulysses (--ds-sequence-parallel-size), virtual
// stages, NVMe offload, partitioned or CPU activation checkpoints, a model flag that differs from
// |model|.
Result<MegatronLaunch> ReadMegatronDeepSpeedLaunch(const std::vector<std::string>& words,
                                                   const nlohmann::json& config,
                                                   const ModelSpec& model, int64_t world_size,
                                                   const MegatronDeepSpeedFiles& files);

}  // namespace loom

#endif  // LOOM_PLAN_DEEPSPEED_CONFIG_IN_H_
