#ifndef LOOM_CLI_APP_H_
#define LOOM_CLI_APP_H_

#include <ostream>

namespace loom {

// Exit codes of the loom command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;  // a file or a setting is wrong; the message says which
inline constexpr int kExitUsage = 2;     // the command line itself does not parse
inline constexpr int kExitNoHardware =
    3;  // the GPU the command needs is not there, or not in this build
// Interrupted by a signal: 128 + its number, the status a shell gives a process the signal killed.
// plan prints the best plans found so far, marked INTERRUPTED and partial, and exits with it; fit
// and probe finish the file they are writing (never a truncated file or a stray temporary) and then
// end by the signal itself, which a shell reports with the same status. A second signal ends any
// command at once.
inline constexpr int kExitSignalBase = 128;
inline constexpr int kExitInterrupted = kExitSignalBase + 2;  // SIGINT (Ctrl-C)
inline constexpr int kExitTerminated = kExitSignalBase + 15;  // SIGTERM

// Runs the loom command line: parses |argv|, runs one subcommand, writes results to |out| and
// errors (prefixed "loom: error: ") to |err|. Returns the process exit code.
int RunLoom(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace loom

#endif  // LOOM_CLI_APP_H_
