#include "core/build_info.h"

#include "loom_build_info.h"  // generated: LOOM_BUILD_COMMIT, LOOM_BUILD_TYPE, LOOM_BUILD_LIBRARIES

namespace loom {

const std::string& LoomBuildVersion() {
  static const std::string kVersion = std::string(LOOM_VERSION) + "+" + LOOM_BUILD_COMMIT + " (" +
                                      LOOM_BUILD_TYPE + "; " + LOOM_BUILD_LIBRARIES + ")";
  return kVersion;
}

}  // namespace loom
