#!/usr/bin/env bash
# loom from the GPU bundle (tools/gpu_bundle): finds the CUDA, cuDNN and NCCL libraries of the
# machine's Python wheels (env.sh beside this file), then runs bin/loom, the loom built without
# MPI: `loom probe` and a one-rank `loom validate` run in this one process.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/env.sh"
exec "$here/bin/loom" "$@"
