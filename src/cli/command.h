#ifndef LOOM_CLI_COMMAND_H_
#define LOOM_CLI_COMMAND_H_

#include <functional>
#include <ostream>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace loom {

// What a subcommand runs once the command line has parsed: writes its result to |out| and progress
// on long work to |err|.
using CommandRunner = std::function<Status(std::ostream& out, std::ostream& err)>;

// |status| as the failure of rank |rank| alone (its GPU, its peer): "rank N: <message>" when an MPI
// launcher started this process, else |status| as it is. Under an
// MPI launcher RunLoom prints an error only on rank 0, where every rank hits it the same way (a
// bad input), but a rank's own failure on the rank it happened on.
Status OnRank(int rank, const Status& status);

// Registers "describe" on |app|; |runner| is set to run it when it is the chosen subcommand.
void AddDescribeCommand(CLI::App& app, CommandRunner& runner);

// Registers "simulate".
void AddSimulateCommand(CLI::App& app, CommandRunner& runner);

// Registers "fit".
void AddFitCommand(CLI::App& app, CommandRunner& runner);

// Registers "plan".
void AddPlanCommand(CLI::App& app, CommandRunner& runner);

// Registers "validate".
void AddValidateCommand(CLI::App& app, CommandRunner& runner);

// Registers "trace" and its "merge".
void AddTraceCommand(CLI::App& app, CommandRunner& runner);

// Registers "probe". Without CUDA it only lists the sweep (--dry-run) and says how to build it.
void AddProbeCommand(CLI::App& app, CommandRunner& runner);

}  // namespace loom

#endif  // LOOM_CLI_COMMAND_H_
