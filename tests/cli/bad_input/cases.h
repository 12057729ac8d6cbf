#ifndef LOOM_TESTS_CLI_BAD_INPUT_CASES_H_
#define LOOM_TESTS_CLI_BAD_INPUT_CASES_H_

#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "cli/bad_input/workdir.h"

namespace loom::bad_input {

// Shipped inputs, as paths in a Workdir; small enough that every run takes milliseconds.
inline constexpr char kModel[] = "models/gpt3-125m.json";
inline constexpr char kMoeModel[] = "models/mixtral-8x7b.json";
inline constexpr char kCluster[] = "hardware/clusters/dgx-h100.json";
inline constexpr char kA100Cluster[] = "hardware/clusters/dgx-a100.json";
inline constexpr char kA100Gpu[] = "hardware/gpus/a100-sxm4-80gb.json";
inline constexpr char kH100Gpu[] = "hardware/gpus/h100-sxm5-80gb.json";
inline constexpr char kFramework[] = "hardware/frameworks/megatron-core.json";
inline constexpr char kProfile[] = "tests/cli/data/profile_a100_synthetic.json";
inline constexpr char kRuns[] = "tests/cli/data/runs_synthetic.json";
inline constexpr char kNcclText[] = "tests/cost/data/all_reduce_perf_h100.txt";
inline constexpr char kNcclJson[] = "tests/cost/data/reduce_scatter_perf_a100.json";
inline constexpr char kScenario[] = "scenarios/small.json";  // written by Workdir
inline constexpr char kPlan[] = "plan.json";                 // written by WritePlan

// Command lines that succeed on the shipped inputs; a case adds or breaks one thing.
inline const std::vector<std::string> kSimulate = {
    "simulate", "--model", kModel, "--cluster", kCluster, "--global-batch", "4", "--seq", "512"};
inline const std::vector<std::string> kPlanSmall = {
    "plan",           "--model", kModel,  "--cluster", kCluster, "--gpus", "1",
    "--global-batch", "4",       "--seq", "512",       "--top",  "1"};
inline const std::vector<std::string> kValidate = {"validate", kPlan, "--steps",   "1",
                                                   "--warmup", "0",   "--speedup", "100"};

using Setup = std::function<void(Workdir&)>;
using Check = std::function<void(const Workdir&, const Outcome&)>;

// One class of bad input: the command, the files it breaks, and what loom must answer.
struct Case {
  std::string name;               // the test's name
  std::vector<std::string> args;  // after "loom"
  Setup setup = nullptr;          // writes the bad files into the Workdir
  // Acceptable exit codes. Where 0 is among them the input may be taken as valid (a BOM, an output
  // written through a symlink); |check| says what must hold then.
  std::vector<int> exits = {1};
  // On a non-zero exit, stderr holds each of these, a '|'-separated list of acceptable spellings:
  // the file (its name), the key or the flag at fault.
  std::vector<std::string> err_has = {};
  std::vector<std::string> err_lacks = {};  // never in stderr
  Check check = nullptr;
  double max_s = 0;  // a bound on the run's wall time tighter than kDeadline (0: none)
};

inline std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// The concatenation of |parts|: a base command line and what a case adds.
std::vector<std::string> Args(std::initializer_list<std::vector<std::string>> parts);

// Writes models/bad-model.json (or |to|): kModel with |key| set to the JSON text |raw|.
Setup ModelWith(const std::string& key, const std::string& raw,
                const std::string& to = "models/bad-model.json");

// The plan file `loom plan --emit plan` writes for GPT-3 125M on one rank (or on two
// data-parallel ranks), made once per process.
const std::string& MadePlan(bool two_ranks);
void WritePlan(Workdir& wd, const std::string& to = kPlan, bool two_ranks = false);

// The path is still a symlink to |target| (loom wrote through it, or refused it), or still a FIFO.
Check StillSymlink(const std::string& relative, const std::string& target);
Check StillFifo(const std::string& relative);

// The classes, by what is broken.
std::vector<Case> MalformedJsonCases();  // not JSON, out-of-range numbers, deep nesting
std::vector<Case> KeyCases();            // duplicate, misspelt and unknown keys and values
std::vector<Case> SizeCases();           // sizes, bandwidths and counts out of any sensible range
std::vector<Case> FileKindCases();       // missing files, directories, symlink loops
std::vector<Case> FlagCases();           // command lines: NaN, ranges, conflicts, resources
std::vector<Case> MeasurementCases();    // nccl-tests output, profiles
std::vector<Case> OutputCases();    // where loom writes: symlinks, FIFOs, full and missing places
std::vector<Case> PlanFileCases();  // plan files for validate

}  // namespace loom::bad_input

#endif  // LOOM_TESTS_CLI_BAD_INPUT_CASES_H_
