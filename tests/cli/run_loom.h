#ifndef LOOM_TESTS_CLI_RUN_LOOM_H_
#define LOOM_TESTS_CLI_RUN_LOOM_H_

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "support/schema_check.h"

namespace loom {

// The exit code and the output of one in-process `loom` run. An output that is one JSON object is
// checked against the schema it names (docs/schemas/), so that every JSON the tests see keeps its
// contract.
struct CommandResult {
  int code;
  std::string out;
  std::string err;
};

inline CommandResult Loom(std::vector<std::string> args) {
  args.insert(args.begin(), "loom");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = RunLoom(static_cast<int>(argv.size()), argv.data(), out, err);
  std::string command;
  for (const std::string& a : args) command += (command.empty() ? "" : " ") + a;
  ExpectMatchesSchemaIfJson(out.str(), command);
  return {code, out.str(), err.str()};
}

inline std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

}  // namespace loom

#endif  // LOOM_TESTS_CLI_RUN_LOOM_H_
