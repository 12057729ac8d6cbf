#include "plan/megatron_args_in.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan/megatron_args.h"
#include "plan/plan_test_support.h"
#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {
namespace {

using Words = std::vector<std::string>;

TEST(ShellWords, ReadsALaunchScriptAsTheShellSplitsIt) {
  const std::string script =
      "#!/bin/bash\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1  # a comment\n"
      "torchrun --nproc_per_node=8 --nnodes 2 \\\n"
      "    pretrain_gpt.py \\\n"
      "    --tensor-model-parallel-size 8 \\\n"
      "    --data-path '0.5 a' \"b c\" --seq-length=4096 2>&1 | tee log.txt\n";
  Result<Words> words = ShellWords(script, "run.sh");
  ASSERT_TRUE(words.ok()) << words.status().message();
  EXPECT_EQ(*words, (Words{"torchrun", "--nproc_per_node=8", "--nnodes", "2", "pretrain_gpt.py",
                           "--tensor-model-parallel-size", "8", "--data-path", "0.5 a", "b c",
                           "--seq-length=4096", "2"}));
  // A plain list, one flag a line, is all one list.
  words = ShellWords("--tensor-model-parallel-size 2\n--sequence-parallel\n", "args.txt");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words, (Words{"--tensor-model-parallel-size", "2", "--sequence-parallel"}));
}

TEST(ShellWords, RefusesWhatItCannotReadAsWritten) {
  Result<Words> words = ShellWords("--seq-length 4096 \\\n --data-path 'a\n", "run.sh");
  ASSERT_FALSE(words.ok());
  EXPECT_NE(words.status().message().find("run.sh: line 2: a ' is never closed"), std::string::npos)
      << words.status().message();
  words = ShellWords("--num-layers $(cat layers)", "run.sh");
  ASSERT_FALSE(words.ok());
  EXPECT_NE(words.status().message().find("command substitution"), std::string::npos);
}

ModelSpec Llama8b() { return ShippedModel("llama3-8b"); }

Words Llama8bShape() {
  return {"--num-layers",
          "32",
          "--hidden-size",
          "4096",
          "--ffn-hidden-size",
          "14336",
          "--num-attention-heads",
          "32",
          "--group-query-attention",
          "--num-query-groups",
          "8",
          "--kv-channels",
          "128",
          "--max-position-embeddings",
          "8192",
          "--position-embedding-type",
          "rope",
          "--rotary-base",
          "500000",
          "--normalization",
          "RMSNorm",
          "--norm-epsilon",
          "1e-5",
          "--swiglu",
          "--untie-embeddings-and-output-weights",
          "--disable-bias-linear"};
}

Words Joined(Words a, const Words& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MegatronArgsIn, AUsersLaunchReadsToItsStrategyAndListsWhatLoomDoesNotModel) {
  const Words words = Joined({"torchrun",
                              "--nproc_per_node",
                              "8",
                              "--nnodes",
                              "4",
                              "pretrain_gpt.py",
                              "--tensor-model-parallel-size",
                              "4",
                              "--pipeline-model-parallel-size",
                              "2",
                              "--num-layers-per-virtual-pipeline-stage",
                              "4",
                              "--sequence-parallel",
                              "--micro-batch-size",
                              "1",
                              "--global-batch-size",
                              "128",
                              "--seq-length",
                              "8192",
                              "--bf16",
                              "--lr",
                              "3e-4",
                              "--use-distributed-optimizer",
                              "--overlap-grad-reduce",
                              "--recompute-activations",
                              "--data-path",
                              "a",
                              "b",
                              "--tokenizer-type",
                              "HuggingFaceTokenizer"},
                             Llama8bShape());
  Result<MegatronLaunch> launch = ReadMegatronArguments(words, Llama8b(), 1024, "run.sh");
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  const Strategy& s = launch->strategy;
  EXPECT_EQ(launch->launcher_world_size, 32);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.dp, 4);  // torchrun's 32 GPUs, not the 1024 of the cluster
  EXPECT_EQ(s.vpp, 4);
  EXPECT_EQ(s.schedule, ScheduleKind::kInterleaved);
  EXPECT_TRUE(s.sp);
  EXPECT_EQ(s.global_batch, 128);
  EXPECT_EQ(s.seq_len, 8192);
  EXPECT_EQ(s.dtype, Dtype::kBf16);
  EXPECT_EQ(s.zero_stage, 1);
  EXPECT_TRUE(s.overlap_grad_reduce);
  EXPECT_EQ(s.recompute, Recompute::kSelective);
  EXPECT_TRUE(launch->options.dropout);  // Megatron-LM's 0.1 by default
  EXPECT_EQ(launch->not_modelled,
            (Words{"--lr 3e-4", "--data-path a b", "--tokenizer-type HuggingFaceTokenizer"}));
}

TEST(MegatronArgsIn, AModelFlagThatDiffersFromTheModelIsAnError) {
  Words shape = Llama8bShape();
  *std::find(shape.begin(), shape.end(), "4096") = "8192";  // --hidden-size
  shape.erase(std::find(shape.begin(), shape.end(), "--swiglu"));
  Result<MegatronLaunch> launch = ReadMegatronArguments(
      Joined({"--seq-length", "4096", "--add-qkv-bias"}, shape), Llama8b(), 8, "args.txt");
  ASSERT_FALSE(launch.ok());
  const std::string& m = launch.status().message();
  EXPECT_NE(m.find("args.txt: --hidden-size 8192 builds another model than"), std::string::npos)
      << m;
  EXPECT_NE(m.find("args.txt: the arguments lack --swiglu"), std::string::npos) << m;
  EXPECT_NE(m.find("args.txt: --add-qkv-bias is not in"), std::string::npos) << m;
}

TEST(MegatronArgsIn, WhatLoomCannotReadIsNamed) {
  const ModelSpec model = Llama8b();
  const auto message = [&](const Words& extra, int64_t world = 8) {
    Result<MegatronLaunch> launch = ReadMegatronArguments(
        Joined(Joined({"--seq-length", "4096"}, extra), Llama8bShape()), model, world, "args.txt");
    return launch.ok() ? std::string("ok") : launch.status().message();
  };
  EXPECT_NE(message({"--micro-batch-size", "$MBS"}).find("--micro-batch-size $MBS: a shell var"),
            std::string::npos);
  EXPECT_NE(message({"--tensor-model-parallel-size", "3"}).find("does not divide the 8 GPUs"),
            std::string::npos);
  EXPECT_NE(message({"--context-parallel-size", "2", "--cp-comm-type", "a2a"})
                .find("--cp-comm-type a2a: loom simulates p2p"),
            std::string::npos);
  EXPECT_NE(message({"--tensor-model-parallel-size", "two"}).find("not a whole number"),
            std::string::npos);
  EXPECT_NE(message({"--sequence-parallel", "yes"}).find("--sequence-parallel takes no value"),
            std::string::npos);
  EXPECT_EQ(message({"--seq-length", "4096"}), "ok");
}

// The round trip: every argument list MegatronArguments writes for the strategies of the
// planner's space (every shipped model, on one and four DGX H100 nodes, bf16, fp16 and fp8; the
// attention kernels and dropout loom plan emits) reads back to a strategy whose arguments are the
// same list, on the same GPUs.
TEST(MegatronArgsIn, EveryEmittedListReadsBackToItsStrategy) {
  int64_t checked = 0;
  std::vector<MegatronOptions> kernels(4);
  kernels[1].attention = AttentionKernel::kUnfused;
  kernels[2].fused_family = AttentionFamily::kCudnn;
  kernels[3].dropout = true;
  for (const std::string& model_file : ShippedFiles("models")) {
    Result<ModelSpec> model = LoadModelSpec(model_file);
    ASSERT_TRUE(model.ok()) << model.status().message();
    for (const int64_t nodes : {1, 4}) {
      Result<ClusterSpec> cluster =
          LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"), nodes);
      ASSERT_TRUE(cluster.ok());
      for (const Dtype dtype : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
        SearchRequest request = Request(nodes * 8, 512, 4096);
        request.dtype = dtype;
        request.optimizer = dtype == Dtype::kFp16 ? Optimizer::kSgd : Optimizer::kAdam;
        Result<std::vector<Strategy>> space = EnumerateStrategies(*model, *cluster, request);
        ASSERT_TRUE(space.ok()) << space.status().message();
        const size_t step = std::max<size_t>(1, space->size() / 60);
        for (size_t i = 0; i < space->size(); i += step) {
          const Strategy& s = (*space)[i];
          if (!ValidateStrategy(s, *model, *cluster).ok()) continue;
          const MegatronOptions& o = kernels[i % kernels.size()];
          Result<Words> args = MegatronArguments(*model, s, o);
          if (!args.ok()) continue;
          Result<MegatronLaunch> back =
              ReadMegatronArguments(*args, *model, s.WorldSize(), "emitted");
          ASSERT_TRUE(back.ok()) << model_file << " " << ConstraintText(s) << "\n"
                                 << back.status().message();
          EXPECT_TRUE(back->not_modelled.empty()) << back->not_modelled.front();
          EXPECT_EQ(back->strategy.WorldSize(), s.WorldSize());
          Result<Words> again = MegatronArguments(*model, back->strategy, back->options);
          ASSERT_TRUE(again.ok()) << again.status().message();
          EXPECT_EQ(*again, *args) << model_file << " " << ConstraintText(s);
          ++checked;
        }
      }
    }
  }
  std::cout << "read back " << checked << " emitted Megatron-LM argument lists\n";
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace loom
