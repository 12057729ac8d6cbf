#include "cli/app.h"

#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/interrupt.h"
#include "core/json_reader.h"

namespace loom {

int RunLoom(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app(
      "loom: simulate and plan the parallelisation of large-model training.\n"
      "Start with `loom describe --model models/llama3-70b.json --cluster "
      "hardware/clusters/dgx-h100.json`.",
      "loom");
  app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION);
  app.require_subcommand(1);
  app.footer("Run `loom SUBCOMMAND --help` for the options and an example of each subcommand.");

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
      err << "loom: \"" << Abbreviated(word) << "\" is not a loom command"
          << (best <= 3 ? "; did you mean \"" + nearest + "\"?" : "") << " The commands are " << names
          << "; run `loom --help`.\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return kExitUsage;
  }
  // The boundary of every command: an exception a library let through (or memory running out)
  // becomes an error message and exit status 1, never an abort.
  Status status;
  ClearInterrupt();
  try {
    status = runner(out, err);
  } catch (const std::bad_alloc&) {
    status = Status::ResourceExhausted("out of memory; the inputs ask for more than this machine has (check the "
                                       "sizes in the model file and the flags)");
  } catch (const std::exception& e) {
    status = Status::Internal(std::string("unexpected failure (") + e.what() +
                              "); this is a bug in loom: please report it with the command line");
  }
  if (const int signal = InterruptSignal(); signal != 0) {
    if (!status.ok()) err << "loom: error: " << status.message() << "\n";
    err << "loom: interrupted by " << SignalName(signal) << "\n";
    return kExitSignalBase + signal;
  }
  if (!status.ok()) {
    err << "loom: error: " << status.message() << "\n";
    return status.code() == Status::Code::kUnavailable ? kExitNoHardware : kExitBadInput;
  }
  return kExitOk;
}

}  // namespace loom
