#!/usr/bin/env bash
# Under mpirun every rank of loom runs the same command line: an error all ranks hit the same way
# (a bad input, a bad command line) is printed once, by rank 0, as one "loom: error: " line (never
# "loom: error: loom: error:" from interleaved ranks), and probe --dry-run prints its table once.
# Registered only where MPI is installed (tests/CMakeLists.txt), as the other mpirun tests.
#   mpi_messages_check.sh LOOM MPIEXEC WORK_DIR
set -u
loom=$1 mpiexec=$2 work=$3
mkdir -p "$work"
status=0
fail() {
  echo "FAIL: $*"
  status=1
}
echo '{}' > "$work/bad.json"
"$mpiexec" --oversubscribe -np 4 "$loom" validate "$work/bad.json" > "$work/bad.out" 2>&1
errors=$(grep -c "loom: error" "$work/bad.out")
[ "$errors" = 1 ] || fail "validate of a bad plan printed $errors error lines: $(cat "$work/bad.out")"
grep -q "loom: error: loom: error" "$work/bad.out" && fail "a doubled prefix: $(cat "$work/bad.out")"
grep -q "loom: error: $work/bad.json: \"schema\" is missing" "$work/bad.out" || fail "no message: $(cat "$work/bad.out")"
"$mpiexec" --oversubscribe -np 4 "$loom" validat "$work/bad.json" > "$work/usage.out" 2>&1
usage=$(grep -c "is not a loom command" "$work/usage.out")
[ "$usage" = 1 ] || fail "a mistyped command was reported $usage times"
"$mpiexec" --oversubscribe -np 4 "$loom" probe --dry-run > "$work/dry.out" 2>&1 || fail "probe --dry-run failed"
tables=$(grep -c "^total" "$work/dry.out")
[ "$tables" = 1 ] || fail "probe --dry-run printed $tables tables"
[ $status -eq 0 ] && echo "all ok"
exit $status
