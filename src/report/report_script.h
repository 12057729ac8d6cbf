#ifndef LOOM_REPORT_REPORT_SCRIPT_H_
#define LOOM_REPORT_REPORT_SCRIPT_H_

#include <string_view>

namespace loom {

// The renderer of HTML reports: src/report/report.js, embedded at build time (CMake reads the
// file into report_script.cc). It reads the page's #loom-data JSON and draws each view.
std::string_view ReportScript();

}  // namespace loom

#endif  // LOOM_REPORT_REPORT_SCRIPT_H_
