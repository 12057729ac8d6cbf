#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/run_loom.h"
#include "support/schema_check.h"

namespace loom {
namespace {

TEST(Simulate, JsonHasTheDocumentedFieldsInOrder) {
  CommandResult r = Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  const std::vector<std::string> expected = {"schema",
                                             "loom_version",
                                             "request",
                                             "framework",
                                             "step_time_s",
                                             "step_time_interval_s",
                                             "interval_basis",
                                             "tokens_per_s",
                                             "model_tflops_per_gpu",
                                             "mfu",
                                             "hfu",
                                             "bubble_fraction",
                                             "peak_memory_bytes",
                                             "fits_in_memory",
                                             "inside_headroom",
                                             "stages",
                                             "breakdown",
                                             "memory_limit_bytes",
                                             "sm_basis",
                                             "clock_basis",
                                             "attention_basis",
                                             "tensor_clock",
                                             "critical_path",
                                             "memory"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j["schema"], "loom.simulate/1");
  EXPECT_EQ(j["framework"], "megatron-core");  // the default
  EXPECT_TRUE(j["critical_path"].contains("host_s"));
  // An A100 Megatron-LM step: the interval of the measured steps of its regime, the prediction
  // times their spread (where loom is too fast, as in this regime's corpus rows, above it).
  ASSERT_TRUE(j["step_time_interval_s"].is_array());
  EXPECT_GT(j["step_time_interval_s"][0].get<double>(), 0.5 * j["step_time_s"].get<double>());
  EXPECT_LT(j["step_time_interval_s"][0].get<double>(), j["step_time_interval_s"][1].get<double>());
  EXPECT_LT(j["step_time_interval_s"][1].get<double>(), 2 * j["step_time_s"].get<double>());
  EXPECT_NE(j["interval_basis"].get<std::string>().find("megatron-core"), std::string::npos)
      << j["interval_basis"];
  EXPECT_EQ(j["stages"].size(), 16u);
  for (const char* key : {"stage", "peak_memory_bytes", "compute_s", "bubble_s"}) {
    EXPECT_TRUE(j["stages"][0].contains(key)) << key;
  }
  for (const char* key : {"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s"}) {
    EXPECT_TRUE(j["breakdown"].contains(key)) << key;
  }
  EXPECT_GT(j["mfu"].get<double>(), 0.0);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
}

int64_t ItemSum(const nlohmann::json& breakdown) {
  int64_t sum = 0;
  for (const auto& [item, bytes] : breakdown["items"].items()) sum += bytes.get<int64_t>();
  return sum;
}

// Issue 22: what holds each stage's memory at its peak, item by item, sums to that peak.
TEST(Simulate, MemoryBreakdownSumsToEachStagesPeak) {
  CommandResult r = Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& memory = j["memory"];
  ASSERT_EQ(memory["stages"].size(), j["stages"].size());
  for (size_t s = 0; s < memory["stages"].size(); ++s) {
    const nlohmann::json& b = memory["stages"][s];
    EXPECT_EQ(ItemSum(b), b["peak_bytes"].get<int64_t>()) << "stage " << s;
    EXPECT_EQ(b["peak_bytes"], j["stages"][s]["peak_memory_bytes"]) << "stage " << s;
    for (const char* item :
         {"weights", "gradients", "optimizer_states", "stashed_activations", "logits"}) {
      EXPECT_TRUE(b["items"].contains(item)) << item;
    }
    EXPECT_GE(b["stashed_micro_batches"].get<int>(), 1);
    EXPECT_LE(b["peak_task"]["start_s"].get<double>(), b["peak_time_s"].get<double>());
  }
  const int peak = memory["peak_stage"];
  EXPECT_EQ(memory["stages"][peak]["peak_bytes"], j["peak_memory_bytes"]);
  // The reserve is outside the peak: the limit is the GPU's 80 GiB less it, and it is its parts
  // (the CUDA context, cuBLAS workspaces, NCCL buffers) and the headroom, a share of the GPU.
  EXPECT_EQ(memory["limit_bytes"].get<int64_t>() + memory["reserved_bytes"].get<int64_t>(),
            int64_t{80} << 30);
  const nlohmann::json& reserve = memory["reserve"];
  int64_t parts = 0;
  std::vector<std::string> names;
  for (const nlohmann::json& p : reserve["parts"]) {
    parts += p["bytes"].get<int64_t>();
    names.push_back(p["name"]);
    EXPECT_GT(p["bytes"].get<int64_t>(), 0) << p["name"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"CUDA context", "cuBLAS workspaces", "NCCL buffers"}));
  EXPECT_EQ(parts + reserve["headroom_bytes"].get<int64_t>(), memory["reserved_bytes"]);
  EXPECT_NEAR(reserve["headroom_bytes"].get<double>(),
              reserve["headroom"].get<double>() * static_cast<double>(int64_t{80} << 30), 1);
  EXPECT_TRUE(memory["fit_suggestions"].empty());

  CommandResult human = Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json")});
  ASSERT_EQ(human.code, kExitOk) << human.err;
  EXPECT_NE(human.out.find("memory at each stage's peak"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("peak: stage " + std::to_string(peak) + ", "), std::string::npos)
      << human.out;
  EXPECT_EQ(human.out.find("to fit, change"), std::string::npos) << human.out;
}

// Meta's 405B layout with selective instead of full recompute overflows the GPU: simulate says
// what holds the memory and which nearest strategies fit.
TEST(Simulate, AStepThatDoesNotFitSaysWhatToChange) {
  const std::vector<std::string> args = {"simulate",
                                         "--model",
                                         Shipped("models/llama3-405b.json"),
                                         "--cluster",
                                         Shipped("hardware/clusters/dgx-h100.json"),
                                         "--nodes",
                                         "2048",
                                         "--tp",
                                         "8",
                                         "--pp",
                                         "16",
                                         "--dp",
                                         "128",
                                         "--vpp",
                                         "8",
                                         "--sp",
                                         "--schedule",
                                         "interleaved",
                                         "--pipeline-layout",
                                         "E|(t|)*126L",
                                         "--micro-batch",
                                         "1",
                                         "--global-batch",
                                         "2048",
                                         "--seq",
                                         "8192",
                                         "--recompute",
                                         "selective",
                                         "--zero",
                                         "1"};
  CommandResult human = Loom(args);
  ASSERT_EQ(human.code, kExitOk) << human.err;
  EXPECT_NE(human.out.find("DOES NOT FIT"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("to fit, change"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("\n  recompute=full "), std::string::npos) << human.out;

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  CommandResult json = Loom(json_args);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const nlohmann::json& memory = j["memory"];
  for (const nlohmann::json& b : memory["stages"])
    EXPECT_EQ(ItemSum(b), b["peak_bytes"].get<int64_t>());
  // Selective recompute keeps every layer's activations: they, not the model states, overflow.
  const nlohmann::json& peak = memory["stages"][memory["peak_stage"].get<int>()];
  EXPECT_GT(peak["items"]["stashed_activations"].get<int64_t>(),
            j["memory_limit_bytes"].get<int64_t>() / 2);
  ASSERT_FALSE(memory["fit_suggestions"].empty());
  for (const nlohmann::json& f : memory["fit_suggestions"]) {
    EXPECT_LE(f["peak_memory_bytes"].get<int64_t>(), f["memory_limit_bytes"].get<int64_t>())
        << f["changes"];
    EXPECT_EQ(f["levers"], 1) << f["changes"];
  }
}

// The host thread: a small model at micro-batch 1 waits for megatron-core's host, not without one.
TEST(Simulate, FrameworkNamesTheHostThreadAndNoneFeedsTheGpu) {
  const std::vector<std::string> base = {"simulate",
                                         "--model",
                                         Shipped("models/gpt3-125m.json"),
                                         "--cluster",
                                         Shipped("hardware/clusters/dgx-h100.json"),
                                         "--micro-batch",
                                         "1",
                                         "--global-batch",
                                         "8",
                                         "--seq",
                                         "1024",
                                         "--json"};
  const auto run = [&](const std::string& framework) {
    std::vector<std::string> args = base;
    args.push_back("--framework");
    args.push_back(framework);
    CommandResult r = Loom(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json megatron = run("megatron-core"), none = run("none"),
                       graphs = run("megatron-core-cudagraphs");
  EXPECT_EQ(none["framework"], "none");
  EXPECT_EQ(none["critical_path"]["host_s"].get<double>(), 0.0);
  EXPECT_GT(megatron["critical_path"]["host_s"].get<double>(), 0.0);
  EXPECT_GT(megatron["step_time_s"].get<double>(), 2 * none["step_time_s"].get<double>());
  // CUDA graphs take the layers' per-op floor away: between the two.
  EXPECT_LT(graphs["step_time_s"].get<double>(), megatron["step_time_s"].get<double>());
  EXPECT_GT(graphs["step_time_s"].get<double>(), none["step_time_s"].get<double>());
  std::vector<std::string> file = base;
  file.insert(file.end(), {"--framework", Shipped("hardware/frameworks/megatron-core.json")});
  CommandResult by_path = Loom(file);
  ASSERT_EQ(by_path.code, kExitOk) << by_path.err;
  EXPECT_EQ(nlohmann::json::parse(by_path.out)["step_time_s"], megatron["step_time_s"]);
}

// Megatron-DeepSpeed's training script waits for the GPU before each micro-batch and builds the
// causal mask on the CPU: the same framework file without its "microbatch" object gives a shorter
// step, shorter by at least the mask's host time for each of the 8 micro-batches.
TEST(Simulate, TheScriptsWorkPerMicroBatchLengthensAHostBoundStep) {
  const std::string shipped = Shipped("hardware/frameworks/megatron-deepspeed.json");
  nlohmann::json profile;
  std::ifstream(shipped) >> profile;
  ASSERT_TRUE(profile.contains("microbatch"));
  const double mask_us = profile["microbatch"]["host_mask_us"][1][1].get<double>();
  ASSERT_EQ(profile["microbatch"]["host_mask_us"][1][0].get<int>(), 1024);
  profile.erase("microbatch");
  const std::string without = ::testing::TempDir() + "megatron-deepspeed-without-microbatch.json";
  std::ofstream(without) << profile.dump(2);
  const auto step = [](const std::string& framework) {
    CommandResult r =
        Loom({"simulate", "--model", Shipped("models/gpt3-125m.json"), "--cluster",
              Shipped("hardware/clusters/dgx-a100.json"), "--micro-batch", "1", "--global-batch",
              "8", "--seq", "1024", "--attention", "unfused", "--framework", framework, "--json"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json with_script = step("megatron-deepspeed"), model_only = step(without);
  EXPECT_GT(with_script["step_time_s"].get<double>() - model_only["step_time_s"].get<double>(),
            8 * mask_us * 1e-6);
  // The output says what the script does and what it costs; without the object, nothing.
  const std::string basis = with_script.value("microbatch_basis", "");
  EXPECT_NE(basis.find("waits for the GPU"), std::string::npos) << basis;
  EXPECT_NE(basis.find("causal mask on the CPU"), std::string::npos) << basis;
  EXPECT_FALSE(model_only.contains("microbatch_basis"));
}

// A copy of the framework file |shipped| without its object |key|, in the test's temporary
// folder; empty (and a failure) if the file has no |key|.
std::string FrameworkWithout(const std::string& shipped, const std::string& key) {
  nlohmann::json profile;
  std::ifstream(shipped) >> profile;
  if (!profile.contains(key)) {
    ADD_FAILURE() << shipped << " has no " << key;
    return "";
  }
  profile.erase(key);
  const std::string without = ::testing::TempDir() + "framework-without-" + key + ".json";
  std::ofstream(without) << profile.dump(2);
  return without;
}

// DeepSpeed's ZeRO-3 of 2021 fetches each weight synchronously and issues list collectives whose
// host time grows with the ranks: the same framework file without its "zero3" object (loom's
// overlapped gather a layer) gives a shorter step; the output says what it modelled.
TEST(Simulate, AFrameworksZeroThreeIsSimulatedAsItsCodeRunsIt) {
  const std::string shipped = Shipped("hardware/frameworks/deepspeed-zero3-2021.json");
  const std::string without = FrameworkWithout(shipped, "zero3");
  ASSERT_FALSE(without.empty());
  const auto step = [](const std::string& framework) {
    CommandResult r = Loom({"simulate",
                            "--model",
                            Shipped("models/gpt3-1.3b.json"),
                            "--cluster",
                            Shipped("hardware/clusters/dgx-a100.json"),
                            "--nodes",
                            "8",
                            "--dp",
                            "64",
                            "--zero",
                            "3",
                            "--micro-batch",
                            "1",
                            "--global-batch",
                            "64",
                            "--seq",
                            "2048",
                            "--recompute",
                            "full",
                            "--dtype",
                            "fp16",
                            "--overlap-grad-reduce",
                            "--framework",
                            framework,
                            "--json"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json deepspeed = step(shipped), overlapped = step(without);
  EXPECT_GT(deepspeed["step_time_s"].get<double>(), overlapped["step_time_s"].get<double>());
  const std::string basis = deepspeed.value("zero3_basis", "");
  EXPECT_NE(basis.find("gathers each of a layer's 4 linear weights"), std::string::npos) << basis;
  EXPECT_NE(basis.find("64 ranks"), std::string::npos) << basis;
  EXPECT_NE(basis.find("all-reduces each weight's gradient"), std::string::npos) << basis;
  EXPECT_NE(basis.find("persistent weights"), std::string::npos) << basis;
  EXPECT_FALSE(overlapped.contains("zero3_basis"));
}

// llm-foundry's eager modules add kernels around each layer (bias-gradient reductions, the QKV
// split's gradient copy, unpadding around FlashAttention-2's variable-length kernel): the same
// framework file without its "layer_kernels" object gives a shorter step, and the output says
// which kernels it added.
TEST(Simulate, AFrameworksModuleKernelsAreCostedAroundEachLayer) {
  const std::string shipped = Shipped("hardware/frameworks/llm-foundry.json");
  const std::string without = FrameworkWithout(shipped, "layer_kernels");
  ASSERT_FALSE(without.empty());
  const auto step = [](const std::string& framework, const std::string& dtype = "bf16") {
    CommandResult r = Loom({"simulate",
                            "--model",
                            Shipped("models/gpt3-1.3b.json"),
                            "--cluster",
                            Shipped("hardware/clusters/dgx-h100.json"),
                            "--dp",
                            "8",
                            "--zero",
                            "3",
                            "--micro-batch",
                            "4",
                            "--global-batch",
                            "32",
                            "--seq",
                            "2048",
                            "--dtype",
                            dtype,
                            "--overlap-grad-reduce",
                            "--overlap-param-gather",
                            "--grad-accumulation",
                            "add",
                            "--framework",
                            framework,
                            "--json"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json eager = step(shipped), fused = step(without);
  EXPECT_GT(eager["step_time_s"].get<double>(), fused["step_time_s"].get<double>());
  EXPECT_GT(eager["breakdown"]["compute_s"].get<double>(),
            fused["breakdown"]["compute_s"].get<double>());
  const std::string basis = eager.value("layer_kernels_basis", "");
  EXPECT_NE(basis.find("llm-foundry.json"), std::string::npos) << basis;
  EXPECT_NE(basis.find("bias gradient"), std::string::npos) << basis;
  EXPECT_NE(basis.find("QKV split"), std::string::npos) << basis;
  EXPECT_NE(basis.find("unpadded"), std::string::npos) << basis;
  EXPECT_EQ(basis.find("weight cast"), std::string::npos) << basis;  // bf16 casts nothing
  EXPECT_FALSE(fused.contains("layer_kernels_basis"));
  // In fp8 its te.Linear layers cast each weight in every micro-batch, which the step pays for.
  const nlohmann::json fp8 = step(shipped, "fp8"), fp8_fused = step(without, "fp8");
  EXPECT_NE(fp8.value("layer_kernels_basis", "").find("weight cast to fp8 in every micro-batch"),
            std::string::npos)
      << fp8.value("layer_kernels_basis", "");
  EXPECT_GT(fp8["step_time_s"].get<double>(), fp8_fused["step_time_s"].get<double>());
}

TEST(Simulate, HelpNamesEveryShippedFramework) {
  CommandResult r = Loom({"simulate", "--help"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  int frameworks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Shipped("hardware/frameworks"))) {
    if (entry.path().extension() != ".json") continue;
    ++frameworks;
    EXPECT_NE(r.out.find(entry.path().stem().string()), std::string::npos)
        << entry.path().stem().string();
  }
  EXPECT_GE(frameworks, 4);
}

// Llama 3 8B at seq 8192 over tp 2 and dp 4 of one node of |cluster| (a path under the source
// tree), with --json: the step the attention tests vary.
std::vector<std::string> LlamaStepArgs(const std::string& cluster) {
  return {"simulate",
          "--model",
          Shipped("models/llama3-8b.json"),
          "--cluster",
          Shipped(cluster),
          "--tp",
          "2",
          "--dp",
          "4",
          "--global-batch",
          "8",
          "--seq",
          "8192",
          "--json"};
}

// The fused attention kernel is the framework's for the GPU (Transformer Engine's cuDNN attention
// on Hopper under megatron-core, FlashAttention-2 under pytorch-eager and on Ampere), each at its
// own rate, and --attention names one outright; the line and the JSON say which ran and why.
TEST(Simulate, FusedAttentionIsTheFrameworksKernelForTheGpu) {
  const std::vector<std::string> h100 = LlamaStepArgs("hardware/clusters/dgx-h100.json");
  const auto step = [](std::vector<std::string> args,
                       std::vector<std::string> extra) -> nlohmann::json {
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = Loom(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json megatron = step(h100, {});
  EXPECT_NE(megatron["attention_basis"].get<std::string>().find("cudnn (compute capability 9.0"),
            std::string::npos)
      << megatron["attention_basis"];
  const nlohmann::json flash = step(h100, {"--attention", "flash2"});
  EXPECT_NE(flash["attention_basis"].get<std::string>().find("flash2 (--attention)"),
            std::string::npos)
      << flash["attention_basis"];
  // cuDNN's fitted tiles run Llama's seq-8192 attention faster than FlashAttention-2's 35 %.
  EXPECT_LT(megatron["step_time_s"].get<double>(), 0.97 * flash["step_time_s"].get<double>());
  EXPECT_EQ(step(h100, {"--attention", "cudnn"})["step_time_s"], megatron["step_time_s"]);
  const nlohmann::json eager = step(h100, {"--framework", "pytorch-eager"});
  EXPECT_NE(eager["attention_basis"].get<std::string>().find("flash2"), std::string::npos)
      << eager["attention_basis"];
  const nlohmann::json unfused =
      step({"simulate", "--model", Shipped("models/gpt3-1.3b.json"), "--cluster",
            Shipped("hardware/clusters/dgx-h100.json"), "--global-batch", "8", "--json"},
           {"--attention", "unfused"});
  EXPECT_FALSE(unfused.contains("attention_basis"));
  CommandResult text = Loom({"simulate", "--model", Shipped("models/llama3-8b.json"), "--cluster",
                             Shipped("hardware/clusters/dgx-a100.json"), "--tp", "2", "--dp", "4",
                             "--global-batch", "8"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("fused attention"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("flash2 (compute capability 8.0 < 9.0)"), std::string::npos) << text.out;
}

// The Triton port of the first FlashAttention (--attention triton) runs at its own rate where the
// GPU file has it (the A100's, fitted on the FlashAttention-2 paper's Figure 4, and the H100's,
// carried over from it), about half FlashAttention-2's at Llama's seq 8192; a GPU without it (the
// B200) is refused, naming the key and the way out, not run at another family's rate.
TEST(Simulate, TritonAttentionRunsWhereTheGpuHasItsRate) {
  const auto args = [](const std::string& cluster, const std::string& attention) {
    std::vector<std::string> a = LlamaStepArgs(cluster);
    a.insert(a.end(), {"--attention", attention});
    return a;
  };
  CommandResult triton = Loom(args("hardware/clusters/dgx-a100.json", "triton"));
  ASSERT_EQ(triton.code, kExitOk) << triton.err;
  CommandResult flash = Loom(args("hardware/clusters/dgx-a100.json", "flash2"));
  ASSERT_EQ(flash.code, kExitOk) << flash.err;
  const nlohmann::json t = nlohmann::json::parse(triton.out);
  EXPECT_NE(t["attention_basis"].get<std::string>().find("triton (--attention)"), std::string::npos)
      << t["attention_basis"];
  EXPECT_GT(t["step_time_s"].get<double>(),
            1.05 * nlohmann::json::parse(flash.out)["step_time_s"].get<double>());
  CommandResult h100 = Loom(args("hardware/clusters/dgx-h100.json", "triton"));
  ASSERT_EQ(h100.code, kExitOk) << h100.err;
  CommandResult h100_flash = Loom(args("hardware/clusters/dgx-h100.json", "flash2"));
  ASSERT_EQ(h100_flash.code, kExitOk) << h100_flash.err;
  EXPECT_GT(nlohmann::json::parse(h100.out)["step_time_s"].get<double>(),
            1.05 * nlohmann::json::parse(h100_flash.out)["step_time_s"].get<double>());
  CommandResult b200 = Loom(args("hardware/clusters/dgx-b200.json", "triton"));
  EXPECT_NE(b200.code, kExitOk);
  EXPECT_NE(b200.err.find("no calibration.attention_tiles_triton"), std::string::npos) << b200.err;
  EXPECT_NE(b200.err.find("--attention flash2 or cudnn"), std::string::npos) << b200.err;
}

// Megatron-LM's unfused attention on scores its fused softmax does not take (GPT-3 1.3B's 16 heads
// over tp 8 at micro-batch 1: 2 a rank) runs PyTorch's fp32 softmax, which loom costs and says so,
// not a refusal; at micro-batch 2 the fused kernel takes them and the step says nothing of it.
TEST(Simulate, UnfusedAttentionSaysWhenPyTorchsSoftmaxRuns) {
  const auto step = [](const std::string& micro_batch) {
    CommandResult r = Loom({"simulate",
                            "--model",
                            Shipped("models/gpt3-1.3b.json"),
                            "--cluster",
                            Shipped("hardware/clusters/dgx-a100.json"),
                            "--tp",
                            "8",
                            "--micro-batch",
                            micro_batch,
                            "--global-batch",
                            "8",
                            "--seq",
                            "1024",
                            "--dtype",
                            "fp16",
                            "--attention",
                            "unfused",
                            "--dropout",
                            "--framework",
                            "megatron-deepspeed",
                            "--json"});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json torch = step("1"), fused = step("2");
  const std::string basis = torch.value("softmax_basis", "");
  EXPECT_NE(basis.find("PyTorch's runs"), std::string::npos) << basis;
  EXPECT_NE(basis.find("1 x 2"), std::string::npos) << basis;
  EXPECT_NE(basis.find("query-key layer scaling"), std::string::npos) << basis;
  EXPECT_FALSE(fused.contains("softmax_basis"));
}

TEST(Simulate, UnknownFrameworkListsTheKnownOnes) {
  CommandResult r = Loom({"simulate", "--model", Shipped("models/gpt3-125m.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--framework", "megatron"});
  EXPECT_NE(r.code, kExitOk);
  EXPECT_NE(r.err.find("megatron-core"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pytorch-eager"), std::string::npos) << r.err;
}

// |json_text| as text again without the request it echoes, for comparing the answers of two
// requests.
std::string WithoutRequest(const std::string& json_text) {
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(json_text);
  json.erase("request");
  return json.dump(2);
}

TEST(Simulate, SameInputGivesByteIdenticalJsonAndTrace) {
  const std::string trace_a = ::testing::TempDir() + "trace_a.json";
  const std::string trace_b = ::testing::TempDir() + "trace_b.json";
  CommandResult a =
      Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--json", "--trace", trace_a});
  CommandResult b =
      Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--json", "--trace", trace_b});
  ASSERT_EQ(a.code, kExitOk) << a.err;
  // The outputs differ only in the request they echo (the trace paths).
  EXPECT_EQ(WithoutRequest(a.out), WithoutRequest(b.out));
  EXPECT_EQ(nlohmann::json::parse(a.out)["request"]["arguments"]["trace"], trace_a);
  std::stringstream ta, tb;
  ta << std::ifstream(trace_a).rdbuf();
  tb << std::ifstream(trace_b).rdbuf();
  EXPECT_GT(ta.str().size(), 1000u);
  EXPECT_EQ(ta.str(), tb.str());
  EXPECT_TRUE(nlohmann::json::accept(ta.str()));
}

// scenarios/gpt3-175b-1024gpu.json as flags, with the tensor- and data-parallel sizes and the
// recompute given, and --json.
std::vector<std::string> Gpt3ScenarioAsFlags(const std::string& tp, const std::string& dp,
                                             const std::string& recompute) {
  return {"simulate",
          "--model",
          Shipped("models/gpt3-175b.json"),
          "--cluster",
          Shipped("hardware/clusters/dgx-a100.json"),
          "--nodes",
          "128",
          "--tp",
          tp,
          "--pp",
          "16",
          "--dp",
          dp,
          "--vpp",
          "2",
          "--sp",
          "--schedule",
          "interleaved",
          "--micro-batch",
          "1",
          "--global-batch",
          "1536",
          "--seq",
          "2048",
          "--recompute",
          recompute,
          "--zero",
          "1",
          "--overlap-grad-reduce",
          "--overlap-param-gather",
          "--json"};
}

TEST(Simulate, FlagsGiveTheSameStepAsTheScenario) {
  CommandResult flags = Loom(Gpt3ScenarioAsFlags("8", "8", "selective"));
  CommandResult scenario =
      Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--json"});
  ASSERT_EQ(flags.code, kExitOk) << flags.err;
  EXPECT_EQ(WithoutRequest(flags.out), WithoutRequest(scenario.out));
}

TEST(Simulate, BrokenRulesAreBadInputNamingTheFlags) {
  CommandResult r = Loom({"simulate", "--model", Shipped("models/gpt3-175b.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-a100.json"), "--tp", "16", "--pp", "5"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--tp 16"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--pp 5"), std::string::npos) << r.err;
}

TEST(Simulate, NeedsAModelAndAClusterOrAScenario) {
  CommandResult r = Loom({"simulate", "--tp", "8"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("needs --model and --cluster, or a scenario file"), std::string::npos)
      << r.err;
}

TEST(Simulate, UnknownScheduleIsAUsageError) {
  CommandResult r =
      Loom({"simulate", "--model", "m.json", "--cluster", "c.json", "--schedule", "1f1b-int"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("1f1b-int"), std::string::npos) << r.err;
}

// A flag given with a scenario overrides the key it stands for, and the output says which and over
// what (issue 45).
TEST(Simulate, FlagsOverrideTheScenariosKeysAndSaySo) {
  const std::string scenario = Shipped("scenarios/gpt3-175b-1024gpu.json");
  CommandResult r = Loom({"simulate", scenario, "--recompute", "none", "--tp", "4", "--dp", "16"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("scenario              " + scenario +
                       " with --tp 4 over strategy.tp 8, --dp 16 over strategy.dp 8, --recompute "
                       "none over strategy.recompute selective\n"),
            std::string::npos)
      << r.out;
  // The same strategy given as flags alone simulates the same step.
  CommandResult flags = Loom(Gpt3ScenarioAsFlags("4", "16", "none"));
  CommandResult over =
      Loom({"simulate", scenario, "--recompute", "none", "--tp", "4", "--dp", "16", "--json"});
  ASSERT_EQ(flags.code, kExitOk) << flags.err;
  ASSERT_EQ(over.code, kExitOk) << over.err;
  const nlohmann::json a = nlohmann::json::parse(flags.out), b = nlohmann::json::parse(over.out);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  ASSERT_EQ(b["scenario_overrides"].size(), 3u);
  EXPECT_EQ(b["scenario_overrides"][2], nlohmann::json({{"flag", "--recompute"},
                                                        {"key", "strategy.recompute"},
                                                        {"scenario", "selective"},
                                                        {"given", "none"}}));
  // Without flags, nothing is overridden.
  CommandResult plain = Loom({"simulate", scenario, "--json"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("scenario_overrides"));
  // --nodes and --framework override their keys as before.
  CommandResult nodes = Loom({"simulate", scenario, "--nodes", "256"});
  EXPECT_EQ(nodes.code, kExitOk) << nodes.err;
}

// A value a flag sets is checked as the key's would be, and the error says the flag set it.
TEST(Simulate, AFlagOverAScenarioKeyIsCheckedAsTheKey) {
  CommandResult r = Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--tp", "5"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("(with --tp 5 over strategy.tp 8)"), std::string::npos) << r.err;
  // A layout is read against the scenario's pipeline size.
  r = Loom(
      {"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"), "--pipeline-layout", "E|t*3L"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("gpt3-175b-1024gpu.json with --pipeline-layout"), std::string::npos)
      << r.err;
}

// The shipped GPT-3 scenario with its paths made absolute, to be edited and written to a
// temporary file (WriteGpt3Scenario).
nlohmann::json Gpt3Scenario() {
  nlohmann::json scenario;
  std::ifstream(Shipped("scenarios/gpt3-175b-1024gpu.json")) >> scenario;
  scenario["model"] = Shipped("models/gpt3-175b.json");
  scenario["cluster"] = Shipped("hardware/clusters/dgx-a100.json");
  return scenario;
}

std::string WriteGpt3Scenario(const nlohmann::json& scenario, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << scenario.dump(2);
  return path;
}

// A scenario may set the attention kernel and dropout, as --attention and --dropout do.
TEST(Simulate, AScenarioSetsAttentionAndDropout) {
  nlohmann::json scenario = Gpt3Scenario();
  scenario["attention"] = "unfused";
  scenario["dropout"] = true;
  const std::string path = WriteGpt3Scenario(scenario, "loom-attention-scenario.json");
  CommandResult from_file = Loom({"simulate", path, "--json"});
  CommandResult from_flags = Loom({"simulate", Shipped("scenarios/gpt3-175b-1024gpu.json"),
                                   "--attention", "unfused", "--dropout", "--json"});
  ASSERT_EQ(from_file.code, kExitOk) << from_file.err;
  ASSERT_EQ(from_flags.code, kExitOk) << from_flags.err;
  EXPECT_EQ(nlohmann::json::parse(from_file.out)["step_time_s"],
            nlohmann::json::parse(from_flags.out)["step_time_s"]);
  scenario["attention"] = "flash3";
  WriteGpt3Scenario(scenario, "loom-attention-scenario.json");
  CommandResult bad = Loom({"simulate", path});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_NE(bad.err.find(
                "attention: is \"flash3\"; did you mean \"flash2\"? it must be one of \"fused\""),
            std::string::npos)
      << bad.err;
}

TEST(Simulate, AScenariosStrategyErrorsNameTheFileAndKey) {
  nlohmann::json scenario = Gpt3Scenario();
  scenario["strategy"]["tp"] = 5;
  const std::string path = WriteGpt3Scenario(scenario, "loom-bad-tp-scenario.json");
  CommandResult r = Loom({"simulate", path});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find(path + ": strategy.tp 5: num_attention_heads (96)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--tp"), std::string::npos) << r.err;
}

TEST(Loom, AMisspeltCommandGetsTheNearest) {
  CommandResult r = Loom({"simulat", "--tp", "8"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "loom: \"simulat\" is not a loom command; did you mean \"simulate\"? The commands are "
            "describe, "
            "simulate, fit, plan, probe, validate, trace; run `loom --help`.\n");
  CommandResult far = Loom({"frobnicate"});
  EXPECT_EQ(far.code, kExitUsage);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

// CLI11's own checks let NaN through and print DBL_MAX in full; loom's say the bound in words.
TEST(Loom, NumericFlagsRefuseNanAndNameTheirBound) {
  CommandResult nan = Loom({"simulate", "--model", Shipped("models/gpt3-125m.json"), "--cluster",
                            Shipped("hardware/clusters/dgx-h100.json"), "--moe-imbalance", "nan"});
  EXPECT_EQ(nan.code, kExitUsage);
  EXPECT_NE(nan.err.find("--moe-imbalance: got 'nan'; it must be a number from 1 to 1000000"),
            std::string::npos)
      << nan.err;
  CommandResult zero =
      Loom({"describe", "--model", Shipped("models/gpt3-125m.json"), "--seq", "0"});
  EXPECT_EQ(zero.code, kExitUsage);
  EXPECT_NE(zero.err.find("--seq: got '0'; it must be a number greater than 0"), std::string::npos)
      << zero.err;
  EXPECT_EQ(zero.err.find("1797"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Issue 25: the what-ifs of `loom simulate`, on Llama 3 8B over two DGX H100 nodes (tp 4, pp 2,
// dp 2, every replica simulated).
std::vector<std::string> TwoNodeLlama(std::vector<std::string> extra) {
  std::vector<std::string> args = {"simulate",
                                   "--model",
                                   Shipped("models/llama3-8b.json"),
                                   "--cluster",
                                   Shipped("hardware/clusters/dgx-h100.json"),
                                   "--nodes",
                                   "2",
                                   "--tp",
                                   "4",
                                   "--pp",
                                   "2",
                                   "--dp",
                                   "2",
                                   "--global-batch",
                                   "16",
                                   "--seq",
                                   "4096",
                                   "--overlap-grad-reduce"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(SimulateWhatIf, AStragglerSlowsTheStepAndSaysWhoWaited) {
  CommandResult r = Loom(TwoNodeLlama({"--full", "--straggler", "node=1:1.2", "--json"}));
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(MatchesSchema(j));
  const nlohmann::json& w = j["what_if"];
  EXPECT_EQ(w["baseline_step_s"], j["step_time_s"]);
  EXPECT_GT(w["step_time_s"].get<double>(), w["baseline_step_s"].get<double>());
  // Node 1 holds stage 1 of both replicas: ranks 1 and 3 of the step graph, equally slow.
  EXPECT_TRUE(w["slowest_rank"] == 1 || w["slowest_rank"] == 3) << w["slowest_rank"];
  EXPECT_LE(w["step_time_s"].get<double>() - w["baseline_step_s"].get<double>(),
            w["critical_extra_s"].get<double>() + 1e-9);
  EXPECT_GT(w["ranks_waiting"].get<int>(), 0);
  EXPECT_EQ(w["stragglers"][0]["scope"], "node");
  EXPECT_EQ(w["stragglers"][0]["index"], 1);
}

TEST(SimulateWhatIf, JitterGivesQuantilesThatRepeatWithTheSeed) {
  const std::vector<std::string> args =
      TwoNodeLlama({"--full", "--jitter", "3%", "--draws", "50", "--seed", "9", "--json"});
  CommandResult a = Loom(args), b = Loom(args);
  ASSERT_EQ(a.code, kExitOk) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_TRUE(MatchesSchema(j));
  EXPECT_EQ(j["jitter"], nlohmann::json::parse(b.out)["jitter"]);
  EXPECT_DOUBLE_EQ(j["jitter"]["sigma_fraction"].get<double>(), 0.03);
  EXPECT_EQ(j["jitter"]["draws"], 50);
  EXPECT_LE(j["jitter"]["p50_s"].get<double>(), j["jitter"]["p99_s"].get<double>());
  EXPECT_FALSE(j.contains("what_if"));

  CommandResult text = Loom(TwoNodeLlama({"--full", "--jitter", "0.03", "--draws", "50"}));
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find("3.0% per GPU, 50 draws (seed 1)"), std::string::npos) << text.out;
}

TEST(SimulateWhatIf, BadWhatIfsAreRefusedWithTheFix) {
  const struct {
    std::vector<std::string> extra;
    const char* says;
  } cases[] = {
      {{"--straggler", "rank=99:1.2", "--full"}, "--straggler rank=99: the job has 16 GPUs"},
      {{"--straggler", "rank=4:1.2"}, "add --full"},
      {{"--straggler", "gpu=4:1.2"}, "unknown scope 'gpu'"},
      {{"--slow-link", "node=1:2"}, "fraction of its bandwidth"},
      {{"--jitter", "2%"}, "add --full"},
      {{"--jitter", "two", "--full"}, "--jitter 'two'"},
      {{"--draws", "10"}, "--draws and --seed set the Monte Carlo of --jitter"},
      {{"--seed", "3", "--full"}, "--draws and --seed set the Monte Carlo of --jitter"},
  };
  for (const auto& c : cases) {
    CommandResult r = Loom(TwoNodeLlama(c.extra));
    EXPECT_EQ(r.code, kExitBadInput) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

TEST(SimulateWhatIf, ASlowLinkInsideOneNodeIsRefused) {
  CommandResult r = Loom({"simulate", "--model", Shipped("models/llama3-8b.json"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--nodes", "1", "--tp", "8",
                          "--global-batch", "8", "--slow-link", "rank=0:0.5"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("no transfer of this step crosses a NIC"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom
