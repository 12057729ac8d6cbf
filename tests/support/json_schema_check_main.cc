// json_schema_check FILE...: checks each JSON file against the schema its "schema" key names
// (docs/schemas/), for tests whose JSON comes from a program other than the loom library (the
// fidelity report). Prints each failure; exits 1 if any file fails, 2 on a usage error.

#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/schema_check.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: json_schema_check FILE...\n";
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
    const ::testing::AssertionResult result = json.is_discarded()
                                                  ? ::testing::AssertionFailure() << "is not JSON"
                                                  : loom::MatchesSchema(json);
    if (!result) {
      std::cerr << argv[i] << ": " << result.message() << "\n";
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
