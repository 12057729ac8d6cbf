#ifndef LOOM_PLAN_MEGATRON_ARGS_H_
#define LOOM_PLAN_MEGATRON_ARGS_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// The arguments of Megatron-LM's pretrain_gpt.py (megatron/training/arguments.py, core_r0.12 and
// later) that train |model| with |strategy|: one token per element ("--tensor-model-parallel-size",
// "8"), in groups, always in this order:
//   1. parallelism: tensor, pipeline (virtual stages, uneven first/last stage), sequence, context,
//      expert;
//   2. batch: micro-batch, global batch, sequence length;
//   3. model: shape, attention (GQA or MLA), MLP, norm, positions, biases, mixture of experts;
//   4. precision: bf16, fp16 or fp8, and the gradient-reduction dtype;
//   5. optimizer: its kind, ZeRO (distributed optimizer or Megatron-FSDP), CPU offload;
//   6. recompute;
//   7. overlap: gradient reduce, parameter gather, tensor-parallel communication.
// Data, tokenizer, learning-rate and checkpoint arguments are the run's own and are not emitted;
// the data-parallel size is not an argument either (Megatron-LM derives it from the world size).
// REQUIRES: |strategy| passed ValidateStrategy for |model|.
// Errors: InvalidArgument, naming the loom setting and the fix, for what Megatron-LM cannot run:
// the gpipe, zb-h1, zb-v and dualpipev schedules, parameter offload, the adafactor optimizer, a
// plain ReLU MLP, biases on attention but not on the MLP (or the reverse), and combinations its
// validate_args rejects (--overlap-param-gather without --zero 1+ or --overlap-grad-reduce,
// --tp-comm-overlap without --sp, --ep with fp16, --grad-reduce-in-bf16 without bf16 or fp8), and
// autograd gradient accumulation (PyTorch DDP's .grad sums, which Megatron-LM no longer runs).
// Gradient accumulation add is --no-gradient-accumulation-fusion; fused is Megatron-LM's default.
Result<std::vector<std::string>> MegatronArguments(const ModelSpec& model, const Strategy& strategy);

// |args| as a copy-paste shell command: a comment line, then a torchrun line (with
// CUDA_DEVICE_MAX_CONNECTIONS=1 in front when tp or cp > 1 without Megatron-FSDP, which
// Megatron-LM's validate_args requires before Blackwell), then "pretrain_gpt.py" and one flag with
// its values per line, each line but the last ending in " \". Tokens with shell metacharacters
// are single-quoted.
std::string FormatMegatronCommand(const std::vector<std::string>& args);

}  // namespace loom

#endif  // LOOM_PLAN_MEGATRON_ARGS_H_
