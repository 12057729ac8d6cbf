# Sourced by the GPU bundle's launcher (bundle/loom) and by tools/gpu_validate: puts the CUDA
# libraries that a machine holds only as Python wheels on LD_LIBRARY_PATH, so that the bundle's
# bin/loom finds libcudart and libcublasLt (nvidia/cu13/lib), libcudnn (nvidia/cudnn/lib) and
# libnccl (nvidia/nccl/lib) where PyTorch's pip install put them.
#
# Where: the folders nvidia/*/lib of every site-packages folder of python3 (site.getsitepackages()
# and the user's), or of the folders named in LOOM_WHEEL_SITE (colon-separated) when it is set.
# The driver's own folder /usr/local/nvidia/lib64 (container images mount it there) comes last.
# What it found is in LOOM_BUNDLE_LIBRARY_DIRS (one per line), for reports.

loom_bundle_sites() {
  if [ -n "${LOOM_WHEEL_SITE:-}" ]; then
    tr ':' '\n' <<<"$LOOM_WHEEL_SITE"
    return
  fi
  local py
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null &&
      return
  done
}

LOOM_BUNDLE_LIBRARY_DIRS=""
while IFS= read -r loom_site; do
  [ -n "$loom_site" ] || continue
  for loom_dir in "$loom_site"/nvidia/*/lib; do
    [ -d "$loom_dir" ] && LOOM_BUNDLE_LIBRARY_DIRS+="$loom_dir"$'\n'
  done
done < <(loom_bundle_sites)
[ -d /usr/local/nvidia/lib64 ] && LOOM_BUNDLE_LIBRARY_DIRS+=/usr/local/nvidia/lib64$'\n'
loom_path=$(printf '%s' "$LOOM_BUNDLE_LIBRARY_DIRS" | paste -sd: -)
if [ -n "$loom_path" ]; then
  export LD_LIBRARY_PATH="$loom_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
unset loom_site loom_dir loom_path
