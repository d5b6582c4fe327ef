#!/usr/bin/env bash
# Set up r2s2r from nothing: a virtual environment in .venv with r2s2r and its dependencies.
# Usage: bash scripts/setup.sh        (idempotent; reruns are fast)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# PyTorch: this machine class has a CPU build of torch 2.13.0 on local disk; asking for it
# exactly keeps pip from pulling a multi-GB CUDA build. Later stages (policy, training) use it.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
.venv/bin/python -m pip install --quiet -e ".[dev]"
# Headless Chromium for the test that opens the study's report.html (Debian's package)
bash scripts/chromium.sh || echo "warning: chromium is not installed; the report page's browser test will be skipped" >&2
echo "r2s2r is set up in .venv ($(.venv/bin/python -c 'import r2s2r, mujoco; print("r2s2r", r2s2r.__version__, "mujoco", mujoco.__version__)'))"
