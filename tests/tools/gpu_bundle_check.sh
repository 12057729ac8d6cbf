#!/usr/bin/env bash
# The GPU bundle starts where CUDA, cuBLASLt, cuDNN and NCCL exist only as Python wheels and no MPI
# is installed (the GPU machine of DEVELOPERS.md), checked here without a GPU: tools/gpu_bundle
# bundles loom-single-process; a fake site-packages holds this machine's CUDA libraries in the
# wheels' folders (nvidia/cu13/lib, nvidia/cudnn/lib, nvidia/nccl/lib); a fake python3 names it,
# as PyTorch's python3 would. Then, with nothing else on the environment:
#   - the binary needs no MPI library and has no run path;
#   - every CUDA library it needs resolves inside the fake wheels;
#   - loom --version, loom probe --dry-run and loom plan work;
#   - loom probe and loom validate --backend cuda exit 3 with a message that says no GPU is there;
#   - under mpirun's environment it says to use the loom built with MPI.
#   gpu_bundle_check.sh LOOM_SINGLE_PROCESS SOURCE_DIR WORK_DIR CUDA_LIBRARY_DIR...
set -u
binary=$1 source_dir=$2 work=$3
shift 3
status=0
fail() {
  echo "FAIL: $*"
  status=1
}
rm -rf "$work"
mkdir -p "$work/site/nvidia/cu13/lib" "$work/site/nvidia/cudnn/lib" "$work/site/nvidia/nccl/lib" "$work/bin"

# The wheels' layout (nvidia-cuda-runtime, nvidia-cublas, nvidia-cuda-nvrtc: cu13; nvidia-cudnn-cu13;
# nvidia-nccl-cu13), as links to this machine's libraries.
for dir in "$@"; do
  for lib in "$dir"/lib*.so*; do
    [ -e "$lib" ] || continue
    case $(basename "$lib") in
      libcudnn*) dest=cudnn ;;
      libnccl*) dest=nccl ;;
      libcudart* | libcublas* | libnvrtc* | libnvJitLink*) dest=cu13 ;;
      *) continue ;;
    esac
    ln -sf "$lib" "$work/site/nvidia/$dest/lib/"
  done
done
printf '#!/bin/sh\necho %s\n' "$work/site" >"$work/bin/python3"
chmod +x "$work/bin/python3"
clean_env=(env -i "PATH=$work/bin:/usr/bin:/bin" "HOME=$work")

if ! "$source_dir/tools/gpu_bundle" --binary "$binary" --out "$work/bundle" >"$work/bundle.log" 2>&1; then
  fail "tools/gpu_bundle failed:"
  cat "$work/bundle.log"
  exit 1
fi
loom=$work/bundle/loom
grep -q "gpu_bundle: .* KiB of the 65536 KiB" "$work/bundle.log" || fail "gpu_bundle did not report the size"

dynamic=$(readelf -d "$work/bundle/bin/loom")
grep -q "libmpi" <<<"$dynamic" && fail "the bundle's loom needs MPI: $(grep libmpi <<<"$dynamic")"
grep -qE "RPATH|RUNPATH" <<<"$dynamic" && fail "the bundle's loom has a run path"

# What the dynamic loader resolves with the bundle's environment: the CUDA libraries from the wheels.
resolved=$("${clean_env[@]}" bash -c "source '$work/bundle/env.sh' && ldd '$work/bundle/bin/loom'")
for lib in libcudart.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  line=$(grep "$lib =>" <<<"$resolved")
  [[ "$line" == *"$work/site/nvidia/"* ]] || fail "$lib does not resolve inside the wheels' folders: '$line'"
done
grep -q "not found" <<<"$resolved" && fail "libraries not found: $(grep 'not found' <<<"$resolved")"

cd "$source_dir" || exit 1
run() {  # NAME EXPECTED_CODE ARGS...: runs the bundle's loom in the clean environment
  local name=$1 expected=$2
  shift 2
  "${clean_env[@]}" "$@" >"$work/$name.out" 2>"$work/$name.err"
  local code=$?
  [ "$code" -eq "$expected" ] || fail "$name: exit status $code, expected $expected: $(head -c 600 "$work/$name.err")"
}
run version 0 "$loom" --version
grep -q "^loom [0-9]" "$work/version.out" || fail "--version printed '$(cat "$work/version.out")'"
run dry_run 0 "$loom" probe --dry-run
grep -q "gemm" "$work/dry_run.out" || fail "probe --dry-run listed no GEMM: $(head -c 300 "$work/dry_run.out")"
run plan 0 "$loom" plan --model models/gpt3-125m.json --cluster hardware/clusters/dgx-h100.json --gpus 1 \
  --global-batch 16 --seq 2048 --fix tp=1,pp=1,micro_batch=4 --emit plan --out "$work/one.json"
run probe 3 "$loom" probe -o "$work/profile.json"
grep -q "no CUDA GPU is visible" "$work/probe.err" || fail "probe without a GPU said: $(cat "$work/probe.err")"
run validate 3 "$loom" validate "$work/one.json" --backend cuda
grep -q "GPU" "$work/validate.err" || fail "validate without a GPU said: $(cat "$work/validate.err")"
run host 0 "$loom" validate "$work/one.json" --backend host --speedup 1000 --steps 1 --warmup 0
run under_mpirun 1 env OMPI_COMM_WORLD_SIZE=2 "$loom" validate "$work/one.json" --backend host
grep -q "loom-single-process" "$work/under_mpirun.err" || fail "under mpirun it said: $(cat "$work/under_mpirun.err")"

[ "$status" -eq 0 ] && echo "gpu bundle: starts from the wheels' layout without MPI; $(du -sh "$work/bundle" | cut -f1)"
exit "$status"
