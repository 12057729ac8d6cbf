// The calibration and cross-validation corpus (issue 41): every row of the measured training steps
// of tests/reference/steptime/ as a loom case (a model, a cluster, a strategy, the kernels and the
// framework, and the measured seconds per step), or refused with the reason loom cannot express
// it. tests/reference/steptime/MAPPING.md says, per source, how each column becomes a loom input
// and why each setting a table leaves unstated was chosen.

#ifndef LOOM_TESTS_REFERENCE_STEPTIME_CASES_H_
#define LOOM_TESTS_REFERENCE_STEPTIME_CASES_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "reference/fidelity_cases.h"

namespace loom {

// One measured step of the corpus.
struct CorpusCase {
  StepCase step;       // step.measured is in seconds per step
  std::string source;  // its file in tests/reference/steptime/
  // The job the row measured: the same model, GPUs, global batch and sequence length (and
  // precision). Rows of one job are alternatives of one choice, which loom should order as
  // measured.
  std::string job;
  // The part of its source the row belongs to, for errors reported part by part (FidelityRow::
  // part): llm-foundry's README table (a100_40gb_roce, a100_80gb_roce, h100_bf16, h100_bf16_large,
  // h100_fp8), Narayanan Table 2's scheme (ptdp, zero3); empty for the other sources.
  std::string part = "";
};

// A row loom does not express, and why.
struct RefusedRow {
  std::string source;
  std::string row;  // the row's name, as a case of it would have been named
  std::string reason;
};

struct Corpus {
  std::vector<CorpusCase> cases;
  std::vector<RefusedRow> refused;
};

// The corpus's sources, in the order the report shows them.
inline constexpr const char* kCorpusSources[] = {
    "vtrain_ground_truth_single.csv",         "vtrain_ground_truth_multi.csv",
    "narayanan2021_table2_ptdp_vs_zero3.csv", "qi2024_zero_bubble_table3_5.csv",
    "qi2024_zero_bubble_table6_zbv.csv",      "mosaicml_llmfoundry_mpt_throughput.csv",
};

// Reads every source of kCorpusSources from |paths.tables_dir|/steptime/, with the derived cluster
// and GPU files of that folder and the shipped ones of |paths|. A row that cannot be a loom case
// (a schedule loom lacks, a strategy loom's rules refuse) is a RefusedRow; none is dropped.
// Errors: a missing or malformed table, cluster, GPU or framework file.
Result<Corpus> LoadStepTimeCorpus(const ReferencePaths& paths);

// Megatron-LM's padded vocabulary (megatron/tokenizer/tokenizer.py, _vocab_size_with_padding): the
// tokenizer's |vocab| rounded up to a multiple of make-vocab-size-divisible-by (128) times |tp|.
int64_t MegatronPaddedVocab(int64_t vocab, int64_t tp);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_STEPTIME_CASES_H_
