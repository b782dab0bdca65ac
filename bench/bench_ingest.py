"""Throughput of ``llama-sac ingest`` (issue 16): documents/s and chunks/s with the extractive summarizer and
all-MiniLM-L6-v2, local vs Ray with 1 and 2 workers, side by side in one run on a LegalBench-RAG subset; the share of
time per stage (read, parse, summarize, embed, write: measured separately on the same documents, local); peak memory.

    python bench/bench_ingest.py --documents 16 --json /tmp/bench_ingest.json

Each engine runs in its own process (``--one ENGINE``) into a fresh embedded Chroma store, so its peak memory
(``ru_maxrss`` of the driver; Ray's worker processes are not included) is its own. The subset is ``--documents`` files
taken evenly over the 72 LegalBench-RAG-mini documents in path order (all four datasets).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_summaries import load_corpus, mini_paths  # noqa: E402

ENGINES: dict[str, dict[str, Any]] = {"local": {"engine": "local"}, "ray-1": {"engine": "ray", "workers": 1},
           "ray-2": {"engine": "ray", "workers": 2}}


def write_subset(folder: Path, n: int) -> list[Path]:
    texts = load_corpus()
    out = []
    paths = mini_paths()
    for path in paths[:: max(1, len(paths) // n)][:n]:  # evenly over the sorted paths: every dataset
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(texts[path], encoding="utf-8")
        out.append(target)
    return out


def one(engine: str, folder: Path, store: Path) -> dict[str, float]:
    from llama_index_sac.apps.ingest.run import IngestSettings, ingest

    settings = IngestSettings(show_progress=False, **ENGINES[engine])
    t0 = time.perf_counter()
    report = ingest([folder], f"chroma:{store}", settings)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "documents": report.new, "chunks": report.chunks_written,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def stages(folder: Path) -> dict[str, float]:
    """The local pipeline's stages timed one by one on the same files."""
    import chromadb
    from llama_index.core.schema import Document, MetadataMode
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from llama_index_sac import (
        RecursiveCharacterNodeParser,
        SummaryAugmentationTransformation,
        default_embedding_model,
    )

    out: dict[str, float] = {}
    t = time.perf_counter()
    docs = [Document(text=p.read_text(encoding="utf-8"), id_=str(p)) for p in sorted(folder.rglob("*.txt"))]
    out["read"] = time.perf_counter() - t
    t = time.perf_counter()
    nodes = RecursiveCharacterNodeParser()(docs)
    out["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    SummaryAugmentationTransformation()(nodes, documents=docs)
    out["summarize"] = time.perf_counter() - t
    model = default_embedding_model()
    t = time.perf_counter()
    vectors = model.get_text_embedding_batch([n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes])
    out["embed"] = time.perf_counter() - t
    for node, vector in zip(nodes, vectors):
        node.embedding = vector
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp)
        store = ChromaVectorStore(chroma_collection=client.get_or_create_collection("bench"))
        t = time.perf_counter()
        store.add(nodes)
        out["write"] = time.perf_counter() - t
        client.close()  # type: ignore[attr-defined]  # chromadb's Client has it, ClientAPI does not declare it
    out["chunks"] = len(nodes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=16)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", choices=sorted(ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.folder, args.store)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        files = write_subset(folder, args.documents)
        chars = sum(len(p.read_text(encoding="utf-8")) for p in files)
        runs = {}
        for engine in ENGINES:
            done = subprocess.run([sys.executable, __file__, "--one", engine, "--folder", str(folder), "--store",
                                   str(Path(tmp) / f"store-{engine}")], capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["documents_per_s"] = result["documents"] / result["seconds"]
            result["chunks_per_s"] = result["chunks"] / result["seconds"]
            runs[engine] = result
            print(engine, json.dumps(result), flush=True)
        timed = stages(folder)
        total = sum(v for k, v in timed.items() if k != "chunks")
        shares = {k: v / total for k, v in timed.items() if k != "chunks"}
    out = {"documents": len(files), "characters": chars, "runs": runs, "stages_s": timed, "stage_shares": shares}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
