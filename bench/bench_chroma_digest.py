"""Benchmark: the cost of checking a Chroma store's vector index before it is read (``chroma_digest``: the sha256 of
its HNSW files against the ingest record; ``chroma_check``: its structure), against opening the store and answering
one question.

A collection of ``--rows`` random unit vectors of ``--dim`` dimensions (all-MiniLM-L6-v2's 384 by default; 26,655
rows is the chunk count of LegalBench-RAG-mini) is written once with chromadb into ``--store`` (kept for later runs),
its checksums recorded as ``ingest`` records them, then each of the three is timed ``--runs`` times in turn in one
process (medians). Usage::

    python bench/bench_chroma_digest.py --store /tmp/bench-chroma-mini --rows 26655
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llama_index_sac.apps.ingest.chroma_check import check_chroma_index  # noqa: E402
from llama_index_sac.apps.ingest.chroma_digest import recorded_index, verify_index  # noqa: E402
from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec  # noqa: E402
from llama_index_sac.apps.ingest.store import open_store  # noqa: E402

COLLECTION = "llama-sac"


def build(store: Path, rows: int, dim: int) -> None:
    import chromadb

    client: Any = chromadb.PersistentClient(path=str(store), settings=chromadb.Settings(anonymized_telemetry=False))
    found = client.get_or_create_collection(COLLECTION, metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(0)
    for first in range(0, rows, 2000):
        n = min(2000, rows - first)
        vectors = rng.standard_normal((n, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        found.add(ids=[f"r{i}" for i in range(first, first + n)], embeddings=vectors.tolist(),
                  metadatas=[{"ref_doc_id": f"d{(first + i) // 40}"} for i in range(n)])
    client.close()


def median_s(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="Folder of the store (written when missing).")
    parser.add_argument("--rows", type=int, default=26_655)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not args.store.exists():
        build(args.store, args.rows, args.dim)
    spec, record = StoreSpec("chroma", args.store.resolve()), IngestRecord(StoreSpec("chroma", args.store), COLLECTION)
    with record.lock(), recorded_index(record, spec, COLLECTION) as start:
        start()  # the checksums of the files as they are
    folder = next(p for p in spec.path.iterdir() if p.is_dir() and not p.name.startswith("."))
    sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}

    def opened_and_asked() -> None:
        with open_store(spec, COLLECTION, create=False) as opened:
            found: Any = opened.vector_store._collection  # type: ignore[attr-defined]
            found.query(query_embeddings=[[0.05] * args.dim], n_results=8)

    digest = median_s(lambda: verify_index(record, spec, COLLECTION), args.runs)
    structure = median_s(lambda: check_chroma_index(spec, COLLECTION), args.runs)
    whole = median_s(opened_and_asked, args.runs)
    total = sum(sizes.values())
    print(f"index files: {total / 1e6:.1f} MB ({', '.join(f'{k} {v / 1e6:.2f} MB' for k, v in sizes.items())})")
    print(f"medians of {args.runs}: checksums {digest:.3f} s ({total / digest / 1e9:.2f} GB/s), structure "
          f"{structure:.3f} s, open_store (both checks) + client + one question {whole:.3f} s; the checksums are "
          f"{digest / whole:.0%} of it")


if __name__ == "__main__":
    main()
