#ifndef LOOM_CORE_JSON_READER_H_
#define LOOM_CORE_JSON_READER_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/enum_names.h"
#include "core/status.h"

namespace loom {

// The deepest nesting of arrays and objects loom accepts in an input. loom's own files nest at most
// five levels; the bound keeps recursion over a value (printing it in a message) off the stack's
// end.
inline constexpr int kMaxJsonDepth = 64;

// Parses |text|, the contents of |file|. Errors name the file and the byte position: a syntax
// error, a number outside the range of a double (1e999), nesting deeper than kMaxJsonDepth, or a
// key that appears twice in one object (JSON leaves it open which one counts; loom refuses).
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file);
// The same, keeping each object's key order (for files loom rewrites).
Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, const std::string& file);

// Reads and parses |path| (ReadInputFile, then ParseJson). Errors name the file: a missing file is
// NotFound, a file that is not JSON reports the parser's byte position, a top level that is not an
// object is rejected. |missing_hint| follows the message of a missing file.
Result<nlohmann::json> ReadJsonObjectFile(
    const std::string& path,
    std::string_view missing_hint =
        "check the path, or pass a shipped file such as models/llama3-70b.json");

// What JsonReader::Finish does with keys that no getter asked for.
enum class UnknownKeys {
  // Every key must be known (loom's own files: hardware, scenarios).
  kError,
  // Foreign keys are allowed (a Hugging Face config.json carries dozens loom does not use),
  // but a key within a small edit distance of a known key is taken for a typo and rejected,
  // unless it is listed in |also_allowed| of Finish.
  kRejectTypos,
};

// Inclusive bounds for an integer key. The defaults reject zero and negatives.
struct IntRange {
  int64_t min = 1;
  int64_t max = INT64_MAX;
};

// Inclusive bounds for a real-valued key. No number in loom's inputs comes near 1e15 (rates are in
// GB/s and TFLOP/s, times in us or s), and the bound keeps products of them finite.
struct NumberRange {
  double min = 0;
  double max = 1e15;
};

// Typed, validating access to one JSON object of one input file. Getters never throw: a missing,
// mistyped or out-of-range value is recorded as an error (naming the file, the key and the fix)
// and a placeholder is returned, so that one pass reports every problem of a file. Call Finish()
// once at the end and use nothing read if it fails.
class JsonReader {
 public:
  // |file| names the input in messages; |path| is the key path of |object| inside it ("" at top).
  // REQUIRES: |object| outlives the reader.
  JsonReader(const nlohmann::json& object, std::string file, std::string path = "");

  bool Has(std::string_view key) const;

  // Required integer within |range|.
  int64_t Int(std::string_view key, IntRange range = {});
  // Integer within |range| if present (JSON null counts as absent), else nullopt.
  std::optional<int64_t> OptionalInt(std::string_view key, IntRange range = {});

  // Required number > 0 (finite) within |range|.
  double PositiveNumber(std::string_view key, NumberRange range = {});
  std::optional<double> OptionalPositiveNumber(std::string_view key, NumberRange range = {});
  // Number >= 0 within |range| if present.
  std::optional<double> OptionalNonNegativeNumber(std::string_view key, NumberRange range = {});

  std::string String(std::string_view key);
  std::optional<std::string> OptionalString(std::string_view key);
  // An array of non-empty strings if present (empty when absent); an error names the bad element.
  std::vector<std::string> OptionalStringList(std::string_view key);
  // Required string that must be one of |allowed|; the error lists them.
  std::string OneOf(std::string_view key, std::initializer_list<std::string_view> allowed);
  std::optional<std::string> OptionalOneOf(std::string_view key,
                                           std::initializer_list<std::string_view> allowed);

  std::optional<bool> OptionalBool(std::string_view key);

  // Required nested object, read with its own reader whose errors join this one's on Finish().
  JsonReader& Object(std::string_view key);

  // Marks |key| as known without reading it (a key loom accepts and has no use for).
  void Allow(std::string_view key);

  // Records a problem found by the caller (a rule between keys). |key| may be empty.
  void AddError(std::string_view key, std::string_view problem);

  // Checks for unknown keys under |policy| and returns every recorded error, one per line.
  Status Finish(UnknownKeys policy, std::initializer_list<std::string_view> also_allowed = {});

  // The keys of the object that no getter asked for (Allow counts as asking), each with its
  // value, then in place of a key read with Object the unread keys of that nested reader; named
  // by their key path ("zero_optimization.reduce_bucket_size"), in the object's order. What a
  // reader of a foreign file read past, to list rather than drop.
  std::vector<std::pair<std::string, const nlohmann::json*>> UnreadKeys() const;

  const std::string& file() const { return file_; }
  // "file: a.b" for |key| under this reader's path; used in messages.
  std::string Where(std::string_view key) const;

 private:
  const nlohmann::json* Find(std::string_view key);
  void CollectErrors(std::vector<std::string>* out) const;
  std::string KnownKeyList() const;

  const nlohmann::json& object_;
  std::string file_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
  std::vector<std::string> errors_;
  std::vector<std::unique_ptr<JsonReader>> children_;
};

// A path written inside |file| (a cluster naming its GPU file, a scenario naming its model),
// resolved against |file|'s folder unless it is absolute, and normalised.
std::string PathBeside(const std::string& file, const std::string& path);

// Reads |key| of |r|'s object as one of |names|. A missing key, a value that is not a string or not
// one of |names| (with a "did you mean" for a near miss) is recorded in |r| and gives nullopt.
std::optional<std::string> ReadChoice(JsonReader& r, std::string_view key,
                                      const std::vector<std::string>& names);

// Reads |key| of |r|'s object as a name of |names|; a missing key or an unknown name is recorded in
// |r| (with the names allowed) and gives Enum{}.
template <typename Enum, size_t N>
Enum ReadEnum(JsonReader& r, std::string_view key, const EnumNames<Enum, N>& names) {
  const std::string text = r.String(key);
  const std::optional<Enum> value = names.Parse(text);
  if (!value && !text.empty())
    r.AddError(key, "is \"" + text + "\"; it must be one of " + names.Choices());
  return value.value_or(Enum{});
}

// Levenshtein distance, for "did you mean" hints.
int EditDistance(std::string_view a, std::string_view b);

// The name of |names| nearest to |word| by EditDistance (the first of equals), when it is at most
// |max_distance| edits away: its index and its distance. nullopt when none is that near.
struct NearName {
  size_t index = 0;
  int distance = 0;
};
std::optional<NearName> NearestName(std::string_view word, const std::vector<std::string>& names,
                                    int max_distance);

// |text| for a message: cut to |limit| bytes with "..." (a 100 MB key is quoted by its start).
std::string Abbreviated(std::string_view text, size_t limit = 60);

}  // namespace loom

#endif  // LOOM_CORE_JSON_READER_H_
