#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/deepspeed_config.h"
#include "plan/flag_tables.h"
#include "plan/megatron_args.h"
#include "plan/plan_test_support.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {
namespace {

using Args = std::vector<std::string>;

// The value token after |flag|, or nullopt when |flag| is absent or last.
std::optional<std::string> FlagValue(const Args& args, const std::string& flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end() || it + 1 == args.end()) return std::nullopt;
  return *(it + 1);
}

bool HasFlag(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

std::ptrdiff_t IndexOf(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) - args.begin();
}

// Every configuration a test emits holds only what the target's own parser defines (issue 21).
void ExpectKnown(const Result<Args>& args) {
  if (!args.ok()) return;
  const std::vector<std::string> problems = MegatronProblems(*args);
  EXPECT_TRUE(problems.empty()) << problems.front();
}
void ExpectKnown(const Result<DeepSpeedPlan>& plan) {
  if (!plan.ok()) return;
  const std::vector<std::string> problems = DeepSpeedProblems(plan->launcher_args, plan->config);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

Args MegatronOk(const ModelSpec& model, const Strategy& strategy) {
  Result<Args> args = MegatronArguments(model, strategy);
  EXPECT_TRUE(args.ok()) << args.status().ToString();
  ExpectKnown(args);
  return args.ok() ? *args : Args{};
}

std::string MegatronError(const ModelSpec& model, const Strategy& strategy) {
  Result<Args> args = MegatronArguments(model, strategy);
  EXPECT_FALSE(args.ok());
  if (args.ok()) return "";
  EXPECT_EQ(args.status().code(), Status::Code::kInvalidArgument);
  return args.status().message();
}

// |s| with the gradient accumulation DeepSpeed runs at its ZeRO stage, the only one the emitter
// takes.
Strategy WithDeepSpeed(Strategy s) {
  s.grad_accumulation = DeepSpeedGradAccumulation(s);
  return s;
}

std::string DeepSpeedError(const ModelSpec& model, const Strategy& strategy) {
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, strategy);
  ExpectKnown(plan);
  EXPECT_FALSE(plan.ok());
  if (plan.ok()) return "";
  EXPECT_EQ(plan.status().code(), Status::Code::kInvalidArgument);
  return plan.status().message();
}

// GPT-3 175B as Narayanan et al. 2021 (Table 1) run it: tp 8, pp 16, interleaved, 1536 sequences.
Strategy Gpt3Strategy() {
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 8;
  s.sp = true;
  s.vpp = 2;
  s.schedule = ScheduleKind::kInterleaved;
  s.micro_batch = 1;
  s.global_batch = 1536;
  s.seq_len = 2048;
  s.zero_stage = 1;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  return s;
}

TEST(MegatronArguments, Gpt3InterleavedGivesExactFlagsInGroupOrder) {
  const Args expected = {"--tensor-model-parallel-size",
                         "8",
                         "--pipeline-model-parallel-size",
                         "16",
                         "--num-virtual-stages-per-pipeline-rank",
                         "2",
                         "--sequence-parallel",
                         "--context-parallel-size",
                         "1",
                         "--micro-batch-size",
                         "1",
                         "--global-batch-size",
                         "1536",
                         "--seq-length",
                         "2048",
                         "--num-layers",
                         "96",
                         "--hidden-size",
                         "12288",
                         "--ffn-hidden-size",
                         "49152",
                         "--num-attention-heads",
                         "96",
                         "--kv-channels",
                         "128",
                         "--max-position-embeddings",
                         "2048",
                         "--position-embedding-type",
                         "learned_absolute",
                         "--normalization",
                         "LayerNorm",
                         "--norm-epsilon",
                         "1e-05",
                         "--attention-dropout",
                         "0.0",
                         "--hidden-dropout",
                         "0.0",
                         "--bf16",
                         "--optimizer",
                         "adam",
                         "--use-distributed-optimizer",
                         "--overlap-grad-reduce",
                         "--overlap-param-gather"};
  EXPECT_EQ(MegatronOk(ShippedModel("gpt3-175b"), Gpt3Strategy()), expected);
}

TEST(MegatronArguments, Llama3GqaGivesQueryGroupsAndLlamaArchitecture) {
  Strategy s;
  s.tp = 8;
  s.dp = 4;
  s.global_batch = 32;
  s.seq_len = 8192;
  const Args args = MegatronOk(ShippedModel("llama3-70b"), s);
  EXPECT_EQ(IndexOf(args, "--group-query-attention") + 1, IndexOf(args, "--num-query-groups"));
  EXPECT_EQ(FlagValue(args, "--num-query-groups"), "8");
  EXPECT_EQ(FlagValue(args, "--kv-channels"), "128");
  EXPECT_EQ(FlagValue(args, "--ffn-hidden-size"), "28672");
  EXPECT_EQ(FlagValue(args, "--normalization"), "RMSNorm");
  EXPECT_EQ(FlagValue(args, "--position-embedding-type"), "rope");
  EXPECT_TRUE(HasFlag(args, "--swiglu"));
  EXPECT_TRUE(HasFlag(args, "--untie-embeddings-and-output-weights"));
  EXPECT_TRUE(HasFlag(args, "--disable-bias-linear"));
  EXPECT_FALSE(HasFlag(args, "--num-experts"));
}

TEST(MegatronArguments, GroupsComeInDocumentedOrder) {
  Strategy s = Gpt3Strategy();
  s.recompute = Recompute::kSelective;
  const Args args = MegatronOk(ShippedModel("gpt3-175b"), s);
  // The first flag of each group: parallelism, batch, model, precision, optimizer, recompute,
  // overlap.
  const std::vector<std::string> firsts = {"--tensor-model-parallel-size",
                                           "--micro-batch-size",
                                           "--num-layers",
                                           "--bf16",
                                           "--optimizer",
                                           "--recompute-granularity",
                                           "--overlap-grad-reduce"};
  for (size_t i = 1; i < firsts.size(); ++i) {
    EXPECT_LT(IndexOf(args, firsts[i - 1]), IndexOf(args, firsts[i]))
        << firsts[i - 1] << ", " << firsts[i];
  }
  EXPECT_LT(IndexOf(args, "--overlap-grad-reduce"),
            static_cast<std::ptrdiff_t>(args.size()));  // present
}

TEST(MegatronArguments, MixtralGivesExpertsTopKAndAllToAll) {
  Strategy s;
  s.tp = 2;
  s.dp = 8;
  s.ep = 8;
  s.etp = 1;
  s.global_batch = 64;
  s.seq_len = 4096;
  const Args args = MegatronOk(ShippedModel("mixtral-8x7b"), s);
  EXPECT_EQ(FlagValue(args, "--num-experts"), "8");
  EXPECT_EQ(FlagValue(args, "--moe-router-topk"), "2");
  EXPECT_EQ(FlagValue(args, "--moe-ffn-hidden-size"), "14336");
  EXPECT_EQ(FlagValue(args, "--expert-model-parallel-size"), "8");
  EXPECT_EQ(FlagValue(args, "--expert-tensor-parallel-size"), "1");
  EXPECT_EQ(FlagValue(args, "--moe-token-dispatcher-type"), "alltoall");
  EXPECT_FALSE(HasFlag(args, "--moe-layer-freq"));
  EXPECT_FALSE(HasFlag(args, "--moe-shared-expert-intermediate-size"));
  EXPECT_FALSE(HasFlag(args, "--moe-expert-capacity-factor"));
}

TEST(MegatronArguments, CapacityFactorNeedsTheAllToAllDispatcherEvenWithoutEp) {
  Strategy s;
  s.dp = 8;
  s.global_batch = 64;
  s.moe_capacity_factor = 1.25;
  const Args args = MegatronOk(ShippedModel("mixtral-8x7b"), s);
  EXPECT_EQ(FlagValue(args, "--moe-expert-capacity-factor"), "1.25");
  EXPECT_EQ(FlagValue(args, "--moe-token-dispatcher-type"), "alltoall");
  EXPECT_EQ(FlagValue(args, "--expert-tensor-parallel-size"), "1");  // etp 0 means tp, which is 1
}

TEST(MegatronArguments, DeepSeekV3GivesMlaSharedExpertAndThreeLeadingDenseLayers) {
  Strategy s;
  s.tp = 2;
  s.pp = 2;
  s.dp = 64;
  s.ep = 64;
  s.etp = 1;
  s.global_batch = 1024;
  s.seq_len = 4096;
  s.first_stage_layers = 31;
  s.last_stage_layers = 30;
  const Args args = MegatronOk(ShippedModel("deepseek-v3"), s);
  EXPECT_TRUE(HasFlag(args, "--multi-latent-attention"));
  EXPECT_EQ(FlagValue(args, "--q-lora-rank"), "1536");
  EXPECT_EQ(FlagValue(args, "--kv-lora-rank"), "512");
  EXPECT_EQ(FlagValue(args, "--qk-head-dim"), "128");
  EXPECT_EQ(FlagValue(args, "--qk-pos-emb-head-dim"), "64");
  EXPECT_EQ(FlagValue(args, "--v-head-dim"), "128");
  EXPECT_FALSE(HasFlag(args, "--kv-channels"));
  EXPECT_FALSE(HasFlag(args, "--group-query-attention"));
  EXPECT_EQ(FlagValue(args, "--num-experts"), "256");
  EXPECT_EQ(FlagValue(args, "--moe-router-topk"), "8");
  EXPECT_EQ(FlagValue(args, "--moe-ffn-hidden-size"), "2048");
  EXPECT_EQ(FlagValue(args, "--ffn-hidden-size"), "18432");
  EXPECT_EQ(FlagValue(args, "--moe-shared-expert-intermediate-size"), "2048");
  EXPECT_EQ(FlagValue(args, "--moe-layer-freq"), "([0]*3+[1]*58)");
  EXPECT_EQ(FlagValue(args, "--decoder-first-pipeline-num-layers"), "31");
  EXPECT_EQ(FlagValue(args, "--decoder-last-pipeline-num-layers"), "30");
}

TEST(MegatronArguments, UnevenInterleavedStagesUseVirtualStagesPerRank) {
  Strategy s;
  s.pp = 4;
  s.vpp = 2;
  s.schedule = ScheduleKind::kInterleaved;
  s.dp = 2;
  s.global_batch = 16;
  s.first_stage_layers = 6;
  s.last_stage_layers = 6;  // 20 layers left for the two middle stages
  const Args args = MegatronOk(ShippedModel("llama3-8b"), s);
  EXPECT_EQ(FlagValue(args, "--num-virtual-stages-per-pipeline-rank"), "2");
  EXPECT_FALSE(HasFlag(args, "--num-layers-per-virtual-pipeline-stage"));
  EXPECT_EQ(FlagValue(args, "--decoder-first-pipeline-num-layers"), "6");
}

TEST(MegatronArguments, RecomputeFullIsUniformOverAllLayersOrBlockOverSome) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.recompute = Recompute::kFull;
  Args args = MegatronOk(model, s);
  EXPECT_EQ(FlagValue(args, "--recompute-granularity"), "full");
  EXPECT_EQ(FlagValue(args, "--recompute-method"), "uniform");
  EXPECT_EQ(FlagValue(args, "--recompute-num-layers"), "1");
  s.recompute_layers = 5;
  args = MegatronOk(model, s);
  EXPECT_EQ(FlagValue(args, "--recompute-method"), "block");
  EXPECT_EQ(FlagValue(args, "--recompute-num-layers"), "5");
  s.recompute = Recompute::kSelective;
  s.recompute_layers = 0;
  args = MegatronOk(model, s);
  EXPECT_EQ(FlagValue(args, "--recompute-granularity"), "selective");
  EXPECT_FALSE(HasFlag(args, "--recompute-method"));
}

TEST(MegatronArguments, PrecisionContextAndRotaryBound) {
  Strategy s;
  s.tp = 2;
  s.sp = true;
  s.cp = 4;
  s.cp_comm = CpComm::kAllGather;
  s.seq_len = 32768;  // beyond llama3-8b's max_position_embeddings of 8192
  s.dtype = Dtype::kFp8;
  s.grad_reduce_in_bf16 = true;
  s.tp_comm_overlap = true;
  const Args args = MegatronOk(ShippedModel("llama3-8b"), s);
  EXPECT_EQ(FlagValue(args, "--context-parallel-size"), "4");
  EXPECT_EQ(FlagValue(args, "--cp-comm-type"), "allgather");
  EXPECT_EQ(FlagValue(args, "--max-position-embeddings"), "32768");
  EXPECT_EQ(IndexOf(args, "--bf16") + 1, IndexOf(args, "--fp8-format"));
  EXPECT_EQ(FlagValue(args, "--fp8-format"), "hybrid");
  EXPECT_TRUE(HasFlag(args, "--grad-reduce-in-bf16"));
  EXPECT_TRUE(HasFlag(args, "--tp-comm-overlap"));
}

TEST(MegatronArguments, ZeroStagesMapToDistributedOptimizerAndMegatronFsdp) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.zero_stage = 3;
  Args args = MegatronOk(model, s);
  EXPECT_TRUE(HasFlag(args, "--use-megatron-fsdp"));
  EXPECT_EQ(FlagValue(args, "--data-parallel-sharding-strategy"), "optim_grads_params");
  EXPECT_EQ(FlagValue(args, "--ckpt-format"), "fsdp_dtensor");
  // Megatron-FSDP keeps gradient-accumulation fusion, what the simulation of the fused default
  // costs.
  EXPECT_FALSE(HasFlag(args, "--no-gradient-accumulation-fusion"));
  EXPECT_TRUE(HasFlag(args, "--use-distributed-optimizer"));
  s.zero_stage = 2;
  EXPECT_EQ(FlagValue(MegatronOk(model, s), "--data-parallel-sharding-strategy"), "optim_grads");
  s.zero_stage = 1;
  s.offload = Offload::kOptimizer;
  args = MegatronOk(model, s);
  EXPECT_FALSE(HasFlag(args, "--use-megatron-fsdp"));
  EXPECT_TRUE(HasFlag(args, "--use-distributed-optimizer"));
  EXPECT_TRUE(HasFlag(args, "--optimizer-cpu-offload"));
  EXPECT_EQ(FlagValue(args, "--optimizer-offload-fraction"), "1.0");
  EXPECT_TRUE(HasFlag(args, "--use-precision-aware-optimizer"));
}

TEST(MegatronArguments, GradientAccumulationAddTurnsFusionOffAndAutogradIsAnError) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  EXPECT_FALSE(
      HasFlag(MegatronOk(model, s), "--no-gradient-accumulation-fusion"));  // fused: the default
  s.grad_accumulation = GradAccumulation::kAdd;
  Args args = MegatronOk(model, s);
  EXPECT_EQ(std::count(args.begin(), args.end(), "--no-gradient-accumulation-fusion"), 1);
  EXPECT_LT(IndexOf(args, "--optimizer"), IndexOf(args, "--no-gradient-accumulation-fusion"));
  s.zero_stage = 3;  // Megatron-FSDP: the flag once, from the accumulation mode
  args = MegatronOk(model, s);
  EXPECT_EQ(std::count(args.begin(), args.end(), "--no-gradient-accumulation-fusion"), 1);
  s.zero_stage = 0;
  s.grad_accumulation = GradAccumulation::kAutograd;
  const std::string error = MegatronError(model, s);
  EXPECT_NE(error.find("--grad-accumulation autograd"), std::string::npos) << error;
  EXPECT_NE(error.find("use --grad-accumulation fused or add"), std::string::npos) << error;
}

TEST(MegatronArguments, Fp8WithBf16ReductionGivesBothFlags) {
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.dtype = Dtype::kFp8;
  s.grad_reduce_in_bf16 = true;
  const Args args = MegatronOk(ShippedModel("llama3-8b"), s);
  EXPECT_EQ(FlagValue(args, "--fp8-format"), "hybrid");
  EXPECT_TRUE(HasFlag(args, "--bf16"));
  EXPECT_EQ(IndexOf(args, "--fp8-format") + 2, IndexOf(args, "--grad-reduce-in-bf16"));
}

TEST(MegatronArguments, SchedulesOutsideMainlineAreErrorsNamingWhereTheyLive) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.pp = 4;
  s.global_batch = 8;
  s.schedule = ScheduleKind::kGpipe;
  std::string message = MegatronError(model, s);
  EXPECT_NE(message.find("--schedule gpipe"), std::string::npos) << message;
  EXPECT_NE(message.find("--schedule 1f1b"), std::string::npos) << message;
  s.schedule = ScheduleKind::kZbH1;
  message = MegatronError(model, s);
  EXPECT_NE(message.find("--schedule zb-h1"), std::string::npos) << message;
  EXPECT_NE(message.find("sail-sg/zero-bubble-pipeline-parallelism"), std::string::npos) << message;
  EXPECT_NE(message.find("--enable-zbh1-pipeline"), std::string::npos) << message;
  s.schedule = ScheduleKind::kZbV;
  s.vpp = 2;
  message = MegatronError(model, s);
  EXPECT_NE(message.find("--schedule zb-v"), std::string::npos) << message;
  EXPECT_NE(message.find("sail-sg/zero-bubble-pipeline-parallelism"), std::string::npos) << message;
  s.schedule = ScheduleKind::kDualPipeV;
  message = MegatronError(model, s);
  EXPECT_NE(message.find("--schedule dualpipev"), std::string::npos) << message;
  EXPECT_NE(message.find("deepseek-ai/DualPipe"), std::string::npos) << message;
}

TEST(MegatronArguments, UnsupportedSettingsAreErrorsNamingTheSetting) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.zero_stage = 3;
  s.offload = Offload::kOptimizerAndParams;
  std::string message = MegatronError(model, s);
  EXPECT_NE(message.find("--offload optimizer+params"), std::string::npos) << message;
  EXPECT_NE(message.find("--emit deepspeed"), std::string::npos) << message;

  s = Strategy();
  s.optimizer = Optimizer::kAdafactor;
  message = MegatronError(model, s);
  EXPECT_NE(message.find("--optimizer adafactor"), std::string::npos) << message;

  s = Strategy();
  s.tp = 2;
  s.tp_comm_overlap = true;
  s.overlap_param_gather = true;  // and no --zero, no --overlap-grad-reduce: three problems
  message = MegatronError(model, s);
  EXPECT_NE(message.find("--tp-comm-overlap without --sp"), std::string::npos) << message;
  EXPECT_NE(message.find("--overlap-param-gather with --zero 0"), std::string::npos) << message;
  EXPECT_NE(message.find("--overlap-param-gather without --overlap-grad-reduce"), std::string::npos)
      << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2) << message;
}

TEST(MegatronArguments, ExpertParallelFp16IsAnErrorBeforeCoreV016) {
  Strategy s;
  s.dp = 8;
  s.ep = 8;
  s.global_batch = 8;
  s.dtype = Dtype::kFp16;
  MegatronOptions before;
  before.version = MegatronVersion::kCore015;
  Result<Args> args = MegatronArguments(ShippedModel("mixtral-8x7b"), s, before);
  ExpectKnown(args);
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.status().message().find("--ep 8 with --dtype fp16"), std::string::npos)
      << args.status().message();
}

TEST(FormatMegatronCommand, OneFlagPerLineWithQuotedPatterns) {
  const Args args = {"--tensor-model-parallel-size", "2", "--swiglu", "--moe-layer-freq",
                     "([0]*1+[1]*3)"};
  const std::string expected =
      "# Megatron-LM pretrain_gpt.py: launch tp * pp * cp * dp processes and add the data, "
      "tokenizer,\n"
      "# learning-rate and checkpoint arguments of the run.\n"
      "# Needs Megatron-LM core_v0.12 or later (written for --megatron-version latest).\n"
      "# Attention: Megatron's default backend (auto): Transformer Engine runs cuDNN's fused "
      "attention\n"
      "# from Hopper on and FlashAttention on Ampere, as loom simulated.\n"
      "# fp32: Megatron-LM leaves PyTorch's TF32 switch off, so matmuls run in full fp32, as "
      "simulated.\n"
      "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node=$GPUS_PER_NODE --nnodes=$NNODES "
      "--node_rank=$NODE_RANK \\\n"
      "    --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \\\n"
      "    pretrain_gpt.py \\\n"
      "    --tensor-model-parallel-size 2 \\\n"
      "    --swiglu \\\n"
      "    --moe-layer-freq '([0]*1+[1]*3)'\n";
  EXPECT_EQ(FormatMegatronCommand(args), expected);
}

TEST(FormatMegatronCommand, LeavesConnectionsAloneWithoutTpOrWithFsdp) {
  EXPECT_EQ(FormatMegatronCommand({"--tensor-model-parallel-size", "1"})
                .find("CUDA_DEVICE_MAX_CONNECTIONS"),
            std::string::npos);
  EXPECT_EQ(FormatMegatronCommand({"--tensor-model-parallel-size", "4", "--use-megatron-fsdp"})
                .find("CUDA_DEVICE_MAX_CONNECTIONS"),
            std::string::npos);
  EXPECT_NE(
      FormatMegatronCommand({"--context-parallel-size", "2"}).find("CUDA_DEVICE_MAX_CONNECTIONS=1"),
      std::string::npos);
}

TEST(DeepSpeedConfig, Zero3WithOffloadGivesStage3OffloadBlocksAndTheBatchEquation) {
  Strategy s;
  s.dp = 64;
  s.micro_batch = 2;
  s.global_batch = 512;
  s.zero_stage = 3;
  s.offload = Offload::kOptimizerAndParams;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  s = WithDeepSpeed(s);
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(ShippedModel("llama3-8b"), s);
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const nlohmann::ordered_json expected = nlohmann::ordered_json::parse(R"({
    "train_batch_size": 512,
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "bf16": {"enabled": true},
    "communication_data_type": "fp32",
    "data_types": {"grad_accum_dtype": "fp32"},
    "optimizer": {"type": "Adam"},
    "zero_optimization": {
      "stage": 3,
      "overlap_comm": true,
      "reduce_scatter": true,
      "contiguous_gradients": true,
      "offload_optimizer": {"device": "cpu", "pin_memory": true},
      "offload_param": {"device": "cpu", "pin_memory": true}
    }
  })");
  EXPECT_EQ(plan->config.dump(), expected.dump());
  const nlohmann::ordered_json& c = plan->config;
  EXPECT_EQ(c["train_batch_size"].get<int64_t>(),
            c["train_micro_batch_size_per_gpu"].get<int64_t>() *
                c["gradient_accumulation_steps"].get<int64_t>() * s.dp);
  EXPECT_TRUE(HasFlag(plan->launcher_args, "--no-pipeline-parallel"));
  EXPECT_EQ(FlagValue(plan->launcher_args, "--zero-stage"), "3");
  EXPECT_TRUE(HasFlag(plan->launcher_args, "--cpu-optimizer"));
  ASSERT_FALSE(plan->notes.empty());
  EXPECT_NE(plan->notes[0].find("512 = 2 * 4 * 64"), std::string::npos) << plan->notes[0];
}

TEST(DeepSpeedConfig, TensorAndPipelineDegreesGoToMegatronDeepSpeedArguments) {
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 8;
  s.global_batch = 1536;
  s.zero_stage = 1;
  s.recompute = Recompute::kFull;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(ShippedModel("gpt3-175b"), WithDeepSpeed(s));
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const Args expected = {"--tensor-model-parallel-size",
                         "8",
                         "--pipeline-model-parallel-size",
                         "16",
                         "--micro-batch-size",
                         "1",
                         "--global-batch-size",
                         "1536",
                         "--seq-length",
                         "2048",
                         "--use-flash-attn-v2",
                         "--bf16",
                         "--optimizer",
                         "adam",
                         "--zero-stage",
                         "1",
                         "--checkpoint-activations",
                         "--checkpoint-num-layers",
                         "1",
                         "--deepspeed-activation-checkpointing",
                         "--deepspeed",
                         "--deepspeed_config",
                         "ds_config.json"};
  EXPECT_EQ(plan->launcher_args, expected);
  EXPECT_EQ(plan->config["gradient_accumulation_steps"], 192);
  EXPECT_EQ(plan->config["zero_optimization"]["overlap_comm"], false);
  EXPECT_EQ(plan->config["activation_checkpointing"]["partition_activations"], false);
  EXPECT_FALSE(plan->config["zero_optimization"].contains("contiguous_gradients"));
}

TEST(DeepSpeedConfig, ZbH1AndMixtralExpertsBecomeMegatronDeepSpeedFlags) {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 8;
  s.ep = 4;
  s.global_batch = 64;
  s.zero_stage = 1;  // without ZeRO the pipeline engine would sum bf16 gradients in bf16
  s.schedule = ScheduleKind::kZbH1;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(ShippedModel("mixtral-8x7b"), WithDeepSpeed(s));
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const Args& args = plan->launcher_args;
  EXPECT_TRUE(HasFlag(args, "--enable-zbh1-pipeline"));
  EXPECT_EQ(FlagValue(args, "--num-experts"), "8");
  EXPECT_EQ(FlagValue(args, "--moe-expert-parallel-size"), "4");
  EXPECT_EQ(FlagValue(args, "--topk"), "2");
  EXPECT_EQ(FlagValue(args, "--expert-interval"), "1");
  EXPECT_TRUE(HasFlag(args, "--enable-expert-tensor-parallelism"));  // etp 0 means tp
  EXPECT_TRUE(HasFlag(args, "--disable-moe-token-dropping"));
}

TEST(DeepSpeedConfig, SgdIsAnUntestedZeroOptimizerAndBf16ReductionIsExplicit) {
  Strategy s;
  s.dp = 4;
  s.global_batch = 4;
  s.zero_stage = 1;
  s.optimizer = Optimizer::kSgd;
  s.grad_reduce_in_bf16 = true;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(ShippedModel("llama3-8b"), WithDeepSpeed(s));
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->config["optimizer"]["type"], "SGD");
  EXPECT_EQ(plan->config["zero_allow_untested_optimizer"], true);
  EXPECT_EQ(plan->config["communication_data_type"], "bf16");
  EXPECT_EQ(FlagValue(plan->launcher_args, "--optimizer"), "sgd");
}

TEST(DeepSpeedConfig, Zero3WithoutParamGatherOverlapTurnsPrefetchOff) {
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  s.zero_stage = 3;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(ShippedModel("llama3-8b"), WithDeepSpeed(s));
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->config["zero_optimization"]["stage3_prefetch_bucket_size"], 0);
}

TEST(DeepSpeedConfig, WhatDeepSpeedCannotExpressIsAnErrorNamingTheSettingAndFix) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.cp = 2;
  EXPECT_NE(DeepSpeedError(model, s).find("--cp 2"), std::string::npos);

  s = Gpt3Strategy();  // interleaved, sp, overlap of the param gather at ZeRO-1, with pp
  std::string message = DeepSpeedError(ShippedModel("gpt3-175b"), s);
  EXPECT_NE(message.find("--schedule interleaved"), std::string::npos) << message;
  EXPECT_NE(message.find("--overlap-grad-reduce with --pp 16"), std::string::npos) << message;
  EXPECT_NE(message.find("--overlap-param-gather with --zero 1"), std::string::npos) << message;

  s = Strategy();
  s.pp = 2;
  s.dp = 2;
  s.global_batch = 4;
  s.zero_stage = 2;
  message = DeepSpeedError(model, s);
  EXPECT_NE(message.find("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"),
            std::string::npos)
      << message;

  s = Strategy();
  s.tp = 2;
  s.sp = true;
  s.dtype = Dtype::kFp8;
  s.tp_comm_overlap = true;
  s.recompute = Recompute::kSelective;
  message = DeepSpeedError(model, s);
  EXPECT_NE(message.find("--dtype fp8"), std::string::npos) << message;
  EXPECT_NE(message.find("--tp-comm-overlap"), std::string::npos) << message;
  EXPECT_NE(message.find("--recompute selective"), std::string::npos) << message;

  s = Strategy();
  s.pp = 4;
  s.vpp = 2;
  s.global_batch = 8;
  s.schedule = ScheduleKind::kZbV;
  message = DeepSpeedError(model, s);
  EXPECT_NE(message.find("--schedule zb-v"), std::string::npos) << message;
  EXPECT_NE(message.find("sail-sg/zero-bubble-pipeline-parallelism"), std::string::npos) << message;
}

TEST(DeepSpeedConfig, DeepSeekV3ArchitectureIsAnErrorForEachMissingFeature) {
  Strategy s;
  s.dp = 8;
  s.global_batch = 8;
  const std::string message = DeepSpeedError(ShippedModel("deepseek-v3"), WithDeepSpeed(s));
  EXPECT_NE(message.find("multi-head latent attention"), std::string::npos) << message;
  EXPECT_NE(message.find("n_shared_experts (1)"), std::string::npos) << message;
  EXPECT_NE(message.find("first_k_dense_replace (3)"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2) << message;
}

TEST(DeepSpeedConfig, GradientAccumulationIsDeepSpeedsForTheZeroStageWithItsBufferDtype) {
  const ModelSpec model = ShippedModel("llama3-8b");
  Strategy s;
  s.dp = 8;
  s.global_batch = 16;
  // Without ZeRO, bf16 steps with BF16_Optimizer, which adds each micro-batch's gradients into its
  // fp32 buffer; fp16 steps on .grad as autograd summed it.
  EXPECT_EQ(DeepSpeedGradAccumulation(s), GradAccumulation::kAdd);
  std::string message = DeepSpeedError(model, s);  // Megatron-LM's fused default
  EXPECT_NE(message.find("--grad-accumulation fused with --zero 0"), std::string::npos) << message;
  EXPECT_NE(message.find("use --grad-accumulation add"), std::string::npos) << message;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, WithDeepSpeed(s));
  ExpectKnown(plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->config["data_types"]["grad_accum_dtype"], "fp32");
  Strategy fp16 = s;
  fp16.dtype = Dtype::kFp16;
  EXPECT_EQ(DeepSpeedGradAccumulation(fp16), GradAccumulation::kAutograd);
  plan = DeepSpeedConfig(model, WithDeepSpeed(fp16));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->config["data_types"]["grad_accum_dtype"], "fp16");
  // ZeRO adds each micro-batch's gradients into its buffer: fp32 for bf16 (Megatron-LM's main_grad,
  // what the simulation accumulated into; BF16_Optimizer at ZeRO-1), bf16 with
  // --grad-reduce-in-bf16, fp16 for fp16.
  s.zero_stage = 1;
  EXPECT_EQ(DeepSpeedGradAccumulation(s), GradAccumulation::kAdd);
  message = DeepSpeedError(model, s);
  EXPECT_NE(message.find("use --grad-accumulation add"), std::string::npos) << message;
  s = WithDeepSpeed(s);
  const auto accum_dtype = [&](const Strategy& strategy) {
    Result<DeepSpeedPlan> p = DeepSpeedConfig(model, strategy);
    ExpectKnown(p);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? p->config["data_types"]["grad_accum_dtype"].get<std::string>() : std::string();
  };
  EXPECT_EQ(accum_dtype(s), "fp32");
  s.grad_reduce_in_bf16 = true;
  EXPECT_EQ(accum_dtype(s), "bf16");
  s.grad_reduce_in_bf16 = false;
  s.dtype = Dtype::kFp16;
  EXPECT_EQ(accum_dtype(s), "fp16");
}

TEST(DeepSpeedConfig, ExpertTensorParallelMustBeOneOrTp) {
  Strategy s;
  s.tp = 4;
  s.etp = 2;
  s.dp = 4;
  s.ep = 2;
  s.global_batch = 4;
  const std::string message = DeepSpeedError(ShippedModel("mixtral-8x7b"), s);
  EXPECT_NE(message.find("--etp 2"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
