#include "support/schema_check.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace loom {
namespace {

constexpr char kDraft7[] = "http://json-schema.org/draft-07/schema#";

// Every keyword of JSON Schema draft 7 (json-schema-validation and json-schema-core, draft-07).
const std::set<std::string>& Draft7Keywords() {
  static const std::set<std::string> keywords = {"$schema",
                                                 "$id",
                                                 "$ref",
                                                 "$comment",
                                                 "title",
                                                 "description",
                                                 "default",
                                                 "examples",
                                                 "readOnly",
                                                 "writeOnly",
                                                 "type",
                                                 "enum",
                                                 "const",
                                                 "multipleOf",
                                                 "maximum",
                                                 "exclusiveMaximum",
                                                 "minimum",
                                                 "exclusiveMinimum",
                                                 "maxLength",
                                                 "minLength",
                                                 "pattern",
                                                 "items",
                                                 "additionalItems",
                                                 "maxItems",
                                                 "minItems",
                                                 "uniqueItems",
                                                 "contains",
                                                 "maxProperties",
                                                 "minProperties",
                                                 "required",
                                                 "properties",
                                                 "patternProperties",
                                                 "additionalProperties",
                                                 "dependencies",
                                                 "propertyNames",
                                                 "if",
                                                 "then",
                                                 "else",
                                                 "allOf",
                                                 "anyOf",
                                                 "oneOf",
                                                 "not",
                                                 "format",
                                                 "definitions",
                                                 "contentMediaType",
                                                 "contentEncoding"};
  return keywords;
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded()) throw std::runtime_error(path + ": is not JSON");
  return json;
}

// valijson's remote-document hooks: a "$ref" to another file resolves in SchemaDir(), by file name.
const nlohmann::json* FetchSchemaDocument(const std::string& uri) {
  const std::string name = std::filesystem::path(uri.substr(0, uri.find('#'))).filename().string();
  return new nlohmann::json(ReadJsonFile(SchemaDir() + "/" + name));
}

void FreeSchemaDocument(const nlohmann::json* document) { delete document; }

// Parses |path| as a draft-7 schema. Throws std::runtime_error (valijson's, or ReadJsonFile's).
std::unique_ptr<valijson::Schema> ParseSchema(const std::string& path) {
  const nlohmann::json json = ReadJsonFile(path);
  auto schema = std::make_unique<valijson::Schema>();
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(json), *schema, FetchSchemaDocument,
                        FreeSchemaDocument);
  return schema;
}

// The parsed schema of |path|, parsed once per test binary.
const valijson::Schema& CachedSchema(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<valijson::Schema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<valijson::Schema>& schema = cache[path];
  if (!schema) schema = ParseSchema(path);
  return *schema;
}

std::string ContextPath(const std::vector<std::string>& context) {
  std::string path;
  for (const std::string& part : context) path += part;
  return path;
}

// The subschemas directly under |node| with their paths: what a keyword's value holds.
std::vector<std::pair<std::string, const nlohmann::json*>> Subschemas(const nlohmann::json& node,
                                                                      const std::string& path) {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  for (const char* key : {"properties", "patternProperties", "definitions", "dependencies"}) {
    if (auto it = node.find(key); it != node.end() && it->is_object()) {
      for (const auto& [name, sub] : it->items()) {
        if (sub.is_object()) out.emplace_back(path + "/" + key + "/" + name, &sub);
      }
    }
  }
  for (const char* key : {"items", "additionalItems", "additionalProperties", "contains",
                          "propertyNames", "if", "then", "else", "not"}) {
    if (auto it = node.find(key); it != node.end() && it->is_object())
      out.emplace_back(path + "/" + key, &*it);
  }
  for (const char* key : {"allOf", "anyOf", "oneOf", "items"}) {
    if (auto it = node.find(key); it != node.end() && it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i)
        out.emplace_back(path + "/" + key + "/" + std::to_string(i), &(*it)[i]);
    }
  }
  return out;
}

// |describes|: whether |node| describes data (false under "if" and "not", which only test it).
void LintSubschema(const nlohmann::json& node, const std::string& path, bool describes,
                   std::vector<std::string>& problems) {
  for (const auto& [key, value] : node.items()) {
    if (Draft7Keywords().count(key) == 0)
      problems.push_back(path + ": \"" + key + "\" is not a draft-7 keyword");
  }
  auto properties = node.find("properties");
  if (describes && properties != node.end() && properties->is_object()) {
    for (const auto& [name, sub] : properties->items()) {
      if (sub.is_object() && !sub.contains("description") && !sub.contains("$ref")) {
        problems.push_back(path + "/properties/" + name +
                           ": has no description (say what it is and its unit)");
      }
    }
    if (!node.contains("additionalProperties")) {
      problems.push_back(path +
                         ": lists properties but does not say whether others may appear "
                         "(\"additionalProperties\": false for loom's own objects)");
    }
  }
  for (const auto& [sub_path, sub] : Subschemas(node, path)) {
    const bool test =
        sub_path.size() >= 3 &&
        (sub_path.compare(sub_path.size() - 3, 3, "/if") == 0 ||
         (sub_path.size() >= 4 && sub_path.compare(sub_path.size() - 4, 4, "/not") == 0));
    LintSubschema(*sub, sub_path, describes && !test, problems);
  }
}

}  // namespace

std::string SchemaDir() { return std::string(LOOM_SOURCE_DIR) + "/docs/schemas"; }

std::string SchemaFileOf(std::string_view schema) {
  static const std::regex kName(R"(loom\.([a-z0-9_-]+)/([0-9]+))");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_match(schema.begin(), schema.end(), match, kName)) return "";
  return SchemaDir() + "/" + match[1].str() + "-" + match[2].str() + ".schema.json";
}

::testing::AssertionResult MatchesSchema(const nlohmann::json& document) {
  if (!document.is_object())
    return ::testing::AssertionFailure() << "not a JSON object: " << document.type_name();
  auto name = document.find("schema");
  if (name == document.end() || !name->is_string()) {
    return ::testing::AssertionFailure()
           << "has no \"schema\" string; every loom JSON names its schema";
  }
  const std::string file = SchemaFileOf(name->get<std::string>());
  if (file.empty() || !std::filesystem::exists(file)) {
    return ::testing::AssertionFailure()
           << "schema " << *name << " has no schema file" << (file.empty() ? "" : " (" + file + ")")
           << " in " << SchemaDir();
  }
  const valijson::Schema* schema = nullptr;
  try {
    schema = &CachedSchema(file);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << file << " does not parse as a draft-7 schema: " << e.what();
  }
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(*schema, valijson::adapters::NlohmannJsonAdapter(document), &results)) {
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << "does not match " << file << ":";
  valijson::ValidationResults::Error error;
  while (results.popError(error))
    failure << "\n  " << ContextPath(error.context) << ": " << error.description;
  return failure;
}

void ExpectMatchesSchemaIfJson(std::string_view text, std::string_view what) {
  const nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) return;
  EXPECT_TRUE(MatchesSchema(json)) << "the JSON of " << what;
}

std::vector<std::string> SchemaFileProblems(const std::string& path) {
  std::vector<std::string> problems;
  nlohmann::json json;
  try {
    json = ReadJsonFile(path);
    ParseSchema(path);
  } catch (const std::exception& e) {
    return {std::string("does not parse as a draft-7 schema: ") + e.what()};
  }
  if (json.value("$schema", "") != kDraft7)
    problems.push_back(std::string("\"$schema\" is not \"") + kDraft7 + "\"");
  const std::string name = std::filesystem::path(path).filename().string();
  if (json.value("$id", "") != name)
    problems.push_back("\"$id\" is not its file name, \"" + name + "\"");
  for (const char* key : {"title", "description"}) {
    if (!json.contains(key) || !json[key].is_string())
      problems.push_back(std::string("has no \"") + key + "\"");
  }
  LintSubschema(json, "#", true, problems);
  return problems;
}

}  // namespace loom
