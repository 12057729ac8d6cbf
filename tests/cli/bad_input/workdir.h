#ifndef LOOM_TESTS_CLI_BAD_INPUT_WORKDIR_H_
#define LOOM_TESTS_CLI_BAD_INPUT_WORKDIR_H_

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace loom::bad_input {

// A run slower than this is a hang: every class of bad input is refused (or run) in well under a
// second on shipped-size inputs.
inline constexpr std::chrono::seconds kDeadline{60};

// What one run of the loom binary did.
struct Outcome {
  bool timed_out = false;
  bool signaled = false;
  int signal = 0;
  int code = -1;  // the exit status, when it exited
  double wall_s = 0;
  std::string out, err;
};

// Runs |binary| with |args| in the folder |dir|, stdin /dev/null and stdout and stderr in files
// beside |dir|, and kills it at kDeadline. |drain| are descriptors read while it runs (the reading
// ends of FIFOs it may write to).
Outcome RunBinary(const std::string& binary, const std::vector<std::string>& args,
                  const std::filesystem::path& dir, const std::vector<int>& drain);

// A scratch copy of the shipped inputs (models/, scenarios/, hardware/{gpus,clusters,frameworks}/,
// tests/cli/data/, tests/cost/data/) in the repository's layout, so that the paths written inside
// the files (a cluster's "../gpus/...") resolve as in the repository, plus scenarios/small.json
// (GPT-3 125M on one H100). Removed when destroyed. Paths are relative to its folder.
class Workdir {
 public:
  using Json = nlohmann::ordered_json;

  Workdir();
  ~Workdir();
  Workdir(const Workdir&) = delete;
  Workdir& operator=(const Workdir&) = delete;

  std::filesystem::path Path(const std::string& relative) const { return dir_ / relative; }

  std::string Read(const std::string& relative) const;
  void Write(const std::string& relative, const std::string& text) const;
  Json Load(const std::string& relative) const;
  void Save(const std::string& relative, const Json& json) const;

  // Writes |from| to |to| with |edit| applied to its JSON.
  void Edit(const std::string& from, const std::string& to,
            const std::function<void(Json&)>& edit) const;
  // Writes |from| to |to| with the value at JSON pointer |at| replaced by the JSON text |raw|: text
  // that a JSON value cannot hold (1e999) or that is better not built as one (100,000 levels).
  void SetRaw(const std::string& from, const std::string& to, const std::string& at,
              const std::string& raw) const;
  // Writes |from| to |to| with |key| set a second time, to the JSON text |raw|, at the end of the
  // object at JSON pointer |at|.
  void DuplicateKey(const std::string& from, const std::string& to, const std::string& at,
                    const std::string& key, const std::string& raw) const;

  void Symlink(const std::string& target, const std::string& relative) const;
  // Makes a FIFO at |relative| whose reading end runs drain, so that loom may write through it.
  void Fifo(const std::string& relative);

  // Runs the loom binary under test in this folder.
  Outcome Loom(const std::vector<std::string>& args) const;

 private:
  std::filesystem::path root_, dir_;
  std::vector<int> drain_;
};

// JSON text nested |depth| levels deep: [[[...1...]]], or {"a":{"a":...1...}} with |objects|.
std::string Nested(size_t depth, bool objects);

}  // namespace loom::bad_input

#endif  // LOOM_TESTS_CLI_BAD_INPUT_WORKDIR_H_
