"""Embedding throughput: chunks sent to all-MiniLM-L6-v2 in document order vs sorted by length.

``EmbeddingCache.embed`` (the runner's embedding path) sends the texts it has to compute in order of length: a
transformer pads every batch to its longest text, so batches of similar lengths waste less work. This measures that
choice on real LegalBench-RAG chunks: the 500-character recursive chunks (no overlap) of a fixed slice of cuad
documents (sorted paths ``[100:130]``, the first ``--texts`` chunks), embedded with ``default_embedding_model()``
(embed_batch_size 64) in calls of 256 texts, as the cache does. Runs alternate order / sorted; the median ratio is
reported. Needs ``../shared/data/legalbenchrag`` and the ``offline`` extra.

    python bench/bench_embed_order.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag  # noqa: E402
from llama_index_sac.embeddings.default import default_embedding_model  # noqa: E402
from llama_index_sac.node_parser.recursive import recursive_chunk_spans  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "legalbenchrag"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=1200, help="number of chunks embedded per run")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of each order")
    args = parser.parse_args()

    bench = load_legalbenchrag(args.data_dir, ["cuad"], scope="all")
    texts: list[str] = []
    for doc_id in sorted(bench.documents)[100:130]:
        text = bench.documents[doc_id]
        texts += [text[s:e] for s, e in recursive_chunk_spans(text, chunk_size=500, chunk_overlap=0)]
    texts = texts[: args.texts]
    print(f"{len(texts)} chunks, mean {statistics.mean(map(len, texts)):.0f} characters")
    model = default_embedding_model()
    model.get_text_embedding_batch(texts[:32])  # warm-up

    def rate(batch: list[str]) -> float:
        start = time.perf_counter()
        for i in range(0, len(batch), 256):
            model.get_text_embedding_batch(batch[i : i + 256])
        return len(batch) / (time.perf_counter() - start)

    ratios = []
    for run in range(args.runs):
        plain, ordered = rate(texts), rate(sorted(texts, key=len))
        ratios.append(ordered / plain)
        print(f"run {run + 1}: document order {plain:.1f} texts/s, length order {ordered:.1f} texts/s "
              f"({ordered / plain:.2f}x)", flush=True)
    print(f"median ratio over {args.runs} runs: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
