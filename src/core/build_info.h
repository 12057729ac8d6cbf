// What this build of loom is: its version with the commit it was built from, the build type and
// the CUDA, cuDNN, NCCL and MPI it was built with (the top-level CMakeLists.txt reads their
// headers; cmake/build_info.cmake reads the commit at every build).

#ifndef LOOM_CORE_BUILD_INFO_H_
#define LOOM_CORE_BUILD_INFO_H_

#include <string>

namespace loom {

// LOOM_VERSION with the commit as semantic versioning's build metadata, then the build:
// "0.1.0+9a064c6d1e2f (Release; CUDA 13.0.88, cuDNN 9.13.0, NCCL 2.28.3, Open MPI v4.1.4)". What
// `loom --version` prints after "loom ", and every JSON's "loom_version".
const std::string& LoomBuildVersion();

}  // namespace loom

#endif  // LOOM_CORE_BUILD_INFO_H_
