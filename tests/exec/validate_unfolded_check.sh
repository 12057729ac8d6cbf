#!/usr/bin/env bash
# loom validate --backend host on plans whose tensor-, context- and expert-parallel groups are
# unfolded into one program per GPU, under mpirun on 8 ranks (issue 26): `loom plan --emit plan`
# writes three 8-GPU plans - tp 2 x pp 2 x dp 2 of Llama 3 8B, a cp 2 ring-attention plan of
# Llama 3 8B (pp 2, dp 2) and an ep 4 MoE plan of Qwen3-30B-A3B (pp 2, dp 4) - and 8 MPI ranks run
# each: every dependency and rendezvous must hold and no two tasks of a GPU predicted at least
# 100 ms apart may start the other way round (the margin is wide: CI shares two cores between the
# eight ranks and the other tests). Then a plan launched on 4 processes must be refused with the
# command that launches it, and a plan whose expert groups do not tile its GPUs must be refused
# naming the file and the key. With JSON_SCHEMA_CHECK, each plan file and validate's JSON are
# checked against their schemas too.
#   validate_unfolded_check.sh LOOM MPIEXEC SOURCE_DIR WORK_DIR [JSON_SCHEMA_CHECK]
set -u
loom=$1 mpiexec=$2 source_dir=$3 work=$4 schema_check=${5:-}
mkdir -p "$work"
cd "$source_dir" || exit 1
status=0

fail() {
  echo "FAIL: $*"
  status=1
}

plans=(
  "tp2-pp2-dp2|models/llama3-8b.json|2048|pp=2,tp=2,cp=1,micro_batch=1,schedule=1f1b"
  "cp2-ring|models/llama3-8b.json|8192|pp=2,tp=1,cp=2,cp_comm=p2p,micro_batch=1,schedule=1f1b"
  "ep4-moe|models/qwen3-30b-a3b.json|2048|pp=2,tp=1,ep=4,micro_batch=1,schedule=1f1b,offload=none"
)
for entry in "${plans[@]}"; do
  IFS='|' read -r name model seq fix <<< "$entry"
  plan=$work/$name.json
  # --memory-headroom 0: the executors are under test, not the fragmentation headroom, which the
  # MoE plan's 8 GPUs could not spare.
  if ! "$loom" plan --model "$model" --cluster hardware/clusters/dgx-h100.json --gpus 8 \
      --global-batch 8 --seq "$seq" --fix "$fix" --memory-headroom 0 --emit plan --out "$plan" \
      > "$work/$name.plan.txt" 2>&1; then
    fail "$name: loom plan --emit plan failed:"
    cat "$work/$name.plan.txt"
    continue
  fi
  grep -q "for 8 GPUs" "$work/$name.plan.txt" || fail "$name: not an 8-GPU plan: $(cat "$work/$name.plan.txt")"
  out=$work/$name.validate.json
  if ! "$mpiexec" -np 8 --oversubscribe "$loom" validate "$plan" --backend host --speedup 1 --steps 2 \
      --order-margin-ms 100 --json > "$out" 2> "$work/$name.err"; then
    fail "$name: loom validate failed:"
    cat "$work/$name.err" "$out"
    continue
  fi
  grep -q '"ranks": 8,' "$out" || fail "$name: not run on 8 ranks: $(grep '"ranks"' "$out")"
  for key in dependency_violations rendezvous_violations order_inversions; do
    grep -q "\"$key\": 0," "$out" || fail "$name: $key is not 0: $(grep "\"$key\"" "$out")"
  done
  grep -q '"pairs_checked": 0,' "$out" && fail "$name: no pair of tasks was compared"
  if [ -n "$schema_check" ]; then
    "$schema_check" "$plan" "$out" || fail "$name: the plan file or validate's JSON does not match its schema"
  fi
  echo "ok $name: step $(grep -m1 -A2 '"step_time"' "$out" | tail -2 | tr -d ' \n')"
done

# An 8-GPU plan on 4 processes: refused, with the command that launches it.
if "$mpiexec" -np 4 --oversubscribe "$loom" validate "$work/tp2-pp2-dp2.json" --backend host > "$work/wrong.out" 2>&1; then
  fail "an 8-GPU plan ran on 4 processes"
fi
grep -q "mpirun -np 8" "$work/wrong.out" || { fail "no launch command in:"; cat "$work/wrong.out"; }

# Expert groups of 3 GPUs cannot tile the 4 GPUs of a stage: refused before anything runs.
sed 's/^\( *"gpus": {.*"ep": *\)1,/\13,/' "$work/tp2-pp2-dp2.json" > "$work/untiled.json"
grep -q '"gpus": {.*"ep": *3,' "$work/untiled.json" || fail "could not edit the plan's gpus.ep: $(grep '"gpus"' "$work/untiled.json")"
if "$mpiexec" -np 8 --oversubscribe "$loom" validate "$work/untiled.json" --backend host > "$work/untiled.out" 2>&1; then
  fail "a plan whose expert groups do not tile its GPUs ran"
fi
grep -q "untiled.json: gpus: the expert groups do not tile" "$work/untiled.out" ||
  { fail "no clear error for groups that do not tile:"; cat "$work/untiled.out"; }

[ $status -eq 0 ] && echo "all ok"
exit $status
