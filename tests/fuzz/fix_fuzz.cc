// Fuzzes the parser of `loom plan --fix` and `--explain` (ParseConstraints, plan/search_space.h),
// then checks its contract with ConstraintText: the settings a plan prints paste back into --fix
// as the same settings. A pinned setting then narrows the strategy space of a small request
// (GPT-3 125M on one DGX H100), as `loom plan --fix` does.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "plan/search_space.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace {

// A broken round trip is a wrong answer, not an input error: stop so that libFuzzer saves it.
[[noreturn]] void RoundTripBroken(const std::string& printed, const std::string& why) {
  std::fprintf(stderr, "ConstraintText printed \"%s\", which %s\n", printed.c_str(), why.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  loom::Result<loom::Constraints> fixed = loom::ParseConstraints(text, "--fix");
  if (!fixed.ok()) return loom::fuzz::Rejected(fixed.status());
  loom::Strategy pinned;
  loom::ApplyConstraints(*fixed, pinned);
  const std::string printed = loom::ConstraintText(pinned);
  loom::Result<loom::Constraints> again = loom::ParseConstraints(printed, "--fix");
  if (!again.ok())
    RoundTripBroken(printed, "--fix rejects: " + std::string(again.status().message()));
  loom::Strategy repinned;
  loom::ApplyConstraints(*again, repinned);
  const std::string reprinted = loom::ConstraintText(repinned);
  if (reprinted != printed) RoundTripBroken(printed, "reads back as " + reprinted);

  static const loom::Result<loom::ModelSpec> model =
      loom::LoadModelSpec(loom::fuzz::Shipped("models/gpt3-125m.json"));
  static const loom::Result<loom::ClusterSpec> cluster =
      loom::LoadClusterSpec(loom::fuzz::Shipped("hardware/clusters/dgx-h100.json"), 1);
  if (!model.ok() || !cluster.ok()) return 0;
  loom::SearchRequest request;
  request.gpus = 8;
  request.global_batch = 8;
  request.seq_len = 2048;
  request.fixed = *fixed;
  (void)loom::EnumerateStrategies(*model, *cluster, request);
  return 0;
}
