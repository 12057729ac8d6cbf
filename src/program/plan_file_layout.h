#ifndef LOOM_PROGRAM_PLAN_FILE_LAYOUT_H_
#define LOOM_PROGRAM_PLAN_FILE_LAYOUT_H_

// Internal to src/program: what the plan-file writer (plan_file.cc) and reader
// (plan_file_reader.cc) must spell the same way. The layout itself is described in plan_file.h.

#include <string>
#include <vector>

namespace loom::plan_file_layout {

// What each position of a task row and of a memory event row holds; the file states it too.
inline const std::vector<std::string> kTaskFields = {"stream",
                                                     "duration_ns",
                                                     "name",
                                                     "category",
                                                     "link",
                                                     "route",
                                                     "pool",
                                                     "alloc_at_start_bytes",
                                                     "free_at_end_bytes",
                                                     "work"};
inline const std::vector<std::string> kWorkFields = {"kind", "pass", "index", "part", "parts"};
inline const std::vector<std::string> kMemoryEventFields = {"task", "phase", "pool", "delta_bytes"};

}  // namespace loom::plan_file_layout

#endif  // LOOM_PROGRAM_PLAN_FILE_LAYOUT_H_
