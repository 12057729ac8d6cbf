// The argument list of a launch read as argparse reads it (issue 45): the flags of a training
// script with their values, and a reader that turns them into numbers and switches with errors
// that name the file and the flag. Shared by the readers of Megatron-LM's and Megatron-DeepSpeed's
// pretrain_gpt.py (megatron_args_in.h, deepspeed_config_in.h).

#ifndef LOOM_PLAN_LAUNCH_ARGS_H_
#define LOOM_PLAN_LAUNCH_ARGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "spec/strategy.h"

namespace loom {

// A flag and its values, in the order given.
struct GivenFlag {
  std::string flag;
  std::vector<std::string> values;
  // "--flag v1 v2", as given.
  std::string Text() const;
};

// A launch's words split at the training script (the first word ending in .py).
struct LaunchArguments {
  // The world size the launcher states (torchrun's --nnodes times --nproc_per_node, when both are
  // numbers); nullopt when it does not, or when the words have no .py script.
  std::optional<int64_t> launcher_world_size;
  std::map<std::string, GivenFlag, std::less<>> given;  // by flag; the last one given counts
  std::vector<std::string> order;                       // each flag once, in the order given
  std::vector<std::string> notes;                       // a flag given more than once
};

// The script's arguments in |words| (all of them when no word names a .py file) as argparse takes
// them: "--flag v1 v2" and "--flag=v". Errors name |file|: a word before any flag, a value that is
// a shell variable.
Result<LaunchArguments> SplitLaunchArguments(const std::vector<std::string>& words,
                                             const std::string& file);

// A whole number written as such: "8", not "8.0" or "0x8".
std::optional<int64_t> WholeNumberOf(std::string_view text);
// A finite decimal number.
std::optional<double> NumberOf(const std::string& text);
// Whether |a| and |b| are the same values, numbers compared as numbers ("1e-5" is "0.00001").
bool SameValues(const std::vector<std::string>& a, const std::vector<std::string>& b);

// Reads flags of one LaunchArguments, collecting every error (file: flag value: why) rather than
// stopping at the first.
class LaunchArgumentReader {
 public:
  // The largest whole number a flag takes: far beyond any real run, and small enough that products
  // of a few of them (tp * pp * cp) stay within 64 bits.
  static constexpr int64_t kMaxValue = int64_t{1} << 30;

  // REQUIRES: |given| outlives the reader.
  LaunchArgumentReader(const std::map<std::string, GivenFlag, std::less<>>& given, std::string file)
      : given_(given), file_(std::move(file)) {}

  bool Has(std::string_view flag) const { return given_.count(flag) > 0; }
  // The one value of |flag|; nullopt (and an error if it has several or none) otherwise.
  std::optional<std::string> Text(std::string_view flag);
  // A whole number from |low| to kMaxValue; |fallback| when absent or wrong.
  int64_t Int(std::string_view flag, int64_t fallback, int64_t low = 1);
  // A number of at least 0; nullopt when absent.
  std::optional<double> Real(std::string_view flag);
  // Whether a store_true |flag| is given (an error if with values).
  bool Switch(std::string_view flag);

  void Error(std::string message);
  const std::vector<std::string>& errors() const { return errors_; }
  // The errors as one InvalidArgument, or Ok when there are none.
  Status Finish() const;

 private:
  const std::map<std::string, GivenFlag, std::less<>>& given_;
  std::string file_;
  std::vector<std::string> errors_;
};

// --optimizer: adam (both frameworks' default) or sgd into |s|; another is an error.
void ReadOptimizerFlag(LaunchArgumentReader& r, Strategy& s);

// Whether the launch runs dropout: --attention-dropout and --hidden-dropout, 0.1 by default in
// Megatron-LM and Megatron-DeepSpeed alike (_add_regularization_args). loom runs it in both places
// or in neither; one rate of 0 beside another is a note in |notes|.
bool ReadDropout(LaunchArgumentReader& r, std::vector<std::string>& notes);

}  // namespace loom

#endif  // LOOM_PLAN_LAUNCH_ARGS_H_
