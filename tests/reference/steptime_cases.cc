#include "reference/steptime_cases.h"

#include <cmath>
#include <string>
#include <utility>

#include "reference/fidelity_tables.h"
#include "spec/framework.h"
#include "spec/strategy.h"

namespace loom {
namespace {

// MAPPING.md, "Every source": the shipped files each source's rows run on.
constexpr const char* kCorpusSelene = "dgx-a100.json";
constexpr const char* kCorpusDgxH100 = "dgx-h100.json";

std::string Dir(const ReferencePaths& paths) { return paths.tables_dir + "/steptime"; }

// The files the rows use, each read once.
struct Inputs {
  ClusterSpec selene, vtrain, h100, a100_40gb;
  FrameworkProfile megatron, megatron_deepspeed, llm_foundry, deepspeed_zero3;
};

Result<Inputs> LoadInputs(const ReferencePaths& paths) {
  Inputs in;
  Result<ClusterSpec> selene = LoadClusterSpec(paths.clusters_dir + "/" + kCorpusSelene);
  if (!selene.ok()) return selene.status();
  Result<ClusterSpec> vtrain = LoadClusterSpec(Dir(paths) + "/clusters/vtrain-a100.json");
  if (!vtrain.ok()) return vtrain.status();
  Result<ClusterSpec> h100 = LoadClusterSpec(paths.clusters_dir + "/" + kCorpusDgxH100);
  if (!h100.ok()) return h100.status();
  Result<ClusterSpec> a100_40gb = LoadClusterSpec(Dir(paths) + "/clusters/a100-40gb-roce.json");
  if (!a100_40gb.ok()) return a100_40gb.status();
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(paths.frameworks_dir + "/megatron-core.json");
  if (!megatron.ok()) return megatron.status();
  Result<FrameworkProfile> megatron_deepspeed =
      LoadFrameworkProfile(paths.frameworks_dir + "/megatron-deepspeed.json");
  if (!megatron_deepspeed.ok()) return megatron_deepspeed.status();
  Result<FrameworkProfile> llm_foundry =
      LoadFrameworkProfile(paths.frameworks_dir + "/llm-foundry.json");
  if (!llm_foundry.ok()) return llm_foundry.status();
  Result<FrameworkProfile> deepspeed_zero3 =
      LoadFrameworkProfile(paths.frameworks_dir + "/deepspeed-zero3-2021.json");
  if (!deepspeed_zero3.ok()) return deepspeed_zero3.status();
  in.selene = *selene;
  in.vtrain = *vtrain;
  in.h100 = *h100;
  in.a100_40gb = *a100_40gb;
  in.megatron = *megatron;
  in.megatron_deepspeed = *megatron_deepspeed;
  in.llm_foundry = *llm_foundry;
  in.deepspeed_zero3 = *deepspeed_zero3;
  return in;
}

ClusterSpec WithGpus(ClusterSpec c, int64_t gpus) {
  const int64_t per_node = c.gpus_per_node;
  c.nodes = gpus <= per_node ? 1 : (gpus + per_node - 1) / per_node;
  return c;
}

std::string StrategyName(const Strategy& s) {
  std::string name = "tp" + std::to_string(s.tp) + " pp" + std::to_string(s.pp) + " dp" +
                     std::to_string(s.dp) + " mb" + std::to_string(s.micro_batch);
  if (s.zero_stage > 0) name += " zero" + std::to_string(s.zero_stage);
  if (s.recompute == Recompute::kFull) name += " ckpt";
  return name;
}

void Refuse(Corpus& corpus, const std::string& source, const std::string& row,
            const std::string& reason) {
  corpus.refused.push_back({source, row, reason});
}

// Adds the case, or a refusal when loom's rules refuse its strategy.
void Add(Corpus& corpus, const std::string& source, const std::string& job, StepCase step,
         const std::string& part = "") {
  Status valid = ValidateStrategy(step.strategy, step.model, step.cluster);
  if (!valid.ok()) {
    Refuse(corpus, source, step.name, valid.message());
    return;
  }
  corpus.cases.push_back({std::move(step), source, job, part});
}

// vTrain's ground truth (MAPPING.md, "vTrain"): Megatron-DeepSpeed (its host thread as
// hardware/frameworks/megatron-deepspeed.json), fp16, full recompute, 1F1B, the gradient
// all-reduce after the backward, Megatron-LM's unfused attention with dropout.
Status LoadVtrain(const ReferencePaths& paths, const Inputs& in, const std::string& source,
                  bool multi, Corpus& corpus) {
  Result<CsvTable> table = ReadReferenceCsv(Dir(paths) + "/" + source);
  if (!table.ok()) return table.status();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const int64_t gpus = r.Int("GPUs"), global = r.Int("global batch"), mb = r.Int("micro batch");
    const int64_t hidden = r.Int("hidden size"), heads = r.Int("attention heads");
    const int64_t layers = r.Int("layers"), seq = r.Int("sequence length");
    Strategy s;
    s.tp = r.Int("tensor parallelism");
    s.dp = r.Int("data parallelism");
    s.pp = r.Int("pipeline parallelism");
    const double ms = r.Number("iteration time (ms)");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const std::string job = "h" + std::to_string(hidden) + " L" + std::to_string(layers) + " s" +
                            std::to_string(seq) + ", " + std::to_string(gpus) + " GPUs, batch " +
                            std::to_string(global);
    s.micro_batch = mb;
    s.global_batch = global;
    s.seq_len = seq;
    s.schedule = ScheduleKind::k1F1B;
    s.recompute = Recompute::kFull;
    s.dtype = Dtype::kFp16;
    s.overlap_grad_reduce = false;
    s.grad_accumulation = GradAccumulation::kAutograd;
    const std::string name = job + ": " + StrategyName(s) + " (row " + std::to_string(i + 1) + ")";
    if (s.WorldSize() != gpus) {
      Refuse(corpus, source, name, "tp * pp * dp differs from the row's GPUs");
      continue;
    }
    if (global % (mb * s.dp) != 0) {
      Refuse(corpus, source, name,
             "the global batch is not a whole number of micro-batches per data-parallel rank");
      continue;
    }
    Result<ModelSpec> model = LegacyGpt(
        {heads, hidden, layers, MegatronPaddedVocab(50257, s.tp), seq}, source + " (" + job + ")");
    if (!model.ok()) return model.status();
    const ClusterSpec cluster = WithGpus(multi ? in.vtrain : in.selene, gpus);
    // Megatron-DeepSpeed ran tp 16 over two nodes; loom takes it as a user does, with
    // --allow-cross-node-tp (MAPPING.md, "vTrain").
    s.allow_cross_node_tp = s.tp > cluster.NvlinkDomainGpus();
    StepCase step{
        name, *model, cluster, s, MegatronLayerKernels(), ms / 1e3, in.megatron_deepspeed};
    Add(corpus, source, job, std::move(step));
  }
  return Status::Ok();
}

// Narayanan et al. 2021, Table 2 (MAPPING.md): seconds = the paper's FLOPs (eq. 3) over the
// measured TFLOP/s and the GPUs.
Status LoadNarayananTable2(const ReferencePaths& paths, const Inputs& in, Corpus& corpus) {
  const std::string source = "narayanan2021_table2_ptdp_vs_zero3.csv";
  Result<CsvTable> table = ReadReferenceCsv(Dir(paths) + "/" + source);
  if (!table.ok()) return table.status();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string scheme = r.Text("scheme"), size = r.Text("params_b");
    const int64_t mp = r.Int("model_parallel"), gpus = r.Int("gpus");
    Strategy s;
    s.global_batch = r.Int("global_batch");
    s.micro_batch = r.Int("micro_batch");
    const double tflops = r.Number("tflops_per_gpu");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const bool is_175b = size == "174.6";
    if (!is_175b && size != "529.6") {
      return Status::InvalidArgument(table->file + ": row " + std::to_string(i + 1) +
                                     ": params_b " + size +
                                     " is neither of the header's models (174.6, 529.6)");
    }
    const int64_t layers = is_175b ? 96 : 105, hidden = is_175b ? 12288 : 20480;
    const int64_t heads = is_175b ? 96 : 128;
    s.seq_len = 2048;
    s.recompute = Recompute::kFull;
    s.dtype = Dtype::kFp16;
    s.grad_accumulation = GradAccumulation::kAutograd;
    const std::string job =
        size + "B, " + std::to_string(gpus) + " GPUs, batch " + std::to_string(s.global_batch);
    std::optional<FrameworkProfile> framework;
    if (scheme == "ptdp") {
      s.tp = 8;
      s.pp = mp / 8;
      s.dp = gpus / mp;
      // The 529.6B model on 35 stages of 3 layers as Table 1 runs it, one layer a chunk.
      s.vpp = is_175b ? 1 : 3;
      s.schedule = s.vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
      s.overlap_grad_reduce = false;  // Megatron's local DDP from the 39B row on (Table 1's note)
      framework = MegatronOfSc21(in.megatron);
    } else if (scheme == "zero3") {
      s.dp = gpus;
      s.zero_stage = 3;
      s.overlap_grad_reduce = true;  // DeepSpeed stage 3: overlap_comm defaults on
      s.overlap_param_gather = true;
      // Stage 3 adds each micro-batch's reduced gradient into its partition's fp32 buffer.
      s.grad_accumulation = GradAccumulation::kAdd;
      framework = in.deepspeed_zero3;
    } else {
      return Status::InvalidArgument(table->file + ": row " + std::to_string(i + 1) + ": scheme " +
                                     scheme + " is neither ptdp nor zero3");
    }
    const std::string name = job + ": " + scheme + " " + StrategyName(s);
    if (s.WorldSize() != gpus || (scheme == "ptdp" && mp % 8 != 0)) {
      Refuse(corpus, source, name, "model_parallel and gpus do not give whole tp, pp and dp");
      continue;
    }
    Result<ModelSpec> model = MegatronGpt(heads, hidden, layers, source + " (" + size + "B)");
    if (!model.ok()) return model.status();
    const double seconds =
        NarayananIterationFlops(*model, s) / (tflops * 1e12 * static_cast<double>(gpus));
    StepCase step{name,    *model,   WithGpus(in.selene, gpus), s, MegatronLayerKernels(),
                  seconds, framework};
    Add(corpus, source, job, std::move(step), scheme);
  }
  return Status::Ok();
}

// Qi et al. 2024's GPT models (their Table 2) as the repository's script of the paper's time ran
// them (examples/pretrain_zero_bubble.sh @ 425b42e5, 2023-11-17, unchanged in these flags up to
// 4769e08d, 2024-07-30): Megatron-LM's legacy local transformer (no --use-flash-attn: the unfused
// core attention with its fused softmax), tied embeddings, 2,048 learned positions, fp16 with
// Megatron's dropout, pure pipeline; each model has pp * k - 2 layers, the first and last stage
// one layer fewer (MAPPING.md, "Zero Bubble").
struct ZbModel {
  std::string name;
  int64_t layers, heads, hidden;
  ModelSpec spec;
};
constexpr int64_t kZbVocab = 32000;
constexpr int64_t kZbSeq = 1024;
constexpr int64_t kZbPositions = 2048;  // --max-position-embeddings 2048

// The model of |name|, or nullptr.
const ZbModel* FindZbModel(const std::vector<ZbModel>& models, const std::string& name) {
  for (const ZbModel& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// A row's job: the model and its pipeline of micro-batches, what the schedules are compared on.
std::string ZbJob(const ZbModel& zb, int64_t gpus, int64_t mb, int64_t micro_batches) {
  return zb.name + ", " + std::to_string(gpus) + " GPUs, " + std::to_string(micro_batches) + " x " +
         std::to_string(mb);
}

// A row's case name: the model, the pipeline and the schedule.
std::string ZbName(const ZbModel& zb, int64_t gpus, int64_t mb, int64_t micro_batches,
                   const std::string& schedule_name) {
  return zb.name + ", " + std::to_string(gpus) + " GPUs, " + std::to_string(micro_batches) +
         " micro-batches of " + std::to_string(mb) + ": " + schedule_name;
}

// The layers of each virtual stage, in the model's order, as the repository's
// --allow-padding-num-layers gives them with model chunks (megatron/model/transformer.py at
// 425b42e5, ParallelTransformer.get_offset): the layer count padded up to a multiple of pp, an
// equal share per chunk, and the padding taken off the last chunk and then the first ones. For ZB-V
// on pp * 2 - 2 layers that leaves both chunks of stage 0 (the V's first and last virtual stage)
// with the embedding and the loss alone.
std::vector<int64_t> ZbPaddedChunks(int64_t layers, int64_t pp, int64_t vpp) {
  const int64_t padded = (layers + pp - 1) / pp * pp;
  std::vector<int64_t> chunks(static_cast<size_t>(pp * vpp), padded / pp / vpp);
  for (int64_t i = -1; i < padded - layers - 1; ++i) {
    --chunks[static_cast<size_t>(i < 0 ? pp * vpp + i : i)];
  }
  return chunks;
}

StepCase ZbStep(const ZbModel& zb, const ClusterSpec& cluster, const FrameworkProfile& framework,
                int64_t gpus, int64_t mb, int64_t micro_batches, ScheduleKind schedule, int64_t vpp,
                double samples_per_gpu_s, const std::string& schedule_name) {
  Strategy s;
  s.pp = gpus;
  s.micro_batch = mb;
  s.global_batch = mb * micro_batches;
  s.seq_len = kZbSeq;
  s.schedule = schedule;
  s.vpp = vpp;
  s.dtype = Dtype::kFp16;
  if (schedule == ScheduleKind::kZbV) {
    s.layout = ZbPaddedChunks(zb.layers, gpus, vpp);
  } else if ((zb.layers + 2) % gpus == 0) {
    s.first_stage_layers = (zb.layers + 2) / gpus - 1;
    s.last_stage_layers = s.first_stage_layers;
  }
  const LayerOpsOptions kernels = MegatronLayerKernels();
  const double seconds =
      static_cast<double>(s.global_batch) / (samples_per_gpu_s * static_cast<double>(gpus));
  return StepCase{ZbName(zb, gpus, mb, micro_batches, schedule_name),
                  zb.spec,
                  WithGpus(cluster, gpus),
                  s,
                  kernels,
                  seconds,
                  framework};
}

Status LoadZeroBubble(const ReferencePaths& paths, const Inputs& in, Corpus& corpus) {
  const std::string source3 = "qi2024_zero_bubble_table3_5.csv";
  Result<CsvTable> t3 = ReadReferenceCsv(Dir(paths) + "/" + source3);
  if (!t3.ok()) return t3.status();
  std::vector<ZbModel> models;
  for (size_t i = 0; i < t3->rows.size(); ++i) {
    RowReader r(*t3, i);
    const std::string name = r.Text("model");
    const int64_t layers = r.Int("layers"), heads = r.Int("heads"), hidden = r.Int("hidden");
    const int64_t gpus = r.Int("gpus"), mb = r.Int("micro_batch"), n = r.Int("num_microbatches");
    const double zb2p = r.Number("zb2p"), zb1p = r.Number("zb1p"), f1b = r.Number("1f1b");
    const double interleaved = r.Number("1f1b_interleaved");
    LOOM_RETURN_IF_ERROR(r.Finish());
    if (FindZbModel(models, name) == nullptr) {
      Result<ModelSpec> spec =
          LegacyGpt({heads, hidden, layers, kZbVocab, kZbPositions, 4, /*tied=*/true},
                    source3 + " (" + name + ")");
      if (!spec.ok()) return spec.status();
      models.push_back({name, layers, heads, hidden, *spec});
    }
    const ZbModel& zb = *FindZbModel(models, name);
    const std::string job = ZbJob(zb, gpus, mb, n);
    auto add = [&](ScheduleKind kind, int64_t vpp, double rate, const char* label) {
      Add(corpus, source3, job,
          ZbStep(zb, in.selene, in.megatron, gpus, mb, n, kind, vpp, rate, label));
    };
    add(ScheduleKind::k1F1B, 1, f1b, "1f1b");
    add(ScheduleKind::kZbH1, 1, zb1p, "zb-h1");
    // --num-layers-per-virtual-pipeline-stage 1 (the repository's INTERLEAVED_1F1B option).
    add(ScheduleKind::kInterleaved, (zb.layers + 2) / gpus, interleaved, "interleaved");
    Refuse(corpus, source3,
           ZbName(zb, gpus, mb, n, "zb-h2") + " (" + std::to_string(zb2p) + " samples/GPU/s)",
           "loom has no ZB-H2 schedule (its zero-bubble schedules are zb-h1 and zb-v)");
  }
  const std::string source6 = "qi2024_zero_bubble_table6_zbv.csv";
  Result<CsvTable> t6 = ReadReferenceCsv(Dir(paths) + "/" + source6);
  if (!t6.ok()) return t6.status();
  for (size_t i = 0; i < t6->rows.size(); ++i) {
    RowReader r(*t6, i);
    const std::string name = r.Text("model");
    const int64_t gpus = r.Int("gpus"), mb = r.Int("micro_batch"), n = r.Int("num_microbatches");
    const double zbv = r.Number("zbv"), f1b = r.Number("1f1b");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const ZbModel* zb = FindZbModel(models, name);
    if (zb == nullptr) {
      return Status::InvalidArgument(t6->file + ": model " + name + " has no row in " + source3);
    }
    const std::string job = ZbJob(*zb, gpus, mb, n);
    Add(corpus, source6, job,
        ZbStep(*zb, in.selene, in.megatron, gpus, mb, n, ScheduleKind::k1F1B, 1, f1b, "1f1b"));
    Add(corpus, source6, job,
        ZbStep(*zb, in.selene, in.megatron, gpus, mb, n, ScheduleKind::kZbV, 2, zbv, "zb-v"));
  }
  return Status::Ok();
}

// llm-foundry's MPT benchmarks (MAPPING.md, "llm-foundry"): Composer with PyTorch FSDP, seconds =
// global_batch_tokens / tput_tokens_s.
// The attention and linear layers llm-foundry's benchmark scripts ran for the README section
// |section|, model |size| and |precision| (MAPPING.md). |framework| is llm-foundry.json, the stack
// of the large-scale H100 table (5e85bd62): attn_impl flash, FlashAttention-2's variable-length
// kernel on unpadded rows, and nn.Linear. Its 13b and 30b rows, and every other table (b2a43a14,
// 2023-10-19, whose submit_benchmarks.py defaults --attn_impl triton), ran triton_flash_attn_fn
// instead: the Triton port of the first FlashAttention on the padded q, k and v views
// (llmfoundry/models/layers/attention.py at b2a43a14: rearrange only, no unpad_input), compiled by
// triton-pre-mlir (setup.py at both commits: the pre-MLIR Triton of 2022-12, patched for sm_90),
// which issues Ampere's mma.sync on Hopper too. The A100 files calibrate that port's rate on the
// FlashAttention-2 paper's Figure 4; the Hopper files carry it over from there (TritonBarsOnH100,
// attention_tables.h). The fp8 rows ran Transformer Engine's Linear (b2a43a14's
// submit_benchmarks.py sets fc_type te for fp8 on H100), which folds the bias gradient into its
// kernels.
FrameworkProfile OfItsScripts(FrameworkProfile framework, const std::string& section,
                              const std::string& size, const std::string& precision) {
  const bool flash = section == "h100_bf16_large" && size != "13b" && size != "30b";
  if (framework.layer_kernels) {
    if (!flash) framework.layer_kernels->attention_unpad = false;
    if (precision == "amp_fp8") framework.layer_kernels->linear_bias_grads = false;
  }
  if (flash) return framework;
  FusedAttentionRule rule;
  rule.family = AttentionFamily::kTriton;
  rule.source =
      section == "h100_bf16_large"
          ? "mosaicml/llm-foundry 5e85bd62 scripts/train/yamls/pretrain/mpt-13b.yaml and "
            "mpt-30b.yaml: attn_impl triton (llmfoundry/models/layers/flash_attn_triton.py, "
            "through triton-pre-mlir)"
          : "mosaicml/llm-foundry b2a43a14 scripts/train/benchmarking/submit_benchmarks.py: "
            "--attn_impl triton by default (llmfoundry/models/layers/flash_attn_triton.py, "
            "through triton-pre-mlir)";
  framework.fused_attention = rule;
  return framework;
}

Status LoadLlmFoundry(const ReferencePaths& paths, const Inputs& in, Corpus& corpus) {
  const std::string source = "mosaicml_llmfoundry_mpt_throughput.csv";
  Result<CsvTable> table = ReadReferenceCsv(Dir(paths) + "/" + source);
  if (!table.ok()) return table.status();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string section = r.Text("table"), size = r.Text("model"), gpu = r.Text("gpu");
    const int64_t hidden = r.Int("d_model"), layers = r.Int("n_layers"), heads = r.Int("n_heads");
    const int64_t ratio = r.Int("expansion_ratio"), vocab = r.Int("vocab"), seq = r.Int("seq");
    const int64_t gpus = r.Int("gpus"), mb = r.Int("micro_batch"), accum = r.Int("grad_accum");
    const int64_t global = r.Int("global_batch"), tokens = r.Int("global_batch_tokens");
    const double tokens_per_s = r.Number("tput_tokens_s");
    const std::string precision = r.Text("precision"), mp_mode = r.Text("mp_mode");
    const std::string sharding = r.Text("sharding"), ckpt = r.Text("act_ckpt");
    const std::string offload = r.Text("act_cpu_offload");
    LOOM_RETURN_IF_ERROR(r.Finish());
    Strategy s;
    s.dp = gpus;
    s.micro_batch = mb;
    s.global_batch = global;
    s.seq_len = seq;
    s.zero_stage = sharding == "FULL_SHARD" ? 3 : 2;
    s.recompute = ckpt == "True" ? Recompute::kFull : Recompute::kNone;
    s.dtype = precision == "amp_fp8" ? Dtype::kFp8 : Dtype::kBf16;
    s.overlap_grad_reduce = true;
    s.overlap_param_gather = s.zero_stage == 3;
    s.grad_reduce_in_bf16 = mp_mode == "PURE";
    // FSDP reduce-scatters each micro-batch's gradients and adds them into the sharded .grad.
    s.grad_accumulation = GradAccumulation::kAdd;
    const std::string job = "MPT-" + size + " " + gpu + " " + precision + ", seq " +
                            std::to_string(seq) + ", " + std::to_string(gpus) + " GPUs, batch " +
                            std::to_string(global);
    const std::string name = job + ": " + StrategyName(s) + " " + mp_mode + " (" + section + ")";
    if (sharding != "FULL_SHARD" && sharding != "SHARD_GRAD_OP") {
      Refuse(corpus, source, name,
             "sharding " + sharding + " is neither FULL_SHARD nor SHARD_GRAD_OP");
      continue;
    }
    if (offload == "True") {
      Refuse(corpus, source, name, "activation CPU offload is not a loom strategy");
      continue;
    }
    if (global != mb * accum * gpus || tokens != global * seq) {
      Refuse(corpus, source, name,
             "micro_batch * grad_accum * gpus or global_batch * seq disagrees with the row's "
             "global batch");
      continue;
    }
    const ClusterSpec* cluster = gpu == "h100_80gb"   ? &in.h100
                                 : gpu == "a100_80gb" ? &in.selene
                                 : gpu == "a100_40gb" ? &in.a100_40gb
                                                      : nullptr;
    if (cluster == nullptr) {
      Refuse(corpus, source, name, "gpu " + gpu + " has no cluster file");
      continue;
    }
    Result<ModelSpec> model =
        LegacyGpt({heads, hidden, layers, vocab, seq, ratio}, source + " (MPT-" + size + ")");
    if (!model.ok()) return model.status();
    LayerOpsOptions kernels;
    kernels.attention = AttentionKernel::kFused;
    kernels.dropout = false;
    StepCase step{name,
                  *model,
                  WithGpus(*cluster, gpus),
                  s,
                  kernels,
                  static_cast<double>(tokens) / tokens_per_s,
                  OfItsScripts(in.llm_foundry, section, size, precision)};
    Add(corpus, source, job, std::move(step), section);
  }
  return Status::Ok();
}

}  // namespace

int64_t MegatronPaddedVocab(int64_t vocab, int64_t tp) {
  const int64_t multiple = 128 * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

Result<Corpus> LoadStepTimeCorpus(const ReferencePaths& paths) {
  Result<Inputs> in = LoadInputs(paths);
  if (!in.ok()) return in.status();
  Corpus corpus;
  LOOM_RETURN_IF_ERROR(
      LoadVtrain(paths, *in, "vtrain_ground_truth_single.csv", /*multi=*/false, corpus));
  LOOM_RETURN_IF_ERROR(
      LoadVtrain(paths, *in, "vtrain_ground_truth_multi.csv", /*multi=*/true, corpus));
  LOOM_RETURN_IF_ERROR(LoadNarayananTable2(paths, *in, corpus));
  LOOM_RETURN_IF_ERROR(LoadZeroBubble(paths, *in, corpus));
  LOOM_RETURN_IF_ERROR(LoadLlmFoundry(paths, *in, corpus));
  return corpus;
}

}  // namespace loom
