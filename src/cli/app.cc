#include "cli/app.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/build_info.h"
#include "core/interrupt.h"
#include "core/json_reader.h"
#include "device/mpi_launcher.h"

namespace loom {
namespace {

std::string RankPrefix(int rank) { return "rank " + std::to_string(rank) + ": "; }

// Whether this process prints |status|: every rank of an MPI job runs the same command on the
// same inputs, so rank 0 alone reports what all hit; another rank reports only its own failure.
bool PrintsOnThisRank(const Status& status, int rank) {
  return rank == 0 || status.message().rfind(RankPrefix(rank), 0) == 0;
}

// One write per line, so that the lines of several ranks sharing a terminal do not interleave.
void PrintError(const Status& status, std::ostream& err) {
  err << ("loom: error: " + status.message() + "\n") << std::flush;
}

// A rank other than 0 that leaves an error to rank 0 must not end first: mpirun aborts the whole
// job when the first process exits non-zero, and could kill rank 0 before it printed, leaving no
// message at all. So it waits; if rank 0 failed the same way, mpirun ends this rank during the
// wait. Still alive after it, rank 0 did not fail so, and this rank prints |text| itself, with its
// rank.
constexpr std::chrono::seconds kRankZeroGrace{3};
void DeferToRankZero(int rank, const std::string& text, std::ostream& err) {
  std::this_thread::sleep_for(kRankZeroGrace);
  err << (RankPrefix(rank) + text) << std::flush;
}

// The (sub)command a command line runs: the app, then each following word that names a
// subcommand of the one before ("loom trace merge"). |first| is the index of the first argument
// after it; |name| is "loom simulate", "loom trace merge".
struct CommandWords {
  CLI::App* command = nullptr;
  int first = 1;
  std::string name = "loom";
};

CommandWords FindCommand(CLI::App& app, int argc, const char* const* argv) {
  CommandWords words{&app, 1, "loom"};
  while (words.first < argc) {
    CLI::App* next = nullptr;
    for (CLI::App* sub : words.command->get_subcommands({})) {
      if (sub->get_name() == argv[words.first]) next = sub;
    }
    if (next == nullptr) break;
    words.command = next;
    words.name += " " + next->get_name();
    ++words.first;
  }
  return words;
}

// Whether |option| takes more than one value or may be given more than once (--fix, --straggler).
bool Repeatable(const CLI::Option& option) {
  if (option.get_expected_max() > 1 || option.get_items_expected_max() > 1) return true;
  const CLI::MultiOptionPolicy policy = option.get_multi_option_policy();
  if (policy != CLI::MultiOptionPolicy::Throw) return true;
  // A flag (no value) may be repeated harmlessly: CLI11 counts it.
  return option.get_type_size_max() == 0;
}

// What is wrong with the options of |argv| from |words.first| on that CLI11 would report badly: an
// option the command lacks (CLI11 reports a required option first, "--gpus is required", when
// --gpu was given for it) with the nearest it has, and a single-valued option given twice (CLI11:
// "At Most 1 required but received 2"). Only words that start with "--" before a lone "--" are
// read; option values are never taken for options.
std::optional<std::string> OptionWordProblem(const CommandWords& words, int argc,
                                             const char* const* argv) {
  std::vector<std::string> known;
  for (const CLI::Option* option : words.command->get_options()) {
    for (const std::string& name : option->get_lnames()) known.push_back("--" + name);
  }
  const std::string help = " Run `" + words.name + " --help` for its options.";
  // "loom: simulate: ...", as CLI11's own messages are prefixed (RunLoom).
  const std::string prefix = words.name == "loom" ? "" : words.name.substr(5) + ": ";
  std::map<const CLI::Option*, int> given;
  for (int i = words.first; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 3 || word.compare(0, 2, "--") != 0) continue;
    const std::string name = word.substr(0, word.find('='));
    const CLI::Option* option = words.command->get_option_no_throw(name);
    if (option == nullptr) {
      // A near spelling: at most one edit in four characters.
      const std::optional<NearName> near = NearestName(std::string_view(name).substr(0, 64), known,
                                                       std::min<int>(3, name.size() / 4));
      std::string nearest = near ? known[near->index] : "";
      // A unique prefix ("--glob" for --global-batch) is a better guess than a near spelling.
      std::string prefixed;
      int prefixes = 0;
      for (const std::string& candidate : known) {
        if (candidate.compare(0, name.size(), name) == 0) prefixed = candidate, ++prefixes;
      }
      if (prefixes == 1 && (!near || near->distance > 1)) nearest = prefixed;
      return prefix + "unknown option " + Abbreviated(name) +
             (nearest.empty() ? "." : "; did you mean " + nearest + "?") + help;
    }
    if (++given[option] == 2 && !Repeatable(*option)) {
      return prefix + option->get_name() +
             " is given more than once; give it once (it takes one value)." + help;
    }
  }
  return std::nullopt;
}

}  // namespace

Status OnRank(int rank, const Status& status) {
  return StartedByMpiLauncher() ? status.WithContext("rank " + std::to_string(rank)) : status;
}

int RunLoom(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app(
      "loom: simulate and plan the parallelisation of large-model training.\n"
      "Start with `loom describe --model models/llama3-70b.json --cluster "
      "hardware/clusters/dgx-h100.json`.",
      "loom");
  app.set_version_flag("--version", "loom " + LoomBuildVersion());
  app.require_subcommand(1);
  app.footer("Run `loom SUBCOMMAND --help` for the options and an example of each subcommand.");

  // Under mpirun every rank parses the same command line: rank 0 alone says what is wrong with it.
  const int rank = LauncherRank();
  std::ostringstream discarded;
  std::ostream& usage_err = rank == 0 ? err : discarded;
  CommandRunner runner;
  AddDescribeCommand(app, runner);
  AddSimulateCommand(app, runner);
  AddFitCommand(app, runner);
  AddPlanCommand(app, runner);
  AddProbeCommand(app, runner);
  AddValidateCommand(app, runner);
  AddTraceCommand(app, runner);

  // A first word that is no subcommand ("loom simulat"): CLI11 would only say one is required.
  if (argc >= 2 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string nearest;
    int best = 1 << 20;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      const std::string& name = sub->get_name();
      names += (names.empty() ? "" : ", ") + name;
      if (name == word) {
        best = -1;
        break;
      }
      int d = EditDistance(word.substr(0, 64), name);
      if (d < best) best = d, nearest = name;
    }
    if (best >= 0) {
      usage_err << "loom: \"" << Abbreviated(word) << "\" is not a loom command"
                << (best <= 3 ? "; did you mean \"" + nearest + "\"?" : "") << " The commands are "
                << names << "; run `loom --help`.\n";
      if (rank != 0) DeferToRankZero(rank, discarded.str(), err);
      return kExitUsage;
    }
  }
  // Bare `loom`: the help, as `loom --help` prints it.
  if (argc < 2) {
    out << app.help();
    return kExitUsage;
  }
  const CommandWords words = FindCommand(app, argc, argv);
  if (std::optional<std::string> problem = OptionWordProblem(words, argc, argv)) {
    usage_err << "loom: " << *problem << "\n";
    if (rank != 0) DeferToRankZero(rank, discarded.str(), err);
    return kExitUsage;
  }
  // CLI11's other messages under the same prefix, with the command's own --help.
  app.failure_message([name = words.name](const CLI::App*, const CLI::Error& e) {
    const std::string command = name == "loom" ? "" : name.substr(5) + ": ";  // after "loom "
    return "loom: " + command + e.what() + "\nRun `" + name +
           " --help` for its options and an example.\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, usage_err);
    if (rank != 0) DeferToRankZero(rank, discarded.str(), err);
    return kExitUsage;
  }
  // The boundary of every command: an exception a library let through (or memory running out)
  // becomes an error message and exit status 1, never an abort.
  Status status;
  ClearInterrupt();
  try {
    status = runner(out, err);
  } catch (const std::bad_alloc&) {
    status = Status::ResourceExhausted(
        "out of memory; the inputs ask for more than this machine has (check the "
        "sizes in the model file and the flags)");
  } catch (const std::exception& e) {
    status = Status::Internal(std::string("unexpected failure (") + e.what() +
                              "); this is a bug in loom: please report it with the command line");
  }
  if (const int signal = InterruptSignal(); signal != 0) {
    if (!status.ok() && PrintsOnThisRank(status, rank)) PrintError(status, err);
    err << "loom: interrupted by " << SignalName(signal) << "\n";
    return kExitSignalBase + signal;
  }
  if (!status.ok()) {
    if (PrintsOnThisRank(status, rank)) {
      PrintError(status, err);
    } else {
      DeferToRankZero(rank, "loom: error: " + status.message() + "\n", err);
    }
    return status.code() == Status::Code::kUnavailable ? kExitNoHardware : kExitBadInput;
  }
  return kExitOk;
}

}  // namespace loom
