# Shared by tools/loom, tools/test and tools/fuzz: install what is missing, configure and build when
# stale.
# Everything here writes to stderr, so that stdout carries only loom's own output.

LOOM_ROOT=$(cd -P "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)

# Debian packages loom builds with (see README.md, "Dependencies").
LOOM_PACKAGES=(
  cmake g++ make
  libboost-graph-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  libvalijson-dev
  chromium fonts-dejavu-core
  jq
  ccache mold
)

loom_log() { echo "loom-tools: $*" >&2; }

# Parallel jobs for make and ctest: every core this process may use (LOOM_JOBS overrides).
LOOM_JOBS=${LOOM_JOBS:-$(nproc)}

# Installs the packages of LOOM_PACKAGES that dpkg does not report as installed.
# Runs apt-get update once per call that has something to install; silent when nothing is missing.
loom_ensure_packages() {
  local missing=() pkg
  for pkg in "${LOOM_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
      sudo="sudo"
    else
      loom_log "missing Debian packages: ${missing[*]}; install them as root:"
      loom_log "  apt-get update && apt-get install -y ${missing[*]}"
      exit 1
    fi
  fi
  loom_log "installing ${missing[*]} (apt-get)"
  $sudo apt-get update -qq >&2 || { loom_log "apt-get update failed"; exit 1; }
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    { loom_log "apt-get install failed for: ${missing[*]}"; exit 1; }
}

# The one sanitizer build, build-sanitize/, that serves both `tools/test --sanitize` (the tests under
# AddressSanitizer and UndefinedBehaviorSanitizer) and `tools/fuzz` (the libFuzzer targets): clang 14,
# since only clang has libFuzzer, with -fsanitize=fuzzer-no-link on every source of src/ and
# tests/fuzz (the coverage that guides libFuzzer; in a test program it costs a counter per branch
# and calls nothing, the sanitizer runtime's hooks being empty; the tests' own sources go without).
# One compile of the sources serves both checks, where a g++ build for the tests and a clang build
# for the fuzzers compiled them twice.
# -O1 -g1 in place of RelWithDebInfo's -O2 -g: -g1 keeps the line tables, inlined frames included,
# which is all that the sanitizers' stack traces read (function, file:line per frame), and
# AddressSanitizer's own docs advise -O1. Unity (jumbo) sources: each batch of 8 files of a target is
# one compiler run, which parses the shared headers (the standard library, nlohmann/json,
# GoogleTest) once a batch instead of once a file; the Release build stays one file a run, so that
# every file is checked to include what it uses. The tests' own sources at -O0
# (LOOM_TEST_OPTIMIZATION, tests/CMakeLists.txt): the code under test keeps -O1, and a test body
# gains nothing from the optimizer but a compile three times as long. No benchmarks/ (timings under
# the sanitizers mean nothing, and no test runs them): the Release build compiles them.
LOOM_SANITIZE_DIR=build-sanitize
LOOM_SANITIZE_ARGS=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  -DLOOM_SANITIZE=address,undefined -DLOOM_FUZZ=ON -DLOOM_WITH_CUDA=OFF -DLOOM_BUILD_BENCHMARKS=OFF
  -DCMAKE_UNITY_BUILD=ON -DLOOM_TEST_OPTIMIZATION=-O0)
# libFuzzer and the sanitizer runtimes come with clang (libclang-rt-14-dev).
LOOM_SANITIZE_PACKAGES=(clang-14 libclang-rt-14-dev)

# The compiler cache: every build folder compiles through ccache (installed above), so that a
# rebuild on the same machine (another build folder, a fresh clone, a branch switched back)
# compiles only what changed. Its cache is ccache's own (~/.cache/ccache); CCACHE_DIR moves it,
# LOOM_CCACHE=0 turns it off: the launchers are then set empty, since a folder configured with
# ccache keeps it in its CMake cache until told otherwise.
loom_launcher_args() {
  local launcher=""
  if [ "${LOOM_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
    launcher=ccache
  fi
  echo "-DCMAKE_C_COMPILER_LAUNCHER=$launcher -DCMAKE_CXX_COMPILER_LAUNCHER=$launcher -DCMAKE_CUDA_COMPILER_LAUNCHER=$launcher"
}

# loom_ensure_configured DIR [CMAKE_ARGS...]: configures DIR once (or when its arguments change);
# cmake's output goes to DIR/configure.log, shown when configuring fails.
loom_ensure_configured() {
  local dir="$LOOM_ROOT/$1"
  shift
  # shellcheck disable=SC2046  # the launcher arguments are words without spaces
  set -- "$@" $(loom_launcher_args)
  local args="$*"
  if [ ! -f "$dir/CMakeCache.txt" ] || [ "$(cat "$dir/.loom-configure-args" 2>/dev/null)" != "$args" ]; then
    loom_log "configuring $dir"
    mkdir -p "$dir"
    if ! cmake -S "$LOOM_ROOT" -B "$dir" "$@" >"$dir/configure.log" 2>&1; then
      cat "$dir/configure.log" >&2
      loom_log "cmake configure failed (log: $dir/configure.log)"
      exit 1
    fi
    echo "$args" >"$dir/.loom-configure-args"
  fi
}

# loom_ensure_build DIR TARGET [CMAKE_ARGS...]: configures DIR (loom_ensure_configured) and builds
# TARGET with make's own staleness check. The build's output goes to DIR/build.log and is shown
# only when something was compiled or the build failed.
loom_ensure_build() {
  local name=$1 dir="$LOOM_ROOT/$1" target=$2
  shift 2
  loom_ensure_configured "$name" "$@"
  if ! cmake --build "$dir" --target "$target" -j"$LOOM_JOBS" >"$dir/build.log" 2>&1; then
    grep -E "error|Error" -A5 "$dir/build.log" | head -60 >&2
    loom_log "build failed (full log: $dir/build.log)"
    exit 1
  fi
  if grep -qE "Building CXX|Linking CXX" "$dir/build.log"; then
    loom_log "built $target in $dir ($(grep -c 'Building CXX' "$dir/build.log") files compiled)"
  fi
}
