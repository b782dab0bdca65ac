#!/usr/bin/env bash
# The main job: installs the package (offline embedding model included), then runs `llama-sac eval`, offline.
#   bash scripts/eval.sh                                   # built-in synthetic contracts: baseline vs SAC, ~1 min
#   bash scripts/eval.sh --data-dir ../shared/data/legalbenchrag   # LegalBench-RAG(-mini), all four datasets
#   bash scripts/eval.sh --help                            # every option (configurations, parser, summarizer, k...)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_python.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

bash scripts/setup.sh

exec "$PY" -m llama_index_sac.apps.cli eval "$@"
