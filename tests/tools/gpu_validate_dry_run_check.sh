#!/usr/bin/env bash
# tools/gpu_validate --dry-run lists each of its stages (1-3 and 5) with its commands and a time estimate
# under the 600 s one GPU-machine command may take, writes nothing, and refuses a missing stage;
# `summary` rebuilds the committed H100 run's summary.tsv, and loom fit reads its probe.
#   gpu_validate_dry_run_check.sh LOOM SOURCE_DIR WORK_DIR
set -u
loom=$1 source_dir=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$source_dir" || exit 1
status=0
fail() {
  echo "FAIL: $*"
  status=1
}
if ! tools/gpu_validate --dry-run --loom "$loom" --results "$work/results" all >"$work/dry_run.txt" 2>&1; then
  fail "gpu_validate --dry-run all failed:"
  cat "$work/dry_run.txt"
fi
for stage in 1 2 3; do
  line=$(grep "^  stage $stage: estimated" "$work/dry_run.txt")
  seconds=$(sed -n 's/.*estimated \([0-9]*\) s.*/\1/p' <<<"$line")
  [ -n "$seconds" ] || { fail "stage $stage has no estimate: $(cat "$work/dry_run.txt")"; continue; }
  [ "$seconds" -gt 0 ] && [ "$seconds" -lt 600 ] || fail "stage $stage: estimated $seconds s, not under 600 s"
done
grep -q "probe -o $work/results/profile.json" "$work/dry_run.txt" || fail "stage 1 names no probe"
[ "$(grep -c "validate .* --backend cuda" "$work/dry_run.txt")" -eq 8 ] || fail "stage 2 does not list 8 validations"
grep -q -- "--check" "$work/dry_run.txt" || fail "stage 3 names no held-out check"
# Stage 5 (issue 42): the compute-in-step script, its four sections each with an estimate, in one call.
if ! tools/gpu_validate --dry-run --loom "$loom" --results "$work/results" 5 >"$work/dry_run5.txt" 2>&1; then
  fail "gpu_validate --dry-run 5 failed: $(cat "$work/dry_run5.txt")"
fi
seconds=$(sed -n 's/^  stage 5: estimated \([0-9]*\) s.*/\1/p' "$work/dry_run5.txt")
[ -n "$seconds" ] && [ "$seconds" -gt 60 ] && [ "$seconds" -lt 600 ] ||
  fail "stage 5: estimate '$seconds' s is not within 60-600 s: $(cat "$work/dry_run5.txt")"
for section in sustained contention attention elementwise; do
  grep -q -P "^    $section: ~[0-9]+ s$" "$work/dry_run5.txt" || fail "stage 5 does not list its $section section"
done
python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' tools/compute_in_step.py \
  2>"$work/compile.txt" || fail "tools/compute_in_step.py does not parse: $(cat "$work/compile.txt")"
python3 tools/compute_in_step.py --dry-run "$work/results" sustained,nonsense >/dev/null 2>"$work/bad_section.txt"
[ $? -eq 2 ] && grep -q "unknown section 'nonsense'" "$work/bad_section.txt" ||
  fail "compute_in_step.py did not refuse an unknown section: $(cat "$work/bad_section.txt")"
[ -e "$work/results" ] && fail "--dry-run wrote $work/results"
tools/gpu_validate --dry-run --loom "$loom" >"$work/no_stage.txt" 2>&1
[ $? -eq 2 ] || fail "gpu_validate with no stage did not exit 2"
# `summary` rebuilds summary.tsv from a results folder: the first H100 run's, committed.
committed=hardware/validation/2026-11-27
tools/gpu_validate --loom "$loom" --results "$committed" summary >"$work/summary.tsv" 2>&1 ||
  fail "gpu_validate summary failed: $(cat "$work/summary.tsv")"
cmp -s "$work/summary.tsv" "$committed/summary.tsv" || fail "summary differs from $committed/summary.tsv"
[ "$(grep -c -P '^(gpt3|llama)\S*\t(none|full)\t[0-9.]+\t[0-9.]+\t' "$work/summary.tsv")" -eq 8 ] ||
  fail "summary does not give 8 measured validations: $(cat "$work/summary.tsv")"
grep -q -P '\t(gemm|attention|memory|optimizer|communication)\t-?[0-9.]+$' "$work/summary.tsv" ||
  fail "summary names no worst class"
# The committed probe stays readable by loom fit, with every kernel it holds.
"$loom" fit hardware/profiles/h100-sxm5-80gb-2026-11-27.json --gpu hardware/gpus/h100-sxm5-80gb.json --check \
  >"$work/check.txt" 2>&1 || fail "loom fit --check of the committed H100 profile failed: $(cat "$work/check.txt")"
grep -q -P '^gemm bf16\s+186\s' "$work/check.txt" || fail "the committed profile's 186 GEMMs are not read: $(cat "$work/check.txt")"
tools/gpu_validate --loom "$loom" --results "$work/none" summary >/dev/null 2>&1
[ $? -eq 1 ] || fail "summary of a missing folder did not exit 1"
[ "$status" -eq 0 ] && echo "gpu_validate --dry-run: $(grep '^all stages' "$work/dry_run.txt")"
exit "$status"
