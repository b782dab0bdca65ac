"""Peak memory of ``llama-sac eval`` on one index of all 714 LegalBench-RAG documents (2 x 244,615 chunks, the run of
``docs/results.md`` section 4c), for the runner under test and, with ``--before PATH``, another copy of the package
(e.g. ``git archive HEAD~1 llama_index_sac | tar -x -C /tmp/orig``), each in its own process, reading the same cache.

The run is section 4c's (the 776 mini queries, ``--scope all``, baseline and SAC) through the runner's own API
(``run_evaluation``) with ONE change: the vectors come from a deterministic hashed bag-of-words model
(:class:`HashedWordsEmbedding`, 384 dimensions, like all-MiniLM-L6-v2's) instead of MiniLM, because embedding the
489,230 texts with MiniLM takes about 4 hours on this 2-core machine and the runner's memory does not depend on the
values of the vectors. So that the peak still counts what MiniLM occupies, each run first loads all-MiniLM-L6-v2
(torch included), embeds 64 texts with it and keeps it loaded ("MiniLM resident"). The first run fills a fresh cache
(its peak includes computing every vector); the runs compared then read that cache, as section 4c's published run
did. Every aggregate and every per-query record of the runs is compared (they must be identical).

    python bench/bench_runner_memory.py --before /tmp/orig --json /tmp/bench_runner_memory.json

Needs ``../shared/data/legalbenchrag``. Writes its caches and results under ``--work`` (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "legalbenchrag"
DATASETS = ["contractnli", "cuad", "maud", "privacy_qa"]


class HashedWordsEmbedding(BaseEmbedding):
    """Deterministic stand-in model: the unit-normalised counts of the words of a text hashed (crc32) into ``dim``
    buckets. Fast (no network, no torch) and stable across processes."""

    dim: int = 384

    @classmethod
    def class_name(cls) -> str:
        return "HashedWordsEmbedding"

    def _vector(self, text: str) -> list[float]:
        buckets = [zlib.crc32(word.encode()) % self.dim for word in text.lower().split()]
        counts = np.bincount(np.asarray(buckets, dtype=np.int64), minlength=self.dim).astype(np.float64)
        norm = float(np.linalg.norm(counts))
        return (counts / norm if norm else counts).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def _child(args: argparse.Namespace) -> None:
    """One run, in this process: print one JSON line with what it measured."""
    import llama_index_sac
    from llama_index_sac.apps.benchmark.config import LoaderOptions, RunSettings, parse_config
    from llama_index_sac.apps.benchmark.factories import load_benchmark, load_embedding_model
    from llama_index_sac.apps.benchmark.runner import run_evaluation

    resident = load_embedding_model(None)  # what the real run holds besides the runner's data
    resident.get_text_embedding_batch(["The Receiving Party shall hold the Confidential Information in trust."] * 64)
    options = LoaderOptions(source="legalbenchrag", data_dir=str(args.data_dir), datasets=DATASETS,
                            scope="all")
    benchmark, used = load_benchmark(options)
    settings = RunSettings(ks=[1, 2, 4, 8, 16, 32, 64], cache_dir=args.cache_dir, show_progress=False)
    results = run_evaluation(benchmark, [parse_config("baseline"), parse_config("sac")], settings,
                             log=lambda line: print(line, file=sys.stderr, flush=True),
                             embed_model=HashedWordsEmbedding(), loader=used)
    Path(args.results).write_text(results.model_dump_json(), encoding="utf-8")
    del resident
    print(json.dumps({"package": llama_index_sac.__file__, "peak_memory_mb": results.peak_memory_mb,
                      "wall_s": results.timings.wall_s, "n_chunks": [c.n_chunks for c in results.configs],
                      "computed": [c.chunks_embedded for c in results.configs]}))


def _run(label: str, code: Path | None, work: Path, data_dir: Path) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    results = work / f"{label}.json"
    command = [sys.executable, __file__, "--child", "--data-dir", str(data_dir), "--cache-dir", str(work / "cache"),
               "--results", str(results)]
    print(f"[{label}] {' '.join(command)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    measured["results"] = str(results)
    print(f"[{label}] {measured}", file=sys.stderr, flush=True)
    return measured


def _identical(a_path: str, b_path: str) -> int:
    """Compare every aggregate and record of two results files; returns the number of records compared."""
    from llama_index_sac.apps.benchmark.results import parse_results

    a = parse_results(json.loads(Path(a_path).read_text(encoding="utf-8")))
    b = parse_results(json.loads(Path(b_path).read_text(encoding="utf-8")))
    compared = 0
    for ca, cb in zip(a.configs, b.configs, strict=True):
        for field in ("config", "n_chunks", "mean_chunk_chars", "mean_embedded_chars", "aggregates", "confusions",
                      "summaries"):
            if getattr(ca, field) != getattr(cb, field):
                raise SystemExit(f"{ca.config.name}: {field} differs between {a_path} and {b_path}")
        for ra, rb in zip(ca.records or [], cb.records or [], strict=True):
            if ra.model_copy(update={"seconds": 0.0}) != rb.model_copy(update={"seconds": 0.0}):
                raise SystemExit(f"{ca.config.name}: record {ra.query_id} differs between {a_path} and {b_path}")
            compared += 1
    return compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="folder holding another llama_index_sac package to compare")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, help="caches and results (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-runner-memory-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        runs = {"this runner, empty cache (fills it)": _run("fill", None, work, args.data_dir)}
        runs["this runner, cached"] = _run("after", None, work, args.data_dir)
        if args.before is not None:
            runs["before, cached"] = _run("before", args.before, work, args.data_dir)
        for label in ("this runner, empty cache (fills it)", "before, cached"):
            if label in runs:
                n = _identical(runs["this runner, cached"]["results"], runs[label]["results"])
                runs[label]["identical_records"] = n
        print("\n| run (MiniLM resident) | peak memory (MiB) | wall (s) |\n|---|---:|---:|")
        for label, measured in runs.items():
            print(f"| {label} | {measured['peak_memory_mb']:,.0f} | {measured.get('wall_s', 0.0):,.0f} |")
        if args.json is not None:
            args.json.write_text(json.dumps(runs, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
