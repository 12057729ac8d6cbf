// The published measurements loom's fidelity report compares with (issue 4, "Fidelity report"),
// read from the reference tables under tests/reference/ and turned into loom inputs: a model, a
// cluster and a strategy per measured case. Predicting them is fidelity_tables.h's job.

#ifndef LOOM_TESTS_REFERENCE_FIDELITY_CASES_H_
#define LOOM_TESTS_REFERENCE_FIDELITY_CASES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "cost/comm_model.h"
#include "reference/reference_csv.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// Where the reference tables and cluster files are.
struct ReferencePaths {
  std::string tables_dir;           // tests/reference
  std::string clusters_dir;         // hardware/clusters
  std::string frameworks_dir = "";  // hardware/frameworks
  std::string gpus_dir = "";        // hardware/gpus
  std::string validation_dir = "";  // hardware/validation: GPU runs as loom's kit measured them
};

// The paths inside a loom source tree rooted at |source_dir|.
ReferencePaths SourceTreePaths(const std::string& source_dir);

// Megatron-LM's layer as both papers ran it (Korthikanti et al. 2022, Section 4.1; FlashAttention
// came later): the unfused core attention, dropout on the attention probabilities and after each
// block with 1-byte masks kept for backward, and the backward's concatenation of the q, k and v
// gradients that its torch.split of the QKV output leaves (ModuleKernels::qkv_split_grad_copy).
LayerOpsOptions MegatronLayerKernels();

// Megatron-LM as Narayanan et al. 2021 ran it (their runs predate the SC21 code, NVIDIA/Megatron-LM
// 6985e589, 2021-08-18): |megatron|'s host profile with every tensor-parallel collective blocking,
// as the asynchronous backward of column-parallel linears came later (cf7efd4f, 2021-08-30).
// Korthikanti et al. 2022 ran code that has it (739cb43d).
FrameworkProfile MegatronOfSc21(FrameworkProfile megatron);

// One published training step: what ran and what was measured, in the unit of its table.
struct StepCase {
  std::string name;
  ModelSpec model;
  ClusterSpec cluster;
  Strategy strategy;
  LayerOpsOptions kernels;  // attention kernel and dropout of every layer
  double measured = 0;
  // The framework whose host thread issued the work: Megatron-LM's (hardware/frameworks/
  // megatron-core.json) for both papers' runs.
  std::optional<FrameworkProfile> framework = std::nullopt;
};

// One setting of Korthikanti et al. 2022 Table 4 (one 22B layer) and its measured times.
struct LayerSetting {
  std::string name;
  Strategy strategy;
  double forward_ms = 0;
  double backward_ms = 0;
};

struct LayerCases {
  ModelSpec model;      // the 22B model of Table 3
  ClusterSpec cluster;  // one DGX A100 node
  LayerOpsOptions kernels;
  std::vector<LayerSetting> settings;
};

// One nccl-tests all_reduce_perf row: in-place bus bandwidth of |bytes| over |group|.
struct AllReduceCase {
  std::string name;
  ClusterSpec cluster;
  int64_t bytes = 0;
  double busbw_GBps = 0;
  GroupPlacement group;   // the GPUs of one node for nccl_allreduce_8gpu.csv
  std::string site = "";  // the machines it ran on, for tables that hold several (else empty)
  CollectiveKind kind = CollectiveKind::kAllReduce;
  bool nvls_disabled = false;  // run with NCCL_NVLS_ENABLE=0
};

// Korthikanti et al. 2022, Table 5 (seconds per iteration) with the configurations of Table 3:
// per model, full recompute without sequence parallelism, then selective recompute with it; on
// DGX A100 nodes (Selene), bf16, no distributed optimizer, dp = gpus / (tp * pp), interleaved
// when the table gives more than one virtual stage; MegatronLayerKernels().
// Errors: a missing or malformed table or cluster file, a model the table does not configure.
Result<std::vector<StepCase>> LoadKorthikantiIterationCases(const ReferencePaths& paths);

// Korthikanti et al. 2022, Table 4: the five settings of one 22B layer (tp 8, micro batch 4,
// seq 2048): no recompute, sp, full recompute, selective recompute, selective recompute + sp.
// Errors: as above, and a setting name the table adds that loom does not know.
Result<LayerCases> LoadKorthikantiLayerCases(const ReferencePaths& paths);

// Narayanan et al. 2021, Table 1 (model TFLOP/s per GPU): GPT models of the row's shape,
// full recompute, no sequence parallelism, bf16, on gpus / 8 DGX A100 nodes; interleaved with
// layers / (pp * layers_per_virtual_stage) chunks where the row sets layers_per_virtual_stage;
// MegatronLayerKernels().
Result<std::vector<StepCase>> LoadNarayananCases(const ReferencePaths& paths);

// "16 MiB", "8 GiB": nccl-tests sizes are powers of two; other sizes in bytes.
std::string SizeName(int64_t bytes);

// nccl-tests all-reduce bus bandwidth on one node of hardware/clusters/|cluster_file|, from the
// table column |column|, for the sizes from 16 MiB up (smaller ones are latency-bound, which the
// report does not target).
Result<std::vector<AllReduceCase>> LoadAllReduceCases(const ReferencePaths& paths,
                                                      std::string_view cluster_file,
                                                      std::string_view column);

// A GPT of Megatron-LM's legacy model and of the models built like it (MPT): learned positions,
// LayerNorm, biases, a GeLU MLP of |ffn_ratio| x hidden, |vocab| rows in the embedding, positions
// for |seq| tokens, the head tied to the embedding or not. |file| names it in messages.
struct LegacyGptShape {
  int64_t heads = 0, hidden = 0, layers = 0, vocab = 0, seq = 0;
  int64_t ffn_ratio = 4;
  bool tied = true;
};
Result<ModelSpec> LegacyGpt(const LegacyGptShape& shape, const std::string& file);

// The GPT model of Megatron-LM (as models/gpt3-175b.json): LegacyGpt with a GeLU MLP of 4h,
// vocabulary 51200, seq 2048, tied embeddings. |file| names it in messages.
Result<ModelSpec> MegatronGpt(int64_t heads, int64_t hidden, int64_t layers,
                              const std::string& file);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_FIDELITY_CASES_H_
