#!/usr/bin/env bash
# burn-cuda on a real GPU: install the local packages offline, run the conformance suite
# on cuda:0 and benchmark against PyTorch CUDA; prints one table. Under 5 minutes.
#
# Needs: one NVIDIA GPU, Python with PyTorch (CUDA) and CuPy already installed, pip.
# Nothing is downloaded. Run from anywhere:  bash plugins/burn-cuda/scripts/gpu_check.sh
# Env: PYTHON (default python3), GPU_CHECK_OUT (result dir, default a temp dir).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../../.." && pwd)"
py="${PYTHON:-python3}"
out="${GPU_CHECK_OUT:-$(mktemp -d -t burn-gpu-check.XXXXXX)}"
mkdir -p "${out}"
start=$(date +%s)

say() { printf '\n== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

say "environment"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"${py}" - <<'PY'
import sys
try:
    import cupy, torch
except ImportError as e:
    sys.exit(f"gpu_check: {e}: this script needs PyTorch and CuPy already installed (nothing is downloaded)")
print("python", sys.version.split()[0], "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| cupy", cupy.__version__, "| gpu available:", torch.cuda.is_available() and cupy.is_available())
if not (torch.cuda.is_available() and cupy.is_available()):
    sys.exit("gpu_check: no usable GPU (torch.cuda.is_available() / cupy.is_available() is False)")
PY

say "installing core, burn-flex, burn-cuda, burn-linalg, burn-signal, burn-dist (offline: --no-deps --no-build-isolation)"
timeout 150 "${py}" -m pip install --quiet --no-deps --no-build-isolation --no-index \
    "${root}/core" "${root}/plugins/burn-flex" "${root}/plugins/burn-cuda" "${root}/plugins/burn-linalg" \
    "${root}/plugins/burn-signal" "${root}/plugins/burn-dist"
timeout 60 "${py}" -m burn info | sed -n '/^backends/,/^extension/p'

# each step is its own process with its own time limit; a failed step is reported in the
# table (the script still prints it) and makes the exit status non-zero
status=0
step() {  # step NAME SECONDS [ENV=VALUE...] -- gpu_check.py arguments
    local name=$1 secs=$2
    shift 2
    local envs=()
    while [[ $# -gt 0 && $1 != "--" ]]; do envs+=("$1"); shift; done
    shift
    say "${name}"
    if ! env "${envs[@]+"${envs[@]}"}" timeout --kill-after=10 "${secs}" "${py}" "${here}/gpu_check.py" "$@" \
            > "${out}/${name}.log" 2>&1; then
        echo "   ${name}: FAILED or timed out after ${secs}s; last lines of ${out}/${name}.log:"
        tail -n 15 "${out}/${name}.log" | sed 's/^/   | /'
        status=1
    fi
}

step conformance     150 -- conformance "${out}/conformance.json"
step matmul           35 -- matmul "${out}/matmul.json"
step elementwise      30 -- elementwise "${out}/elementwise.json"
step cnn              35 -- cnn "${out}/cnn.json"
step cuda_graph       60 -- cuda_graph "${out}/cuda_graph.json"
step memory_adaptive  20 BURN_CUDA_POOL=adaptive -- memory "${out}/memory_adaptive.json"
step memory_cupy      20 BURN_CUDA_POOL=cupy -- memory "${out}/memory_cupy.json"
step extensions       90 -- extensions "${out}/extensions.json"
step dist             20 -- dist "${out}/dist.json"
# informational (data for the reduce thresholds): a failure here is reported, not fatal
saved=${status}
step reductions       40 -- reductions "${out}/reductions.json"
status=${saved}

say "results (logs and JSON in ${out})"
"${py}" "${here}/gpu_check.py" table "${out}" || status=1
echo "total $(($(date +%s) - start)) s; exit status ${status} (0: every check ran and met its target)"
exit "${status}"
