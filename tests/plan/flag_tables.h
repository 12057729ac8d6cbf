#ifndef LOOM_TESTS_PLAN_FLAG_TABLES_H_
#define LOOM_TESTS_PLAN_FLAG_TABLES_H_

// The options the emitters' targets define, read from tests/plan/flag_tables/*.tsv (written by
// tools/flag_tables from each project's own parser code at a pinned commit; issue 21), and checks
// of emitted arguments and ds_config objects against them.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace loom {

// One option of an argparse parser: "store_true", "store_false", "store_const", "count" and "help"
// take no value; "value" and "append" take |nargs| values ("1", "2", ..., "?", "*" or "+") of
// |type| ("int", "float", "str" or the name of a project function, which is not checked here),
// each among |choices| when there are any.
struct FlagSpec {
  std::string kind;
  std::string nargs;
  std::string type;
  std::vector<std::string> choices;
};

// A table of tools/flag_tables: megatron-lm.tsv, megatron-deepspeed.tsv, ...
struct FlagTable {
  std::string file;  // the path it was read from, named in every problem
  std::map<std::string, FlagSpec> flags;
};

// One key path of ds_config.json ("zero_optimization.offload_optimizer.device"): |types| among
// bool, int, number, string, array, object (keys of its own in the table), map (any keys) and any;
// |choices| the values the code accepts, when it states them.
struct ConfigKeySpec {
  std::vector<std::string> types;
  std::vector<std::string> choices;
};

struct ConfigKeyTable {
  std::string file;
  std::map<std::string, ConfigKeySpec> keys;
};

// The table tests/plan/flag_tables/|name|.tsv of the source tree.
std::string FlagTablePath(const std::string& name);

// Reads a flag table. Errors: IoError for a missing file, InvalidArgument naming the file and line
// of a malformed row.
Result<FlagTable> LoadFlagTable(const std::string& path);
Result<ConfigKeyTable> LoadConfigKeyTable(const std::string& path);

// Every problem of |args| (one token per element) against |table|, one message each naming the
// flag and the table file: a token where a flag was expected, an option the parser does not
// define, a value after a flag that takes none, a wrong number of values, a value that is not of
// the option's type or not among its choices. Empty when argparse would accept every token.
std::vector<std::string> CheckArguments(const FlagTable& table,
                                        const std::vector<std::string>& args);

// Every problem of |config| against |table|: key paths the code does not read, values of the wrong
// JSON type or not among the stated choices, one message each naming the path and the table file.
std::vector<std::string> CheckConfig(const ConfigKeyTable& table,
                                     const nlohmann::ordered_json& config);

// The problems of emitted Megatron-LM arguments against megatron-lm.tsv (NVIDIA/Megatron-LM at the
// tables' commit), and of a DeepSpeed plan's launcher arguments and config against
// megatron-deepspeed.tsv and deepspeed-config.tsv; each table is read once. A table that does not
// load is itself a problem; |table| may name an older release's (megatron-lm-core_v0.12.0). Every
// test that emits a configuration checks it with these (issue 21).
std::vector<std::string> MegatronProblems(const std::vector<std::string>& args,
                                          const std::string& table = "megatron-lm");
std::vector<std::string> DeepSpeedProblems(const std::vector<std::string>& launcher_args,
                                           const nlohmann::ordered_json& config);

}  // namespace loom

#endif  // LOOM_TESTS_PLAN_FLAG_TABLES_H_
