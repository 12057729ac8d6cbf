# Writes OUTPUT, the header of what this build of loom is (core/build_info.h reads it): the commit of
# SOURCE_DIR (git describe --always --dirty, or "unknown" outside a git checkout), BUILD_TYPE and
# LIBRARIES (the CUDA, cuDNN, NCCL and MPI the build found, in words). Run at every build (the
# loom_build_info target), it rewrites OUTPUT only when that changed, so a new commit recompiles one
# file and an unchanged tree none.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DBUILD_TYPE=... -DLIBRARIES=... -P build_info.cmake
set(commit "unknown")
find_program(LOOM_GIT git)
if(LOOM_GIT)
  execute_process(COMMAND ${LOOM_GIT} -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE described RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(NOT failed AND described)
    set(commit "${described}")
  endif()
endif()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE "no build type")
endif()
set(text "// Written by cmake/build_info.cmake at build time; do not edit.
#define LOOM_BUILD_COMMIT \"${commit}\"
#define LOOM_BUILD_TYPE \"${BUILD_TYPE}\"
#define LOOM_BUILD_LIBRARIES \"${LIBRARIES}\"
")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
