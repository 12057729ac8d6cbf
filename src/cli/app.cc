#include "cli/app.h"

#include <CLI/CLI.hpp>

#include "cli/command.h"

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return kExitUsage;
  }
  Status status = runner(out, err);
  if (!status.ok()) {
    err << "loom: error: " << status.message() << "\n";
    return status.code() == Status::Code::kUnavailable ? kExitNoHardware : kExitBadInput;
  }
  return kExitOk;
}

}  // namespace loom
