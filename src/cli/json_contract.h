#ifndef LOOM_CLI_JSON_CONTRACT_H_
#define LOOM_CLI_JSON_CONTRACT_H_

#include <nlohmann/json_fwd.hpp>

// CLI11 declared only: the full header (~6 s a file at -O3) goes to the files that declare options.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace loom {

// The contract every JSON object loom prints keeps (docs/schemas/README.md): its first keys are
//   "schema":       "loom.<name>/<N>", whose file is docs/schemas/<name>-<N>.schema.json;
//   "loom_version": the loom that wrote it (LOOM_VERSION);
//   "request":      what was asked: {"command", "arguments", "input_files"} (CommandRequest).
// Fractions are numbers in [0, 1] (keys end in _fraction or are ratios such as mfu); percent
// appears only in human text.

// Marks |option| as naming a file the command reads: its help shows FILE, and CommandRequest lists
// its value under "input_files". Returns |option|, so that it chains like CLI11's own setters.
CLI::Option* InputFile(CLI::Option* option);

// The help of every command's --model: what LoadModelSpec (spec/model.h) reads.
inline constexpr char kModelOptionHelp[] =
    "Model: a Hugging Face config.json (see models/), a downloaded snapshot folder holding one, or "
    "a hub name (meta-llama/Meta-Llama-3-8B[@REVISION]) read offline from the Hugging Face hub "
    "cache (HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub)";

// The request |command| (a parsed subcommand) answers:
//   {"command": its name,
//    "arguments": {every option given on the command line, by its long name without dashes (a
//                  positional by its own name): true for a flag, the text given for one value, an
//                  array of texts for several},
//    "input_files": [the values of the options marked InputFile, in declaration order]}.
// Options left at their default are not listed: the defaults are those of loom_version.
nlohmann::ordered_json CommandRequest(const CLI::App& command);

// |body| stamped with the contract: "schema" (which |body| must hold), "loom_version" and
// "request" first, then the rest of |body| in its order. Where |body| has a "request" object of
// its own (plan and explain restate the question in the model's terms), its keys follow those of
// |request|.
nlohmann::ordered_json Stamped(const nlohmann::ordered_json& body,
                               const nlohmann::ordered_json& request);

}  // namespace loom

#endif  // LOOM_CLI_JSON_CONTRACT_H_
