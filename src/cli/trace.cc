// loom trace merge: several Chrome traces (simulate --trace, validate --trace, or any other
// tool's) in one file, each input's processes labelled, to compare runs side by side in Perfetto.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/json_contract.h"
#include "core/file_io.h"
#include "sim/trace_merge.h"

namespace loom {
namespace {

struct TraceMergeOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;  // one per input; empty: each file's name without its extension
  std::string out;
};

Status RunMerge(const TraceMergeOptions& o, std::ostream& out) {
  if (!o.labels.empty() && o.labels.size() != o.inputs.size()) {
    return Status::InvalidArgument(
        std::to_string(o.labels.size()) + " --label for " + std::to_string(o.inputs.size()) +
        " trace files; give one --label per file, in the order of the files, or none");
  }
  std::vector<TraceToMerge> traces;
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(std::string text,
                          ReadInputFile(o.inputs[i], "check the path of the trace file"));
    const std::string label =
        o.labels.empty() ? std::filesystem::path(o.inputs[i]).stem().string() : o.labels[i];
    traces.push_back({o.inputs[i], std::move(text), label});
  }
  LOOM_ASSIGN_OR_RETURN(std::string merged, MergeChromeTraces(traces));
  LOOM_RETURN_IF_ERROR(WriteFileAtomically(o.out, merged, "pass another --out"));
  out << "wrote " << o.out << ": " << o.inputs.size() << " traces merged\n";
  return Status::Ok();
}

}  // namespace

void AddTraceCommand(CLI::App& app, CommandRunner& runner) {
  CLI::App* trace = app.add_subcommand(
      "trace", "Work with Chrome trace files (simulate --trace, validate --trace)");
  trace->require_subcommand(1);
  auto options = std::make_shared<TraceMergeOptions>();
  CLI::App* merge = trace->add_subcommand("merge",
                                          "Merge Chrome traces into one file, to open side by side "
                                          "in Perfetto: each file's processes keep "
                                          "their names behind a label, its process ids and flow "
                                          "ids move past those of the files before it");
  InputFile(merge->add_option("traces", options->inputs,
                              "Chrome trace files (JSON), in the order to show them"))
      ->required()
      ->expected(2, -1);
  merge->add_option(
      "--label", options->labels,
      "The label put before one file's process names (\"predicted\" -> \"predicted rank 0 ...\"); "
      "once per file, in their order (default: each file's name without its extension)");
  merge->add_option("--out", options->out, "The merged trace to write")->required();
  merge->footer(
      "Example:\n"
      "  loom simulate --model models/llama3-8b.json --cluster hardware/clusters/dgx-h100.json "
      "--nodes 1 \\\n"
      "      --tp 2 --pp 4 --global-batch 8 --trace 1f1b.json\n"
      "  loom simulate ... --schedule interleaved --vpp 2 --trace interleaved.json\n"
      "  loom trace merge 1f1b.json interleaved.json --out both.json");
  merge->callback([options, &runner] {
    runner = [options](std::ostream& out, std::ostream&) -> Status {
      return RunMerge(*options, out);
    };
  });
}

}  // namespace loom
