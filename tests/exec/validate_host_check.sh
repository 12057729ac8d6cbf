#!/usr/bin/env bash
# loom validate --backend host end to end under mpirun: `loom plan --emit plan` writes 4-rank plans
# (1F1B, interleaved, ZB-V and ZB-H1 over four pipeline stages of Llama 3 8B on H100s), four MPI
# ranks run each, and the measured order must be the simulator's: no dependency or rendezvous
# violated, no two tasks of a rank predicted at least 100 ms (of plan time; 25 ms of real time at
# --speedup 4) apart started the other way round. The margin is wide because CI shares two cores
# between the four ranks and the other tests: a rank waits for a core for milliseconds. Then a
# plan launched on the wrong number of ranks must be refused with the launch command. With
# JSON_SCHEMA_CHECK, each plan file and validate's JSON are checked against their schemas too.
#   validate_host_check.sh LOOM MPIEXEC SOURCE_DIR WORK_DIR [JSON_SCHEMA_CHECK]
set -u
loom=$1 mpiexec=$2 source_dir=$3 work=$4 schema_check=${5:-}
mkdir -p "$work"
cd "$source_dir" || exit 1
status=0

fail() {
  echo "FAIL: $*"
  status=1
}

for fix in schedule=1f1b schedule=interleaved,vpp=2 schedule=zb-v,vpp=2 schedule=zb-h1; do
  name=${fix%%,*}
  name=${name#schedule=}
  plan=$work/$name.json
  if ! "$loom" plan --model models/llama3-8b.json --cluster hardware/clusters/dgx-h100.json --gpus 4 \
      --global-batch 8 --seq 2048 --fix "pp=4,tp=1,micro_batch=1,$fix" --emit plan --out "$plan" \
      > "$work/$name.plan.txt" 2>&1; then
    fail "$name: loom plan --emit plan failed:"
    cat "$work/$name.plan.txt"
    continue
  fi
  out=$work/$name.validate.json
  if ! "$mpiexec" -np 4 --oversubscribe "$loom" validate "$plan" --backend host --speedup 4 --steps 2 \
      --order-margin-ms 100 --json \
      > "$out" 2> "$work/$name.err"; then
    fail "$name: loom validate failed:"
    cat "$work/$name.err" "$out"
    continue
  fi
  for key in dependency_violations rendezvous_violations order_inversions; do
    grep -q "\"$key\": 0," "$out" || fail "$name: $key is not 0: $(grep "\"$key\"" "$out")"
  done
  grep -q '"pairs_checked": 0,' "$out" && fail "$name: no pair of tasks was compared"
  if [ -n "$schema_check" ]; then
    "$schema_check" "$plan" "$out" || fail "$name: the plan file or validate's JSON does not match its schema"
  fi
  echo "ok $name: step $(grep -m1 -A2 '"step_time"' "$out" | tail -2 | tr -d ' \n')"
done

# A 4-rank plan on 2 processes: refused, with the command that launches it.
if "$mpiexec" -np 2 --oversubscribe "$loom" validate "$work/1f1b.json" --backend host > "$work/wrong.out" 2>&1; then
  fail "a 4-rank plan ran on 2 processes"
fi
grep -q "mpirun -np 4" "$work/wrong.out" || { fail "no launch command in:"; cat "$work/wrong.out"; }

[ $status -eq 0 ] && echo "all ok"
exit $status
