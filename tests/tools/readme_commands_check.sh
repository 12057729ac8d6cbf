#!/usr/bin/env bash
# Runs every command README.md shows, as written, in the order it shows them: each line (with its
# backslash continuations) of every ```sh block. The README promises that each runs; this holds it
# to that.
#   readme_commands_check.sh LOOM SOURCE_DIR WORK_DIR
# - The commands run in WORK_DIR/tree, which holds a copy of the shipped inputs (models/, hardware/,
#   scenarios/, tests/) so that what they write (reports, plan files, fitted files) stays out of the
#   source tree, and tools/ linked to the source tree's.
# - `loom` on PATH is LOOM. `tools/loom` runs as written when LOOM is SOURCE_DIR/build/loom (the
#   build tools/loom makes); for any other build it is replaced by that build's `loom`, so that the
#   commands test the binary under test and never build another.
# - `mpirun` lines run under --oversubscribe (this machine has fewer cores than ranks); as root the
#   test's environment carries Open MPI's OMPI_ALLOW_RUN_AS_ROOT variables.
# - A line ending in the comment `# needs a GPU` must exit 0 where a GPU is present and with status 3
#   (the GPU a command needs is not there) where none is.
# - `tools/install` installs into WORK_DIR/prefix (not /usr/local), and the installed loom must run;
#   it is skipped where `tools/loom` is replaced (it would build SOURCE_DIR/build).
# - Not run: `tools/test` (it runs this test; CI runs it as .ci/run) and `tools/fuzz` (CI runs it).
set -u
loom=$1 source_dir=$2 work=$3
rm -rf "$work"
mkdir -p "$work/tree" "$work/bin" "$work/logs"
for d in models hardware scenarios tests; do
  cp -r "$source_dir/$d" "$work/tree/$d"
done
ln -s "$source_dir/tools" "$work/tree/tools"
ln -s "$loom" "$work/bin/loom"
export PATH="$work/bin:$PATH"
rewrite_tools_loom=1
[ "$(readlink -f "$loom")" = "$(readlink -f "$source_dir/build/loom")" ] && rewrite_tools_loom=0
have_gpu=0
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && have_gpu=1

# The commands: each ```sh block's lines, continuations joined, blank lines and comments left out.
commands=()
while IFS= read -r line; do
  commands+=("$line")
done < <(awk '
  /^```/ { if (in_sh) { in_sh = 0 } else if ($0 ~ /^```sh *$/) { in_sh = 1 }; next }
  !in_sh { next }
  {
    if (sub(/\\$/, "")) { pending = pending $0; next }
    line = pending $0; pending = ""
    if (line ~ /^[ \t]*(#|$)/) next
    print line
  }' "$source_dir/README.md")

status=0 ran=0 n=0
cd "$work/tree" || exit 1
for cmd in "${commands[@]}"; do
  n=$((n + 1))
  case "$cmd" in
    tools/test* | tools/fuzz*) echo "skip $n: $cmd (CI runs it)"; continue ;;
  esac
  run=$cmd
  if [[ $cmd == tools/install* ]]; then
    [ $rewrite_tools_loom -eq 1 ] && { echo "skip $n: $cmd (it builds $source_dir/build)"; continue; }
    run="tools/install $work/prefix && $work/prefix/bin/loom --version"
  fi
  [ $rewrite_tools_loom -eq 1 ] && run=${run//tools\/loom /loom }
  if [[ $run == mpirun* && $run != *--oversubscribe* ]]; then
    run="mpirun --oversubscribe ${run#mpirun }"
  fi
  want=0
  [[ $cmd == *"# needs a GPU" ]] && [ $have_gpu -eq 0 ] && want=3
  log="$work/logs/$n.log"
  start=$(date +%s)
  timeout 600 bash -o pipefail -c "$run" >"$log" 2>&1
  rc=$?
  ran=$((ran + 1))
  echo "ran $n (exit $rc, want $want, $(($(date +%s) - start)) s): $cmd"
  if [ $rc -ne $want ]; then
    echo "FAIL: README command $n exited $rc, not $want: $run"
    tail -n 30 "$log" | sed 's/^/    /'
    status=1
  fi
done
[ $ran -ge 10 ] || { echo "FAIL: only $ran README commands found; the block parser is broken"; status=1; }
echo "$ran README commands run, $((n - ran)) skipped"
exit $status
