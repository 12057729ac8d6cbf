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
# - A plain ``` block right after an sh block is the output the README shows for its last command:
#   it must hold in today's output, numbers within 2 % or the block's own note
#   (readme_output_compare.awk), so that no shown output goes stale.
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
# A plain ``` block right after an sh block (blank lines and a "<!-- readme: tolerance N% -->" note
# between them allowed) is the output the README shows for the block's last command: it goes to
# shown/N.txt (N the command's number), its tolerance to shown/N.tol.
mkdir -p "$work/shown"
commands=()
while IFS= read -r line; do
  commands+=("$line")
done < <(awk -v shown="$work/shown" '
  in_out && /^```/ { in_out = 0; close(file); next }
  in_out { print > file; next }
  /^```/ {
    if (in_sh) { in_sh = 0; awaiting = count; tolerance = ""; next }
    if ($0 ~ /^```sh *$/) { in_sh = 1; next }
    if ($0 ~ /^``` *$/ && awaiting) {
      in_out = 1; file = shown "/" awaiting ".txt"; printf "" > file
      if (tolerance != "") { print tolerance > (shown "/" awaiting ".tol"); close(shown "/" awaiting ".tol") }
    }
    awaiting = 0
    next
  }
  !in_sh {
    if ($0 ~ /^<!-- readme: tolerance [0-9.]+%( on the first number of each line)? -->$/) {
      tolerance = $4; sub(/%/, "", tolerance)
      if ($0 ~ /first number/) tolerance = tolerance " first"
      next
    }
    if ($0 !~ /^[ \t]*$/) awaiting = 0
    next
  }
  {
    if (sub(/\\$/, "")) { pending = pending $0; next }
    line = pending $0; pending = ""
    if (line ~ /^[ \t]*(#|$)/) next
    count++
    print line
  }' "$source_dir/README.md")

status=0 ran=0 n=0 compared=0
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
  timeout 600 bash -o pipefail -c "$run" >"$log.out" 2>"$log.err"
  rc=$?
  cat "$log.out" "$log.err" >"$log"
  ran=$((ran + 1))
  echo "ran $n (exit $rc, want $want, $(($(date +%s) - start)) s): $cmd"
  if [ $rc -ne $want ]; then
    echo "FAIL: README command $n exited $rc, not $want: $run"
    tail -n 30 "$log" | sed 's/^/    /'
    status=1
  elif [ -f "$work/shown/$n.txt" ]; then
    # The output the README shows: every line today's output holds, numbers within tolerance.
    tol=0.02 first=0
    [ -f "$work/shown/$n.tol" ] && tol=$(awk '{ print $1 / 100 }' "$work/shown/$n.tol")
    [ -f "$work/shown/$n.tol" ] && first=$(awk '{ print ($2 == "first") }' "$work/shown/$n.tol")
    compared=$((compared + 1))
    if ! awk -v tol="$tol" -v first_only="$first" -f "$source_dir/tests/tools/readme_output_compare.awk" \
        "$work/shown/$n.txt" "$log.out" >"$log.diff"; then
      echo "FAIL: the output README.md shows for command $n is not what it prints today (numbers" \
           "within $tol): $cmd"
      sed 's/^/    /' "$log.diff"
      status=1
    fi
  fi
done
[ $ran -ge 10 ] || { echo "FAIL: only $ran README commands found; the block parser is broken"; status=1; }
echo "$ran README commands run, $((n - ran)) skipped, $compared shown outputs compared"
[ $compared -ge 4 ] || { echo "FAIL: only $compared shown outputs found; the block parser is broken"; status=1; }
exit $status
