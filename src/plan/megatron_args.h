#ifndef LOOM_PLAN_MEGATRON_ARGS_H_
#define LOOM_PLAN_MEGATRON_ARGS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/status.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// The Megatron-LM releases whose arguments differ for loom's plans: the megatron-core tags
// core_r0.12.0, core_v0.13.0 ... core_v0.19.0 (a patch release parses as its minor one) and latest,
// main at NVIDIA/Megatron-LM d98e8a64.
enum class MegatronVersion {
  kCore012,
  kCore013,
  kCore014,
  kCore015,
  kCore016,
  kCore017,
  kCore018,
  kCore019,
  kLatest,
};

inline constexpr EnumNames<MegatronVersion, 9> kMegatronVersionNames({{
    {MegatronVersion::kCore012, "core_v0.12"},
    {MegatronVersion::kCore013, "core_v0.13"},
    {MegatronVersion::kCore014, "core_v0.14"},
    {MegatronVersion::kCore015, "core_v0.15"},
    {MegatronVersion::kCore016, "core_v0.16"},
    {MegatronVersion::kCore017, "core_v0.17"},
    {MegatronVersion::kCore018, "core_v0.18"},
    {MegatronVersion::kCore019, "core_v0.19"},
    {MegatronVersion::kLatest, "latest"},
}});

// How loom simulated the plan, which the launch must run too, and the release it targets.
struct MegatronOptions {
  AttentionKernel attention = AttentionKernel::kFused;
  // With fused attention: the family --attention named (flash2, cudnn), which the launch pins with
  // --attention-backend; nullopt: Megatron's auto, Transformer Engine's own choice (loom's too).
  std::optional<AttentionFamily> fused_family;
  bool dropout = false;  // whether the simulation applied dropout (loom plan --dropout)
  MegatronVersion version = MegatronVersion::kLatest;
};

// The arguments of Megatron-LM's pretrain_gpt.py (megatron/training/arguments.py, core_r0.12.0 and
// later; MinimumMegatronVersion says which release a list needs) that train |model| with
// |strategy| as loom simulated it under |options|: one token per element
// ("--tensor-model-parallel-size", "8"), in groups, always in this order:
//   1. parallelism: tensor, pipeline (virtual stages, uneven first/last stage), sequence, context,
//      expert;
//   2. batch: micro-batch, global batch, sequence length;
//   3. model: shape, attention (GQA or MLA), MLP, norm and its epsilon, positions (rotary base and
//      scaling), biases, dropout, the attention backend, mixture of experts and its router;
//   4. precision: bf16, fp16 or fp8, and the gradient-reduction dtype;
//   5. optimizer: its kind, ZeRO (distributed optimizer or Megatron-FSDP), CPU offload;
//   6. recompute;
//   7. overlap: gradient reduce, parameter gather, tensor-parallel communication.
// Data, tokenizer, learning-rate and checkpoint arguments are the run's own and are not emitted;
// the data-parallel size is not an argument either (Megatron-LM derives it from the world size).
// REQUIRES: |strategy| passed ValidateStrategy for |model|.
// Errors: InvalidArgument, naming the loom setting and the fix, for what Megatron-LM cannot run:
// the gpipe, zb-h1, zb-v and dualpipev schedules, parameter offload, the adafactor optimizer,
// optimizer offload without adam, a plain ReLU MLP, biases on attention but not on the MLP (or the
// reverse), model settings it has no flag for (rope scaling other than Llama 3's with its fixed
// frequencies, YaRN outside MLA or with betas or context other than MLA's defaults, a sigmoid
// router without top-k normalisation, a rotary base that is not an integer), combinations its
// validate_args rejects (--overlap-param-gather without --zero 1+ or --overlap-grad-reduce,
// --tp-comm-overlap without --sp, --ep with fp16 before core_v0.16, --grad-reduce-in-bf16 without
// bf16 or fp8), autograd gradient accumulation (PyTorch DDP's .grad sums, which Megatron-LM no
// longer runs), and what |options.version| lacks (Megatron-FSDP before core_v0.14, MLA's YaRN
// before core_v0.14). Gradient accumulation add is --no-gradient-accumulation-fusion; fused is
// Megatron-LM's default.
Result<std::vector<std::string>> MegatronArguments(const ModelSpec& model, const Strategy& strategy,
                                                   const MegatronOptions& options = {});

// The model's own flags of MegatronArguments (its shape, attention, positions, norm, MLP, biases,
// multi-latent attention and mixture of experts, without the dispatcher and capacity that
// |strategy| sets): what a launch must say for Megatron-LM to build |model|. Errors as
// MegatronArguments' for the shared experts' width.
Result<std::vector<std::string>> MegatronModelArguments(const ModelSpec& model,
                                                        const Strategy& strategy,
                                                        const MegatronOptions& options = {});

// What the arguments of |model| under |options| leave to the user: model parts loom neither
// simulates nor emits (DeepSeek-V3's multi-token prediction), and Megatron-LM's dropout rates when
// the simulation applied dropout. Empty when there is nothing to say.
std::vector<std::string> MegatronNotes(const ModelSpec& model, const MegatronOptions& options);

// The oldest release in kMegatronVersionNames whose arguments.py defines every flag of |args| and
// whose validate_args accepts their combination.
MegatronVersion MinimumMegatronVersion(const std::vector<std::string>& args);

struct EnvVariable {
  std::string name;
  std::string value;
};

// The environment |args| need: CUDA_DEVICE_MAX_CONNECTIONS=1 when tp or cp > 1 without
// Megatron-FSDP (validate_args requires it before Blackwell, so that the tensor- and
// context-parallel communication is issued in the order it overlaps), and for |dtype| tf32
// TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, since Megatron-LM leaves PyTorch's TF32 switch off.
std::vector<EnvVariable> MegatronEnvironment(const std::vector<std::string>& args,
                                             Dtype dtype = Dtype::kBf16);

// Whether |strategy|'s pipeline layout needs Megatron-core's --pipeline-model-parallel-layout
// (core_v0.13.0 and later): an explicit layout, or model chunks of one stage that differ in layers.
// Otherwise --num-virtual-stages-per-pipeline-rank and --decoder-first/last-pipeline-num-layers
// say it. REQUIRES: |strategy| passed ValidateStrategy for |model|.
bool NeedsLayoutFlag(const ModelSpec& model, const Strategy& strategy);

// |args| as a copy-paste shell command: comment lines (the minimum release, the attention
// backend that runs, what fp32 matmuls run as), then a torchrun line with MegatronEnvironment(args,
// |dtype|) in front, then "pretrain_gpt.py" and one flag with its values per line, each line but
// the last ending in " \". Tokens with shell metacharacters are single-quoted.
std::string FormatMegatronCommand(const std::vector<std::string>& args,
                                  const MegatronOptions& options = {}, Dtype dtype = Dtype::kBf16);

}  // namespace loom

#endif  // LOOM_PLAN_MEGATRON_ARGS_H_
