#ifndef LOOM_SPEC_SCENARIO_H_
#define LOOM_SPEC_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/json_reader.h"
#include "core/status.h"
#include "spec/strategy.h"

namespace loom {

// A scenario file (schema "loom.scenario/1") names a model, a cluster and a strategy, so that one
// simulation can be rerun and shared:
//   {"schema": "loom.scenario/1", "model": "../models/gpt3-175b.json",
//    "cluster": "../hardware/clusters/dgx-a100.json", "nodes": 128,
//    "strategy": {"tp": 8, "pp": 16, "dp": 8, "micro_batch": 1, "global_batch": 1536, ...},
//    "framework": "megatron-core"}
// Paths are relative to the scenario file's folder; "model" may also be a hub model name
// ("meta-llama/Meta-Llama-3-8B") where no such path is there (ModelPathBeside). Strategy keys are
// the Strategy fields, with enum values spelled as on the command line ("interleaved", "selective",
// "bf16", ...).
struct Scenario {
  std::string file;
  std::string model_path;
  std::string cluster_path;
  std::optional<int64_t> nodes;
  Strategy strategy;
  // The training framework (spec/framework.h): a name of hardware/frameworks/, "none", or a file
  // path resolved against the scenario's folder. nullopt: the command's default.
  std::optional<std::string> framework;
  // The attention kernel (one of AttentionChoices(), core/attention_family.h) and whether dropout
  // runs, as simulate's --attention and --dropout set them. nullopt: the command's default.
  std::optional<std::string> attention;
  std::optional<bool> dropout;
};

Result<Scenario> LoadScenario(const std::string& path);

// Reads the strategy keys of a scenario's "strategy" object from |r| into |strategy| (keys absent
// keep its values); errors are recorded in |r|, as JsonReader does.
void ReadStrategyObject(JsonReader& r, Strategy* strategy);

// The scenario key a command-line flag sets: "--tp" is "strategy.tp", "--zero" and "--seq" are
// "strategy.zero_stage" and "strategy.seq_len", and "--model", "--cluster", "--nodes",
// "--framework",
// "--attention" and "--dropout" are top-level keys; every other flag "--a-b" is "strategy.a_b".
std::string ScenarioKeyOfFlag(std::string_view flag);

// |status| (ValidateStrategy's, whose messages name command-line flags: "--tp 3: ...") as an
// error of the scenario file |file|: each line starts with the file, and each flag is the key that
// sets it there ("s.json: strategy.tp 3: ..."). An OK status stays OK.
Status InScenarioTerms(const Status& status, const std::string& file);

// |strategy| under the scenario file's strategy keys, every key written (LoadScenario reads it
// back to the same strategy).
nlohmann::ordered_json StrategyJson(const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_SPEC_SCENARIO_H_
