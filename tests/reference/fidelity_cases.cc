#include <string>

#include "reference/fidelity_cases.h"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace loom {
namespace {

// Both papers train with 2048-token sequences and a 51200-token vocabulary (Narayanan et al.
// 2021, Section 5.1; Korthikanti et al. 2022, Table 3 caption).
constexpr int64_t kSeqLen = 2048;
constexpr int64_t kVocab = 51200;
// nccl-tests rows below this size are latency-bound; the report starts here (issue 4).
constexpr int64_t kMinAllReduceBytes = int64_t{16} << 20;
constexpr std::string_view kSelene = "dgx-a100.json";

// One row of Korthikanti et al. 2022, Table 3.
struct Table3Config {
  std::string model;
  int64_t heads = 0, hidden = 0, layers = 0, tp = 0, pp = 0, gpus = 0;
  int64_t global_batch = 0, micro_batch = 0, virtual_stages = 0;
};

Result<std::vector<Table3Config>> ReadTable3(const ReferencePaths& paths) {
  Result<CsvTable> table = ReadReferenceCsv(paths.tables_dir + "/korthikanti2022_configs.csv");
  if (!table.ok()) return table.status();
  std::vector<Table3Config> configs;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    Table3Config c{r.Text("model"),        r.Int("heads"),        r.Int("hidden"),
                   r.Int("layers"),        r.Int("tp"),           r.Int("pp"),
                   r.Int("gpus"),          r.Int("global_batch"), r.Int("micro_batch"),
                   r.Int("virtual_stages")};
    LOOM_RETURN_IF_ERROR(r.Finish());
    configs.push_back(std::move(c));
  }
  return configs;
}

Result<Table3Config> FindConfig(const std::vector<Table3Config>& configs, const std::string& model,
                                const std::string& file) {
  for (const Table3Config& c : configs) {
    if (c.model == model) return c;
  }
  return Status::InvalidArgument(
      file + ": model " + model +
      " has no row in korthikanti2022_configs.csv (Table 3); add its configuration");
}

// |file| of hardware/clusters with gpus / gpus_per_node nodes.
Result<ClusterSpec> LoadNodes(const ReferencePaths& paths, std::string_view file, int64_t gpus) {
  Result<ClusterSpec> cluster = LoadClusterSpec(paths.clusters_dir + "/" + std::string(file));
  if (!cluster.ok()) return cluster.status();
  ClusterSpec c = *cluster;
  if (gpus % c.gpus_per_node != 0) {
    return Status::InvalidArgument(c.file + ": " + std::to_string(gpus) +
                                   " GPUs do not fill whole nodes of " +
                                   std::to_string(c.gpus_per_node));
  }
  c.nodes = gpus / c.gpus_per_node;
  return c;
}

// The data-parallel size that fills |gpus| with tp * pp ranks per replica.
Result<int64_t> DataParallel(const Table3Config& c) {
  if (c.gpus % (c.tp * c.pp) != 0) {
    return Status::InvalidArgument("korthikanti2022_configs.csv: " + c.model + ": gpus (" +
                                   std::to_string(c.gpus) + ") is not a multiple of tp * pp (" +
                                   std::to_string(c.tp * c.pp) + ")");
  }
  return c.gpus / (c.tp * c.pp);
}

Strategy Table3Strategy(const Table3Config& c, int64_t dp, Recompute recompute, bool sp) {
  Strategy s;
  s.tp = c.tp;
  s.pp = c.pp;
  s.dp = dp;
  s.vpp = c.virtual_stages;
  s.schedule = c.virtual_stages > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  s.micro_batch = c.micro_batch;
  s.global_batch = c.global_batch;
  s.seq_len = kSeqLen;
  s.recompute = recompute;
  s.sp = sp;
  // Selene ran fp16/bf16 mixed precision; both have the same tensor-core rate on A100.
  s.dtype = Dtype::kBf16;
  // Megatron-LM of the paper (NVIDIA/Megatron-LM 739cb43d, May 2022, the sequence-parallel
  // branch): --bf16 forces accumulate_allreduce_grads_in_fp32, which keeps
  // gradient_accumulation_fusion on (its default since 83b1e42f, February 2022;
  // megatron/arguments.py), and mpu/layers.py then accumulates every linear's weight gradient into
  // the fp32 main_grad with fused_dense_cuda.wgrad_gemm_accum_fp32.
  s.grad_accumulation = GradAccumulation::kFused;
  return s;
}

Result<ModelSpec> Table3Model(const Table3Config& c) {
  return MegatronGpt(c.heads, c.hidden, c.layers, "korthikanti2022_configs.csv (" + c.model + ")");
}

// The recompute and sequence-parallel settings of Korthikanti et al. 2022, Table 4.
struct Table4Setting {
  std::string_view name;
  Recompute recompute;
  bool sp;
};
constexpr Table4Setting kTable4Settings[] = {
    {"baseline_no_recompute", Recompute::kNone, false},
    {"sequence_parallel", Recompute::kNone, true},
    {"full_recompute", Recompute::kFull, false},
    {"selective_recompute", Recompute::kSelective, false},
    {"selective_recompute_sequence_parallel", Recompute::kSelective, true},
};

std::optional<Table4Setting> FindSetting(std::string_view name) {
  for (const Table4Setting& s : kTable4Settings) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

// One row of Narayanan et al. 2021, Table 1, as a step to simulate.
Result<StepCase> NarayananCase(const ReferencePaths& paths, const CsvTable& table, size_t row) {
  RowReader r(table, row);
  const std::string size = r.Text("params_b") + "B";
  const int64_t heads = r.Int("heads"), hidden = r.Int("hidden"), layers = r.Int("layers");
  Strategy s;
  s.tp = r.Int("tp");
  s.pp = r.Int("pp");
  s.dp = r.Int("dp");
  const int64_t gpus = r.Int("gpus");
  s.global_batch = r.Int("global_batch");
  s.micro_batch = r.Int("micro_batch");
  const bool interleaved = !r.IsEmpty("layers_per_virtual_stage");
  const int64_t layers_per_chunk = interleaved ? r.Int("layers_per_virtual_stage") : 0;
  const double measured = r.Number("tflops_per_gpu");
  LOOM_RETURN_IF_ERROR(r.Finish());
  const std::string where = table.file + ": " + size;
  if (s.WorldSize() != gpus)
    return Status::InvalidArgument(where + ": tp * pp * dp differs from gpus");
  if (interleaved && layers % (s.pp * layers_per_chunk) != 0) {
    return Status::InvalidArgument(where +
                                   ": layers is not a multiple of pp * layers_per_virtual_stage");
  }
  s.vpp = interleaved ? layers / (s.pp * layers_per_chunk) : 1;
  s.schedule = s.vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  s.seq_len = kSeqLen;
  s.recompute = Recompute::kFull;  // "full recompute in all rows" (the table's header)
  // --fp16 --loss-scale 8192 (Megatron-LM examples/sc21/CONFIG.sh, the runs' common arguments):
  // fp16 has bf16's tensor-core rate on A100 but a costlier optimizer step (OptimizerStepTraffic).
  s.dtype = Dtype::kFp16;
  // examples/sc21/run_table_1.sh: DDP=torch up to the 18B row, whose PyTorch DDP all-reduces
  // buckets during the backward; DDP=local from the 39B row on, Megatron's own DDP, which
  // all-reduces after the backward.
  s.overlap_grad_reduce = std::stod(r.Text("params_b")) < 39.0;
  // At the SC21 scripts' commit (NVIDIA/Megatron-LM 6985e589) gradient-accumulation fusion did not
  // exist yet, and with --fp16 neither DDP kept a main_grad buffer:
  // accumulate_allreduce_grads_in_fp32 is forced for bf16 only and --use-contiguous-buffers-in-ddp
  // is off by default (megatron/ arguments.py), so PyTorch DDP (under no_sync,
  // megatron/schedules.py) and the local DDP (megatron/model/distributed.py, no hooks without
  // contiguous buffers) both leave autograd to sum each micro-batch's fp16 gradient into .grad;
  // zero_grad(set_to_none=True) makes the first micro-batch's a copy-free assignment
  // (megatron/optimizer/optimizer.py).
  s.grad_accumulation = GradAccumulation::kAutograd;
  Result<ModelSpec> model =
      MegatronGpt(heads, hidden, layers, "narayanan2021_table1.csv (" + size + ")");
  if (!model.ok()) return model.status();
  Result<ClusterSpec> cluster = LoadNodes(paths, kSelene, gpus);
  if (!cluster.ok()) return cluster.status();
  return StepCase{size + " (" + std::to_string(gpus) + " GPUs)",
                  *model,
                  *cluster,
                  s,
                  MegatronLayerKernels(),
                  measured};
}

}  // namespace

std::string SizeName(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " B";
}

LayerOpsOptions MegatronLayerKernels() {
  LayerOpsOptions options;
  options.attention = AttentionKernel::kUnfused;
  options.dropout = true;
  // ParallelAttention splits the QKV projection's output with mpu.split_tensor_along_last_dim
  // (torch.split: megatron/model/transformer.py and megatron/mpu/utils.py at NVIDIA/Megatron-LM
  // 6985e589 and cf7efd4f, and in the legacy model of later versions), whose backward concatenates
  // the q, k and v gradients into one tensor.
  options.modules.qkv_split_grad_copy = true;
  return options;
}

FrameworkProfile MegatronOfSc21(FrameworkProfile megatron) {
  megatron.tp_backward_overlap = false;
  megatron.tp_backward_overlap_source =
      "Narayanan et al. 2021 ran Megatron-LM before NVIDIA/Megatron-LM cf7efd4f (2021-08-30), "
      "whose column-parallel linears block on every tensor-parallel collective";
  return megatron;
}

ReferencePaths SourceTreePaths(const std::string& source_dir) {
  return {source_dir + "/tests/reference", source_dir + "/hardware/clusters",
          source_dir + "/hardware/frameworks", source_dir + "/hardware/gpus",
          source_dir + "/hardware/validation"};
}

Result<ModelSpec> LegacyGpt(const LegacyGptShape& shape, const std::string& file) {
  const nlohmann::json config = {{"hidden_size", shape.hidden},
                                 {"intermediate_size", shape.ffn_ratio * shape.hidden},
                                 {"num_hidden_layers", shape.layers},
                                 {"num_attention_heads", shape.heads},
                                 {"vocab_size", shape.vocab},
                                 {"max_position_embeddings", shape.seq},
                                 {"hidden_act", "gelu"},
                                 {"layer_norm_epsilon", 1e-5},
                                 {"attention_bias", true},
                                 {"mlp_bias", true},
                                 {"tie_word_embeddings", shape.tied},
                                 {"position_embedding_type", "learned_absolute"}};
  Result<ModelSpec> model = ParseModelSpec(config, file);
  if (!model.ok()) return model.status();
  ModelSpec m = *model;
  m.name = file;
  return m;
}

Result<ModelSpec> MegatronGpt(int64_t heads, int64_t hidden, int64_t layers,
                              const std::string& file) {
  return LegacyGpt({heads, hidden, layers, kVocab, kSeqLen}, file);
}

namespace {

// Gives every case Megatron-LM's host thread (megatron-core.json), which both papers' runs had;
// |sc21|: as MegatronOfSc21.
Status WithMegatronHost(const ReferencePaths& paths, std::vector<StepCase>& cases,
                        bool sc21 = false) {
  Result<FrameworkProfile> framework =
      LoadFrameworkProfile(paths.frameworks_dir + "/megatron-core.json");
  if (!framework.ok()) return framework.status();
  for (StepCase& c : cases) c.framework = sc21 ? MegatronOfSc21(*framework) : *framework;
  return Status::Ok();
}

}  // namespace

Result<std::vector<StepCase>> LoadKorthikantiIterationCases(const ReferencePaths& paths) {
  Result<std::vector<Table3Config>> configs = ReadTable3(paths);
  if (!configs.ok()) return configs.status();
  Result<CsvTable> table =
      ReadReferenceCsv(paths.tables_dir + "/korthikanti2022_iteration_time.csv");
  if (!table.ok()) return table.status();
  std::vector<StepCase> cases;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string name = r.Text("model");
    const double full_s = r.Number("full_s"), selective_sp_s = r.Number("selective_sp_s");
    LOOM_RETURN_IF_ERROR(r.Finish());
    Result<Table3Config> config = FindConfig(*configs, name, table->file);
    if (!config.ok()) return config.status();
    Result<int64_t> dp = DataParallel(*config);
    if (!dp.ok()) return dp.status();
    Result<ModelSpec> model = Table3Model(*config);
    if (!model.ok()) return model.status();
    Result<ClusterSpec> cluster = LoadNodes(paths, kSelene, config->gpus);
    if (!cluster.ok()) return cluster.status();
    cases.push_back({name + " full recompute", *model, *cluster,
                     Table3Strategy(*config, *dp, Recompute::kFull, false), MegatronLayerKernels(),
                     full_s});
    cases.push_back({name + " selective + sp", *model, *cluster,
                     Table3Strategy(*config, *dp, Recompute::kSelective, true),
                     MegatronLayerKernels(), selective_sp_s});
  }
  LOOM_RETURN_IF_ERROR(WithMegatronHost(paths, cases));
  return cases;
}

Result<LayerCases> LoadKorthikantiLayerCases(const ReferencePaths& paths) {
  Result<std::vector<Table3Config>> configs = ReadTable3(paths);
  if (!configs.ok()) return configs.status();
  Result<CsvTable> table = ReadReferenceCsv(paths.tables_dir + "/korthikanti2022_layer_time.csv");
  if (!table.ok()) return table.status();
  // Table 4 times one layer of the 22B model of Table 3 on its 8 GPUs (h 6144, tp 8, b 4).
  Result<Table3Config> config = FindConfig(*configs, "22B", table->file);
  if (!config.ok()) return config.status();
  Result<ModelSpec> model = Table3Model(*config);
  if (!model.ok()) return model.status();
  Result<ClusterSpec> cluster = LoadNodes(paths, kSelene, config->tp);
  if (!cluster.ok()) return cluster.status();
  // Korthikanti et al. 2022's code overlaps the backward's collectives as megatron-core does.
  Result<FrameworkProfile> framework =
      LoadFrameworkProfile(paths.frameworks_dir + "/megatron-core.json");
  if (!framework.ok()) return framework.status();
  LayerCases cases{*model, *cluster, MegatronLayerKernels(), {}};
  cases.kernels.tp_backward_overlap = framework->tp_backward_overlap;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string name = r.Text("setting");
    const double forward_ms = r.Number("forward_ms"), backward_ms = r.Number("backward_ms");
    LOOM_RETURN_IF_ERROR(r.Finish());
    std::optional<Table4Setting> setting = FindSetting(name);
    if (!setting.has_value()) {
      return Status::InvalidArgument(
          table->file + ": setting " + name +
          " is not one of Table 4's five; fidelity_cases.cc knows them by name");
    }
    Table3Config layer = *config;
    layer.pp = 1;
    layer.virtual_stages = 1;
    layer.global_batch = layer.micro_batch;
    cases.settings.push_back(
        {name, Table3Strategy(layer, 1, setting->recompute, setting->sp), forward_ms, backward_ms});
  }
  return cases;
}

Result<std::vector<StepCase>> LoadNarayananCases(const ReferencePaths& paths) {
  Result<CsvTable> table = ReadReferenceCsv(paths.tables_dir + "/narayanan2021_table1.csv");
  if (!table.ok()) return table.status();
  std::vector<StepCase> cases;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    Result<StepCase> c = NarayananCase(paths, *table, i);
    if (!c.ok()) return c.status();
    cases.push_back(*c);
  }
  LOOM_RETURN_IF_ERROR(WithMegatronHost(paths, cases, /*sc21=*/true));
  return cases;
}

Result<std::vector<AllReduceCase>> LoadAllReduceCases(const ReferencePaths& paths,
                                                      std::string_view cluster_file,
                                                      std::string_view column) {
  Result<CsvTable> table = ReadReferenceCsv(paths.tables_dir + "/nccl_allreduce_8gpu.csv");
  if (!table.ok()) return table.status();
  Result<ClusterSpec> node =
      LoadClusterSpec(paths.clusters_dir + "/" + std::string(cluster_file), 1);
  if (!node.ok()) return node.status();
  std::vector<AllReduceCase> cases;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const int64_t bytes = r.Int("size_bytes");
    const double busbw = r.Number(column);
    LOOM_RETURN_IF_ERROR(r.Finish());
    const GroupPlacement group = PlaceGroup(node->gpus_per_node, 1, node->gpus_per_node);
    if (bytes >= kMinAllReduceBytes) cases.push_back({SizeName(bytes), *node, bytes, busbw, group});
  }
  return cases;
}

}  // namespace loom
