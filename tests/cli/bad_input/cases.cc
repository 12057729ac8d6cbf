#include "cli/bad_input/cases.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace loom::bad_input {

namespace fs = std::filesystem;

std::vector<std::string> Args(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const std::vector<std::string>& part : parts)
    out.insert(out.end(), part.begin(), part.end());
  return out;
}

Setup ModelWith(const std::string& key, const std::string& raw, const std::string& to) {
  return [=](Workdir& wd) { wd.SetRaw(kModel, to, "/" + key, raw); };
}

const std::string& MadePlan(bool two_ranks) {
  static std::string made[2];
  std::string& text = made[two_ranks ? 1 : 0];
  if (!text.empty()) return text;
  Workdir wd;
  const Outcome o =
      wd.Loom({"plan", "--model", kModel, "--cluster", kCluster, "--gpus", two_ranks ? "2" : "1",
               "--global-batch", "4", "--seq", "512", "--fix", "tp=1,pp=1,micro_batch=1", "--top",
               "1", "--emit", "plan", "--out", kPlan});
  EXPECT_EQ(o.code, 0) << "the plan file every validate case starts from was not written: "
                       << o.err;
  text = wd.Read(kPlan);
  return text;
}

void WritePlan(Workdir& wd, const std::string& to, bool two_ranks) {
  wd.Write(to, MadePlan(two_ranks));
}

Check StillSymlink(const std::string& relative, const std::string& target) {
  return [=](const Workdir& wd, const Outcome&) {
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(wd.Path(relative))))
        << relative << " (a symlink to " << target << ") was replaced by a regular file";
    std::error_code ignored;
    EXPECT_EQ(fs::read_symlink(wd.Path(relative), ignored).string(), target);
  };
}

Check StillFifo(const std::string& relative) {
  return [=](const Workdir& wd, const Outcome&) {
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(wd.Path(relative))))
        << relative << " (a FIFO) was replaced by a regular file";
  };
}

}  // namespace loom::bad_input
