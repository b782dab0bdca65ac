#!/usr/bin/env bash
# Installs everything the package, its tests and its main job need, on a fresh machine (idempotent).
#   bash scripts/setup.sh            # package + dev/test tools + offline embedding model + real vector stores
#   SAC_WITH_LLM=1 bash scripts/setup.sh   # also the local test LLM (llama-cpp-python + Qwen GGUF), see setup-llm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# torch first, pinned to the local CPU build: an unpinned torch pulls a multi-GB CUDA build.
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.13.0") else 1)' 2>/dev/null; then
  "$PY" -m pip install --quiet "torch==2.13.0"
fi
"$PY" -m pip install --quiet -e ".[dev,offline,bm25,vectorstores]"

if [ "${SAC_WITH_LLM:-0}" = "1" ]; then
  bash scripts/setup-llm.sh
fi
