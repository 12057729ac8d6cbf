#!/usr/bin/env bash
# The README's shown-output comparison (readme_output_compare.awk) on small cases: what it accepts
# and what it must refuse, so that a stale block cannot pass unseen.
#   readme_output_compare_test.sh SOURCE_DIR
set -u
awk_file=$1/tests/tools/readme_output_compare.awk
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
# expect WANT_RC NAME AWK_ARGS... : compares $dir/shown with $dir/actual.
expect() {
  local want=$1 name=$2
  shift 2
  awk "$@" -f "$awk_file" "$dir/shown" "$dir/actual" >"$dir/out"
  local rc=$?
  if [ $rc -ne "$want" ]; then
    echo "FAIL: $name: exit $rc, want $want"
    sed 's/^/    /' "$dir/out"
    status=1
  fi
}
printf 'header\nstep 5.83 s (80%% interval 4.98-7.82 s), 16,384 GPUs\nother\nlast line, then more words\n' \
  >"$dir/actual"
printf 'step 5.828 s (80%% interval 4.98-7.82 s), 16,384 GPUs\n...\nlast line, ...\n' >"$dir/shown"
expect 0 "the same lines, a number within half its last digit, a gap and a prefix" -v tol=0.02
printf 'step 6.828 s (80%% interval 4.98-7.82 s), 16,384 GPUs\n' >"$dir/shown"
expect 1 "a step time 17 %% off" -v tol=0.02
printf 'step 5.828 s (80%% interval 4.98-7.82 s), 16,384 nodes\n' >"$dir/shown"
expect 1 "another word" -v tol=0.02
printf 'last line, then more words\nstep 5.83 s (80%% interval 4.98-7.82 s), 16,384 GPUs\n' \
  >"$dir/shown"
expect 1 "lines out of order" -v tol=0.02
printf 'step time   469.6 ms   485.9 ms   +3.5%%\n' >"$dir/actual"
printf 'step time   470.0 ms   515.1 ms   +9.7%%\n' >"$dir/shown"
expect 0 "a timed column left out with first_only" -v tol=0.02 -v first_only=1
expect 1 "the same without first_only" -v tol=0.02
printf 'step time   494.5 ms   485.9 ms   +3.5%%\n' >"$dir/shown"
expect 1 "a predicted column 5 %% off with first_only" -v tol=0.02 -v first_only=1
printf 'bubble fraction   25.7%%   67.5%%   +163.0%%\n' >"$dir/actual"
printf 'bubble fraction   25.7%%   28.4%%   +10.5%%\n' >"$dir/shown"
expect 0 "a unit glued to the first number, then a timed column" -v tol=0.02 -v first_only=1
[ $status -eq 0 ] && echo "8 comparisons as expected"
exit $status
