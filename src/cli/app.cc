#include "cli/app.h"

#include <chrono>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/command.h"
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
  app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION);
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
