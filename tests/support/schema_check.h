#ifndef LOOM_TESTS_SUPPORT_SCHEMA_CHECK_H_
#define LOOM_TESTS_SUPPORT_SCHEMA_CHECK_H_

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json_fwd.hpp>

namespace loom {

// The JSON Schemas of loom's files and outputs (docs/schemas/, draft 7), checked with valijson.

// docs/schemas/ of this source tree.
std::string SchemaDir();

// The schema file of a "schema" value: "loom.plan-file/3" ->
// "<SchemaDir()>/plan-file-3.schema.json". Empty when |schema| is not of the form loom.<name>/<N>.
std::string SchemaFileOf(std::string_view schema);

// Whether |document| matches the schema its "schema" key names; the failure message names the
// schema file and every violation with its JSON path. Fails when |document| is not an object, has
// no "schema" string, or names a schema with no file in SchemaDir().
::testing::AssertionResult MatchesSchema(const nlohmann::json& document);

// For the outputs of commands: when |text| parses as one JSON value that is an object, expects
// it to match its schema (MatchesSchema); other text (tables, errors, a JSON array) is left alone.
// |what| says where the text came from in a failure.
void ExpectMatchesSchemaIfJson(std::string_view text, std::string_view what);

// The problems of one schema file as a schema: it must parse as draft 7 (valijson), declare
// "$schema" draft-07, "$id" its own file name, a title and a description, use only draft-7
// keywords, and describe every property it lists. Empty when it has none.
std::vector<std::string> SchemaFileProblems(const std::string& path);

}  // namespace loom

#endif  // LOOM_TESTS_SUPPORT_SCHEMA_CHECK_H_
