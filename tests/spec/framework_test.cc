#include "spec/framework.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

std::string ShippedFramework(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A framework file whose |key| is each case's |value| (its other keys valid) is refused with a
// message naming the file, |key| and the case's |expected| text.
struct RefusedValue {
  std::string value;
  std::string expected;
};
void ExpectEachRefused(const std::string& key, const std::vector<RefusedValue>& cases) {
  const std::string head = R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": 1, "backward_us_per_op": 1, "optimizer_us_per_layer": 0,
             "optimizer_us_fixed": 0},
    "sync": {"after_p2p": true, "before_optimizer": false}, ")" +
                           key + R"(": )";
  for (const RefusedValue& c : cases) {
    const std::string path = WriteTemp("bad-" + key + ".json", head + c.value + "}");
    Result<FrameworkProfile> p = LoadFrameworkProfile(path);
    ASSERT_FALSE(p.ok()) << c.value;
    const std::string message(p.status().message());
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
}

TEST(Framework, ShippedProfilesLoadAndRoundTrip) {
  for (const char* name :
       {"megatron-core", "megatron-core-cudagraphs", "megatron-deepspeed", "pytorch-eager",
        "deepspeed-zero3-2021", "megatron-deepspeed-2024", "llm-foundry"}) {
    const std::string path = ShippedFramework(std::string("hardware/frameworks/") + name + ".json");
    Result<FrameworkProfile> p = LoadFrameworkProfile(path);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->forward_us_per_op, 0);
    EXPECT_GT(p->backward_us_per_op, 0);
    EXPECT_FALSE(p->source.empty());
    const std::string copy = WriteTemp(std::string(name) + "-copy.json", FrameworkJson(*p).dump(2));
    Result<FrameworkProfile> again = LoadFrameworkProfile(copy);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->forward_us_per_op, p->forward_us_per_op);
    EXPECT_EQ(again->cuda_graph_layers, p->cuda_graph_layers);
    EXPECT_EQ(again->sync_after_p2p, p->sync_after_p2p);
    ASSERT_EQ(again->fused_attention.has_value(), p->fused_attention.has_value()) << name;
    if (p->fused_attention) {
      EXPECT_EQ(again->fused_attention->family, p->fused_attention->family);
      EXPECT_EQ(again->fused_attention->from_compute_capability,
                p->fused_attention->from_compute_capability);
      EXPECT_EQ(again->fused_attention->family_from, p->fused_attention->family_from);
    }
    EXPECT_EQ(again->tp_backward_overlap, p->tp_backward_overlap);
    EXPECT_EQ(again->tp_backward_overlap_source, p->tp_backward_overlap_source);
    ASSERT_EQ(again->microbatch.has_value(), p->microbatch.has_value()) << name;
    if (p->microbatch) {
      EXPECT_EQ(again->microbatch->batch_ops, p->microbatch->batch_ops);
      EXPECT_EQ(again->microbatch->loss_ops, p->microbatch->loss_ops);
      EXPECT_EQ(again->microbatch->host_mask_us, p->microbatch->host_mask_us);
      EXPECT_EQ(again->microbatch->sync, p->microbatch->sync);
      EXPECT_EQ(again->microbatch->source, p->microbatch->source);
    }
    ASSERT_EQ(again->zero3.has_value(), p->zero3.has_value()) << name;
    if (p->zero3) {
      EXPECT_EQ(again->zero3->synchronous, p->zero3->synchronous);
      EXPECT_EQ(again->zero3->list_collective_us_per_rank, p->zero3->list_collective_us_per_rank);
      EXPECT_EQ(again->zero3->gradient_reduction, p->zero3->gradient_reduction);
      EXPECT_EQ(again->zero3->list_all_gather, p->zero3->list_all_gather);
      EXPECT_EQ(again->zero3->list_reduce_scatter, p->zero3->list_reduce_scatter);
      EXPECT_EQ(again->zero3->max_reuse_distance, p->zero3->max_reuse_distance);
      EXPECT_EQ(again->zero3->max_live_parameters, p->zero3->max_live_parameters);
      EXPECT_EQ(again->zero3->persistence_threshold, p->zero3->persistence_threshold);
      EXPECT_EQ(again->zero3->persistent_gather_us_per_rank,
                p->zero3->persistent_gather_us_per_rank);
      EXPECT_EQ(again->zero3->source, p->zero3->source);
    }
    ASSERT_EQ(again->layer_kernels.has_value(), p->layer_kernels.has_value()) << name;
    if (p->layer_kernels) {
      EXPECT_EQ(again->layer_kernels->linear_bias_grads, p->layer_kernels->linear_bias_grads);
      EXPECT_EQ(again->layer_kernels->qkv_split_grad_copy, p->layer_kernels->qkv_split_grad_copy);
      EXPECT_EQ(again->layer_kernels->attention_unpad, p->layer_kernels->attention_unpad);
      EXPECT_EQ(again->layer_kernels->fp8_weight_cast_every_microbatch,
                p->layer_kernels->fp8_weight_cast_every_microbatch);
      EXPECT_EQ(again->layer_kernels->query_key_layer_scaling,
                p->layer_kernels->query_key_layer_scaling);
      EXPECT_EQ(again->layer_kernels_source, p->layer_kernels_source);
    }
  }
  Result<FrameworkProfile> graphs =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core-cudagraphs.json"));
  ASSERT_TRUE(graphs.ok());
  EXPECT_TRUE(graphs->cuda_graph_layers);
}

TEST(Framework, BadValuesNameTheFileAndTheKey) {
  const std::string path = WriteTemp("bad-framework.json", R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": -3, "backward_us_per_op": 1, "optimizer_us_per_layer": 0,
             "optimizer_us_fixed": 0, "scale": 0},
    "sync": {"after_p2p": true}, "cuda_graph": {}})");
  Result<FrameworkProfile> p = LoadFrameworkProfile(path);
  ASSERT_FALSE(p.ok());
  const std::string message(p.status().message());
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("forward_us_per_op"), std::string::npos) << message;
  EXPECT_NE(message.find("scale"), std::string::npos) << message;
  EXPECT_NE(message.find("before_optimizer"), std::string::npos) << message;
  EXPECT_NE(message.find("cuda_graph"), std::string::npos) << message;
}

// Megatron-DeepSpeed's get_batch waits for the GPU (broadcast_data's .cpu()) and builds the causal
// mask on the CPU; megatron-core's profile was measured without the training script around it.
TEST(Framework, SaysWhatTheScriptDoesForEachMicroBatch) {
  Result<FrameworkProfile> ds =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-deepspeed.json"));
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE(ds->microbatch.has_value());
  EXPECT_TRUE(ds->microbatch->sync);
  EXPECT_GT(ds->microbatch->batch_ops, 0);
  EXPECT_GT(ds->microbatch->MaskUs(1024), 0);
  Result<FrameworkProfile> core =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(core.ok());
  EXPECT_FALSE(core->microbatch.has_value());
}

// Measured points are kept; between them the time is linear in seq^2 (the mask's elements), and
// proportional to seq^2 outside them.
TEST(Framework, MaskTimeIsLinearInTheMasksElementsBetweenMeasuredPoints) {
  MicroBatchHost mb;
  EXPECT_EQ(mb.MaskUs(1024), 0);
  mb.host_mask_us = {{1000, 100}, {2000, 700}};
  EXPECT_DOUBLE_EQ(mb.MaskUs(1000), 100);
  EXPECT_DOUBLE_EQ(mb.MaskUs(2000), 700);
  EXPECT_DOUBLE_EQ(mb.MaskUs(500), 25);
  EXPECT_DOUBLE_EQ(mb.MaskUs(4000), 2800);
  // seq^2 = 2.5e6 is half-way from 1e6 to 4e6.
  EXPECT_DOUBLE_EQ(mb.MaskUs(1581), 100 + 600 * (1581.0 * 1581 - 1e6) / 3e6);
}

TEST(Framework, MicroBatchErrorsNameTheKeyAndTheFix) {
  ExpectEachRefused(
      "microbatch",
      {
          {R"({"batch_ops": 1, "loss_ops": 1, "source": "s"})", "sync"},
          {R"({"batch_ops": -1, "loss_ops": 1, "sync": true, "source": "s"})", "batch_ops"},
          {R"({"batch_ops": 1, "sync": true, "source": "s"})", "loss_ops"},
          {R"({"batch_ops": 1, "loss_ops": 1, "sync": true})", "source"},
          {R"({"batch_ops": 1, "loss_ops": 1, "sync": true, "source": "s", "host_mask_us": 5})",
           "host_mask_us: is not an array"},
          {R"({"batch_ops": 1, "loss_ops": 1, "sync": true, "source": "s",
               "host_mask_us": [[2048, 5], [1024, 1]]})",
           "element 1 is [1024,1]"},
          {R"({"batch_ops": 1, "loss_ops": 1, "sync": true, "source": "s",
               "host_mask_us": [[1024, -1]]})",
           "element 0"},
          {R"({"batch_ops": 1, "loss_ops": 1, "sync": true, "source": "s", "mask": true})", "mask"},
      });
}

// DeepSpeed's ZeRO-3 of 2021 fetches synchronously, all-reduces from flat buckets and gathers its
// persistent weights after the step; the other profiles leave ZeRO-3 to loom's default.
TEST(Framework, SaysHowItRunsZeroThree) {
  Result<FrameworkProfile> ds =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/deepspeed-zero3-2021.json"));
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE(ds->zero3.has_value());
  EXPECT_TRUE(ds->zero3->synchronous);
  EXPECT_EQ(ds->zero3->gradient_reduction, ShardedFetch::Reduction::kAllReduce);
  EXPECT_EQ(ds->zero3->persistence_threshold, 100000);
  EXPECT_GT(ds->zero3->list_collective_us_per_rank, 0);
  Result<FrameworkProfile> core =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(core.ok());
  EXPECT_FALSE(core->zero3.has_value());
}

TEST(Framework, ZeroThreeErrorsNameTheKeyAndTheFix) {
  const std::string tail = R"(, "list_collective_us_per_rank": 1, "source": "s"})";
  ExpectEachRefused(
      "zero3",
      {
          {R"({"gradient_reduction": "all_reduce")" + tail, "synchronous_fetch"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "reduce")" + tail,
           "gradient_reduction"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce",
               "list_collective_us_per_rank": -1, "source": "s"})",
           "list_collective_us_per_rank"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce",
               "list_reduce_scatter": true)" +
               tail,
           "set gradient_reduction to \"reduce_scatter\""},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce",
               "persistent_gather_us_per_rank": 5)" +
               tail,
           "persistence_threshold"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce",
               "max_live_parameters": -1)" +
               tail,
           "max_live_parameters"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce",
               "list_collective_us_per_rank": 1})",
           "source"},
          {R"({"synchronous_fetch": true, "gradient_reduction": "all_reduce", "prefetch": 1)" +
               tail,
           "prefetch"},
      });
}

// llm-foundry's MPT runs eager nn.Linear layers, splits the QKV output into views and unpads the
// rows around FlashAttention-2's variable-length kernel; Megatron-core's file names none of that.
TEST(Framework, SaysWhichKernelsItsModulesLaunchAroundTheLayer) {
  Result<FrameworkProfile> foundry =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/llm-foundry.json"));
  ASSERT_TRUE(foundry.ok()) << foundry.status().message();
  ASSERT_TRUE(foundry->layer_kernels.has_value());
  EXPECT_TRUE(foundry->layer_kernels->linear_bias_grads);
  EXPECT_TRUE(foundry->layer_kernels->qkv_split_grad_copy);
  EXPECT_TRUE(foundry->layer_kernels->attention_unpad);
  EXPECT_TRUE(foundry->layer_kernels->fp8_weight_cast_every_microbatch);  // te.Linear, no caching
  EXPECT_NE(foundry->layer_kernels_source.find("unpad_input"), std::string::npos);
  Result<FrameworkProfile> core =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(core.ok());
  EXPECT_FALSE(core->layer_kernels.has_value());
}

// Megatron-DeepSpeed's own layers (4822c87e): bias gradients as kernels, the QKV split's backward
// concatenation, and query-key layer scaling on by default (--no-query-key-layer-scaling), which
// PyTorch's softmax fallback multiplies in a kernel of its own; Megatron-core's default is off.
TEST(Framework, MegatronDeepSpeedScalesItsScoresByTheLayerNumber) {
  Result<FrameworkProfile> ds =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-deepspeed.json"));
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE(ds->layer_kernels.has_value());
  EXPECT_TRUE(ds->layer_kernels->query_key_layer_scaling);
  EXPECT_TRUE(ds->layer_kernels->qkv_split_grad_copy);
  EXPECT_FALSE(ds->layer_kernels->attention_unpad);
  Result<FrameworkProfile> core =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(core.ok()) << core.status().message();
  EXPECT_FALSE(core->layer_kernels.has_value() && core->layer_kernels->query_key_layer_scaling);
}

TEST(Framework, LayerKernelErrorsNameTheKeyAndTheFix) {
  ExpectEachRefused(
      "layer_kernels",
      {
          {R"({"qkv_split_grad_copy": true, "attention_unpad": false, "source": "s"})",
           "linear_bias_grads"},
          {R"({"linear_bias_grads": 1, "qkv_split_grad_copy": true, "attention_unpad": false,
               "source": "s"})",
           "linear_bias_grads"},
          {R"({"linear_bias_grads": true, "qkv_split_grad_copy": true, "attention_unpad": false})",
           "source"},
          {R"({"linear_bias_grads": true, "qkv_split_grad_copy": true, "attention_unpad": false,
               "residual_grad_add": true, "source": "s"})",
           "residual_grad_add"},
          {R"({"linear_bias_grads": true, "qkv_split_grad_copy": true, "attention_unpad": false,
               "fp8_weight_cast_every_microbatch": "yes", "source": "s"})",
           "fp8_weight_cast_every_microbatch"},
          {R"({"linear_bias_grads": true, "qkv_split_grad_copy": true, "attention_unpad": false,
               "query_key_layer_scaling": 1, "source": "s"})",
           "query_key_layer_scaling"},
      });
}

// The "memory" object: the allocator's fragmentation headroom and its source, read and written
// back; absent, none (loom's default applies, sim/memory_reserve.h).
TEST(Framework, SaysWhatItsAllocatorLosesToFragmentation) {
  const std::string path = WriteTemp("memory.json", R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": 1, "backward_us_per_op": 1, "optimizer_us_per_layer": 0,
             "optimizer_us_fixed": 0},
    "sync": {"after_p2p": true, "before_optimizer": false},
    "memory": {"allocator_headroom": 0.04, "source": "measured"}})");
  Result<FrameworkProfile> p = LoadFrameworkProfile(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(p->allocator_headroom.has_value());
  EXPECT_DOUBLE_EQ(*p->allocator_headroom, 0.04);
  EXPECT_EQ(p->allocator_headroom_source, "measured");
  const nlohmann::ordered_json written = FrameworkJson(*p);
  EXPECT_EQ(written["memory"]["allocator_headroom"], 0.04);
  EXPECT_EQ(written["memory"]["source"], "measured");
  Result<FrameworkProfile> shipped =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(shipped.ok());
  EXPECT_FALSE(shipped->allocator_headroom.has_value());
  EXPECT_FALSE(FrameworkJson(*shipped).contains("memory"));
}

TEST(Framework, MemoryErrorsNameTheKeyAndTheFix) {
  ExpectEachRefused("memory",
                    {
                        {R"({"source": "s"})", "allocator_headroom"},
                        {R"({"allocator_headroom": 0.95, "source": "s"})", "allocator_headroom"},
                        {R"({"allocator_headroom": -0.1, "source": "s"})", "allocator_headroom"},
                        {R"({"allocator_headroom": 0.1})", "source"},
                        {R"({"allocator_headroom": 0.1, "source": "s", "x": 1})", "x"},
                    });
}

GpuSpec Gpu(std::optional<double> compute_capability) {
  GpuSpec gpu;
  gpu.file = "hardware/gpus/x.json";
  gpu.compute_capability = compute_capability;
  return gpu;
}

// Megatron-LM runs Transformer Engine's DotProductAttention, which prefers cuDNN's fused attention
// from compute capability 9.0 on and FlashAttention-2 below it; llm-foundry calls FlashAttention-2.
TEST(Framework, ChoosesTheFusedAttentionItsFileNamesForTheGpu) {
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  EXPECT_EQ(ChooseFusedAttention(&*megatron, Gpu(9.0)).family, AttentionFamily::kCudnn);
  EXPECT_EQ(ChooseFusedAttention(&*megatron, Gpu(10.0)).family, AttentionFamily::kCudnn);
  const FusedAttentionChoice ampere = ChooseFusedAttention(&*megatron, Gpu(8.0));
  EXPECT_EQ(ampere.family, AttentionFamily::kFlashAttention2);
  EXPECT_NE(ampere.basis.find("8.0 < 9.0"), std::string::npos) << ampere.basis;
  // A GPU file that states no compute capability gets the rule's family and is told why.
  const FusedAttentionChoice unstated = ChooseFusedAttention(&*megatron, Gpu(std::nullopt));
  EXPECT_EQ(unstated.family, AttentionFamily::kFlashAttention2);
  EXPECT_NE(unstated.basis.find("gives no compute_capability"), std::string::npos)
      << unstated.basis;
  Result<FrameworkProfile> eager =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/pytorch-eager.json"));
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  EXPECT_EQ(ChooseFusedAttention(&*eager, Gpu(9.0)).family, AttentionFamily::kFlashAttention2);
  // No framework, or one without the key: FlashAttention-2, said so.
  const FusedAttentionChoice none = ChooseFusedAttention(nullptr, Gpu(9.0));
  EXPECT_EQ(none.family, AttentionFamily::kFlashAttention2);
  EXPECT_NE(none.basis.find("no framework"), std::string::npos) << none.basis;
}

TEST(Framework, FusedAttentionErrorsNameTheKeyAndTheFix) {
  ExpectEachRefused(
      "fused_attention",
      {
          {R"({"family": "flash3", "source": "s"})", "family"},
          {R"({"family": "flash2", "from_compute_capability": 9.0, "source": "s"})", "family_from"},
          {R"({"family": "flash2", "family_from": "cudnn", "source": "s"})",
           "without from_compute_capability"},
          {R"({"family": "flash2"})", "source"},
          {R"({"family": "cudnn", "source": "s", "backend": "te"})", "backend"},
      });
}

// Megatron-LM (both shipped profiles) overlaps a column-parallel linear's backward collectives
// with its GEMMs; PyTorch FSDP has no tensor parallelism, and a file without the key blocks.
TEST(Framework, SaysWhetherTheBackwardsTensorParallelCollectivesOverlap) {
  for (const char* name : {"megatron-core", "megatron-core-cudagraphs"}) {
    Result<FrameworkProfile> p = LoadFrameworkProfile(
        ShippedFramework(std::string("hardware/frameworks/") + name + ".json"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_TRUE(p->tp_backward_overlap) << name;
    EXPECT_NE(p->tp_backward_overlap_source.find("cf7efd4f"), std::string::npos) << name;
  }
  Result<FrameworkProfile> eager =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/pytorch-eager.json"));
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  EXPECT_FALSE(eager->tp_backward_overlap);
  const std::string head = R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": 1, "backward_us_per_op": 1, "optimizer_us_per_layer": 0,
             "optimizer_us_fixed": 0},
    "sync": {"after_p2p": true, "before_optimizer": false}, "tensor_parallel": )";
  const struct {
    const char* tp;
    const char* expected;
  } cases[] = {
      {R"({"source": "s"})", "say true or false"},
      {R"({"backward_overlap": "yes", "source": "s"})", "backward_overlap"},
      {R"({"backward_overlap": true})", "source"},
      {R"({"backward_overlap": true, "source": "s", "forward_overlap": true})", "forward_overlap"},
  };
  for (const auto& c : cases) {
    const std::string path = WriteTemp("bad-tp.json", head + std::string(c.tp) + "}");
    Result<FrameworkProfile> p = LoadFrameworkProfile(path);
    ASSERT_FALSE(p.ok()) << c.tp;
    const std::string message(p.status().message());
    EXPECT_NE(message.find("tensor_parallel"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(Framework, MissingHostTimeSaysWhatToGive) {
  const std::string path = WriteTemp("missing-framework.json", R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": 3, "optimizer_us_per_layer": 0, "optimizer_us_fixed": 0},
    "sync": {"after_p2p": true, "before_optimizer": false}})");
  Result<FrameworkProfile> p = LoadFrameworkProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("backward_us_per_op"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("microseconds"), std::string::npos) << p.status().message();
}

TEST(Framework, ResolvesNamesBesideTheClusterFolderPathsAndNone) {
  const std::string cluster = ShippedFramework("hardware/clusters/dgx-h100.json");
  Result<std::optional<FrameworkProfile>> none = ResolveFramework("none", cluster);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Result<std::optional<FrameworkProfile>> named = ResolveFramework("megatron-core", cluster);
  ASSERT_TRUE(named.ok()) << named.status().message();
  ASSERT_TRUE(named->has_value());
  EXPECT_EQ((*named)->name, "megatron-core");
  Result<std::optional<FrameworkProfile>> by_path =
      ResolveFramework(ShippedFramework("hardware/frameworks/pytorch-eager.json"), cluster);
  ASSERT_TRUE(by_path.ok()) << by_path.status().message();
  EXPECT_EQ((*by_path)->name, "pytorch-eager");
  Result<std::optional<FrameworkProfile>> unknown = ResolveFramework("megatron-cor", cluster);
  ASSERT_FALSE(unknown.ok());
  const std::string message(unknown.status().message());
  EXPECT_NE(message.find("megatron-core-cudagraphs"), std::string::npos) << message;
  EXPECT_NE(message.find("none"), std::string::npos) << message;
  EXPECT_FALSE(ResolveFramework("", cluster).ok());
}

}  // namespace
}  // namespace loom
