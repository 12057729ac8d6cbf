// A Megatron-LM launch read back (issue 45): the argument list of pretrain_gpt.py, as a user's
// launch script holds it, to the strategy and kernels loom simulates. The reverse of
// MegatronArguments (plan/megatron_args.h): what that writes reads back to a strategy whose
// arguments are the same list.

#ifndef LOOM_PLAN_MEGATRON_ARGS_IN_H_
#define LOOM_PLAN_MEGATRON_ARGS_IN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/megatron_args.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// The words of a launch script or an argument list, as a POSIX shell splits them: blanks separate
// words, a backslash before a newline joins lines, '#' at the start of a word comments out the
// rest of the line, single quotes keep everything, double quotes keep all but \" and \\, and ';',
// '&&' or a newline outside quotes ends a command (the words of the last command that runs a .py
// file are kept, else those of the whole text). Errors name |file| and the line: an unclosed quote,
// a command substitution.
Result<std::vector<std::string>> ShellWords(const std::string& text, const std::string& file);

struct MegatronLaunch {
  Strategy strategy;  // dp: the world size over tp * pp * cp
  MegatronOptions options;
  // The world size the launcher states (torchrun's --nnodes times --nproc_per_node, when both are
  // numbers); nullopt when it does not.
  std::optional<int64_t> launcher_world_size;
  // Flags loom does not model (the data, tokenizer, learning rate, checkpointing, logging ...),
  // each with its values: they change no step loom simulates, or change it in a way loom does not
  // model; they are listed, never dropped silently.
  std::vector<std::string> not_modelled;
  // How a flag was read where loom's model of it is narrower than Megatron's.
  std::vector<std::string> notes;
};

// Reads |words| (ShellWords of |file|; the launcher's words before the .py file, if any, are read
// for the world size only) as pretrain_gpt.py's arguments for |model|, on |world_size| GPUs unless
// the launcher states its own. The model's shape flags must be |model|'s, as MegatronArguments
// writes them (the launch would build another model otherwise); the parallelism, batch, schedule,
// recompute, precision, optimizer, sharding and overlap flags make the strategy. Errors name |file|
// and the flag: a value that is a shell variable, a value that is not a number, a model flag that
// differs from |model|, a setting loom does not simulate (--cp-comm-type a2a, a partial optimizer
// offload), a world size tp * pp * cp does not divide.
Result<MegatronLaunch> ReadMegatronArguments(const std::vector<std::string>& words,
                                             const ModelSpec& model, int64_t world_size,
                                             const std::string& file);

}  // namespace loom

#endif  // LOOM_PLAN_MEGATRON_ARGS_IN_H_
