#!/usr/bin/env bash
# The test command: set-up, lint, type-check, then the whole test suite, offline.
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_python.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

bash scripts/setup.sh

"$PY" -m ruff check llama_index_sac tests bench scripts notebooks
"$PY" -m mypy llama_index_sac tests bench

set +e
"$PY" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose (exit code 5 must not pass silently)" >&2
  exit 1
fi
exit "$rc"
