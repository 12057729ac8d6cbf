#ifndef LOOM_CLI_APP_H_
#define LOOM_CLI_APP_H_

#include <ostream>

namespace loom {

// Exit codes of the loom command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;  // a file or a setting is wrong; the message says which
inline constexpr int kExitUsage = 2;     // the command line itself does not parse
inline constexpr int kExitNoHardware = 3;  // the GPU the command needs is not there, or not in this build

// Runs the loom command line: parses |argv|, runs one subcommand, writes results to |out| and
// errors (prefixed "loom: error: ") to |err|. Returns the process exit code.
int RunLoom(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace loom

#endif  // LOOM_CLI_APP_H_
